// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The memory-manager interface: the base class's defaults and building
// blocks, the default manager, and which factory a new context uses.
#include "gpuhal/memory_manager.hpp"

#include <mutex>
#include <optional>
#include <typeinfo>

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"
#include "spare_chunk.hpp"

namespace gpuhal {

namespace {
detail::ProcessMutex g_factory_mu;
std::optional<MemoryManagerFactory> g_factory;  // set_memory_manager's
}  // namespace

MemoryManager::~MemoryManager() = default;

Context MemoryManager::context() const {
  auto c = weak_ctx_.lock();
  if (!c) throw Error(Status::ERROR_CONTEXT_DESTROYED, "MemoryManager::context: the context is being destroyed");
  return detail::Access::wrap<Context>(c);
}

gpuhal_deviceptr_t MemoryManager::backend_alloc(uint64_t bytes) const {
  if (!ctx_) throw Error(Status::ERROR_INVALID_HANDLE, "MemoryManager: not attached to a context");
  return detail::backend_alloc(*ctx_, bytes);
}

void MemoryManager::backend_free(gpuhal_deviceptr_t ptr, uint64_t bytes) const {
  if (!ctx_ || !ptr) return;
  detail::ContextImpl *c = ctx_;
  try {
    c->defer_free(c->current_generation(), bytes, ptr);
  } catch (const std::exception &e) {
    c->logger().write(LogLevel::Error, std::string("memory manager free: ") + e.what());
  }
}

DeviceMemory MemoryManager::wrap(gpuhal_deviceptr_t ptr, uint64_t bytes, std::function<void()> on_release) const {
  auto c = weak_ctx_.lock();
  if (!c) throw Error(Status::ERROR_CONTEXT_DESTROYED, "MemoryManager::wrap: the context is being destroyed");
  const uint64_t gen = c->current_generation();
  detail::ContextImpl *raw = c.get();
  auto a = std::make_shared<detail::Allocation>();
  a->ctx = std::move(c);
  a->ptr = ptr;
  a->size = bytes;
  a->generation = gen;
  a->owns_device_memory = false;
  // The token goes before `ctx` (declared later, destroyed first), so the
  // context is alive while on_release runs.
  a->keep_alive = std::shared_ptr<void>(
      reinterpret_cast<void *>(uintptr_t(ptr)), [raw, gen, release = std::move(on_release)](void *) {
        if (gen != raw->current_generation()) return;  // the reset freed it
        try {
          release();
        } catch (const std::exception &e) {
          raw->logger().write(LogLevel::Error, std::string("memory manager release: ") + e.what());
        }
      });
  return detail::Access::wrap<DeviceMemory>(a);
}

DeviceMemory MemoryManager::wrap_block(gpuhal_deviceptr_t ptr, uint64_t bytes, uint64_t cookie) {
  auto c = weak_ctx_.lock();
  if (!c) throw Error(Status::ERROR_CONTEXT_DESTROYED, "MemoryManager::wrap_block: the context is being destroyed");
  // The handle's chunk from the thread's spare slot, as detail::allocate's
  // (spare_chunk.hpp): a pool hit is made and dropped at a high rate.
  auto a = std::allocate_shared<detail::Allocation>(detail::SpareChunkAllocator<detail::Allocation>());
  a->generation = c->current_generation();
  a->ctx = std::move(c);
  a->ptr = ptr;
  a->size = bytes;
  a->owns_device_memory = false;
  a->releaser = this;  // the context (kept alive by `a`) owns this manager
  a->cookie = cookie;
  return detail::Access::wrap<DeviceMemory>(std::move(a));
}

void MemoryManager::release_block(gpuhal_deviceptr_t, uint64_t, uint64_t) {
  throw Error(Status::ERROR_NOT_SUPPORTED,
              "memory manager '" + name() + "' used wrap_block but does not override release_block");
}

MemoryInfo MemoryManager::backend_memory_info() const {
  if (!ctx_) throw Error(Status::ERROR_INVALID_HANDLE, "MemoryManager: not attached to a context");
  MemoryInfo info;
  ctx_->backend().memory_info(ctx_->handle, &info.free, &info.total);
  return info;
}

std::shared_ptr<void> MemoryManager::memhostalloc(uint64_t bytes, HostMemoryFlags flags) {
  return detail::backend_host_alloc(detail::impl_of(context()), bytes, flags);
}

HostRegistration MemoryManager::mempin(const HostView &view, bool mapped) {
  return register_host(context(), view, HostMemoryFlags{false, mapped, false});
}

IpcHandle MemoryManager::get_ipc_handle(const DeviceMemory &memory, uint64_t offset, uint64_t size) {
  return detail::backend_ipc_handle(memory, offset, size);
}

MemoryInfo MemoryManager::get_memory_info() {
  return backend_memory_info();
}

DeviceMemory DefaultMemoryManager::memalloc(uint64_t bytes) {
  return detail::Access::wrap<DeviceMemory>(detail::allocate(detail::impl_of(context()), bytes));
}

MemoryManagerFactory default_memory_manager() {
  return {"default", MemoryManager::kInterfaceVersion, [] { return std::make_unique<DefaultMemoryManager>(); }};
}

MemoryManagerFactory pool_memory_manager(PoolOptions options) {
  return {"pool", MemoryManager::kInterfaceVersion, [options] { return std::make_unique<PoolMemoryManager>(options); }};
}

void set_memory_manager(MemoryManagerFactory factory) {
  if (!factory.create) throw Error(Status::ERROR_INVALID_VALUE, "set_memory_manager: the factory makes nothing");
  if (factory.interface_version != MemoryManager::kInterfaceVersion)
    throw Error(Status::ERROR_ABI_MISMATCH, "set_memory_manager: memory manager '" + factory.name +
                                                "' has interface version " + std::to_string(factory.interface_version) +
                                                " - version " + std::to_string(MemoryManager::kInterfaceVersion) +
                                                " required");
  std::lock_guard<detail::ProcessMutex> lock(g_factory_mu);
  g_factory = std::move(factory);
}

void clear_memory_manager() {
  std::lock_guard<detail::ProcessMutex> lock(g_factory_mu);
  g_factory.reset();
}

namespace detail {

void attach_memory_manager(MemoryManager &mm, const std::shared_ptr<ContextImpl> &ctx) {
  mm.weak_ctx_ = ctx;
  mm.ctx_ = ctx.get();
}

void release_to_manager(MemoryManager &mm, gpuhal_deviceptr_t ptr, uint64_t bytes, uint64_t cookie) noexcept {
  try {
    mm.release_block(ptr, bytes, cookie);
  } catch (const std::exception &e) {
    if (mm.ctx_) mm.ctx_->logger().write(LogLevel::Error, std::string("memory manager release: ") + e.what());
  }
}

namespace {

void check_interface_version(const MemoryManager &mm, const std::string &name) {
  if (mm.interface_version() != MemoryManager::kInterfaceVersion)
    throw Error(Status::ERROR_ABI_MISMATCH, "memory manager '" + name + "' has interface version " +
                                                std::to_string(mm.interface_version()) + " - version " +
                                                std::to_string(MemoryManager::kInterfaceVersion) + " required");
}

}  // namespace

void install_memory_manager(const std::shared_ptr<ContextImpl> &ctx) {
  MemoryManagerFactory factory;
  {
    std::lock_guard<detail::ProcessMutex> lock(g_factory_mu);
    factory = g_factory ? *g_factory : ctx->runtime->memory_manager;
  }
  if (!factory.create) factory = default_memory_manager();
  std::unique_ptr<MemoryManager> mm = factory.create();
  if (!mm) throw Error(Status::ERROR_INVALID_VALUE, "memory manager '" + factory.name + "': the factory made nothing");
  check_interface_version(*mm, factory.name);
  attach_memory_manager(*mm, ctx);
  mm->initialize();
  const MemoryManager &made = *mm;
  ctx->default_manager = typeid(made) == typeid(DefaultMemoryManager);  // exactly it, not a subclass
  ctx->manager = std::move(mm);
}

}  // namespace detail

void Context::set_memory_manager(std::unique_ptr<MemoryManager> manager) const {
  detail::require_handle(impl_, "Context::set_memory_manager");
  if (!manager) throw Error(Status::ERROR_INVALID_VALUE, "Context::set_memory_manager: null manager");
  auto &c = *impl_;
  c.check_alive(c.current_generation(), "Context::set_memory_manager");
  detail::check_interface_version(*manager, manager->name());
  detail::attach_memory_manager(*manager, impl_);
  manager->initialize();
  const MemoryManager &made = *manager;
  c.retired_managers.push_back(std::move(c.manager));
  c.default_manager = typeid(made) == typeid(DefaultMemoryManager);
  c.manager = std::move(manager);
}

}  // namespace gpuhal
