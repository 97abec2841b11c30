// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// prefetch / advise (gpuhal/managed_hints.hpp) over the plugin's
// mem_prefetch_async / mem_advise.
#include "gpuhal/managed_hints.hpp"

#include <string>

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "graph_impl.hpp"
#include "handle_access.hpp"

namespace gpuhal {

namespace {

inline constexpr const char *kManagedHints = "managed-memory hints (Capability::ManagedHints)";

// The checks both calls make; returns the context.
std::shared_ptr<detail::ContextImpl> checked(const DeviceArray &a, Location where, const char *call) {
  const DeviceMemory &memory = a.memory();
  std::shared_ptr<detail::ContextImpl> ctx;
  try {
    ctx = detail::impl_of(a.context());
  } catch (const Error &) {
    ctx = nullptr;
  }
  if (!ctx) throw Error(Status::ERROR_INVALID_HANDLE, std::string(call) + ": empty array");
  ctx->check_alive(memory ? detail::impl_of(memory)->generation : ctx->current_generation(), call);
  ctx->require_feature(ctx->backend().has_mem_prefetch_async(), call, kManagedHints);
  if (a.size() != 0 && !a.is_managed())
    throw Error(Status::ERROR_INVALID_VALUE,
                std::string(call) + ": not a managed array (hints apply to managed_array's memory only)");
  const int devices = int(ctx->runtime->devices.size());
  if (!where.is_host() && where.ordinal() >= devices)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": device " + std::to_string(where.ordinal()) +
                                                 " does not exist (the runtime has " + std::to_string(devices) + ")");
  return ctx;
}

// Bytes [offset, offset + bytes) of `memory` as a uint8 array.
DeviceArray byte_range(const DeviceMemory &memory, uint64_t offset, uint64_t bytes, const char *call) {
  if (!memory) throw Error(Status::ERROR_INVALID_HANDLE, std::string(call) + ": empty memory");
  const uint64_t size = memory.size();
  if (offset > size || bytes > size - offset)
    throw Error(Status::ERROR_INDEX_OUT_OF_RANGE, std::string(call) + ": bytes [" + std::to_string(offset) + ", " +
                                                      std::to_string(offset) + " + " + std::to_string(bytes) +
                                                      ") reach past the memory's " + std::to_string(size));
  const DeviceArray whole(memory, Layout::make({int64_t(size)}, 1), dtypes::uint8);
  return whole.view({Slice(int64_t(offset), int64_t(offset + bytes))});
}

int32_t location_value(Location l) {
  return l.is_host() ? GPUHAL_LOCATION_HOST : int32_t(l.ordinal());
}

}  // namespace

void prefetch(const DeviceArray &managed, Location to, const Stream &stream) {
  const char *call = "prefetch";
  const std::shared_ptr<detail::ContextImpl> ctx = checked(managed, to, call);
  const gpuhal_stream_t sh = detail::transfer_stream(ctx, stream, call, managed.memory());
  if (managed.size() == 0) return;
  const gpuhal_deviceptr_t begin = managed.memory().device_pointer() + uint64_t(managed.layout().span_begin());
  ctx->check(ctx->backend().mem_prefetch_async_status(ctx->handle, begin, uint64_t(managed.alloc_size()),
                                                      location_value(to), sh),
             "mem_prefetch_async");
}

void advise(const DeviceArray &managed, Advice advice, Location where) {
  const char *call = "advise";
  const std::shared_ptr<detail::ContextImpl> ctx = checked(managed, where, call);
  const auto a = uint32_t(advice);
  if (a < GPUHAL_ADVISE_SET_READ_MOSTLY || a > GPUHAL_ADVISE_UNSET_ACCESSED_BY)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": unknown advice " + std::to_string(a));
  if (managed.size() == 0) return;
  const gpuhal_deviceptr_t begin = managed.memory().device_pointer() + uint64_t(managed.layout().span_begin());
  ctx->check(ctx->backend().mem_advise_status(ctx->handle, begin, uint64_t(managed.alloc_size()), a,
                                              location_value(where)),
             "mem_advise");
}

void prefetch(const DeviceMemory &managed, uint64_t offset, uint64_t bytes, Location to, const Stream &stream) {
  prefetch(byte_range(managed, offset, bytes, "prefetch"), to, stream);
}

void advise(const DeviceMemory &managed, uint64_t offset, uint64_t bytes, Advice advice, Location where) {
  advise(byte_range(managed, offset, bytes, "advise"), advice, where);
}

}  // namespace gpuhal
