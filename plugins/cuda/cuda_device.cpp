// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's devices: the driver's device count as init read it,
// each device's properties from its attributes, and peer access between
// devices (cuDeviceCanAccessPeer, cuCtxEnablePeerAccess).
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "cuda_nvrtc.hpp"
#include "cuda_staging.hpp"
#include "cuda_thread_rules.hpp"
#include "handle_registry.hpp"
#include "plugin_support.hpp"
#include "cuda_plugin.hpp"

namespace gpuhal::cuda {

gpuhal_status_t device_count(int32_t *count) {
  *count = g_plugin.device_count;
  return GPUHAL_SUCCESS;
}

gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out) {
  if (!out || out->struct_size < 8)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: null or too small output");
  if (ordinal < 0 || ordinal >= g_plugin.device_count)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: no cuda device " + std::to_string(ordinal));
  if (const gpuhal_status_t st = check_thread("device_properties"); st != GPUHAL_SUCCESS) return st;
  CUdevice dev = 0;
  if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGet, "cuDeviceGet", &dev, ordinal);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  gpuhal_device_properties_t p{};
  if (const gpuhal_status_t call_st =
          cu_call(drv().cuDeviceGetName, "cuDeviceGetName", p.name, int(sizeof p.name), dev);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  std::snprintf(p.vendor, sizeof p.vendor, "NVIDIA");
  size_t total = 0;
  if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceTotalMem, "cuDeviceTotalMem", &total, dev);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  p.total_memory = total;
  // Each property from its device attribute; the first failure stops the
  // rest and is the entry's.
  gpuhal_status_t failed = GPUHAL_SUCCESS;
  auto attribute = [&](CUdevice_attribute a) {
    int v = 0;
    if (failed == GPUHAL_SUCCESS) failed = cu_call(drv().cuDeviceGetAttribute, "cuDeviceGetAttribute", &v, a, dev);
    return v;
  };
  auto set = [&](auto &field, CUdevice_attribute a) {
    field = static_cast<std::remove_reference_t<decltype(field)>>(attribute(a));
  };
  set(p.shared_memory_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  set(p.compute_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  set(p.compute_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  set(p.multiprocessor_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  set(p.warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  set(p.max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  set(p.max_block_dim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  set(p.max_block_dim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  set(p.max_block_dim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  set(p.max_grid_dim[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  set(p.max_grid_dim[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  set(p.max_grid_dim[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  set(p.clock_rate_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  set(p.can_map_host_memory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  set(p.unified_addressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  set(p.concurrent_kernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  set(p.pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  set(p.pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  set(p.pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  if (failed != GPUHAL_SUCCESS) return failed;
  if (const int dv = drv().version; dv > 0)  // cuDriverGetVersion: 1000 * major + 10 * minor
    std::snprintf(p.driver_version, sizeof p.driver_version, "CUDA %d.%d", dv / 1000, (dv % 1000) / 10);
  // cuda.h, CUDA_ERROR_ILLEGAL_ADDRESS and the other kernel faults: "This
  // leaves the process in an inconsistent state and any further CUDA work
  // will return the same error. To continue using CUDA, the process must be
  // terminated and relaunched." (Seen on an H100: cuDevicePrimaryCtxRetain
  // after cuDevicePrimaryCtxReset returns the fault.)
  p.recovers_from_faults = 0;
  // The primary context is the CUDA runtime's and every CUDA library's too
  // (cuBLAS, CuPy, PyTorch put work on it without asking gpuhal): only
  // cuCtxSynchronize proves a released buffer unused.
  p.exclusive_contexts = 0;
  // Lazy loading, the default since CUDA 12.2 on Linux, loads a kernel when
  // it is first looked up, and "loading kernels might require context
  // synchronization" (CUDA programming guide, Lazy Loading, potential
  // hazards); with CUDA_MODULE_LOADING=EAGER the module load itself loads
  // every kernel. Either way a load may wait for queued work.
  p.module_loads_wait = 1;
  p.synchronize_waits_for_all_work = 1;  // cuCtxSynchronize: every stream of the context, any library's
  // cuda.h maps cuDeviceGetUuid to cuDeviceGetUuid_v2 (11.4 on), which
  // gives a MIG instance's own UUID; a driver without it leaves zeros.
  if (drv().cuDeviceGetUuid) {
    CUuuid uuid{};
    if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGetUuid, "cuDeviceGetUuid", &uuid, dev);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    std::memcpy(p.uuid, uuid.bytes, sizeof p.uuid);
  }
  return plugin::write_properties(p, out);
}

// ---- peer access ------------------------------------------------------------------------------

gpuhal_status_t device_can_access_peer(int32_t ordinal, int32_t peer, int32_t *out) {
  if (ordinal < 0 || ordinal >= g_plugin.device_count || peer < 0 || peer >= g_plugin.device_count)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_can_access_peer: no such cuda device");
  if (ordinal == peer) {
    *out = 0;
    return GPUHAL_SUCCESS;
  }
  if (const gpuhal_status_t st = check_thread("device_can_access_peer"); st != GPUHAL_SUCCESS) return st;
  CUdevice a = 0, b = 0;
  if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGet, "cuDeviceGet", &a, ordinal); call_st != GPUHAL_SUCCESS)
    return call_st;
  if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGet, "cuDeviceGet", &b, peer); call_st != GPUHAL_SUCCESS)
    return call_st;
  int can = 0;
  if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", &can, a, b);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  *out = can ? 1 : 0;
  return GPUHAL_SUCCESS;
}

gpuhal_status_t context_enable_peer_access(gpuhal_context_t ctx, gpuhal_context_t peer) {
  CudaContext *p = find(peer);
  if (!p) return bad_context("context_enable_peer_access");
  return in_context(ctx, "context_enable_peer_access", [&](CudaContext *) -> gpuhal_status_t {
    if (!drv().cuCtxEnablePeerAccess)
      return fail(GPUHAL_ERROR_NOT_SUPPORTED, "cuCtxEnablePeerAccess is not provided by this driver");
    const CUresult r = drv().cuCtxEnablePeerAccess(p->cu, 0u);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
      return drv().error(r, "cuCtxEnablePeerAccess");
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
