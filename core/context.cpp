// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "gpuhal/context.hpp"

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "gpuhal/memory.hpp"
#include "gpuhal/stream.hpp"
#include "handle_access.hpp"
#include "layers/leak_layer.hpp"
#include "runtime_impl.hpp"
#include "stream_impl.hpp"

namespace gpuhal {

namespace detail {

// A plugin that reports success must hand out a context.
static void check_context_handle(const ContextImpl &c) {
  if (!c.handle)
    throw Error(Status::ERROR_INVALID_PLUGIN,
                "plugin '" + c.lib().name() + "': context_create returned a NULL context and success");
}

std::shared_ptr<ContextImpl> create_context(const std::shared_ptr<RuntimeImpl> &runtime, DeviceImpl *device,
                                            const uint64_t *adopt) {
  auto ctx = std::make_shared<ContextImpl>();
  ctx->forks = fork_count();
  ctx->runtime = runtime;
  // The clock counts only where it can matter (below): elsewhere a launch or
  // a copy pays nothing for it.
  ctx->backend_.emplace(*runtime->backend, device->properties.exclusive_contexts ? &ctx->work : nullptr);
  ctx->device = device;
  if (adopt) {
    ctx->mark_external();  // its owner puts work on it too
    if (!ctx->backend().has_context_adopt())
      throw Error(Status::ERROR_NOT_SUPPORTED,
                  "Context::adopt: backend '" + ctx->lib().name() + "' cannot adopt another library's context");
    ctx->adopted = true;
    ctx->backend().context_adopt(device->ordinal, *adopt, &ctx->handle);
  } else {
    ctx->backend().context_create(device->ordinal, &ctx->handle);
  }
  check_context_handle(*ctx);
  // Where other libraries can put work on the vendor's context, only a
  // synchronisation of the whole context proves memory unused: no idle blocks
  // (and no clock, above).
  ctx->idle_blocks = device->properties.exclusive_contexts;
  ctx->spares_after_sync = device->properties.synchronize_waits_for_all_work;
  uint64_t max_count = 0;
  double ratio = 0;
  {
    std::lock_guard<std::mutex> lock(runtime->dealloc_limits_mutex);
    max_count = runtime->dealloc_count;
    ratio = runtime->dealloc_ratio;
  }
  const uint64_t max_bytes = dealloc_byte_limit(*device, ratio, "create_context");
  ContextImpl *raw = ctx.get();  // the queue lives inside the context
  ctx->deallocs = std::make_unique<DeallocQueue>(
      max_count, max_bytes,
      [raw] {
        if (raw->handle) raw->synchronize();
      },
      [raw](const Error &e) { raw->logger().write(LogLevel::Error, e.what()); }, &ctx->generation,
      [raw](uint64_t ptr) {
        if (raw->handle) raw->check(raw->backend().mem_free_status(raw->handle, ptr), "mem_free");
      });
  install_memory_manager(ctx);
  prepare_builtin_kernels(ctx);
  return ctx;
}

uint64_t dealloc_byte_limit(const DeviceImpl &device, double ratio, const char *call) {
  if (!(ratio >= 0.0 && ratio <= 1.0))
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": ratio " + std::to_string(ratio) +
                                                 " is not a fraction of device memory from 0 to 1");
  return uint64_t(double(device.properties.total_memory) * ratio);
}

void ContextImpl::defer_release(uint64_t gen, uint64_t bytes, std::function<gpuhal_status_t()> release,
                                const char *call) {
  if (inherited()) return;  // a child of fork(): the parent's object, never released here
  deallocs->add({[this, release = std::move(release), call] {
                   if (handle) check(release(), call);
                 },
                 bytes, gen});  // skipped by the queue once a reset freed it
}

void ContextImpl::defer_free(uint64_t gen, uint64_t bytes, gpuhal_deviceptr_t ptr) {
  if (inherited()) return;
  deallocs->add({[this, ptr] {
                   if (handle) check(backend().mem_free_status(handle, ptr), "mem_free");
                 },
                 bytes, gen});
}

void ContextImpl::release_old_host_visible(uintptr_t base) {
  if (!host_visible.release_rescued(base) || inherited()) return;
  if (backend().mem_free_kept_status(reinterpret_cast<void *>(base)) != GPUHAL_SUCCESS)
    logger().write(LogLevel::Error, "mem_free_kept of memory kept through a reset: " + lib().last_message());
}

void ContextImpl::unsupported_feature(const char *call, const char *feature) const {
  throw Error(Status::ERROR_NOT_SUPPORTED,
              std::string(call) + ": backend '" + lib().name() + "' has no " + feature);
}

void ContextImpl::synchronize() {
  const WorkClock::Reading before = work.read();
  backend().context_synchronize(handle);
  work.finish(before);
}

void ContextImpl::report_release_failure(gpuhal_status_t status, const char *call) const {
  try {
    check(status, call);
  } catch (const Error &e) {
    if (deallocs) deallocs->report(e);
  }
}

ContextImpl::~ContextImpl() {
  if (inherited()) {
    // A child of fork(): the plugin's state is the parent's. Nothing is
    // released (the child's copies of the memory go at its exit); the
    // manager and the queue are dropped without running anything.
    if (manager) (void)manager.release();
    if (deallocs) (void)deallocs.release();
    builtin_module.reset();  // ~ModuleImpl calls nothing in a child
    return;
  }
  // The core's kernels go first: their unload is queued and flushed below.
  builtin_module.reset();
  // The managers give back what they hold (into the queue, flushed next).
  retired_managers.push_back(std::move(manager));
  for (auto &m : retired_managers) {
    if (!m) continue;
    try {
      m->reset();
    } catch (const std::exception &e) {
      logger().write(LogLevel::Error, std::string("memory manager reset: ") + e.what());
    }
  }
  retired_managers.clear();
  if (deallocs) deallocs->flush(true);
  if (!handle) return;
  const gpuhal_status_t st = backend().context_destroy_status(handle);
  if (st != GPUHAL_SUCCESS) logger().write(LogLevel::Error, "context_destroy failed: " + lib().last_message());
}

void ContextImpl::context_destroyed(const char *what) const {
  if (inherited())
    throw Error(Status::ERROR_NOT_PERMITTED,
                std::string(what) +
                    ": this object was made by the parent process before fork(); its streams' threads and the "
                    "backend's state stay in the parent. Load a runtime in the child (Runtime::load, or "
                    "Context::current()) and make new objects there");
  if (!handle && reset_failure_status != Status::SUCCESS)
    throw Error(reset_failure_status, std::string(what) + ": Context::reset() could not make device " +
                                          std::to_string(device->ordinal) + "'s context anew (" + reset_failure +
                                          "); reset it again to retry");
  throw Error(Status::ERROR_CONTEXT_DESTROYED,
              std::string(what) + ": the context of device " + std::to_string(device->ordinal) +
                  " was reset; this object belonged to the old context and can no longer be used");
}

}  // namespace detail

