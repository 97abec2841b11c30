// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A memory manager from a shared object (GPUHAL_MEMORY_MANAGER=/path.so),
// behind the C ABI of gpuhal/memory_manager.h.
#include <dlfcn.h>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "allocation.hpp"
#include "gpuhal/error.hpp"
#include "gpuhal/memory_manager.h"
#include "handle_access.hpp"

namespace gpuhal {
namespace detail {
namespace {

// The loaded library; shared by every instance (and kept loaded by them).
struct ManagerLibrary {
  std::string path;
  void *handle = nullptr;
  gpuhal_memory_manager_table_t table{};
  ~ManagerLibrary() {
    if (handle) dlclose(handle);
  }
};

// The backend services handed to the library: `core` is the instance.
class SharedObjectMemoryManager;
gpuhal_status_t svc_alloc(void *core, uint64_t bytes, gpuhal_deviceptr_t *out);
gpuhal_status_t svc_free(void *core, gpuhal_deviceptr_t ptr);
gpuhal_status_t svc_memory_info(void *core, uint64_t *free_bytes, uint64_t *total_bytes);
const char *svc_last_error(void *core);

class SharedObjectMemoryManager : public MemoryManager {
 public:
  explicit SharedObjectMemoryManager(std::shared_ptr<ManagerLibrary> lib) : lib_(std::move(lib)) {}
  ~SharedObjectMemoryManager() override {
    if (state_) lib_->table.destroy(state_);
  }
  std::string name() const override { return lib_->table.name; }

  void initialize() override {
    if (!state_) {
      Context ctx = context();
      const auto &c = *detail::impl_of(ctx);
      backend_.abi_version = GPUHAL_MM_ABI_VERSION;
      backend_.struct_size = sizeof backend_;
      backend_.core = this;
      backend_.backend_name = c.lib().name().c_str();
      backend_.device_ordinal = c.device->ordinal;
      backend_.alloc = svc_alloc;
      backend_.free = svc_free;
      backend_.memory_info = svc_memory_info;
      backend_.last_error = svc_last_error;
      void *st = nullptr;
      check(lib_->table.create(&backend_, &st), "create");
      if (!st) throw Error(Status::ERROR_INVALID_PLUGIN, where("create") + " returned no instance");
      state_ = st;
    }
    check(lib_->table.initialize(state_), "initialize");
  }

  DeviceMemory memalloc(uint64_t bytes) override {
    gpuhal_deviceptr_t p = 0;
    check(lib_->table.memalloc(state_, bytes, &p), "memalloc");
    if (!p) throw Error(Status::ERROR_INVALID_PLUGIN, where("memalloc") + " returned a null pointer");
    // The library is told when the last user goes (not after a reset).
    return wrap(p, bytes, [lib = lib_, st = state_, p, bytes] { lib->table.memfree(st, p, bytes); });
  }

  MemoryInfo get_memory_info() override {
    if (!lib_->table.get_memory_info)
      throw Error(Status::ERROR_NOT_SUPPORTED, where("get_memory_info") + ": not provided by the memory manager");
    MemoryInfo info;
    check(lib_->table.get_memory_info(state_, &info.free, &info.total), "get_memory_info");
    return info;
  }

  void reset() override {
    if (state_) check(lib_->table.reset(state_), "reset");
  }
  void defer_cleanup_begin() override {
    if (lib_->table.defer_cleanup_begin) lib_->table.defer_cleanup_begin(state_);
  }
  void defer_cleanup_end() override {
    if (lib_->table.defer_cleanup_end) lib_->table.defer_cleanup_end(state_);
  }

  // Services (called by the library through the backend table).
  gpuhal_status_t service_alloc(uint64_t bytes, gpuhal_deviceptr_t *out) {
    return service([&] { *out = backend_alloc(bytes); });
  }
  gpuhal_status_t service_free(gpuhal_deviceptr_t ptr) {
    return service([&] {
      const auto &c = *detail::impl_of(context());
      c.backend().mem_free(c.handle, ptr);
    });
  }
  gpuhal_status_t service_memory_info(uint64_t *f, uint64_t *t) {
    return service([&] {
      const MemoryInfo i = backend_memory_info();
      *f = i.free;
      *t = i.total;
    });
  }

 private:
  std::string where(const char *entry) const { return "memory manager " + lib_->path + ": " + entry; }
  void check(gpuhal_status_t st, const char *entry) const {
    if (st == GPUHAL_SUCCESS) return;
    const char *msg = state_ ? lib_->table.last_error(state_) : nullptr;
    throw Error(static_cast<Status>(st), where(entry) + " failed (" + to_string(static_cast<Status>(st)) + ")" +
                                             (msg && *msg ? ": " + std::string(msg) : std::string()));
  }
  template <class F>
  gpuhal_status_t service(F &&body) noexcept {
    try {
      body();
      return GPUHAL_SUCCESS;
    } catch (const Error &e) {
      set_service_error(e.what());
      return static_cast<gpuhal_status_t>(e.status());
    } catch (const std::exception &e) {
      set_service_error(e.what());
      return GPUHAL_ERROR_UNKNOWN;
    }
  }
  // The core library keeps no thread-local state (sanitizer runtimes and
  // some loaders handle dynamic TLS of a shared library poorly), so the
  // service message is per instance: the last failure, kept in a buffer.
  void set_service_error(const char *msg) noexcept {
    std::lock_guard<std::mutex> lock(error_mu_);
    std::snprintf(service_error_, sizeof service_error_, "%s", msg);
  }

