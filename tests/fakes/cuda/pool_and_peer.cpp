// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: stream-ordered allocation (the default pool) and peer
// access.
#include "fake_cuda.hpp"

using namespace fake_cuda;

namespace {
// A stream-ordered allocation out of memory. The driver API's stream-ordered
// allocator overview: "The allocator is free to reallocate the memory as
// long as it can guarantee that compliant memory accesses will not overlap
// temporally. The allocator may refer to internal stream ordering ... when
// establishing the temporal guarantee." So memory a free earlier on the same
// stream gave back serves this allocation, which is ordered after it. This
// fake frees when the stream's work runs, so it lets the stream's queued
// work (those frees among it) finish, then tries once more.
CUresult allocate_in_stream_order(CUdeviceptr *p, size_t bytes, int dev, int pool, CUstream s) {
  CUresult r = allocate(p, bytes, dev, pool, false);
  if (r != OUT_OF_MEMORY) return r;
  lookup(s)->drain();
  return allocate(p, bytes, dev, pool, false);
}
}  // namespace

extern "C" {

// ---- stream-ordered allocation and peer access ---------------------------------------------------
API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemAllocAsync", &dev); r != OK) return r;
  // Stream-ordered allocation in a capture (a memory node) is not modelled:
  // refused (fake_cuda.hpp).
  if (const CUresult r = refuse_if_capturing(lookup(s), NOT_SUPPORTED); r != OK) return r;
  if (!p || bytes == 0) return INVALID_VALUE;
  return allocate_in_stream_order(p, bytes, dev, dev, s);  // the default pool; made at once: early enough for any order
}
API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemFreeAsync", &dev); r != OK) return r;
  if (const CUresult r = refuse_if_capturing(lookup(s), NOT_SUPPORTED); r != OK) return r;
  if (!device_range(p, 0)) return INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    if (free_pool_import_locked(dev, p)) return OK;  // an import: unmapped (its memory is the exporter's)
  }
  return submit(s, [p] {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    auto it = g_device.find(p);
    if (it == g_device.end()) return;
    release_locked(it, true);  // the pool keeps it (until a synchronisation above the threshold)
  });
}
API CUresult cuMemPoolTrimTo(void *pool, size_t keep) {
  if (const CUresult r = initialized_entry("cuMemPoolTrimTo"); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  const int slot = pool_slot(pool);
  if (slot < 0 || g_pool_destroyed[slot]) return INVALID_HANDLE;
  // cuda.h: "Releases memory back to the OS until the pool contains fewer
  // than minBytesToKeep reserved bytes, or there is no more memory that the
  // allocator can safely release." Reserved bytes count the used ones too.
  const uint64_t used = g_pool_used[slot];
  const uint64_t idle_kept = keep > used ? keep - used : 0;
  if (g_pool_idle[slot] > idle_kept) g_pool_idle[slot] = idle_kept;
  return OK;
}
API CUresult cuMemPoolGetAttribute(void *pool, int attr, void *value) {
  if (const CUresult r = initialized_entry("cuMemPoolGetAttribute"); r != OK) return r;
  if (!value) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  const int slot = pool_slot(pool);
  if (slot < 0 || g_pool_destroyed[slot]) return INVALID_HANDLE;
  uint64_t used = 0;
  for (auto &kv : g_device)
    if (kv.second.pool == slot) used += kv.second.size;
  uint64_t v;
  switch (attr) {
    case 4:  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
      v = g_release_threshold[slot];
      break;
    case 5:  // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
      v = used + g_pool_idle[slot];
      break;
    case 6:  // CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
      v = g_pool_reserved_high[slot];
      break;
    case 7:  // CU_MEMPOOL_ATTR_USED_MEM_CURRENT
      v = used;
      break;
    case 8:  // CU_MEMPOOL_ATTR_USED_MEM_HIGH
      v = g_pool_used_high[slot];
      break;
    default:
      return INVALID_VALUE;
  }
  std::memcpy(value, &v, sizeof v);
  return OK;
}
API CUresult cuDeviceGetDefaultMemPool(void **pool, int dev) {
  if (const CUresult r = initialized_entry("cuDeviceGetDefaultMemPool"); r != OK) return r;
  if (!pool) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  *pool = &g_pool_token[dev];
  return OK;
}
API CUresult cuMemPoolSetAttribute(void *pool, int attr, void *value) {
  if (const CUresult r = initialized_entry("cuMemPoolSetAttribute"); r != OK) return r;
  if (!value) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  const int slot = pool_slot(pool);
  if (slot < 0 || g_pool_destroyed[slot]) return INVALID_HANDLE;
  uint64_t v;
  std::memcpy(&v, value, sizeof v);
  // cuda.h, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH and _USED_MEM_HIGH: "High
  // watermark can only be reset to zero." The current amounts are read-only.
  if (attr == 6 || attr == 8) {
    if (v != 0) return INVALID_VALUE;
    (attr == 6 ? g_pool_reserved_high : g_pool_used_high)[slot] = 0;
    return OK;
  }
  if (attr != 4) return INVALID_VALUE;  // the reuse policies (1-3) are not faked
  g_release_threshold[slot] = v;
  return OK;
}
// cuMemPoolCreate (cuda.h): "allocType: Currently must be specified as
// CU_MEM_ALLOCATION_TYPE_PINNED"; the location a device; win32 security
// attributes "required to be zero" off Windows; the reserved bytes "must be
// 0". A new pool's release threshold is 0 (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD's
// default), and no other pool, the device's default one included, changes.
API CUresult cuMemPoolCreate(void **pool, const CUmemPoolProps_fake *props) {
  if (const CUresult r = initialized_entry("cuMemPoolCreate"); r != OK) return r;
  if (!pool || !props) return INVALID_VALUE;
  if (props->allocType != 1 || props->location.type != 1 || bad_device(props->location.id)) return INVALID_VALUE;
  if (props->handleTypes != 0 && props->handleTypes != 1) return INVALID_VALUE;  // none, or a POSIX fd
  // A device without mempool IPC (CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES 0) refuses an IPC-capable pool.
  if (props->handleTypes != 0 && std::getenv("FAKE_CUDA_NO_POOL_IPC")) return NOT_SUPPORTED;
  if (props->win32SecurityAttributes) return INVALID_VALUE;
  for (unsigned char r : props->reserved)
    if (r) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  for (int s = kMaxDevices; s < kMaxPools; ++s) {
    if (g_pool_dev[size_t(s)] >= 0) continue;
    g_pool_dev[size_t(s)] = props->location.id;
    g_pool_destroyed[s] = false;
    g_pool_idle[s] = 0;
    g_pool_used[s] = g_pool_used_high[s] = g_pool_reserved_high[s] = 0;
    g_release_threshold[s] = 0;
    g_pool_handle_types[s] = props->handleTypes;
    *pool = &g_pool_token[s];
    return OK;
  }
  return OUT_OF_MEMORY;
}
// cuMemPoolDestroy: "If any pointers obtained from this pool haven't been
// freed ... the function will return immediately and the resources
// associated with the pool will be released automatically once there are no
// more outstanding allocations." and "A device's default memory pool cannot
// be destroyed." (returns: CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE). A
// destroyed pool's handle is invalid.
API CUresult cuMemPoolDestroy(void *pool) {
  if (const CUresult r = initialized_entry("cuMemPoolDestroy"); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  const int slot = pool_slot(pool);
  if (slot < kMaxDevices || g_pool_destroyed[slot]) return INVALID_VALUE;  // a default pool cannot be destroyed
  g_pool_idle[slot] = 0;
  bool outstanding = false;
  for (auto &kv : g_device) outstanding = outstanding || kv.second.pool == slot;
  if (outstanding) {
    g_pool_destroyed[slot] = true;  // the slot is freed with its last allocation
  } else {
    free_pool_slot_locked(slot);
  }
  return OK;
}
API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t bytes, void *pool, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemAllocFromPoolAsync", &dev); r != OK) return r;
  if (const CUresult r = refuse_if_capturing(lookup(s), NOT_SUPPORTED); r != OK) return r;
  if (!p || bytes == 0) return INVALID_VALUE;
  int slot;
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    slot = pool_slot(pool);
    if (slot < 0 || g_pool_destroyed[slot]) return INVALID_VALUE;
    // cuMemPoolImportFromShareableHandle: "imported memory pools may not be
    // used in cuDeviceSetMemPool or cuMemAllocFromPoolAsync calls".
    if (g_pool_imported_from[size_t(slot)] >= 0) return INVALID_VALUE;
  }
  return allocate_in_stream_order(p, bytes, g_pool_dev[size_t(slot)], slot, s);
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
  if (const CUresult r = initialized_entry("cuDeviceCanAccessPeer"); r != OK) return r;
  if (!out) return INVALID_VALUE;
  if (bad_device(dev) || bad_device(peer)) return INVALID_DEVICE;
  *out = dev != peer;
  return OK;
}
API CUresult cuCtxEnablePeerAccess(void *peer_ctx, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuCtxEnablePeerAccess", &dev); r != OK) return r;
  const int peer = device_of(peer_ctx);
  if (flags != 0) return INVALID_VALUE;
  if (peer < 0) return INVALID_CONTEXT;
  if (peer == dev) return INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_peer_mu);
  return g_peer_enabled.insert({dev, peer}).second ? OK : 704;
}

}  // extern "C"