Device Context::device() const {
  detail::require_handle(impl_, "Context::device");
  return Device(std::shared_ptr<detail::DeviceImpl>(impl_->runtime, impl_->device));
}

namespace {
Stream unowned_stream(const std::shared_ptr<detail::ContextImpl> &ctx, gpuhal_stream_t handle, const char *what) {
  auto s = detail::new_child<detail::StreamImpl>(ctx, what);
  s->handle = handle;
  return detail::Access::wrap<Stream>(s);
}
}  // namespace

Stream Context::default_stream() const {
  detail::require_handle(impl_, "Context::default_stream");
  return unowned_stream(impl_, nullptr, "Context::default_stream");
}
Stream Context::legacy_default_stream() const {
  detail::require_handle(impl_, "Context::legacy_default_stream");
  return unowned_stream(impl_, GPUHAL_STREAM_LEGACY, "Context::legacy_default_stream");
}
Stream Context::per_thread_default_stream() const {
  detail::require_handle(impl_, "Context::per_thread_default_stream");
  return unowned_stream(impl_, GPUHAL_STREAM_PER_THREAD, "Context::per_thread_default_stream");
}
Stream Context::external_stream(gpuhal_stream_t native) const {
  detail::require_handle(impl_, "Context::external_stream");
  if (!native)
    throw Error(Status::ERROR_INVALID_HANDLE, "Context::external_stream: null handle (use default_stream())");
  Stream s = unowned_stream(impl_, native, "Context::external_stream");
  impl_->mark_external();  // its owner puts work on it that gpuhal does not see
  // Whether busy blocks survive it is asked at its first use (StreamImpl::live).
  if (impl_->spares_after_sync && impl_->backend().has_context_waits_for_stream())
    detail::impl_of(s)->external_unproven.store(true, std::memory_order_release);
  else
    impl_->foreign_work.store(true, std::memory_order_relaxed);  // maybe of another vendor context
  return s;
}

