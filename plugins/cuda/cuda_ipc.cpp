// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's IPC.
//
// Memory from mem_alloc: cuIpcGetMemHandle on an allocation's base,
// cuIpcOpenMemHandle with one reference per open (the driver counts opens of
// a handle already open in the context and returns the same pointer).
//
// Memory from mem_alloc_async (the context's own stream-ordered pool) and
// from mem_pool_alloc_async (a pool made by mem_pool_create): cuIpcGetMemHandle
// refuses it; cuda.h shares it in two parts instead. The
// pool, made IPC-capable (cuda_context.cpp), is exported once as a file
// descriptor (cuMemPoolExportToShareableHandle), and each allocation as 64
// bytes of export data (cuMemPoolExportPointer); the importer turns the
// descriptor into a pool (cuMemPoolImportFromShareableHandle) and the data
// into a pointer (cuMemPoolImportPointer), and frees that with cuMemFree.
// A descriptor cannot travel inside gpuhal's 64-byte handle, so the
// exporting process publishes (descriptor, export data, pool serial) under
// a random token (descriptor_channel.hpp) and the handle carries the token
// and the exporter's pid; ipc_open fetches them from the exporter. The
// exporter must be alive when the handle is opened; once opened, the
// memory stays mapped as any imported memory does.
//
// cuda.h's rules for the two sides, which gpuhal leaves to the user (as it
// leaves the exporter's lifetime for mem_alloc memory, ipc.hpp): "The
// imported memory must not be accessed before the allocation operation
// completes in the exporting process" (synchronise the allocating stream
// before sending the handle), and "The imported memory must be freed from
// all importing processes before being freed in the exporting process".
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "descriptor_channel.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

// ---- pool memory: the handle and what is published ------------------------------------------

