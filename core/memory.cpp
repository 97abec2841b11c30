// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "gpuhal/memory.hpp"

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"
#include "spare_chunk.hpp"
#include "stream_impl.hpp"

namespace gpuhal {

namespace detail {

Allocation::~Allocation() {
  if (!ptr) return;
  const bool visible = host_visible.load(std::memory_order_relaxed);
  // After a reset the plugin already freed everything of the old context;
  // what host code could still address was kept as host memory, unmapped now.
  if (generation != ctx->current_generation() || ctx->inherited()) {
    if (visible) ctx->release_old_host_visible(uintptr_t(ptr));
    return;
  }
  if (visible) ctx->host_visible.untrack(uintptr_t(ptr));
  if (releaser) {
    release_to_manager(*releaser, ptr, size, cookie);
    return;
  }
  if (free_stream) {  // stream-ordered: no need to wait, nothing to defer
    // A failure leaves the memory to the context's destruction or reset.
    const gpuhal_status_t st = ctx->backend().mem_free_async_status(ctx->handle, ptr, free_stream->handle);
    if (st != GPUHAL_SUCCESS) ctx->report_release_failure(st, "mem_free_async");
    return;
  }
  if (!owns_device_memory) return;
  ContextImpl *c = ctx.get();
  // Released while none of the context's work can be in flight: nothing uses
  // it, so it is kept as an idle block (a pending deallocation, counted as
  // Numba counts it), which the next flush over the limits makes a spare
  // for an allocation of its size (dealloc_queue.hpp). Released while work
  // may use it, where the flush's synchronise waits for all of the
  // context's work: a busy block, a spare once that synchronise is done.
  if (c->keeps_blocks() && !managed && !exported.load(std::memory_order_relaxed)) {
    const bool idle = c->idle_blocks && c->work_idle();
    const bool busy_ok = c->spares_after_sync && !c->foreign_work.load(std::memory_order_relaxed);
    if ((idle || busy_ok) && c->deallocs->keep_block(ptr, size, generation, !idle)) return;
  }
  try {
    c->defer_free(generation, size, ptr);
  } catch (const std::exception &e) {  // a flush triggered here failed to allocate
    c->logger().write(LogLevel::Error, std::string("deferred free of device memory: ") + e.what());
  }
}

gpuhal_deviceptr_t backend_alloc(ContextImpl &ctx, uint64_t bytes, bool managed) {
  ctx.check_alive(ctx.current_generation(), "allocate");
  if (bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, "allocate: size must be positive");
  if (bytes > uint64_t(INT64_MAX))
    throw Error(Status::ERROR_SIZE_OVERFLOW, "allocate: " + std::to_string(bytes) + " bytes exceeds the largest size");
  const char *call = managed ? "mem_alloc_managed" : "mem_alloc";
  if (managed && !ctx.backend().has_mem_alloc_managed())
    throw Error(Status::ERROR_NOT_SUPPORTED,
                "managed memory: backend '" + ctx.lib().name() + "' has none (Capability::ManagedMemory)");
  const detail::Backend &b = ctx.backend();
  auto alloc = [&](gpuhal_context_t h, uint64_t n, gpuhal_deviceptr_t *out) {
    return managed ? b.mem_alloc_managed_status(h, n, out) : b.mem_alloc_status(h, n, out);
  };
  gpuhal_deviceptr_t ptr = 0;
  gpuhal_status_t st = alloc(ctx.handle, bytes, &ptr);
  if (st == GPUHAL_ERROR_OUT_OF_MEMORY) {
    // Numba's rule (_attempt_allocation): free what is pending, then try
    // once more, also when the flush freed nothing: memory may have come
    // back meanwhile by other ways (another thread's frees, a pool the
    // driver trims, work that completed).
    const size_t freed = ctx.deallocs->flush();
    ctx.logger().write(LogLevel::Debug, std::string(call) + " of " + std::to_string(bytes) + " bytes: out of memory; " +
                                            std::to_string(freed) + " deferred release(s) run, retrying once");
    st = alloc(ctx.handle, bytes, &ptr);
  }
  ctx.check(st, call);
  return ptr;
}

std::shared_ptr<Allocation> allocate(const std::shared_ptr<ContextImpl> &ctx, uint64_t bytes, bool managed) {
  // The handle's chunk comes from the thread's spare slot when the last
  // handle released on this thread left one there (spare_chunk.hpp).
  auto a = std::allocate_shared<Allocation>(SpareChunkAllocator<Allocation>());
  a->ctx = ctx;
  a->generation = ctx->current_generation();
  a->size = bytes;
  a->managed = managed;
  // A spare block of exactly this size (released while nothing could use
  // it, no longer pending since a flush over the limits): the plugin's
  // allocation of the same bytes, so its bounds are the same as a new one's.
  if (!managed && ctx->keeps_blocks()) {
    ctx->check_alive(a->generation, "allocate");
    a->ptr = ctx->deallocs->take_block(bytes, a->generation);
  }
  if (!a->ptr) a->ptr = backend_alloc(*ctx, bytes, managed);
  if (managed) a->mark_host_visible();
  return a;
}

void Allocation::mark_host_visible() {
  // Memory of the backend's context: its own allocations, a manager's
  // blocks, IPC mappings; never a view of memory someone else owns.
  if (!ptr || views_host_memory || host_visible.exchange(true, std::memory_order_relaxed)) return;
  ctx->host_visible.track(uintptr_t(ptr), size);
}

std::shared_ptr<Allocation> allocate_managed(const std::shared_ptr<ContextImpl> &ctx, uint64_t bytes) {
  return allocate(ctx, bytes, true);
}

}  // namespace detail

gpuhal_deviceptr_t DeviceMemory::device_pointer() const {
  return impl_ ? impl_->ptr : 0;
}
uint64_t DeviceMemory::size() const {
  return impl_ ? impl_->size : 0;
}
Context DeviceMemory::context() const {
  if (!impl_) throw Error(Status::ERROR_INVALID_HANDLE, "DeviceMemory::context: empty handle");
  return detail::Access::wrap<Context>(impl_->ctx);
}

}  // namespace gpuhal
