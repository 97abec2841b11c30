// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The runtime, devices per thread and contexts.
#include <optional>

#include "bindings.hpp"

namespace gpuhal_py {
namespace {

// "printf_buffer_bytes" or "stack_bytes"; another name is a ValueError.
gpuhal::Limit limit_from(const std::string &name) {
  if (name == "printf_buffer_bytes") return gpuhal::Limit::PrintfBufferBytes;
  if (name == "stack_bytes") return gpuhal::Limit::StackBytes;
  throw nb::value_error(("unknown limit '" + name + "' (printf_buffer_bytes or stack_bytes)").c_str());
}

gpuhal::Capability capability_from(const std::string &name) {
  if (const auto c = gpuhal::capability_named(name)) return *c;
  throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE,
                      "unknown capability '" + name + "' (" + gpuhal::capability_names() + ")");
}

nb::dict properties_of(const gpuhal::Device &d) {
  const gpuhal::DeviceProperties &p = d.properties();
  nb::dict out;
  out["name"] = p.name;
  out["vendor"] = p.vendor;
  out["total_memory"] = p.total_memory;
  out["shared_memory_per_block"] = p.shared_memory_per_block;
  out["compute_capability"] = nb::make_tuple(p.compute_major, p.compute_minor);
  out["multiprocessor_count"] = p.multiprocessor_count;
  out["warp_size"] = p.warp_size;
  out["max_threads_per_block"] = p.max_threads_per_block;
  out["max_block_dim"] = nb::make_tuple(p.max_block_dim[0], p.max_block_dim[1], p.max_block_dim[2]);
  out["max_grid_dim"] = nb::make_tuple(p.max_grid_dim[0], p.max_grid_dim[1], p.max_grid_dim[2]);
  out["clock_rate_khz"] = p.clock_rate_khz;
  out["can_map_host_memory"] = p.can_map_host_memory;
  out["unified_addressing"] = p.unified_addressing;
  out["concurrent_kernels"] = p.concurrent_kernels;
  out["pci_bus_id"] = nb::make_tuple(p.pci_domain, p.pci_bus, p.pci_device);
  out["driver_version"] = p.driver_version;
  out["uuid"] = p.uuid_string().empty() ? nb::object(nb::none()) : nb::object(nb::str(p.uuid_string().c_str()));
  out["recovers_from_faults"] = p.recovers_from_faults;
  out["exclusive_contexts"] = p.exclusive_contexts;
  out["module_loads_wait"] = p.module_loads_wait;
  out["synchronize_waits_for_all_work"] = p.synchronize_waits_for_all_work;
  return out;
}

// `with defer_cleanup():` -- a DeferCleanup of the current context while
// the block runs.
struct DeferCleanupScope {
  gpuhal::Context ctx;
  std::optional<gpuhal::DeferCleanup> scope;
};

// `with gpus[i]:` -- a DeviceScope while the block runs.
struct DeviceSelection {
  explicit DeviceSelection(int o) : ordinal(o) {}
  int ordinal;
  std::optional<gpuhal::DeviceScope> scope;
};

// The context the calling thread used last, held so that it lives from its
// first use until close() (Numba keeps a thread's context so; the C++ API
// lets a context go with its last handle, which for Python callers, who
// hold none, would make a new context per call). Let go at thread exit.
thread_local gpuhal::Context t_last_used;

// Called with the GIL by every function of the package: also the point
// where work left for the GIL runs (drain_released).
gpuhal::Context current_context() {
  gpuhal::Context c;
  {
    ReleasedCall unlocked;  // the first use loads the backend
    c = gpuhal::Context::current();
    if (c != t_last_used) t_last_used = c;
  }
  drain_released();
  return c;
}

}  // namespace

