// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: IPC handles (within this process: the fake's device
// memory is private to it).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

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
// ---- IPC of memory pools (cuMemPoolExportToShareableHandle and friends) ---------------------------
// cuda.h: "Given an IPC capable mempool, create an OS handle to share the
// pool with another process" ("To create an IPC capable mempool, create a
// mempool with a CUmemAllocationHandleType other than
// CU_MEM_HANDLE_TYPE_NONE"); flags "must be 0". The fake's OS handle is a
// memfd standing for the pool (each export a new descriptor of it, the
// caller's to close); an import recognises it by its inode, so a
// descriptor that really travelled (SCM_RIGHTS gives a new number) works
// and anything else is refused. The memory stays the fake's, private to
// this process.
API CUresult cuMemPoolExportToShareableHandle(void *handle_out, void *pool, int handle_type,
                                              unsigned long long flags) {
  if (const CUresult r = initialized_entry("cuMemPoolExportToShareableHandle"); r != OK) return r;
  if (!handle_out || flags != 0 || handle_type != 1) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  const int slot = pool_slot(pool);
  if (slot < 0 || g_pool_destroyed[slot] || !(g_pool_handle_types[slot] & handle_type)) return INVALID_VALUE;
  if (g_pool_memfd[size_t(slot)] < 0) {
    const int fd = memfd_create("fake-cuda-pool", MFD_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) return OUT_OF_MEMORY;
    g_pool_memfd[size_t(slot)] = fd;
    g_pool_inode[slot] = uint64_t(st.st_ino);
  }
  const int copy = fcntl(g_pool_memfd[size_t(slot)], F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return OUT_OF_MEMORY;
  std::memcpy(handle_out, &copy, sizeof copy);
  return OK;
}
// "Imported memory pools do not support creating new allocations"
// (cuMemAllocFromPoolAsync refuses them, pool_and_peer.cpp); flags "must be 0".
API CUresult cuMemPoolImportFromShareableHandle(void **pool_out, void *handle, int handle_type,
                                                unsigned long long flags) {
  if (const CUresult r = initialized_entry("cuMemPoolImportFromShareableHandle"); r != OK) return r;
  if (!pool_out || flags != 0 || handle_type != 1) return INVALID_VALUE;
  struct stat st {};
  if (fstat(int(reinterpret_cast<intptr_t>(handle)), &st) != 0) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  int from = -1;
  for (int s = kMaxDevices; s < kMaxPools; ++s)
    if (g_pool_dev[size_t(s)] >= 0 && !g_pool_destroyed[s] && g_pool_memfd[size_t(s)] >= 0 &&
        g_pool_inode[s] == uint64_t(st.st_ino))
      from = s;
  if (from < 0) return INVALID_VALUE;  // not a pool's descriptor
  for (int s = kMaxDevices; s < kMaxPools; ++s) {
    if (g_pool_dev[size_t(s)] >= 0) continue;
    g_pool_dev[size_t(s)] = g_pool_dev[size_t(from)];
    g_pool_imported_from[size_t(s)] = from;
    *pool_out = &g_pool_token[s];
    return OK;
  }
  return OUT_OF_MEMORY;
}
// cuMemPoolExportPointer: export data "for sharing a specific allocation
// from an already shared memory pool": the start of a live allocation of an
// IPC-capable pool.
struct PoolPointerData {
  char magic[8];
  int slot;
  int reserved;
  CUdeviceptr ptr;
  uint64_t serial;
};
static_assert(sizeof(PoolPointerData) <= 64, "CUmemPoolPtrExportData is 64 bytes");
API CUresult cuMemPoolExportPointer(void *data_out, CUdeviceptr ptr) {
  if (const CUresult r = initialized_entry("cuMemPoolExportPointer"); r != OK) return r;
  if (!data_out) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_device.find(ptr);
  if (it == g_device.end() || it->second.pool < kMaxDevices || !g_pool_handle_types[it->second.pool])
    return INVALID_VALUE;
  PoolPointerData d{{'f', 'a', 'k', 'e', 'p', 'o', 'o', 'l'}, it->second.pool, 0, ptr, it->second.serial};
  std::memset(data_out, 0, 64);
  std::memcpy(data_out, &d, sizeof d);
  return OK;
}
// cuMemPoolImportPointer: the allocation must still be live (a freed one, or
// another allocation at its address, is refused) and from the pool that
// `pool` was imported from. "The pointer may be freed with cuMemFree or
// cuMemFreeAsync" (free_pool_import_locked).
API CUresult cuMemPoolImportPointer(CUdeviceptr *out, void *pool, void *data) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemPoolImportPointer", &dev); r != OK) return r;
  if (!out || !data) return INVALID_VALUE;
  PoolPointerData d;
  std::memcpy(&d, data, sizeof d);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  const int slot = pool_slot(pool);
  if (slot < 0 || g_pool_imported_from[size_t(slot)] < 0 || std::memcmp(d.magic, "fakepool", 8) != 0 ||
      d.slot != g_pool_imported_from[size_t(slot)])
    return INVALID_VALUE;
  auto it = g_device.find(d.ptr);
  if (it == g_device.end() || it->second.pool != d.slot || it->second.serial != d.serial) return INVALID_VALUE;
  ++g_pool_imports[{dev, d.ptr}];
  *out = d.ptr;  // the same process: the same memory
  return OK;
}
// For the tests: pool allocations imported and not freed, in all contexts.
API long fake_cuda_pool_imports() {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  long n = 0;
  for (auto &kv : g_pool_imports) n += kv.second;
  return n;
}
// For the tests: the IPC references open in all contexts.
API long fake_cuda_ipc_open_references() {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  long n = 0;
  for (auto &kv : g_ipc_opens) n += kv.second;
  return n;
}


}  // extern "C"
