// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Numba's External Memory Management (EMM) plugins written in Python, as a
// context's memory manager: every device allocation of the context (the
// C++ core's, so device_array, to_device and the kernels' temporaries
// alike) is asked of the plugin's memalloc, and the plugin's
// initialize / reset / get_memory_info / defer_cleanup are called where
// Numba calls them. Host allocations stay gpuhal's own (Numba's
// HostOnlyCUDAMemoryManager, which such plugins derive from, does the same).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "gpuhal/memory_manager.hpp"
#include "gpuhal/memory_pool.hpp"

namespace gpuhal_py {
namespace {

// The plugin's address of a memory object: Numba's device_pointer_value
// (an int, or None for NULL), else int(device_pointer).
uint64_t device_address(nb::handle memory) {
  if (nb::hasattr(memory, "device_pointer_value")) {
    nb::object v = memory.attr("device_pointer_value");
    return v.is_none() ? 0 : nb::cast<uint64_t>(nb::int_(v));
  }
  return nb::cast<uint64_t>(nb::int_(memory.attr("device_pointer")));
}

class PythonMemoryManager : public gpuhal::MemoryManager {
 public:
  explicit PythonMemoryManager(nb::object plugin)
      : plugin_(std::make_shared<PythonRef>(plugin)), name_("python:" + std::string(nb::type_name(plugin.type()).c_str())) {}

  // Drops the plugin when the context moves to another manager: the
  // plugin refers to its context, and the context (which keeps retired
  // managers) must not keep it past the interpreter's end. Memory the
  // plugin handed out keeps its own references. With the GIL.
  void release_plugin() { plugin_.reset(); }

  int interface_version() const override {
    nb::gil_scoped_acquire gil;
    return nb::cast<int>(plugin().attr("interface_version"));
  }
  std::string name() const override { return name_; }
  void initialize() override {
    nb::gil_scoped_acquire gil;
    plugin().attr("initialize")();
  }
  bool released() const { return !plugin_; }
  // Device memory straight from the backend, for the plugin's own use (a
  // pool's blocks): freed through the context's deferred queue when the
  // last handle goes.
  gpuhal::MemoryInfo backend_info() const { return backend_memory_info(); }
  gpuhal::DeviceMemory backend_memory(uint64_t bytes) {
    const gpuhal::DevicePointer p = backend_alloc(bytes);
    return wrap(p, bytes, [this, p, bytes] { backend_free(p, bytes); });
  }
  // The plugin's memory object stays referenced while gpuhal's handle
  // lives; dropping it runs the plugin's finalizer (AutoFreePointer).
  gpuhal::DeviceMemory memalloc(uint64_t bytes) override {
    std::shared_ptr<PythonRef> memory;
    uint64_t address = 0;
    {
      nb::gil_scoped_acquire gil;
      nb::object m = plugin().attr("memalloc")(bytes);
      address = device_address(m);
      memory = std::make_shared<PythonRef>(std::move(m));
    }
    // The reference goes with the handle's keep-alive, after a reset too.
    return wrap(address, bytes, [memory] {});
  }
  gpuhal::MemoryInfo get_memory_info() override {
    nb::gil_scoped_acquire gil;
    nb::object info = plugin().attr("get_memory_info")();
    return gpuhal::MemoryInfo{nb::cast<uint64_t>(info.attr("free")), nb::cast<uint64_t>(info.attr("total"))};
  }
  void reset() override {
    if (released()) return;  // retired: the plugin was let go
    nb::gil_scoped_acquire gil;
    plugin().attr("reset")();
  }
  // Numba's defer_cleanup() is a context manager: entered and left in pairs.
  void defer_cleanup_begin() override {
    nb::gil_scoped_acquire gil;
    nb::object scope = plugin().attr("defer_cleanup")();
    scope.attr("__enter__")();
    scopes_.push_back(std::make_shared<PythonRef>(std::move(scope)));
  }
  void defer_cleanup_end() override {
    nb::gil_scoped_acquire gil;
    if (scopes_.empty()) return;
    std::shared_ptr<PythonRef> scope = std::move(scopes_.back());
    scopes_.pop_back();
    scope->get().attr("__exit__")(nb::none(), nb::none(), nb::none());
  }

 private:
  nb::handle plugin() const {
    if (!plugin_)
      throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "EMM plugin " + name_ + ": no longer the context's manager");
    return plugin_->get();
  }
  std::shared_ptr<PythonRef> plugin_;
  std::string name_;
  std::vector<std::shared_ptr<PythonRef>> scopes_;  // under the GIL
};

// The context's current manager when it is a Python plugin's, else null.
PythonMemoryManager *python_manager(const gpuhal::Context &ctx) {
  return dynamic_cast<PythonMemoryManager *>(&ctx.memory_manager());
}

// Installs `manager` on `ctx`; a Python plugin it replaces is let go.
void replace_manager(const gpuhal::Context &ctx, std::unique_ptr<gpuhal::MemoryManager> manager) {
  PythonMemoryManager *previous = python_manager(ctx);
  {
    ReleasedCall unlocked;  // initialize() takes the GIL itself
    ctx.set_memory_manager(std::move(manager));
  }
  if (previous) previous->release_plugin();
}

}  // namespace