namespace {
// Contexts (Numba's current_context() and its memory methods), their memory
// information and deferred cleanup.
void bind_contexts(nb::module_ &m) {
  nb::class_<gpuhal::MemoryInfo>(m, "_MemoryInfo")
      .def_ro("free", &gpuhal::MemoryInfo::free)
      .def_ro("total", &gpuhal::MemoryInfo::total);

  nb::class_<gpuhal::Context>(m, "Context", "A device's primary context (Numba's current_context())")
      .def_prop_ro("device", &gpuhal::Context::device)
      .def("_memory_info", &gpuhal::Context::memory_info, release_gil())
      .def(
          "synchronize",
          [](const gpuhal::Context &c) {
            {
              ReleasedCall unlocked;
              c.synchronize();
            }
            drain_released();
          },
          "Waits for all work of the context")
      .def(
          "reset",
          [](const gpuhal::Context &c) { run_exclusive_of_released_calls("Context.reset", [&] { c.reset(); }); },
          "Destroys everything made in the context, once no other thread is inside a gpuhal call")
      .def("supports",
           [](const gpuhal::Context &c, const std::string &name) { return c.supports(capability_from(name)); })
      .def_prop_ro("adopted", &gpuhal::Context::adopted)
      .def("default_stream", &gpuhal::Context::default_stream)
      .def("legacy_default_stream", &gpuhal::Context::legacy_default_stream)
      .def("per_thread_default_stream", &gpuhal::Context::per_thread_default_stream, release_gil())
      .def("external_stream",
           [](const gpuhal::Context &c, uintptr_t handle) {
             return c.external_stream(reinterpret_cast<gpuhal::NativeStream>(handle));
           })
      .def(
          "create_stream",
          [](const gpuhal::Context &c, bool blocking, std::optional<int> priority) {
            const auto kind = blocking ? gpuhal::StreamKind::Blocking : gpuhal::StreamKind::NonBlocking;
            return priority ? c.create_stream(kind, *priority) : c.create_stream(kind);
          },
          nb::arg("blocking") = true, nb::arg("priority").none() = nb::none(), release_gil())
      .def(
          "stream_priority_range",
          [](const gpuhal::Context &c) {
            const gpuhal::StreamPriorityRange r = c.stream_priority_range();
            return std::make_pair(r.least, r.greatest);
          },
          "(least, greatest) stream priorities (lower numbers are greater priorities)")
      .def(
          "set_limit",
          [](const gpuhal::Context &c, const std::string &name, uint64_t bytes) {
            c.set_limit(limit_from(name), bytes);
          },
          nb::arg("limit"), nb::arg("bytes"), release_gil())
      .def("limit", [](const gpuhal::Context &c, const std::string &name) { return c.limit(limit_from(name)); },
           nb::arg("limit"))
      .def("create_event", &gpuhal::Context::create_event, nb::arg("timing") = true, release_gil())
      .def("pending_deallocations", &gpuhal::Context::pending_deallocations)
      .def("pending_deallocation_bytes", &gpuhal::Context::pending_deallocation_bytes)
      .def("set_pending_deallocation_limits", &gpuhal::Context::set_pending_deallocation_limits, nb::arg("count"),
           nb::arg("ratio"))
      .def(
          "pending_deallocation_limits",
          [](const gpuhal::Context &c) {
            const auto l = c.pending_deallocation_limits();
            return std::make_pair(l.count, l.bytes);
          },
          "(count, bytes): more pending releases or bytes than these flush at the next release")
      .def("flush_deallocations", &gpuhal::Context::flush_deallocations, release_gil())
      .def("__eq__", [](const gpuhal::Context &a, const gpuhal::Context &b) { return a == b; })
      .def("__hash__", [](const gpuhal::Context &c) { return c.hash(); });
  m.def("current_context", &current_context);

  nb::class_<DeferCleanupScope>(m, "_DeferCleanup")
      .def("__init__", [](DeferCleanupScope *s) { new (s) DeferCleanupScope{current_context(), {}}; })
      .def("__enter__",
           [](DeferCleanupScope &s) {
             if (s.scope) throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "defer_cleanup entered twice");
             s.scope.emplace(s.ctx);
           })
      // Leaving may flush the queue, which waits for the device.
      .def("__exit__", [](DeferCleanupScope &s, nb::args) {
        ReleasedCall unlocked;
        s.scope.reset();
      });
}
}  // namespace

