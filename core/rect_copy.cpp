// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "backend.hpp"
#include "context_impl.hpp"
#include "rect_copy.hpp"

namespace gpuhal::detail {

void submit_rect(const ContextImpl &ctx, uint32_t kind, const RectPlan &plan, gpuhal_deviceptr_t dst,
                 gpuhal_deviceptr_t src, gpuhal_stream_t stream) {
  gpuhal_copy_rect_t r{};
  r.abi_version = GPUHAL_ABI_VERSION;
  r.struct_size = sizeof r;
  r.dst = dst;
  r.src = src;
  r.dst_pitch = plan.dst_pitch;
  r.dst_slice_pitch = plan.dst_slice_pitch;
  r.src_pitch = plan.src_pitch;
  r.src_slice_pitch = plan.src_slice_pitch;
  r.width_bytes = plan.width_bytes;
  r.height = plan.height;
  r.depth = plan.depth;
  const Backend &t = ctx.backend();
  if (stream)
    ctx.check(t.memcpy_rect_async_status(ctx.handle, kind, &r, stream), "memcpy_rect_async");
  else
    ctx.check(t.memcpy_rect_sync_status(ctx.handle, kind, &r), "memcpy_rect_sync");
}

}  // namespace gpuhal::detail
