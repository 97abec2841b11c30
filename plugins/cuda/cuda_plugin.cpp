// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend: every plugin entry over the CUDA driver API.
//
// Contexts are the devices' primary contexts (retained by context_create,
// released by context_destroy), or another library's contexts that
// context_adopt uses without owning them. Every entry makes its context current on
// the calling thread for its own duration and restores the caller's
// (cuda_thread_rules.hpp has the rules on threads, callbacks and fork). The plugin remembers what it made in a context
// (streams, events, allocations, host memory, registrations, IPC mappings)
// so that context_destroy frees all of it, as the ABI requires. gpuhal's
// special stream handles (NULL, GPUHAL_STREAM_LEGACY, GPUHAL_STREAM_PER_THREAD)
// have CUDA's values and pass through unchanged.
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

namespace gpuhal::cuda {

namespace {
std::mutex g_mu;  // guards everything below
int g_init_count = 0;
int g_device_count = 0;
uint64_t g_release_threshold = 0;  // 0: half of each device's memory
plugin::HandleRegistry<CudaContext, gpuhal_context_t> g_contexts;
}  // namespace

CudaContext *find(gpuhal_context_t h) {
  return g_contexts.find(h);
}

gpuhal_status_t bad_context(const char *entry) {
  return fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": invalid context handle");
}

// ---- lifecycle and devices ----------------------------------------------------

gpuhal_status_t init(const gpuhal_init_args_t *args) {
  return guard("init", [&]() -> gpuhal_status_t {
    if (!args || args->struct_size < 8) return fail(GPUHAL_ERROR_INVALID_VALUE, "init: missing init arguments");
    if (const gpuhal_status_t st = check_thread("init"); st != GPUHAL_SUCCESS) return st;
    plugin::set_logger(args);
    plugin::Options opts(args);
    const std::string library = opts.get("GPUHAL_CUDA_DRIVER").value_or("libcuda.so.1");
    std::string bad;
    uint64_t threshold = 0;
    if (!opts.get_bytes("GPUHAL_CUDA_POOL_RELEASE_THRESHOLD", &threshold, &bad))
      return fail(GPUHAL_ERROR_INVALID_CONFIG, bad);
    set_nvrtc_library(opts.get("GPUHAL_NVRTC").value_or(""));
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_init_count > 0) {
      if (driver().path != library)
        return fail(GPUHAL_ERROR_INITIALIZATION_FAILED,
                    "the cuda plugin is already initialised with the driver " + driver().path + " in this process");
      ++g_init_count;
      return GPUHAL_SUCCESS;
    }
    std::string why;
    const gpuhal_status_t st = driver().load(library, &why);
    if (st != GPUHAL_SUCCESS) return fail(st, why);
    int count = 0;
    const CUresult r = driver().cuDeviceGetCount(&count);
    if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_NOT_INITIALIZED)
      count = 0;  // cuInit said NO_DEVICE
    else if (r != CUDA_SUCCESS) {
      const gpuhal_status_t e = driver().error(r, "cuDeviceGetCount");
      driver().unload();
      return e;
    }
    g_device_count = count;
    g_release_threshold = threshold;
    g_init_count = 1;
    pin_plugin_and_watch_fork();
    plugin::log(GPUHAL_LOG_DEBUG, "cuda: driver " + library + " version " + std::to_string(driver().version) + ", " +
                                      std::to_string(count) + " device(s), " +
                                      std::to_string(driver().via_proc_address) +
                                      " entry points resolved through cuGetProcAddress");
    return GPUHAL_SUCCESS;
  });
}

void shutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_init_count == 0 || --g_init_count > 0) return;
  g_contexts.take_all();  // destroyed here, before the driver goes
  driver().unload();
}

const char *last_error() {
  return plugin::last_error();
}

gpuhal_status_t device_count(int32_t *count) {
  *count = g_device_count;
  return GPUHAL_SUCCESS;
}

gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out) {
  if (!out || out->struct_size < 8)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: null or too small output");
  if (ordinal < 0 || ordinal >= g_device_count)
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

// ---- contexts ------------------------------------------------------------------

namespace {
// A context of device `ordinal`: over its primary context (retained here)
// or, with `adopt`, over another library's context (checked to be live and
// of that device, and never retained, released or reset here).
// The context's stream-ordered pool: one gpuhal creates (cuMemPoolCreate),
// never the device's default pool, whose settings CuPy, PyTorch and every
// other library in the process share. Its release threshold keeps freed
// memory for reuse instead of returning it at every synchronisation. A
// failure costs the stream-ordered entries (they fall back to
// cuMemAllocAsync on the default pool, untouched): reported as a warning.
void open_memory_pool(CudaContext *c) {
  if (!drv().cuMemPoolCreate || !drv().cuMemAllocFromPoolAsync || !drv().cuMemPoolSetAttribute) return;
  api::CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = c->device;
  CUmemoryPool pool = nullptr;
  CUresult r = drv().cuMemPoolCreate(&pool, &props);
  const char *call = "cuMemPoolCreate";
  if (r == CUDA_SUCCESS) {
    size_t total = 0;
    drv().cuDeviceTotalMem(&total, c->device);
    uint64_t threshold = g_release_threshold ? g_release_threshold : uint64_t(total) / 2;
    c->pool = pool;
    r = drv().cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
    call = "cuMemPoolSetAttribute";
  }
  if (r != CUDA_SUCCESS) {
    drv().error(r, call);
    plugin::log(GPUHAL_LOG_WARN, std::string("cuda: the context's stream-ordered memory pool: ") + plugin::last_error());
  }
}

gpuhal_status_t open_context(const char *entry, int32_t ordinal, CUcontext adopt, gpuhal_context_t *out) {
  return guard(entry, [&]() -> gpuhal_status_t {
    if (ordinal < 0 || ordinal >= g_device_count)
      return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": no cuda device " + std::to_string(ordinal));
    if (const gpuhal_status_t st = check_thread(entry); st != GPUHAL_SUCCESS) return st;
    auto c = std::make_unique<CudaContext>();
    c->ordinal = ordinal;
    if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGet, "cuDeviceGet", &c->device, ordinal);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    ScopedContext scoped;
    if (adopt) {
      c->cu = adopt;
      c->adopted = true;
      if (scoped.enter(c->cu, entry) != GPUHAL_SUCCESS)
        return fail(GPUHAL_ERROR_INVALID_VALUE,
                    std::string(entry) + ": not a live CUcontext (" + plugin::last_error() + ")");
      if (!drv().cuCtxGetDevice)
        return fail(GPUHAL_ERROR_NOT_SUPPORTED, "cuCtxGetDevice is not provided by this driver");
      CUdevice of = 0;
      if (const gpuhal_status_t call_st = cu_call(drv().cuCtxGetDevice, "cuCtxGetDevice", &of);
          call_st != GPUHAL_SUCCESS)
        return call_st;
      if (of != c->device)
        return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": the CUcontext belongs to device " +
                                                    std::to_string(of) + ", not to device " + std::to_string(ordinal));
    } else {
      if (const gpuhal_status_t call_st =
              cu_call(drv().cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", &c->cu, c->device);
          call_st != GPUHAL_SUCCESS)
        return call_st;
      if (const gpuhal_status_t st = scoped.enter(c->cu, entry); st != GPUHAL_SUCCESS) {
        drv().cuDevicePrimaryCtxRelease(c->device);
        return st;
      }
    }
    // The stream-ordered pool keeps freed memory up to the threshold instead
    // of returning it to the system at every synchronisation (CUDA's default
    // threshold is 0).
    {
      int v = 0;
      if (drv().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, c->device) == CUDA_SUCCESS)
        c->shared_per_block = v;
      if (drv().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, c->device) ==
          CUDA_SUCCESS)
        c->shared_optin = v;
      c->shared_optin = std::max(c->shared_optin, c->shared_per_block);
      if (drv().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_PITCH, c->device) == CUDA_SUCCESS && v > 0)
        c->max_pitch = size_t(v);
    }
    open_memory_pool(c.get());
    *out = g_contexts.add(std::move(c));
    return GPUHAL_SUCCESS;
  });
}

}  // namespace

gpuhal_status_t context_create(int32_t ordinal, gpuhal_context_t *out) {
  return open_context("context_create", ordinal, nullptr, out);
}

gpuhal_status_t context_adopt(int32_t ordinal, uint64_t native, gpuhal_context_t *out) {
  if (!native) return fail(GPUHAL_ERROR_INVALID_VALUE, "context_adopt: null CUcontext");
  return open_context("context_adopt", ordinal, reinterpret_cast<CUcontext>(uintptr_t(native)), out);
}