void bind_runtime(nb::module_ &m) {
  m.def("backend_name", [] { return gpuhal::Runtime::get().backend_name(); }, release_gil());
  m.def("plugin_path", [] { return gpuhal::Runtime::get().plugin_path(); }, release_gil());
  m.def("device_count", [] { return gpuhal::Runtime::get().device_count(); }, release_gil());
  m.def(
      "set_pending_deallocation_limits",
      [](uint64_t count, double ratio) { gpuhal::Runtime::get().set_pending_deallocation_limits(count, ratio); },
      nb::arg("count"), nb::arg("ratio"), release_gil());
  m.def(
      "pending_deallocation_limits",
      [] {
        const auto l = gpuhal::Runtime::get().pending_deallocation_limits();
        return std::make_pair(l.count, l.ratio);
      },
      release_gil());
  m.def("supports", [](const std::string &name) { return gpuhal::Runtime::get().supports(capability_from(name)); });

  nb::class_<gpuhal::Device>(m, "Device", "A device of the loaded backend (Numba's cuda.gpus[i])")
      .def_prop_ro("id", &gpuhal::Device::ordinal, "The device's ordinal")
      .def_prop_ro("name", [](const gpuhal::Device &d) { return d.properties().name; })
      .def_prop_ro("compute_capability", [](const gpuhal::Device &d) {
        return nb::make_tuple(d.properties().compute_major, d.properties().compute_minor);
      })
      .def_prop_ro(
          "uuid",
          [](const gpuhal::Device &d) -> nb::object {
            const std::string u = d.properties().uuid_string();
            if (u.empty()) return nb::none();
            return nb::str(("GPU-" + u).c_str());
          },
          "Numba's Device.uuid: 'GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' (nvidia-smi's form, on every backend); "
          "None when the backend gives none")
      .def_prop_ro("properties", &properties_of, "Every property, as a dict")
      .def("can_access_peer", &gpuhal::Device::can_access_peer, release_gil())
      .def(
          "stream_priority_range",
          [](const gpuhal::Device &d) {
            const gpuhal::StreamPriorityRange r = d.stream_priority_range();
            return std::make_pair(r.least, r.greatest);
          },
          release_gil(),
          "(least, greatest) stream priorities of the device's streams (its primary context's; CUDA's "
          "cudaDeviceGetStreamPriorityRange)")
      .def("primary_context", &gpuhal::Device::primary_context, release_gil())
      .def("__eq__", [](const gpuhal::Device &a, const gpuhal::Device &b) {
        return a.ordinal() == b.ordinal() && a.runtime().backend_name() == b.runtime().backend_name();
      })
      .def("__hash__", [](const gpuhal::Device &d) { return d.ordinal(); })
      .def("__repr__", [](const gpuhal::Device &d) {
        return "<gpuhal.Device " + std::to_string(d.ordinal()) + " '" + d.properties().name + "'>";
      });

  m.def("select_device", &gpuhal::select_device, nb::arg("ordinal"), release_gil());
  m.def("get_current_device", &gpuhal::get_current_device, release_gil());
  m.def(
      "close_device",
      [] {
        t_last_used = gpuhal::Context();
        gpuhal::close_device();
      },
      release_gil());
  m.def("list_devices", &gpuhal::list_devices, release_gil());

  nb::class_<DeviceSelection>(m, "_DeviceSelection")
      .def(nb::init<int>())
      .def("__enter__",
           [](DeviceSelection &s) {
             if (s.scope) throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "device scope entered twice");
             s.scope.emplace(s.ordinal);
             return s.scope->device();
           })
      .def("__exit__", [](DeviceSelection &s, nb::args) {
        ReleasedCall unlocked;
        s.scope.reset();
      });
  bind_contexts(m);
}

}  // namespace gpuhal_py
