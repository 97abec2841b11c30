#include "gpuhal/memory.hpp"

#include "internal.hpp"

namespace gpuhal {

namespace detail {

Allocation::~Allocation() {
  // After a reset the plugin already freed everything of the old context.
  if (!ptr || generation != ctx->current_generation()) return;
  if (ctx->t().mem_free(ctx->handle, ptr) != GPUHAL_SUCCESS)
    ctx->logger().write(LogLevel::Error, "mem_free failed: " + std::string(ctx->t().last_error()));
}

std::shared_ptr<Allocation> allocate(const std::shared_ptr<ContextImpl> &ctx, uint64_t bytes) {
  const uint64_t gen = ctx->current_generation();
  ctx->check_alive(gen, "allocate");
  if (bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, "allocate: size must be positive");
  if (bytes > uint64_t(INT64_MAX))
    throw Error(Status::ERROR_SIZE_OVERFLOW, "allocate: " + std::to_string(bytes) + " bytes exceeds the largest size");
  auto a = std::make_shared<Allocation>();
  a->ctx = ctx;
  a->generation = gen;
  a->size = bytes;
  ctx->check(ctx->t().mem_alloc(ctx->handle, bytes, &a->ptr), "mem_alloc");
  return a;
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
  return Context(impl_->ctx);
}

}  // namespace gpuhal
