// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake runtime: the copy engine (hsa_amd_memory_async_copy) and its
// profiling.
#include "fake_hsa.hpp"

using namespace fake_hsa;

namespace fake_hsa {

void copy_main() {
  for (;;) {
    CopyJob job;
    {
      std::unique_lock<std::mutex> lock(g_copy_mu);
      g_copy_cv.wait(lock, [] { return g_copy_stop || !g_copies.empty(); });
      if (g_copies.empty()) return;
      job = g_copies.front();
      g_copies.pop_front();
    }
    bool failed = g_fail_next_copy.exchange(false);
    for (FSignal *d : job.deps)
      if (signal_wait(d, HSA_SIGNAL_CONDITION_LT, 1) < 0) failed = true;  // a failed dependency fails the copy
    if (failed) {
      signal_set(job.done, -1);  // "setting the value of the completion signal to a negative number"
      continue;
    }
    const uint64_t start = now_ns();
    for (size_t z = 0; z < job.depth; ++z)
      for (size_t y = 0; y < job.height; ++y)
        std::memmove(static_cast<char *>(job.dst) + z * job.dst_slice + y * job.dst_pitch,
                     static_cast<const char *>(job.src) + z * job.src_slice + y * job.src_pitch, job.size);
    if (job.profiled) {  // "if the async copy profiling is enabled prior to the call"
      job.done->start_ts = start;
      job.done->end_ts = now_ns();
    }
    signal_add(job.done, -1);
  }
}


}  // namespace fake_hsa

EXPORT hsa_status_t hsa_amd_memory_async_copy(void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                                              size_t size, uint32_t ndeps, const hsa_signal_t *deps,
                                              hsa_signal_t completion) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_memory_async_copy"); f != HSA_STATUS_SUCCESS) return f;
  if (!dst || !src || !is_agent(dst_agent) || !is_agent(src_agent) || (ndeps && !deps))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  CopyJob job{dst, src, size, {}, sig(completion), g_copy_profiling.load()};
  if (!job.done) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  for (uint32_t i = 0; i < ndeps; ++i) {
    FSignal *d = sig(deps[i]);
    if (!d) return HSA_STATUS_ERROR_INVALID_SIGNAL;
    job.deps.push_back(d);
  }
  {
    // Both sides must be memory the copy engines can reach: pool memory or
    // locked / registered host memory (pageable memory faults on a GPU).
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto [p, agent] : {std::make_pair(uintptr_t(dst), dst_agent), std::make_pair(uintptr_t(src), src_agent)})
      if (!in_allocation(p, size) && !(agent.handle == kCpuAgent && in_host_accessible(p, size)))
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  {
    std::lock_guard<std::mutex> lock(g_copy_mu);
    g_copies.push_back(std::move(job));
  }
  g_copy_cv.notify_one();
  return HSA_STATUS_SUCCESS;
}

// hsa_ext_amd.h, hsa_amd_memory_async_copy_rect ("Provisional API"), kept
// as written:
//  - hsa_pitched_ptr_t: "All elements must be 4 byte aligned. Pitch and
//    slice are in bytes."
//  - "The same requirements must be met by src and dst as in
//    hsa_amd_memory_async_copy": memory the copy engines reach, non-NULL
//    pointers, a valid completion signal.
//  - "Both src and dst must be directly accessible to the copy_agent during
//    the copy, src and dst rects must not overlap."
//  - "CPU agents are not supported."
//  - "Offsets and range carry x in bytes, y and z in rows and layers."
// A row reaching past its pitch, or a slice past its slice pitch, is
// refused as an invalid argument (the rectangle would not be one).
namespace {

struct RectSide {
  uintptr_t first;  // the region's first byte
  size_t extent;    // bytes from it to one past its last
};

bool rect_side(const hsa_pitched_ptr_t *p, const hsa_dim3_t *off, const hsa_dim3_t *range, RectSide *out) {
  if ((uintptr_t(p->base) | p->pitch | p->slice) & 3) return false;  // "must be 4 byte aligned"
  if ((range->y > 1 || range->z > 1) && off->x + uint64_t(range->x) > p->pitch) return false;
  if (range->z > 1 && (off->y + uint64_t(range->y)) * p->pitch > p->slice) return false;
  out->first = uintptr_t(p->base) + off->z * p->slice + off->y * p->pitch + off->x;
  out->extent = (range->z - 1) * p->slice + (range->y - 1) * p->pitch + range->x;
  return true;
}

}  // namespace

EXPORT hsa_status_t hsa_amd_memory_async_copy_rect(const hsa_pitched_ptr_t *dst, const hsa_dim3_t *dst_offset,
                                                   const hsa_pitched_ptr_t *src, const hsa_dim3_t *src_offset,
                                                   const hsa_dim3_t *range, hsa_agent_t copy_agent,
                                                   hsa_amd_copy_direction_t dir, uint32_t ndeps,
                                                   const hsa_signal_t *deps, hsa_signal_t completion) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_memory_async_copy_rect"); f != HSA_STATUS_SUCCESS) return f;
  if (!dst || !src || !dst_offset || !src_offset || !range || !dst->base || !src->base || (ndeps && !deps) ||
      dir < hsaHostToHost || dir > hsaDeviceToDevice)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!is_gpu(copy_agent)) return HSA_STATUS_ERROR_INVALID_AGENT;  // "CPU agents are not supported"
  if (range->x == 0 || range->y == 0 || range->z == 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  RectSide d, s;
  if (!rect_side(dst, dst_offset, range, &d) || !rect_side(src, src_offset, range, &s))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (d.first < s.first + s.extent && s.first < d.first + d.extent)  // "must not overlap"
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  CopyJob job{reinterpret_cast<void *>(d.first), reinterpret_cast<const void *>(s.first), range->x, {},
              sig(completion), g_copy_profiling.load()};
  if (!job.done) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  job.height = range->y;
  job.depth = range->z;
  job.dst_pitch = dst->pitch;
  job.dst_slice = dst->slice;
  job.src_pitch = src->pitch;
  job.src_slice = src->slice;
  for (uint32_t i = 0; i < ndeps; ++i) {
    FSignal *f = sig(deps[i]);
    if (!f) return HSA_STATUS_ERROR_INVALID_SIGNAL;
    job.deps.push_back(f);
  }
  {
    // "directly accessible to the copy_agent": pool memory, or host memory
    // locked or registered for the GPUs.
    std::lock_guard<std::mutex> lock(g_mu);
    for (const RectSide &side : {d, s})
      if (!in_allocation(side.first, side.extent) && !in_host_accessible(side.first, side.extent))
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  ++g_copy_rect_calls;
  {
    std::lock_guard<std::mutex> lock(g_copy_mu);
    g_copies.push_back(std::move(job));
  }
  g_copy_cv.notify_one();
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_profiling_async_copy_enable(bool enable) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_profiling_async_copy_enable"); f != HSA_STATUS_SUCCESS) return f;
  g_copy_profiling = enable;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_profiling_get_async_copy_time(hsa_signal_t s, hsa_amd_profiling_async_copy_time_t *t) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_profiling_get_async_copy_time"); f != HSA_STATUS_SUCCESS) return f;
  FSignal *f = sig(s);
  if (!t) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!f) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  t->start = f->start_ts;
  t->end = f->end_ts;
  return HSA_STATUS_SUCCESS;
}

