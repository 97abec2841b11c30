// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's contexts: a device's primary context (or an adopted
// one) with the plugin's own memory pool, what the plugin made in it freed
// at context_destroy, and the context limits (ABI 1.11): cuCtxSetLimit and
// cuCtxGetLimit on the context's primary context. The driver's rules stand
// (cuda.h): the printf FIFO's size must be set before any kernel that uses
// printf is launched in the context (CUDA_ERROR_INVALID_VALUE after it,
// which becomes an error saying so), and a new stack size waits for the
// context's work. The driver may round a value; context_get_limit reads
// back what it kept.
#include "cuda_entries.hpp"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_context.hpp"
#include "cuda_plugin.hpp"
#include "cuda_staging.hpp"
#include "cuda_thread_rules.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {
namespace {

CUlimit cu_limit(uint32_t limit) {
  return limit == GPUHAL_LIMIT_PRINTF_BUFFER_BYTES ? CU_LIMIT_PRINTF_FIFO_SIZE : CU_LIMIT_STACK_SIZE;
}

}  // namespace

gpuhal_status_t context_set_limit(gpuhal_context_t ctx, uint32_t limit, uint64_t value) {
  return in_context(ctx, "context_set_limit", [&](CudaContext *) -> gpuhal_status_t {
    if (!drv().cuCtxSetLimit) return fail(GPUHAL_ERROR_NOT_SUPPORTED, "context_set_limit: this driver has no cuCtxSetLimit");
    const CUresult r = drv().cuCtxSetLimit(cu_limit(limit), size_t(value));
    if (r == CUDA_SUCCESS) return GPUHAL_SUCCESS;
    if (r == CUDA_ERROR_INVALID_VALUE && limit == GPUHAL_LIMIT_PRINTF_BUFFER_BYTES)
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "context_set_limit: the printf buffer's size cannot change once a kernel that uses gpuhal_printf "
                  "has been launched in this context (cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE): "
                  "CUDA_ERROR_INVALID_VALUE); set it first, or after Context::reset");
    return drv().error(r, "cuCtxSetLimit");
  });
}

gpuhal_status_t context_get_limit(gpuhal_context_t ctx, uint32_t limit, uint64_t *out) {
  return in_context(ctx, "context_get_limit", [&](CudaContext *) -> gpuhal_status_t {
    size_t value = 0;
    if (const gpuhal_status_t st = cu_call(drv().cuCtxGetLimit, "cuCtxGetLimit", &value, cu_limit(limit));
        st != GPUHAL_SUCCESS)
      return st;
    *out = uint64_t(value);
    return GPUHAL_SUCCESS;
  });
}

// ---- contexts ------------------------------------------------------------------

CUresult create_device_pool(CudaContext *c, CUmemoryPool *out, bool *exportable, const char *what) {
  api::CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = c->device;
  int handle_types = 0;
  if (drv().cuMemPoolExportToShareableHandle &&
      drv().cuDeviceGetAttribute(&handle_types, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, c->device) ==
          CUDA_SUCCESS &&
      (handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUresult r = drv().cuMemPoolCreate(out, &props);
  if (r != CUDA_SUCCESS && props.handleTypes != 0) {
    drv().error(r, "cuMemPoolCreate");
    plugin::log(GPUHAL_LOG_WARN, std::string("cuda: ") + what + ", IPC-capable: " + plugin::last_error() +
                                     "; made without IPC (its memory cannot be exported)");
    props.handleTypes = 0;
    r = drv().cuMemPoolCreate(out, &props);
  }
  *exportable = r == CUDA_SUCCESS && props.handleTypes != 0;
  return r;
}

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
// The pool is IPC-capable where the device supports it: cuda.h, "To create
// an IPC capable mempool, create a mempool with a CUmemAllocationHandleType
// other than CU_MEM_HANDLE_TYPE_NONE", and
// CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES names the types the
// device takes. A device that refuses such a pool gets a plain one (its
// memory is then not exportable).
void open_memory_pool(CudaContext *c) {
  if (!drv().cuMemPoolCreate || !drv().cuMemAllocFromPoolAsync || !drv().cuMemPoolSetAttribute) return;
  CUmemoryPool pool = nullptr;
  CUresult r = create_device_pool(c, &pool, &c->pool_share.exportable, "the context's stream-ordered memory pool");
  const char *call = "cuMemPoolCreate";
  if (r == CUDA_SUCCESS) {
    size_t total = 0;
    drv().cuDeviceTotalMem(&total, c->device);
    uint64_t threshold = g_plugin.release_threshold ? g_plugin.release_threshold : uint64_t(total) / 2;
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
    if (ordinal < 0 || ordinal >= g_plugin.device_count)
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
    *out = g_plugin.contexts.add(std::move(c));
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
  std::unique_ptr<CudaContext> owned = g_plugin.contexts.take(ctx);
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
    release_pool_ipc(c);
    if (c->pool && d.cuMemPoolDestroy) d.cuMemPoolDestroy(c->pool);  // a pool is the device's: it outlives the reset
    for (const auto &p : c->object_pools) d.cuMemPoolDestroy(p.first);
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
  release_pool_ipc(c);
  for (CUdeviceptr p : c->allocations) note(d.cuMemFree(p), "cuMemFree");
  if (c->pool && d.cuMemPoolDestroy) note(d.cuMemPoolDestroy(c->pool), "cuMemPoolDestroy");
  for (const auto &p : c->object_pools) note(d.cuMemPoolDestroy(p.first), "cuMemPoolDestroy");
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

}  // namespace gpuhal::cuda