gpuhal_status_t context_destroy(gpuhal_context_t ctx) {
  std::unique_ptr<CudaContext> owned = g_contexts.take(ctx);
  if (!owned) return bad_context("context_destroy");
  CudaContext *c = owned.get();
  const Driver &d = drv();
  ScopedContext scoped;
  if (const gpuhal_status_t st = scoped.enter(c->cu, "context_destroy"); st != GPUHAL_SUCCESS) {
    release_callbacks(c, GPUHAL_ERROR_CONTEXT_DESTROYED);
    return st;
  }
  // Everything made in the context goes with it; the first failure is
  // reported after the rest was still released.
  CUresult first = CUDA_SUCCESS;
  const char *first_call = "";
  auto note = [&](CUresult r, const char *call) {
    if (r != CUDA_SUCCESS && first == CUDA_SUCCESS) {
      first = r;
      first_call = call;
    }
  };
  const CUresult synced = d.cuCtxSynchronize();
  // Callbacks still queued will never run: after a successful synchronize
  // none is left; after a sticky error the driver drops them.
  release_callbacks(c, synced == CUDA_SUCCESS ? GPUHAL_ERROR_CONTEXT_DESTROYED : GPUHAL_ERROR_LAUNCH_FAILED);
  if (Driver::is_sticky(synced) && c->adopted) {
    // Another library's context: dead, but its owner's to reset. What was
    // made in it goes when the owner resets or destroys it.
    c->staging.clear();
    return d.error(synced, "cuCtxSynchronize (the adopted context failed; its owner must reset it)");
  }
  if (Driver::is_sticky(synced)) {
    // The context is dead: every call of it would return the error. The
    // primary context is reset, which destroys everything made in it (the
    // driver's only way back; cuda.h leaves it to the caller to make sure
    // no one else still uses the device, and no one can use a dead context).
    d.error(synced, "cuCtxSynchronize");
    plugin::log(GPUHAL_LOG_WARN, std::string("cuda: ") + plugin::last_error() +
                                     "; resetting the device's primary context (cuDevicePrimaryCtxReset)");
    c->staging.clear();
    if (d.cuDevicePrimaryCtxReset) note(d.cuDevicePrimaryCtxReset(c->device), "cuDevicePrimaryCtxReset");
    if (c->pool && d.cuMemPoolDestroy) d.cuMemPoolDestroy(c->pool);  // a pool is the device's: it outlives the reset
    note(d.cuDevicePrimaryCtxRelease(c->device), "cuDevicePrimaryCtxRelease");
    return first == CUDA_SUCCESS ? GPUHAL_SUCCESS : d.error(first, first_call);
  }
  note(synced, "cuCtxSynchronize");
  release_graphs(c);
  release_virtual_memory(c);
  if (d.cuModuleUnload)
    for (CUmodule m : c->modules) note(d.cuModuleUnload(m), "cuModuleUnload");
  release_staging(c);
  for (CUstream s : c->streams) note(d.cuStreamDestroy(s), "cuStreamDestroy");
  for (CUevent e : c->events) note(d.cuEventDestroy(e), "cuEventDestroy");
  for (const auto &m : c->ipc_mappings)
    for (int i = 0; i < m.second; ++i) note(d.cuIpcCloseMemHandle(m.first), "cuIpcCloseMemHandle");
  for (CUdeviceptr p : c->allocations) note(d.cuMemFree(p), "cuMemFree");
  if (c->pool && d.cuMemPoolDestroy) note(d.cuMemPoolDestroy(c->pool), "cuMemPoolDestroy");
  for (void *p : c->registrations) note(d.cuMemHostUnregister(p), "cuMemHostUnregister");
  for (void *p : c->host_allocations) note(d.cuMemFreeHost(p), "cuMemFreeHost");
  if (!c->adopted) note(d.cuDevicePrimaryCtxRelease(c->device), "cuDevicePrimaryCtxRelease");
  return first == CUDA_SUCCESS ? GPUHAL_SUCCESS : d.error(first, first_call);
}

gpuhal_status_t context_synchronize(gpuhal_context_t ctx) {
  return in_context(ctx, "context_synchronize", [&](CudaContext *c) -> gpuhal_status_t {
    const CUresult r = drv().cuCtxSynchronize();
    return r == CUDA_SUCCESS ? GPUHAL_SUCCESS : context_error(c, r, "cuCtxSynchronize");
  });
}

// The primary context retained for ctx and its device: no driver call.
gpuhal_status_t native_handle(gpuhal_context_t ctx, int32_t kind, uint64_t *out) {
  CudaContext *c = find(ctx);
  if (!c) return bad_context("native_handle");
  if (kind == GPUHAL_NATIVE_CONTEXT) {
    *out = reinterpret_cast<uintptr_t>(c->cu);
  } else if (kind == GPUHAL_NATIVE_DEVICE) {
    *out = uint64_t(uint32_t(c->device));
  } else {
    return fail(GPUHAL_ERROR_INVALID_VALUE, "native_handle: unknown kind " + std::to_string(kind));
  }
  return GPUHAL_SUCCESS;
}

// ---- peer access ------------------------------------------------------------------------------

gpuhal_status_t device_can_access_peer(int32_t ordinal, int32_t peer, int32_t *out) {
  if (ordinal < 0 || ordinal >= g_device_count || peer < 0 || peer >= g_device_count)
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

// Negotiation runs before the driver is loaded, so the table lists every
// entry; one whose driver entry point is missing returns ERROR_NOT_SUPPORTED.
#define GPUHAL_PLUGIN_NAMESPACE gpuhal::cuda
#define GPUHAL_PLUGIN_NAME "cuda"
#include "plugin_define.inc"
