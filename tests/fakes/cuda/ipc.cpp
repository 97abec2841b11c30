// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: IPC handles (within this process: the fake's device
// memory is private to it).
#include "fake_cuda.hpp"

using namespace fake_cuda;

extern "C" {

// ---- IPC (within this process) -------------------------------------------------------------------
struct IpcBytes {
  char magic[8];
  CUdeviceptr base;
  uint64_t size;
};
API CUresult cuIpcGetMemHandle(void *handle, CUdeviceptr p) {
  int dev = -1;
  if (const CUresult r = context_entry("cuIpcGetMemHandle", &dev); r != OK) return r;
  CUdeviceptr base;
  size_t size;
  if (!handle || !device_range(p, 0, &base, &size) || base != p) return INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    // A pool's memory is not exportable this way.
    if (g_device.at(base).pool >= 0) return INVALID_VALUE;
  }
  IpcBytes b{{'f', 'a', 'k', 'e', 'c', 'u', 'i', 'p'}, base, size};
  std::memset(handle, 0, 64);
  std::memcpy(handle, &b, sizeof b);
  return OK;
}
struct Handle64 {
  char bytes[64];
};
API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *out, Handle64 h, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuIpcOpenMemHandle_v2", &dev); r != OK) return r;
  IpcBytes b;
  std::memcpy(&b, h.bytes, sizeof b);
  if (!out || flags > 1 || std::memcmp(b.magic, "fakecuip", 8) != 0) return INVALID_VALUE;
  CUdeviceptr base;
  size_t size;
  if (!device_range(b.base, 0, &base, &size) || base != b.base || size != b.size) return INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  ++g_ipc_opens[{dev, b.base}];  // opened again in this context: one more reference
  *out = b.base;                  // the same process: the same memory
  return OK;
}
API CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
  int dev = -1;
  if (const CUresult r = context_entry("cuIpcCloseMemHandle", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_ipc_opens.find({dev, p});
  if (it == g_ipc_opens.end()) return INVALID_VALUE;  // not an open mapping of this context
  if (--it->second == 0) g_ipc_opens.erase(it);
  return OK;
}
// For the tests: the IPC references open in all contexts.
API long fake_cuda_ipc_open_references() {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  long n = 0;
  for (auto &kv : g_ipc_opens) n += kv.second;
  return n;
}


}  // extern "C"
