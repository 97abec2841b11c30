// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: pinned and registered host memory.
#include "fake_cuda.hpp"

using namespace fake_cuda;

extern "C" {

// ---- host memory -------------------------------------------------------------------------------
API CUresult cuMemHostAlloc(void **out, size_t bytes, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemHostAlloc", &dev); r != OK) return r;
  if (!out || bytes == 0 || (flags & ~7u)) return INVALID_VALUE;
  g_last_host_alloc_flags = flags;
  void *p = map_host_pages(bytes);
  if (!p) return OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  g_host[uintptr_t(p)] = bytes;
  g_host_owner[uintptr_t(p)] = dev;
  *out = p;
  return OK;
}
API CUresult cuMemFreeHost(void *p) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemFreeHost", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_host.find(uintptr_t(p));
  if (it == g_host.end()) return INVALID_VALUE;
  unmap_host_pages(p, it->second);
  g_host.erase(it);
  g_host_owner.erase(uintptr_t(p));
  return OK;
}
// cuda.h, cuMemHostRegister: "Page-locks the memory range specified by p
// and bytesize"; it returns CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED "if
// the memory range was registered already" (a range that overlaps a
// registered one is refused: one registration per byte), and
// cuMemHostUnregister takes "the base address of memory to unregister", the
// start of one registration, never a part of it. Memory cuMemHostAlloc
// made is page-locked already, but registering any part of it is not
// ALREADY_REGISTERED: cuda.h is silent, and on an H100 (driver 580.159.04)
// cuMemHostRegister refused it with CUDA_ERROR_INVALID_VALUE.
API CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemHostRegister_v2", &dev); r != OK) return r;
  if (!p || bytes == 0 || (flags & ~0xfu)) return INVALID_VALUE;
  g_last_host_register_flags = flags;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  const uintptr_t a = uintptr_t(p);
  auto h = g_host.upper_bound(a + bytes - 1);
  if (h != g_host.begin() && std::prev(h)->first + std::prev(h)->second > a) return INVALID_VALUE;
  auto it = g_registered.lower_bound(a);
  if (it != g_registered.end() && it->first < a + bytes) return ALREADY_REGISTERED;
  if (it != g_registered.begin() && std::prev(it)->first + std::prev(it)->second > a) return ALREADY_REGISTERED;
  g_registered[a] = bytes;
  g_host_owner[a] = dev;
  return OK;
}
API CUresult cuMemHostUnregister(void *p) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemHostUnregister", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (!g_registered.erase(uintptr_t(p))) return NOT_REGISTERED;
  g_host_owner.erase(uintptr_t(p));
  return OK;
}
API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *out, void *p, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemHostGetDevicePointer_v2", &dev); r != OK) return r;
  if (!out || flags != 0) return INVALID_VALUE;
  if (!accessible(uintptr_t(p), 1)) return INVALID_VALUE;
  *out = uintptr_t(p);  // unified addressing
  return OK;
}


}  // extern "C"