 public:
  const char *service_error() const noexcept { return service_error_; }

 private:
  std::mutex error_mu_;
  char service_error_[512] = {};

  std::shared_ptr<ManagerLibrary> lib_;
  void *state_ = nullptr;
  gpuhal_mm_backend_t backend_{};
};

gpuhal_status_t svc_alloc(void *core, uint64_t bytes, gpuhal_deviceptr_t *out) {
  if (!core || !out) return GPUHAL_ERROR_INVALID_VALUE;
  return static_cast<SharedObjectMemoryManager *>(core)->service_alloc(bytes, out);
}
gpuhal_status_t svc_free(void *core, gpuhal_deviceptr_t ptr) {
  if (!core) return GPUHAL_ERROR_INVALID_VALUE;
  return static_cast<SharedObjectMemoryManager *>(core)->service_free(ptr);
}
gpuhal_status_t svc_memory_info(void *core, uint64_t *f, uint64_t *t) {
  if (!core || !f || !t) return GPUHAL_ERROR_INVALID_VALUE;
  return static_cast<SharedObjectMemoryManager *>(core)->service_memory_info(f, t);
}
const char *svc_last_error(void *core) {
  return core ? static_cast<SharedObjectMemoryManager *>(core)->service_error() : "";
}

}  // namespace

MemoryManagerFactory load_memory_manager_library(const std::string &path) {
  auto bad = [&](const std::string &why) -> Error {
    return Error(Status::ERROR_INVALID_CONFIG, "GPUHAL_MEMORY_MANAGER=" + path + ": " + why);
  };
  auto lib = std::make_shared<ManagerLibrary>();
  lib->path = path;
  dlerror();
  lib->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char *e = dlerror();
    throw bad(std::string("cannot be loaded: ") + (e ? e : "unknown error"));
  }
  void *sym = dlsym(lib->handle, GPUHAL_MM_ENTRY_NAME);
  if (!sym) throw bad(std::string("not a memory manager: it does not export ") + GPUHAL_MM_ENTRY_NAME);
  gpuhal_memory_manager_negotiate_fn negotiate;
  std::memcpy(&negotiate, &sym, sizeof sym);
  const gpuhal_memory_manager_table_t *t = nullptr;
  const gpuhal_status_t st = negotiate(GPUHAL_MM_ABI_VERSION, &t);
  if (st != GPUHAL_SUCCESS) throw bad("negotiation failed (" + to_string(static_cast<Status>(st)) + ")");
  if (!t) throw bad("negotiation returned success but no table (a broken memory manager)");
  if (GPUHAL_VERSION_MAJOR(t->abi_version) != GPUHAL_MM_ABI_MAJOR)
    throw bad("it speaks memory-manager ABI " + version_string(t->abi_version) + " but the core speaks " +
              version_string(GPUHAL_MM_ABI_VERSION));
  const size_t need = offsetof(gpuhal_memory_manager_table_t, last_error) + sizeof(void *);
  if (t->struct_size < need) throw bad("its table is smaller than the required part");
  std::memcpy(&lib->table, t, std::min<size_t>(t->struct_size, sizeof lib->table));
  if (lib->table.interface_version != GPUHAL_MM_INTERFACE_VERSION)
    throw bad("the memory manager interface has version " + std::to_string(lib->table.interface_version) +
              " - version " + std::to_string(GPUHAL_MM_INTERFACE_VERSION) + " required");
  const auto &tb = lib->table;
  const std::pair<bool, const char *> required[] = {
      {tb.name != nullptr, "name"},         {tb.create != nullptr, "create"},
      {tb.destroy != nullptr, "destroy"},   {tb.initialize != nullptr, "initialize"},
      {tb.memalloc != nullptr, "memalloc"}, {tb.memfree != nullptr, "memfree"},
      {tb.reset != nullptr, "reset"},       {tb.last_error != nullptr, "last_error"}};
  for (const auto &r : required)
    if (!r.first) throw bad(std::string("required entry '") + r.second + "' is NULL");
  if ((tb.defer_cleanup_begin == nullptr) != (tb.defer_cleanup_end == nullptr))
    throw bad("defer_cleanup_begin and defer_cleanup_end must be both present or both NULL");
  return {tb.name, tb.interface_version, [lib] { return std::make_unique<SharedObjectMemoryManager>(lib); }};
}

}  // namespace detail
}  // namespace gpuhal
