// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "cuda_staging.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace gpuhal::cuda {

namespace {

// A few threads that split one memcpy with the calling thread. Started on
// the first staged copy, stopped at process exit.
class CopyThreads {
 public:
  CopyThreads() {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const unsigned n = std::min(3u, hw - 1);
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
  }
  ~CopyThreads() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto &t : threads_) t.join();
  }
  // Copies n bytes, in up to (threads + 1) parts of at least 1 MiB.
  void copy(void *dst, const void *src, size_t n) {
    const size_t parts = std::min<size_t>(threads_.size() + 1, std::max<size_t>(1, n >> 20));
    if (parts <= 1) {
      std::memcpy(dst, src, n);
      return;
    }
    const size_t per = (n / parts + 63) & ~size_t(63);
    std::unique_lock<std::mutex> lock(mu_);
    pending_ = 0;
    for (size_t k = 1; k < parts; ++k) {
      const size_t off = std::min(n, k * per), len = std::min(n, off + per) - off;
      if (len == 0) continue;
      jobs_.push_back({static_cast<char *>(dst) + off, static_cast<const char *>(src) + off, len});
      ++pending_;
    }
    lock.unlock();
    cv_.notify_all();
    std::memcpy(dst, src, std::min(n, per));
    lock.lock();
    done_cv_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  struct Job {
    char *dst;
    const char *src;
    size_t n;
  };
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      const Job j = jobs_.back();
      jobs_.pop_back();
      lock.unlock();
      std::memcpy(j.dst, j.src, j.n);
      lock.lock();
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<Job> jobs_;
  size_t pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

CopyThreads &copy_threads() {
  static CopyThreads t;
  return t;
}

}  // namespace

std::vector<HostPiece> host_pieces(CudaContext *c, const void *p, size_t n) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p), end = a + n;
  std::vector<HostPiece> out;
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->pinned_ranges.upper_bound(a);
  if (it != c->pinned_ranges.begin() && a - std::prev(it)->first < std::prev(it)->second) --it;
  uintptr_t at = a;
  for (; it != c->pinned_ranges.end() && it->first < end; ++it) {
    const uintptr_t from = std::max(it->first, at), to = std::min(it->first + it->second, end);
    if (from > at) out.push_back({at - a, from - at, false});
    out.push_back({from - a, to - from, true});
    at = to;
  }
  if (at < end) out.push_back({at - a, end - at, false});
  return out;
}

gpuhal_status_t staged_h2d(CudaContext *c, CUdeviceptr dst, const void *src, size_t bytes, CUstream stream) {
  std::lock_guard<std::mutex> lock(c->staging_mu);
  auto &slots = c->staging;
  if (slots.empty()) {
    for (size_t i = 0; i < kStageSlots; ++i) {
      CudaContext::StagingSlot s;
      const char *call = "cuMemHostAlloc";
      CUresult r =
          drv().cuMemHostAlloc ? drv().cuMemHostAlloc(&s.buffer, kStageChunkBytes, 0u) : CUDA_ERROR_NOT_SUPPORTED;
      if (r == CUDA_SUCCESS) {
        call = "cuEventCreate";
        r = drv().cuEventCreate(&s.done, CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS) drv().cuMemFreeHost(s.buffer);
      }
      if (r != CUDA_SUCCESS) {
        release_staging(c);
        return drv().error(r, call);
      }
      slots.push_back(s);
    }
  }
  size_t k = 0;
  for (size_t off = 0; off < bytes; off += kStageChunkBytes, k = (k + 1) % slots.size()) {
    auto &slot = slots[k];
    const size_t n = std::min(kStageChunkBytes, bytes - off);
    if (slot.used) {  // its previous DMA finished
      if (const gpuhal_status_t call_st = cu_call(drv().cuEventSynchronize, "cuEventSynchronize", slot.done);
          call_st != GPUHAL_SUCCESS)
        return call_st;
    }
    copy_threads().copy(slot.buffer, static_cast<const char *>(src) + off, n);
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", dst + off, slot.buffer, n, stream);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    if (const gpuhal_status_t call_st = cu_call(drv().cuEventRecord, "cuEventRecord", slot.done, stream);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    slot.used = true;
  }
  return GPUHAL_SUCCESS;
}

void release_staging(CudaContext *c) {
  for (auto &s : c->staging) {
    if (s.done) drv().cuEventDestroy(s.done);
    if (s.buffer) drv().cuMemFreeHost(s.buffer);
  }
  c->staging.clear();
}

}  // namespace gpuhal::cuda