Stream Context::create_stream(StreamKind kind) const {
  detail::require_handle(impl_, "Context::create_stream");
  auto s = detail::new_child<detail::StreamImpl>(impl_, "Context::create_stream");
  const uint32_t flags = kind == StreamKind::NonBlocking ? GPUHAL_STREAM_NON_BLOCKING : GPUHAL_STREAM_DEFAULT;
  impl_->backend().stream_create(impl_->handle, flags, &s->handle);
  s->owned = true;
  return detail::Access::wrap<Stream>(s);
}

Stream Context::create_stream(StreamKind kind, int priority) const {
  detail::require_handle(impl_, "Context::create_stream");
  impl_->require_feature(impl_->backend().has_stream_create_with_priority(), "Context::create_stream",
                         detail::kStreamPriorities);
  auto s = detail::new_child<detail::StreamImpl>(impl_, "Context::create_stream");
  const uint32_t flags = kind == StreamKind::NonBlocking ? GPUHAL_STREAM_NON_BLOCKING : GPUHAL_STREAM_DEFAULT;
  impl_->backend().stream_create_with_priority(impl_->handle, flags, int32_t(priority), &s->handle);
  s->owned = true;
  return detail::Access::wrap<Stream>(s);
}

StreamPriorityRange Context::stream_priority_range() const {
  detail::require_handle(impl_, "Context::stream_priority_range");
  impl_->check_alive(impl_->current_generation(), "Context::stream_priority_range");
  impl_->require_feature(impl_->backend().has_context_stream_priority_range(), "Context::stream_priority_range",
                         detail::kStreamPriorities);
  int32_t least = 0, greatest = 0;
  impl_->backend().context_stream_priority_range(impl_->handle, &least, &greatest);
  return StreamPriorityRange{least, greatest};
}

namespace {

uint32_t limit_code(Limit limit, const char *entry) {
  if (limit != Limit::PrintfBufferBytes && limit != Limit::StackBytes)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(entry) + ": unknown limit " +
                                                 std::to_string(uint32_t(limit)) +
                                                 " (Limit::PrintfBufferBytes or Limit::StackBytes)");
  return uint32_t(limit);
}

}  // namespace

void Context::set_limit(Limit limit, uint64_t bytes) const {
  detail::require_handle(impl_, "Context::set_limit");
  impl_->check_alive(impl_->current_generation(), "Context::set_limit");
  const uint32_t code = limit_code(limit, "Context::set_limit");
  impl_->require_feature(impl_->backend().has_context_set_limit(), "Context::set_limit", detail::kContextLimits);
  impl_->backend().context_set_limit(impl_->handle, code, bytes);
}

uint64_t Context::limit(Limit limit) const {
  detail::require_handle(impl_, "Context::limit");
  impl_->check_alive(impl_->current_generation(), "Context::limit");
  const uint32_t code = limit_code(limit, "Context::limit");
  impl_->require_feature(impl_->backend().has_context_get_limit(), "Context::limit", detail::kContextLimits);
  uint64_t value = 0;
  impl_->backend().context_get_limit(impl_->handle, code, &value);
  return value;
}

