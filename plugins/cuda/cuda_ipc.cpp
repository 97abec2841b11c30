// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's IPC: cuIpcGetMemHandle on an allocation's base,
// cuIpcOpenMemHandle with one reference per open (the driver counts opens of
// a handle already open in the context and returns the same pointer), and
// stream-ordered pool memory refused for export.
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

// ---- IPC ------------------------------------------------------------------------------------

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
      if (c->pool_allocations.count(b))
        return fail(GPUHAL_ERROR_NOT_SUPPORTED,
                    "ipc_get_handle: memory from allocate_async (the device's default stream-ordered pool) cannot be "
                    "exported: cuIpcGetMemHandle refuses it; share memory from allocate() instead");
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
    return release_tracked(
        c,
        [&] {
          auto it = c->ipc_mappings.find(ptr);
          if (it == c->ipc_mappings.end()) return false;
          if (--it->second == 0) c->ipc_mappings.erase(it);  // one reference per open, as the driver counts them
          return true;
        },
        GPUHAL_ERROR_INVALID_VALUE, "ipc_close: not memory opened with ipc_open in this context",
        [&] { return cu_call(drv().cuIpcCloseMemHandle, "cuIpcCloseMemHandle", ptr); },
        [&] { ++c->ipc_mappings[ptr]; });
  });
}

}  // namespace gpuhal::cuda