namespace {

// gpuhal.MemoryPool's C++ side (the Python class is in _memory_pool.py).
void bind_memory_pool(nb::module_ &m) {
  using gpuhal::MemoryPool;
  nb::class_<MemoryPool>(m, "_MemoryPool")
      .def("__init__",
           [](MemoryPool *self, const gpuhal::Context &ctx, uint64_t threshold, bool driver) {
             gpuhal::MemoryPoolOptions options{threshold};
             options.kind = driver ? gpuhal::MemoryPoolKind::Driver : gpuhal::MemoryPoolKind::Caching;
             new (self) MemoryPool(ctx, options);
           })
      .def("is_driver", [](const MemoryPool &p) { return p.kind() == gpuhal::MemoryPoolKind::Driver; })
      .def(
          "free",
          [](const MemoryPool &p, const gpuhal::DeviceArray &array, std::optional<gpuhal::Stream> stream) {
            gpuhal::DeviceMemory memory = array.memory();
            // An empty array made elsewhere holds no memory (the pool gives
            // even a zero-size array a block): not this pool's either.
            if (!memory)
              throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE,
                                  "MemoryPool::free: the array holds no memory, so it was not allocated from this pool");
            ReleasedCall unlocked;
            p.free(memory, stream ? *stream : p.context().default_stream());
          },
          nb::arg("array"), nb::arg("stream").none())
      .def(
          "device_array",
          [](const MemoryPool &p, const gpuhal::Shape &shape, const std::string &typestr,
             std::optional<gpuhal::Stream> stream) {
            const gpuhal::DType d = gpuhal::DType::parse(typestr);
            const gpuhal::Layout layout = gpuhal::Layout::make(shape, d.itemsize());
            const uint64_t bytes = uint64_t(std::max<int64_t>(layout.nbytes(), 1));
            ReleasedCall unlocked;
            gpuhal::DeviceMemory memory = stream ? p.allocate(bytes, *stream) : p.allocate(bytes);
            return gpuhal::DeviceArray(memory, layout, d);
          },
          nb::arg("shape"), nb::arg("typestr"), nb::arg("stream").none())
      .def("set_release_threshold", &MemoryPool::set_release_threshold, release_gil())
      .def("release_threshold", &MemoryPool::release_threshold)
      .def("trim", &MemoryPool::trim, nb::arg("keep_bytes") = 0, release_gil())
      .def("reset_peak", &MemoryPool::reset_peak)
      .def("stats",
           [](const MemoryPool &p) {
             const gpuhal::MemoryPoolStats s = p.stats();
             nb::dict d;
             d["used_bytes"] = s.used_bytes;
             d["reserved_bytes"] = s.reserved_bytes;
             d["peak_used_bytes"] = s.peak_used_bytes;
             d["allocations"] = s.allocations;
             d["hits"] = s.hits;
             d["misses"] = s.misses;
             d["released_bytes"] = s.released_bytes;
             return d;
           })
      .def("install", [](const MemoryPool &p) { replace_manager(p.context(), p.memory_manager()); })
      .def("__eq__", [](const MemoryPool &a, const MemoryPool &b) { return a == b; });
}

}  // namespace

void bind_memory_manager(nb::module_ &m) {
  m.def(
      "set_python_memory_manager",
      [](const gpuhal::Context &ctx, nb::object plugin) {
        replace_manager(ctx, std::make_unique<PythonMemoryManager>(std::move(plugin)));
      },
      "Serves the context's device allocations from a Numba EMM plugin (a Python object)");
  m.def(
      "set_default_memory_manager",
      [](const gpuhal::Context &ctx) { replace_manager(ctx, std::make_unique<gpuhal::DefaultMemoryManager>()); },
      "Serves the context's allocations from gpuhal's default manager");
  m.def(
      "backend_memalloc",
      [](const gpuhal::Context &ctx, uint64_t bytes) {
        if (bytes == 0) throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "backend_memalloc: size must be positive");
        PythonMemoryManager *manager = python_manager(ctx);
        ReleasedCall unlocked;
        gpuhal::DeviceMemory memory = manager ? manager->backend_memory(bytes) : ctx.allocate(bytes);
        return gpuhal::DeviceArray(memory, gpuhal::Layout::make({int64_t(bytes)}, 1), gpuhal::dtypes::uint8);
      },
      "Device memory from the backend itself, past any EMM plugin (a uint8 device array)");
  m.def(
      "backend_memory_info",
      [](const gpuhal::Context &ctx) {
        PythonMemoryManager *manager = python_manager(ctx);
        ReleasedCall unlocked;
        const gpuhal::MemoryInfo info = manager ? manager->backend_info() : ctx.memory_info();
        return std::make_pair(info.free, info.total);
      },
      "The backend's free and total memory, past any EMM plugin");
  m.def(
      "memory_manager_name", [](const gpuhal::Context &ctx) { return ctx.memory_manager().name(); }, release_gil());
  bind_memory_pool(m);
}

}  // namespace gpuhal_py
