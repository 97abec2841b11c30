// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's signals (hsa_signal.hpp): a process-wide
// pool of completed signals (creating one is a kernel call on ROCr), the
// quarantine of signals that never completed, and waits for "less than 1"
// in slices that give up when the context failed.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "hsa_context.hpp"

namespace gpuhal::hsa {

// ---- signals -----------------------------------------------------------------------------

namespace {
std::mutex g_signal_mu;
std::vector<hsa_signal_t> g_free_signals;  // completed signals, ready for reuse
std::vector<SignalRef> g_quarantined;      // never completed: never reused
constexpr size_t kMaxPooledSignals = 4096;
std::atomic<uint64_t> g_wait_slice{10'000'000};  // timestamp ticks (10 ms at 1 GHz)
}  // namespace

void set_wait_slice(uint64_t timestamp_frequency) {
  if (timestamp_frequency) g_wait_slice = std::max<uint64_t>(1, timestamp_frequency / 100);  // 10 ms
}

void Signal::wait(const std::atomic<bool> *give_up) const {
  // "Less than 1": a failed operation leaves its signal negative, not 0.
  // The wait may return early (the specification allows it): re-check.
  // With `give_up`, a wait slice at a time, so that a failure that will
  // never complete the signal (a suspended queue) ends the wait.
  const uint64_t timeout = give_up ? g_wait_slice.load() : UINT64_MAX;
  while (rt().hsa_signal_wait_scacquire(handle, HSA_SIGNAL_CONDITION_LT, 1, timeout, HSA_WAIT_STATE_BLOCKED) >= 1)
    if (give_up && give_up->load()) return;
}

void quarantine_signal(SignalRef s) {
  std::lock_guard<std::mutex> lock(g_signal_mu);
  g_quarantined.push_back(std::move(s));
}

Signal::~Signal() {
  if (!handle.handle) return;
  {
    std::lock_guard<std::mutex> lock(g_signal_mu);
    if (g_free_signals.size() < kMaxPooledSignals) {
      g_free_signals.push_back(handle);
      return;
    }
  }
  rt().hsa_signal_destroy(handle);
}

gpuhal_status_t make_signal(int64_t initial, SignalRef *out) {
  auto s = std::make_shared<Signal>();
  {
    std::lock_guard<std::mutex> lock(g_signal_mu);
    if (!g_free_signals.empty()) {
      s->handle = g_free_signals.back();
      g_free_signals.pop_back();
    }
  }
  if (s->handle.handle)
    rt().hsa_signal_store_screlease(s->handle, initial);
  else if (const gpuhal_status_t call_st =
               hsa_call(rt().hsa_signal_create, "hsa_signal_create", initial, 0u, nullptr, &s->handle);
           call_st != GPUHAL_SUCCESS)
    return call_st;
  *out = std::move(s);
  return GPUHAL_SUCCESS;
}

void drain_signal_pool() {
  std::vector<hsa_signal_t> free;
  std::vector<SignalRef> quarantined;
  {
    std::lock_guard<std::mutex> lock(g_signal_mu);
    free.swap(g_free_signals);
    quarantined.swap(g_quarantined);
  }
  for (hsa_signal_t h : free) rt().hsa_signal_destroy(h);
  // The runtime is shutting down: nothing writes these any more.
  for (auto &q : quarantined) {
    rt().hsa_signal_destroy(q->handle);
    q->handle = hsa_signal_t{0};
  }
}

}  // namespace gpuhal::hsa