Event Context::create_event(bool enable_timing) const {
  detail::require_handle(impl_, "Context::create_event");
  auto e = detail::new_child<detail::EventImpl>(impl_, "Context::create_event");
  impl_->backend().event_create(impl_->handle,
                                       enable_timing ? GPUHAL_EVENT_DEFAULT : GPUHAL_EVENT_DISABLE_TIMING, &e->handle);
  return detail::Access::wrap<Event>(e);
}

void Context::synchronize() const {
  detail::require_handle(impl_, "Context::synchronize");
  impl_->check_alive(impl_->current_generation(), "Context::synchronize");
  impl_->synchronize();
}

namespace {

uint64_t native_handle(const std::shared_ptr<detail::ContextImpl> &impl, int32_t kind, const char *what) {
  detail::require_handle(impl, what);
  impl->check_alive(impl->current_generation(), what);
  if (!impl->backend().has_native_handle())
    throw Error(Status::ERROR_NOT_SUPPORTED,
                std::string(what) + ": backend '" + impl->lib().name() + "' gives no native handles");
  uint64_t out = 0;
  impl->backend().native_handle(impl->handle, kind, &out);
  impl->mark_external();  // vendor libraries may put work on it now
  return out;
}

}  // namespace

void *Context::native_context() const {
  return reinterpret_cast<void *>(uintptr_t(native_handle(impl_, GPUHAL_NATIVE_CONTEXT, "Context::native_context")));
}

uint64_t Context::native_device() const {
  return native_handle(impl_, GPUHAL_NATIVE_DEVICE, "Context::native_device");
}

MemoryInfo Context::memory_info() const {
  detail::require_handle(impl_, "Context::memory_info");
  impl_->check_alive(impl_->current_generation(), "Context::memory_info");
  return impl_->manager->get_memory_info();
}

DeviceMemory Context::allocate(uint64_t bytes) const {
  detail::require_handle(impl_, "Context::allocate");
  impl_->check_alive(impl_->current_generation(), "allocate");
  if (bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, "allocate: size must be positive");
  if (bytes > uint64_t(INT64_MAX))
    throw Error(Status::ERROR_SIZE_OVERFLOW, "allocate: " + std::to_string(bytes) + " bytes exceeds the largest size");
  if (impl_->default_manager) return detail::Access::wrap<DeviceMemory>(detail::allocate(impl_, bytes));
  DeviceMemory m = impl_->manager->memalloc(bytes);
  if (!m || m.size() < bytes || detail::impl_of(m)->ctx != impl_)
    throw Error(Status::ERROR_INVALID_VALUE, "allocate: memory manager '" + impl_->manager->name() +
                                                 "' returned no memory, too little, or memory of another context");
  return m;
}

DeviceMemory Context::allocate_async(uint64_t bytes, const Stream &stream) const {
  detail::require_handle(impl_, "Context::allocate_async");
  auto &c = *impl_;
  c.check_alive(c.current_generation(), "allocate_async");
  if (!detail::impl_of(stream) || detail::impl_of(stream)->ctx != impl_)
    throw Error(Status::ERROR_INVALID_HANDLE, "allocate_async: the stream is empty or belongs to another context");
  const gpuhal_stream_t s = detail::impl_of(stream)->live("allocate_async");
  if (!c.backend().has_mem_alloc_async())
    throw Error(Status::ERROR_NOT_SUPPORTED,
                "allocate_async: backend '" + c.lib().name() + "' has no stream-ordered allocation");
  if (bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, "allocate_async: size must be positive");
  if (bytes > uint64_t(INT64_MAX))
    throw Error(Status::ERROR_SIZE_OVERFLOW,
                "allocate_async: " + std::to_string(bytes) + " bytes exceeds the largest size");
  auto a = std::make_shared<detail::Allocation>();
  a->ctx = impl_;
  a->generation = c.current_generation();
  a->size = bytes;
  gpuhal_status_t st = c.backend().mem_alloc_async_status(c.handle, bytes, s, &a->ptr);
  if (st == GPUHAL_ERROR_OUT_OF_MEMORY && c.deallocs->flush() > 0)
    st = c.backend().mem_alloc_async_status(c.handle, bytes, s, &a->ptr);
  if (st != GPUHAL_SUCCESS) a->ptr = 0;
  c.check(st, "mem_alloc_async");
  a->free_stream = detail::impl_of(stream);
  return detail::Access::wrap<DeviceMemory>(a);
}

