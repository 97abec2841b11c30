// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver's hooks for the tests (not in a real driver).
#include "fake_cuda.hpp"

using namespace fake_cuda;

extern "C" {

// Fault injection at run time, for tests: the k-th call of `symbol` from now
// on returns `code`. fake_cuda_clear_faults() removes every fault.
API void fake_cuda_fail(const char *symbol, long k, int code) {
  g_faults.add(symbol, k, code);
}
API void fake_cuda_clear_faults() {
  g_faults.clear();
}

// For the tests: the latest accepted hint (call 1 prefetch, 2 advise).
API void fake_cuda_last_hint(int *call, int *advice, int *location_type, int *location_id, uint64_t *bytes) {
  std::lock_guard<std::mutex> lock(g_hint_mu);
  *call = g_last_hint.call;
  *advice = g_last_hint.advice;
  *location_type = g_last_hint.location_type;
  *location_id = g_last_hint.location_id;
  *bytes = g_last_hint.bytes;
}
// For the tests: how many cuMemcpy3D / cuMemcpy3DAsync calls were accepted.
API uint64_t fake_cuda_memcpy3d_calls() {
  return g_memcpy3d_calls.load();
}
// For the tests: the next kernel launched hits `code` (a sticky error) when it runs.
API void fake_cuda_fault_next_launch(int code) {
  g_fault_next_launch = code;
}
// For the tests: what a new process would find after a fault the driver
// keeps for the rest of the process (fake_cuda.hpp, process_fatal): no such
// error, and no context (every reference the old process held is gone).
API void fake_cuda_end_process() {
  g_process_fatal = 0;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (g_ctx_refs[d] == 0 && g_sticky[d] == 0) continue;
    g_ctx_refs[d] = 0;
    destroy_context(d);
  }
}
// For the tests: the next cuFuncSetAttribute that sets `value` first sleeps `ms`.
API void fake_cuda_slow_func_set_attribute(int value, int ms) {
  g_slow_set_ms = ms;
  g_slow_set_value = value;
}
// For the tests: the pools cuMemPoolCreate made on device d and not yet
// destroyed, the bytes they hold idle, and the release threshold of the
// newest.
API int fake_cuda_created_pools(int d, uint64_t *idle, uint64_t *threshold) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  int n = 0;
  if (idle) *idle = 0;
  for (int s = kMaxDevices; s < kMaxPools; ++s) {
    if (g_pool_dev[size_t(s)] != d || g_pool_destroyed[s]) continue;
    ++n;
    if (idle) *idle += g_pool_idle[s];
    if (threshold) *threshold = g_release_threshold[s];
  }
  return n;
}
// For the tests: bytes device `d`'s default pool holds, not in use.
API uint64_t fake_cuda_pool_idle(int d) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return bad_device(d) ? 0 : g_pool_idle[d];
}
// For the tests: how many host ranges are registered with the driver now.
API int fake_cuda_registered_ranges() {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return int(g_registered.size());
}
// For the tests: the sticky error of device d's context (0: none).
API int fake_cuda_sticky_error(int d) {
  return bad_device(d) ? 0 : g_sticky[d].load();
}

// For the tests: managed allocations (cuMemAllocManaged) not yet freed.
API long fake_cuda_managed_allocations() {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  long n = 0;
  for (const auto &kv : g_device) n += kv.second.managed ? 1 : 0;
  return n;
}

// For the tests: device allocations of any kind not yet freed, and the
// references held on device d's primary context.
API long fake_cuda_live_allocations() {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return long(g_device.size());
}
API int fake_cuda_primary_refs(int d) {
  return g_ctx_refs[d];
}

// For the tests: the flags of the latest cuMemHostRegister (registered != 0)
// or cuMemHostAlloc; ~0u before the first.
API unsigned fake_cuda_last_host_flags(int registered) {
  return registered ? g_last_host_register_flags.load() : g_last_host_alloc_flags.load();
}
}  // extern "C"
