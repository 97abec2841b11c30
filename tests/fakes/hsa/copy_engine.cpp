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
    std::memmove(job.dst, job.src, job.size);
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
  NEED_INIT;
  FAULT(hsa_amd_memory_async_copy);
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

EXPORT hsa_status_t hsa_amd_profiling_async_copy_enable(bool enable) {
  NEED_INIT;
  FAULT(hsa_amd_profiling_async_copy_enable);
  g_copy_profiling = enable;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_profiling_get_async_copy_time(hsa_signal_t s, hsa_amd_profiling_async_copy_time_t *t) {
  NEED_INIT;
  FAULT(hsa_amd_profiling_get_async_copy_time);
  FSignal *f = sig(s);
  if (!t) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!f) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  t->start = f->start_ts;
  t->end = f->end_ts;
  return HSA_STATUS_SUCCESS;
}

