// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: stream-ordered allocation (the default pool) and peer
// access.
#include "fake_cuda.hpp"

using namespace fake_cuda;

extern "C" {

// ---- stream-ordered allocation and peer access ---------------------------------------------------
API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s) {
  FAULT(cuMemAllocAsync);
  CONTEXT_CALL();
  // Stream-ordered allocation in a capture (a memory node) is not modelled:
  // refused (fake_cuda.hpp).
  if (const CUresult r = refuse_if_capturing(lookup(s), NOT_SUPPORTED); r != OK) return r;
  if (!p || bytes == 0) return INVALID_VALUE;
  return allocate(p, bytes, dev, true, false);  // made at once: early enough for any order
}
API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  FAULT(cuMemFreeAsync);
  CONTEXT_CALL();
  if (const CUresult r = refuse_if_capturing(lookup(s), NOT_SUPPORTED); r != OK) return r;
  if (!device_range(p, 0)) return INVALID_VALUE;
  return submit(s, [p] {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    auto it = g_device.find(p);
    if (it == g_device.end()) return;
    release_locked(it, true);  // the pool keeps it (until a synchronisation above the threshold)
  });
}
API CUresult cuMemPoolTrimTo(void *pool, size_t keep) {
  FAULT(cuMemPoolTrimTo);
  REQUIRE_INIT();
  for (int d = 0; d < kMaxDevices; ++d)
    if (pool == &g_pool_token[d]) {
      std::lock_guard<std::mutex> lock(g_mem_mu);
      if (g_pool_idle[d] > keep) g_pool_idle[d] = keep;
      return OK;
    }
  return INVALID_HANDLE;
}
API CUresult cuMemPoolGetAttribute(void *pool, int attr, void *value) {
  FAULT(cuMemPoolGetAttribute);
  REQUIRE_INIT();
  if (!value) return INVALID_VALUE;
  for (int d = 0; d < kMaxDevices; ++d)
    if (pool == &g_pool_token[d]) {
      std::lock_guard<std::mutex> lock(g_mem_mu);
      uint64_t used = 0;
      for (auto &kv : g_device)
        if (kv.second.dev == d && kv.second.pool) used += kv.second.size;
      uint64_t v;
      switch (attr) {
        case 4:  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
          v = g_release_threshold[d];
          break;
        case 5:  // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
          v = used + g_pool_idle[d];
          break;
        case 7:  // CU_MEMPOOL_ATTR_USED_MEM_CURRENT
          v = used;
          break;
        default:
          return INVALID_VALUE;
      }
      std::memcpy(value, &v, sizeof v);
      return OK;
    }
  return INVALID_HANDLE;
}
API CUresult cuDeviceGetDefaultMemPool(void **pool, int dev) {
  FAULT(cuDeviceGetDefaultMemPool);
  REQUIRE_INIT();
  if (!pool) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  *pool = &g_pool_token[dev];
  return OK;
}
API CUresult cuMemPoolSetAttribute(void *pool, int attr, void *value) {
  FAULT(cuMemPoolSetAttribute);
  REQUIRE_INIT();
  if (!value) return INVALID_VALUE;
  for (int d = 0; d < kMaxDevices; ++d)
    if (pool == &g_pool_token[d]) {
      if (attr != 4) return INVALID_VALUE;  // only the release threshold is faked
      std::memcpy(&g_release_threshold[d], value, sizeof(uint64_t));
      return OK;
    }
  return INVALID_HANDLE;
}
// For the tests: the release threshold the plugin set on device d's pool.
// Bytes copied host-to-device from pageable memory so far.
API uint64_t fake_cuda_pageable_h2d_bytes() {
  return g_pageable_h2d_bytes.load();
}

API uint64_t fake_cuda_release_threshold(int d) {
  return bad_device(d) ? 0 : g_release_threshold[d];
}
API CUresult cuDeviceCanAccessPeer(int *out, int dev, int peer) {
  FAULT(cuDeviceCanAccessPeer);
  REQUIRE_INIT();
  if (!out) return INVALID_VALUE;
  if (bad_device(dev) || bad_device(peer)) return INVALID_DEVICE;
  *out = dev != peer;
  return OK;
}
API CUresult cuCtxEnablePeerAccess(void *peer_ctx, unsigned flags) {
  FAULT(cuCtxEnablePeerAccess);
  CONTEXT_CALL();
  const int peer = device_of(peer_ctx);
  if (flags != 0) return INVALID_VALUE;
  if (peer < 0) return INVALID_CONTEXT;
  if (peer == dev) return INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_peer_mu);
  return g_peer_enabled.insert({dev, peer}).second ? OK : 704;
}

}  // extern "C"