namespace {

constexpr const char *kChannel = "cuda-pool";  // the descriptor channel's service name
constexpr char kPoolMagic[8] = {'g', 'p', 'u', 'h', 'a', 'l', 'C', 'P'};

// The 64 handle bytes of pool memory (host byte order: same machine only).
struct PoolHandleBytes {
  char magic[8];
  uint32_t pid;  // the exporting process
  uint32_t reserved;
  uint64_t token;  // what it is published under there
  uint64_t size;   // the allocation's size
};
static_assert(sizeof(PoolHandleBytes) <= GPUHAL_IPC_HANDLE_SIZE, "IPC handle layout");

// What the exporter publishes with the pool's descriptor.
struct Published {
  api::CUmemPoolPtrExportData data;
  uint64_t pool_serial;  // names the exporter's pool (the importer imports it once)
};

bool is_pool_handle(const gpuhal_ipc_handle_t &h) {
  return std::memcmp(h.bytes, kPoolMagic, sizeof kPoolMagic) == 0;
}

// The pool's descriptor, exported on the first call (c->mu held).
gpuhal_status_t pool_descriptor(CUmemoryPool pool, PoolShare *share) {
  static std::atomic<uint64_t> serials{0};
  if (share->fd >= 0) return GPUHAL_SUCCESS;
  int fd = -1;
  if (const gpuhal_status_t st = cu_call(drv().cuMemPoolExportToShareableHandle, "cuMemPoolExportToShareableHandle",
                                         &fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0ULL);
      st != GPUHAL_SUCCESS)
    return st;
  share->fd = fd;
  share->serial = ++serials;
  return GPUHAL_SUCCESS;
}

// Publishes the allocation at `base` of `pool` (c->mu held): once per allocation.
gpuhal_status_t export_pool_allocation(CudaContext *c, CUmemoryPool pool, PoolShare *share, CUdeviceptr base,
                                       size_t size, gpuhal_ipc_handle_t *out) {
  if (!share->exportable || !drv().cuMemPoolExportPointer || !drv().cuMemPoolImportPointer)
    return fail(GPUHAL_ERROR_NOT_SUPPORTED,
                std::string("ipc_get_handle: stream-ordered memory (") +
                    (pool == c->pool ? "allocate_async" : "a MemoryPool of the driver kind") +
                    ") cannot be exported on this device: its pool is not IPC-capable "
                    "(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES has no POSIX file descriptor type); share "
                    "memory from allocate() instead");
  uint64_t token = 0;
  auto known = c->pool_exports.find(base);
  if (known != c->pool_exports.end()) {
    token = known->second;
  } else {
    if (const gpuhal_status_t st = pool_descriptor(pool, share); st != GPUHAL_SUCCESS) return st;
    Published p{};
    if (const gpuhal_status_t st = cu_call(drv().cuMemPoolExportPointer, "cuMemPoolExportPointer", &p.data, base);
        st != GPUHAL_SUCCESS)
      return st;
    p.pool_serial = share->serial;
    std::string error;
    if (!plugin::DescriptorServer::of(kChannel).publish(share->fd, &p, sizeof p, &token, &error))
      return fail(GPUHAL_ERROR_DRIVER, "ipc_get_handle: sharing the pool's descriptor: " + error);
    c->pool_exports[base] = token;
  }
  PoolHandleBytes h{};
  std::memcpy(h.magic, kPoolMagic, sizeof kPoolMagic);
  h.pid = uint32_t(getpid());
  h.token = token;
  h.size = size;
  std::memset(out->bytes, 0, sizeof out->bytes);
  std::memcpy(out->bytes, &h, sizeof h);
  return GPUHAL_SUCCESS;
}

// The exporter's pool imported into c, once per (process, pool) (c->mu held).
gpuhal_status_t imported_pool(CudaContext *c, uint32_t pid, uint64_t serial, int fd, CUmemoryPool *out) {
  auto it = c->imported_pools.find({pid, serial});
  if (it != c->imported_pools.end()) {
    *out = it->second;
    return GPUHAL_SUCCESS;
  }
  CUmemoryPool pool = nullptr;
  // cuda.h: the handle of a POSIX file descriptor type is the int, passed as the pointer's value.
  if (const gpuhal_status_t st =
          cu_call(drv().cuMemPoolImportFromShareableHandle, "cuMemPoolImportFromShareableHandle", &pool,
                  reinterpret_cast<void *>(static_cast<intptr_t>(fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0ULL);
      st != GPUHAL_SUCCESS)
    return st;
  c->imported_pools[{pid, serial}] = pool;
  *out = pool;
  return GPUHAL_SUCCESS;
}

// One more reference to an allocation c imported already (c->mu held).
bool reuse_import(CudaContext *c, const PoolHandleBytes &h, gpuhal_deviceptr_t *out, uint64_t *bytes) {
  auto it = c->pool_imports.find({h.pid, h.token});
  if (it == c->pool_imports.end()) return false;
  ++it->second.refs;
  *out = it->second.ptr;
  *bytes = it->second.bytes;
  return true;
}

// ipc_open of pool memory: fetched from the exporter, imported once per
// (process, token) in c, one reference per open.
gpuhal_status_t open_pool_allocation(CudaContext *c, const PoolHandleBytes &h, gpuhal_deviceptr_t *out,
                                     uint64_t *bytes) {
  if (!drv().cuMemPoolImportFromShareableHandle || !drv().cuMemPoolImportPointer)
    return fail(GPUHAL_ERROR_NOT_SUPPORTED, "ipc_open: this driver cannot import stream-ordered pool memory");
  {
    std::lock_guard<std::mutex> lock(c->mu);
    if (reuse_import(c, h, out, bytes)) return GPUHAL_SUCCESS;
  }
  int fd = -1;
  Published p{};
  size_t n = 0;
  std::string error;
  if (!plugin::fetch_descriptor(kChannel, h.pid, h.token, &fd, &p, sizeof p, &n, &error))
    return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "ipc_open: " + error);
  std::unique_ptr<int, void (*)(int *)> closer(&fd, [](int *f) { close(*f); });
  if (n != sizeof p) return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "ipc_open: a malformed answer from the exporter");
  std::lock_guard<std::mutex> lock(c->mu);
  if (reuse_import(c, h, out, bytes)) return GPUHAL_SUCCESS;  // another thread opened it meanwhile
  CUmemoryPool pool = nullptr;
  if (const gpuhal_status_t st = imported_pool(c, h.pid, p.pool_serial, fd, &pool); st != GPUHAL_SUCCESS) return st;
  CUdeviceptr ptr = 0;
  if (const gpuhal_status_t st = cu_call(drv().cuMemPoolImportPointer, "cuMemPoolImportPointer", &ptr, pool, &p.data);
      st != GPUHAL_SUCCESS)
    return st == GPUHAL_ERROR_INVALID_VALUE ? fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, plugin::last_error()) : st;
  // The size the driver maps, not the one the handle claims.
  CUdeviceptr b = 0;
  size_t size = 0;
  if (const CUresult r = drv().cuMemGetAddressRange(&b, &size, ptr); r != CUDA_SUCCESS) {
    drv().cuMemFree(ptr);
    return drv().error(r, "cuMemGetAddressRange");
  }
  const uint64_t mapped = size - (ptr - b);
  c->pool_imports[{h.pid, h.token}] = CudaContext::PoolImport{ptr, 1, mapped};
  *out = ptr;
  *bytes = mapped;
  return GPUHAL_SUCCESS;
}

}  // namespace

