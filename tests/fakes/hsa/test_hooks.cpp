// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake runtime's hooks for the tests (not in ROCr).
#include "fake_hsa.hpp"

using namespace fake_hsa;


EXPORT uint64_t fake_hsa_system_pool_allocations() {
  return g_system_allocations.load();
}

EXPORT uint64_t fake_hsa_copy_rect_calls() {
  return g_copy_rect_calls.load();
}
EXPORT void fake_hsa_fail_next_copy() {
  g_fail_next_copy = true;
}
EXPORT void fake_hsa_fail_next_packet() {
  g_fail_next_packet = true;
}
EXPORT void fake_hsa_memory_fault_next_packet(uint64_t address) {
  g_fault_address = address;
}

EXPORT void fake_hsa_fail(const char *symbol, long k, int status) {
  g_faults.add(symbol, k, status);
}

EXPORT void fake_hsa_clear_faults() {
  g_faults.clear();
}

// The last valid dispatch packet and up to `cap` bytes of its kernel
// arguments; returns how many dispatches were recorded.
EXPORT uint64_t fake_hsa_last_dispatch(hsa_kernel_dispatch_packet_t *packet, void *kernarg, size_t cap,
                                       size_t *kernarg_size) {
  std::lock_guard<std::mutex> lock(g_dispatch_mu);
  if (packet) *packet = g_last_dispatch;
  if (kernarg && !g_last_kernarg.empty())
    std::memcpy(kernarg, g_last_kernarg.data(), std::min(cap, g_last_kernarg.size()));
  if (kernarg_size) *kernarg_size = g_last_kernarg.size();
  return g_dispatch_count;
}

// Live allocations, signals, queues and executables (leak checks).
EXPORT void fake_hsa_live_objects(size_t *allocations, size_t *signals, size_t *queues, size_t *executables) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (allocations) *allocations = g_allocations.size() + g_locked.size() + g_registered.size();
    if (queues) *queues = g_queues.size();
    if (executables) *executables = g_executables.size() + g_readers.size();
  }
  std::lock_guard<std::mutex> lock(g_sig_mu);
  if (signals) *signals = g_signals.size();
}

// Packets processed so far by type (0: dispatch, 1: barrier-AND), acquire
// and release fence scope: out[type * 9 + acquire * 3 + release]. reset
// starts the counts again.
EXPORT void fake_hsa_fence_counts(uint64_t *out, int reset) {
  std::lock_guard<std::mutex> lock(g_dispatch_mu);
  if (out) std::memcpy(out, g_fence_counts, sizeof g_fence_counts);
  if (reset) std::memset(g_fence_counts, 0, sizeof g_fence_counts);
}
