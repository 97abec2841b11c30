// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Pinned, mapped and registered host memory (Numba's pinned_array,
// mapped_array, pinned(), mapped(), ROC's register / deregister).
#include <optional>

#include "bindings.hpp"

namespace gpuhal_py {
namespace {

char order_of(const std::string &order) {
  if (order.size() != 1) throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "order must be one letter, not '" + order + "'");
  return order[0];
}

// Registrations held by a `with pinned(...)` / `with mapped(...)` block (or
// by register()): undone by close(), which the block's end calls, and by the
// destructor otherwise. The views are taken while the buffers are held;
// the Python caller keeps the arrays alive while the scope is open.
struct HostScope {
  HostScope() = default;
  HostScope(HostScope &&) = default;
  HostScope(const HostScope &) = delete;
  std::optional<gpuhal::PinnedScope> pinned;
  std::optional<gpuhal::MappedScope> mapped;
  std::vector<gpuhal::HostRegistration> registrations;
  void close() {
    pinned.reset();
    mapped.reset();
    for (auto &r : registrations)
      if (r) r.release();
    registrations.clear();
  }
};

std::vector<gpuhal::HostView> views_of(const nb::sequence &arrays, std::vector<HostBuffer> &held) {
  std::vector<gpuhal::HostView> views;
  for (nb::handle a : arrays) {
    held.emplace_back(a);
    views.push_back(held.back().view());
  }
  return views;
}

// A scope over `arrays`, opened by `open` without the GIL.
template <class Open>
HostScope open_scope(const gpuhal::Context &ctx, const nb::sequence &arrays, Open open) {
  std::vector<HostBuffer> held;
  std::vector<gpuhal::HostView> views = views_of(arrays, held);
  ReleasedCall unlocked;
  HostScope s;
  open(s, ctx, views);
  return s;
}

}  // namespace

void bind_host_memory(nb::module_ &m) {
  m.def("pinned_array",
        [](const gpuhal::Context &ctx, const gpuhal::Shape &shape, const std::string &typestr,
           const gpuhal::Strides &strides, const std::string &order) {
          gpuhal::DType d = gpuhal::DType::parse(typestr);
          ReleasedCall unlocked;
          HostMemoryHolder h;
          h.array = gpuhal::pinned_array(ctx, shape, d, strides, order_of(order));
          h.view = h.array.view();
          return h;
        });
  m.def("mapped_array",
        [](const gpuhal::Context &ctx, const gpuhal::Shape &shape, const std::string &typestr,
           const gpuhal::Strides &strides, const std::string &order, bool portable, bool wc) {
          gpuhal::DType d = gpuhal::DType::parse(typestr);
          ReleasedCall unlocked;
          gpuhal::MappedArray a = gpuhal::mapped_array(ctx, shape, d, strides, order_of(order), portable, wc);
          HostMemoryHolder h{a.host.view(), a.host, a.device};
          return std::make_pair(h, a.device);
        });

  nb::class_<HostScope>(m, "_HostScope")
      .def("close", [](HostScope &s) { s.close(); }, release_gil(), "Undoes the registrations (at once)")
      .def("device_arrays", [](const HostScope &s) {
        return s.mapped ? s.mapped->device_arrays() : std::vector<gpuhal::DeviceArray>{};
      });
  // The scopes of `with pinned(...)` and `with mapped(...)`.
  m.def("pin", [](const gpuhal::Context &ctx, const nb::sequence &arrays) {
    return open_scope(ctx, arrays, [](HostScope &s, const gpuhal::Context &c, const std::vector<gpuhal::HostView> &v) {
      s.pinned.emplace(c, v);
    });
  });
  m.def("map", [](const gpuhal::Context &ctx, const nb::sequence &arrays) {
    return open_scope(ctx, arrays, [](HostScope &s, const gpuhal::Context &c, const std::vector<gpuhal::HostView> &v) {
      s.mapped.emplace(c, v);
    });
  });
  m.def("register_host", [](const gpuhal::Context &ctx, const nb::sequence &arrays, bool portable, bool mapped) {
    std::vector<HostBuffer> held;
    std::vector<gpuhal::HostView> views = views_of(arrays, held);
    ReleasedCall unlocked;
    HostScope s;
    gpuhal::HostMemoryFlags flags;
    flags.portable = portable;
    flags.mapped = mapped;
    for (const auto &v : views) s.registrations.push_back(gpuhal::register_host(ctx, v, flags));
    return s;
  });
  m.def("deregister_host", [](const gpuhal::Context &ctx, const nb::sequence &arrays) {
    std::vector<HostBuffer> held;
    std::vector<gpuhal::HostView> views = views_of(arrays, held);
    ReleasedCall unlocked;
    for (const auto &v : views) gpuhal::deregister_host(ctx, v);
  });
}

}  // namespace gpuhal_py