void withdraw_pool_export(CudaContext *c, CUdeviceptr base) {
  auto it = c->pool_exports.find(base);
  if (it == c->pool_exports.end()) return;
  plugin::DescriptorServer::of(kChannel).withdraw(it->second);
  c->pool_exports.erase(it);
}

void release_pool_ipc(CudaContext *c) {
  const Driver &d = drv();
  std::lock_guard<std::mutex> lock(c->mu);
  for (const auto &i : c->pool_imports) (void)d.cuMemFree(i.second.ptr);
  c->pool_imports.clear();
  for (const auto &p : c->imported_pools) (void)d.cuMemPoolDestroy(p.second);
  c->imported_pools.clear();
  for (const auto &e : c->pool_exports) plugin::DescriptorServer::of(kChannel).withdraw(e.second);
  c->pool_exports.clear();
  if (c->pool_share.fd >= 0) close(c->pool_share.fd);
  c->pool_share.fd = -1;
  for (auto &p : c->object_pools) {
    if (p.second.fd >= 0) close(p.second.fd);
    p.second.fd = -1;
  }
}

void withdraw_pool_exports(CudaContext *c, CUmemoryPool pool, PoolShare *share) {
  for (const auto &a : c->object_pool_allocations)
    if (a.second == pool) withdraw_pool_export(c, a.first);
  if (share->fd >= 0) close(share->fd);
  share->fd = -1;
}

// ---- IPC entries ------------------------------------------------------------------------------