void Context::enable_peer_access(const Context &peer) const {
  detail::require_handle(impl_, "Context::enable_peer_access");
  auto &c = *impl_;
  c.check_alive(c.current_generation(), "enable_peer_access");
  if (!peer.impl_) throw Error(Status::ERROR_INVALID_HANDLE, "enable_peer_access: null peer context");
  peer.impl_->check_alive(peer.impl_->current_generation(), "enable_peer_access");
  if (peer.impl_->runtime != impl_->runtime || peer.impl_->device == impl_->device)
    throw Error(Status::ERROR_INVALID_VALUE,
                "enable_peer_access: the peer must be a context of another device of the same runtime");
  if (!c.backend().has_context_enable_peer_access())
    throw Error(Status::ERROR_NOT_SUPPORTED, "enable_peer_access: backend '" + c.lib().name() + "' has no peer access");
  c.backend().context_enable_peer_access(c.handle, peer.impl_->handle);
  // This context's kernels may reach the peer's memory now: work the peer's
  // clock does not count, and the peer's synchronise does not wait for.
  peer.impl_->mark_external();
  peer.impl_->foreign_work.store(true, std::memory_order_relaxed);
}

MemoryManager &Context::memory_manager() const {
  detail::require_handle(impl_, "Context::memory_manager");
  return *impl_->manager;
}

Context Context::adopt(const Device &device, void *native_context) {
  if (!device.impl_) throw Error(Status::ERROR_INVALID_HANDLE, "Context::adopt: empty device");
  if (!native_context) throw Error(Status::ERROR_INVALID_VALUE, "Context::adopt: null native context");
  const uint64_t native = uint64_t(reinterpret_cast<uintptr_t>(native_context));
  detail::DeviceImpl *d = device.impl_.get();
  return Context(detail::create_context(std::shared_ptr<detail::RuntimeImpl>(device.impl_, d->runtime), d, &native));
}

bool Context::adopted() const {
  detail::require_handle(impl_, "Context::adopted");
  return impl_->adopted;
}

void Context::reset() const {
  detail::require_handle(impl_, "Context::reset");
  auto &c = *impl_;
  if (c.adopted)
    throw Error(Status::ERROR_NOT_PERMITTED,
                "Context::reset: an adopted context belongs to the library that made it (reset it there)");
  // The managers free what they hold while the old context still exists;
  // a failure does not stop the reset (the context frees everything anyway).
  auto reset_manager = [&c](MemoryManager &m) {
    try {
      m.reset();
    } catch (const std::exception &e) {
      c.logger().write(LogLevel::Error, std::string("reset: memory manager reset failed: ") + e.what());
    }
  };
  reset_manager(*c.manager);
  for (auto &m : c.retired_managers) reset_manager(*m);
  // Run what is queued while the old context still exists.
  if (c.deallocs) c.deallocs->flush(true);
  if (c.handle) {
    // Let queued work finish so that callbacks run before their context goes.
    const gpuhal_status_t st = c.backend().context_synchronize_status(c.handle);
    if (st != GPUHAL_SUCCESS)
      c.logger().write(LogLevel::Warn, "reset: context_synchronize failed: " + c.lib().last_message());
    c.generation.fetch_add(1, std::memory_order_acq_rel);
    {
      std::lock_guard<std::mutex> lock(c.registrations_mutex);
      c.registrations.clear();  // the plugin drops them with the context
      c.user_registrations.clear();
    }
    // Host arrays over the backend's memory outlive the context's memory
    // (host_visible_memory.hpp): kept by the backend where it can (mem_keep),
    // else copied aside now and put back after the destroy.
    gpuhal_context_t old = c.handle;
    std::function<bool(uintptr_t)> keep;
    if (c.backend().has_mem_keep())
      keep = [&c, old](uintptr_t base) {
        if (c.backend().mem_keep_status(old, reinterpret_cast<void *>(base)) == GPUHAL_SUCCESS) return true;
        c.logger().write(LogLevel::Warn, "reset: mem_keep: " + c.lib().last_message() + "; copied aside instead");
        return false;
      };
    c.host_visible.save(c.logger(), keep);
    c.handle = nullptr;
    {
      const detail::layers::ResetScope resetting;  // the leak layer's: what is kept is kept on purpose
      // The old context is gone whatever the plugin reports (plugin.h), so a
      // new one is made all the same: a failure here (CUDA's synchronize
      // refuses while a stream captures, for one) is logged, not thrown,
      // which would leave the context without a handle until a second reset.
      if (c.backend().context_destroy_status(old) != GPUHAL_SUCCESS)
        c.logger().write(LogLevel::Warn, "reset: context_destroy reported: " + c.lib().last_message());
    }
    c.host_visible.restore(c.logger());
  } else {
    c.generation.fetch_add(1, std::memory_order_acq_rel);
  }
  try {
    c.backend().context_create(c.device->ordinal, &c.handle);
  } catch (const Error &e) {
    // Without a context every use reports why (context_destroyed), e.g. a
    // fault the vendor keeps until the process ends (Capability::FaultRecovery).
    c.reset_failure_status = e.status();
    c.reset_failure = e.what();
    throw;
  }
  c.reset_failure_status = Status::SUCCESS;
  c.reset_failure.clear();
  check_context_handle(c);
  c.manager->initialize();
  detail::prepare_builtin_kernels(impl_);
}