gpuhal_status_t ipc_get_handle(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_ipc_handle_t *out,
                               gpuhal_deviceptr_t *base, uint64_t *bytes) {
  return in_context(ctx, "ipc_get_handle", [&](CudaContext *c) -> gpuhal_status_t {
    CUdeviceptr b = 0;
    size_t size = 0;
    if (const gpuhal_status_t call_st = cu_call(drv().cuMemGetAddressRange, "cuMemGetAddressRange", &b, &size, ptr);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      bool pooled = c->pool_allocations.count(b) != 0;
      CUmemoryPool pool = c->pool;
      PoolShare *share = &c->pool_share;
      if (auto it = c->object_pool_allocations.find(b); it != c->object_pool_allocations.end()) {
        auto owner = c->object_pools.find(it->second);
        if (owner == c->object_pools.end())
          return fail(GPUHAL_ERROR_NOT_SUPPORTED,
                      "ipc_get_handle: the memory's pool was destroyed (mem_pool_destroy): its memory stays valid "
                      "until freed, but is no longer shared");
        pooled = true;
        pool = owner->first;
        share = &owner->second;
      }
      if (pooled) {
        if (const gpuhal_status_t st = export_pool_allocation(c, pool, share, b, size, out); st != GPUHAL_SUCCESS)
          return st;
        *base = b;
        *bytes = size;
        return GPUHAL_SUCCESS;
      }
    }
    CUipcMemHandle h;
    if (const gpuhal_status_t call_st = cu_call(drv().cuIpcGetMemHandle, "cuIpcGetMemHandle", &h, b);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    static_assert(sizeof h == sizeof out->bytes, "IPC handle size");
    std::memcpy(out->bytes, &h, sizeof h);
    *base = b;
    *bytes = size;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t ipc_open(gpuhal_context_t ctx, const gpuhal_ipc_handle_t *handle, gpuhal_deviceptr_t *out,
                         uint64_t *bytes) {
  if (!handle || !out || !bytes) return fail(GPUHAL_ERROR_INVALID_VALUE, "ipc_open: null pointer");
  return in_context(ctx, "ipc_open", [&](CudaContext *c) -> gpuhal_status_t {
    if (is_pool_handle(*handle)) {
      PoolHandleBytes pool_handle;
      std::memcpy(&pool_handle, handle->bytes, sizeof pool_handle);
      return open_pool_allocation(c, pool_handle, out, bytes);
    }
    CUipcMemHandle h;
    std::memcpy(&h, handle->bytes, sizeof h);
    CUdeviceptr p = 0;
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuIpcOpenMemHandle, "cuIpcOpenMemHandle", &p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        call_st != GPUHAL_SUCCESS) {
      // A handle the driver refuses (CUDA_ERROR_INVALID_HANDLE or
      // _INVALID_VALUE for garbage or freed memory) is the API's one status
      // for that on every backend (ipc.hpp); the message keeps the driver's.
      if (call_st == GPUHAL_ERROR_INVALID_HANDLE || call_st == GPUHAL_ERROR_INVALID_VALUE)
        return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, plugin::last_error());
      return call_st;
    }
    CUdeviceptr b = 0;
    size_t size = 0;
    const CUresult r = drv().cuMemGetAddressRange(&b, &size, p);
    if (r != CUDA_SUCCESS) {
      drv().cuIpcCloseMemHandle(p);
      return drv().error(r, "cuMemGetAddressRange");
    }
    std::lock_guard<std::mutex> lock(c->mu);
    ++c->ipc_mappings[p];  // one reference per open, as the driver counts them
    *out = p;
    *bytes = size - (p - b);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t ipc_close(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  return in_context(ctx, "ipc_close", [&](CudaContext *c) -> gpuhal_status_t {
    // What the last reference's close gives back: a cuIpcOpenMemHandle
    // mapping, an imported pool allocation (cuMemFree, as cuda.h says), or
    // nothing while other opens of it remain.
    enum class Undo { nothing, ipc_mapping, pool_import } undo = Undo::nothing;
    std::pair<uint32_t, uint64_t> import_key{};
    CudaContext::PoolImport taken{};
    return release_tracked(
        c,
        [&] {
          auto it = c->ipc_mappings.find(ptr);
          if (it != c->ipc_mappings.end()) {
            if (--it->second == 0) c->ipc_mappings.erase(it);  // one reference per open, as the driver counts them
            undo = Undo::ipc_mapping;
            return true;
          }
          for (auto i = c->pool_imports.begin(); i != c->pool_imports.end(); ++i) {
            if (i->second.ptr != ptr) continue;
            import_key = i->first;
            if (--i->second.refs > 0) return true;
            taken = i->second;
            c->pool_imports.erase(i);
            undo = Undo::pool_import;
            return true;
          }
          return false;
        },
        GPUHAL_ERROR_INVALID_VALUE, "ipc_close: not memory opened with ipc_open in this context",
        [&]() -> gpuhal_status_t {
          if (undo == Undo::ipc_mapping) return cu_call(drv().cuIpcCloseMemHandle, "cuIpcCloseMemHandle", ptr);
          if (undo == Undo::pool_import) return cu_call(drv().cuMemFree, "cuMemFree", ptr);
          return GPUHAL_SUCCESS;
        },
        [&] {
          if (undo == Undo::ipc_mapping) {
            ++c->ipc_mappings[ptr];
          } else if (undo == Undo::pool_import) {
            taken.refs = 1;
            c->pool_imports[import_key] = taken;
          }
        });
  });
}

}  // namespace gpuhal::cuda