size_t Context::pending_deallocations() const {
  detail::require_handle(impl_, "Context::pending_deallocations");
  return impl_->deallocs->count();
}
uint64_t Context::pending_deallocation_bytes() const {
  return impl_->deallocs->bytes();
}
void Context::set_pending_deallocation_limits(uint64_t count, double ratio) const {
  detail::require_handle(impl_, "Context::set_pending_deallocation_limits");
  impl_->deallocs->set_limits(
      count, detail::dealloc_byte_limit(*impl_->device, ratio, "Context::set_pending_deallocation_limits"));
}
Context::PendingDeallocationLimits Context::pending_deallocation_limits() const {
  detail::require_handle(impl_, "Context::pending_deallocation_limits");
  return {impl_->deallocs->max_count(), impl_->deallocs->max_bytes()};
}
size_t Context::flush_deallocations() const {
  detail::require_handle(impl_, "Context::flush_deallocations");
  return impl_->deallocs->flush();
}

void Context::defer_release(std::function<void()> release, uint64_t bytes) const {
  detail::require_handle(impl_, "Context::defer_release");
  if (!release) throw Error(Status::ERROR_INVALID_VALUE, "Context::defer_release: empty function");
  impl_->deallocs->add({std::move(release), bytes});
}

void Context::set_deallocation_error_handler(std::function<void(const Error &)> handler) const {
  detail::require_handle(impl_, "Context::set_deallocation_error_handler");
  if (!handler) {
    detail::ContextImpl *raw = impl_.get();
    handler = [raw](const Error &e) { raw->logger().write(LogLevel::Error, e.what()); };
  }
  impl_->deallocs->set_error_handler(std::move(handler));
}

DeferCleanup::DeferCleanup(Context ctx) : ctx_(std::move(ctx)) {
  if (!detail::impl_of(ctx_)) throw Error(Status::ERROR_INVALID_HANDLE, "DeferCleanup: null context");
  detail::impl_of(ctx_)->deallocs->defer_begin();
  detail::impl_of(ctx_)->manager->defer_cleanup_begin();
}

DeferCleanup::~DeferCleanup() {
  detail::impl_of(ctx_)->manager->defer_cleanup_end();
  detail::impl_of(ctx_)->deallocs->defer_end();
}

bool Context::supports(Capability capability) const {
  detail::require_handle(impl_, "Context::supports");
  return device().runtime().supports(capability);
}

}  // namespace gpuhal
