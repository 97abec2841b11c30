// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "cuda_driver.hpp"

#include "plugin_support.hpp"
#include "vendor_library.hpp"

namespace gpuhal::cuda {

Driver &driver() {
  static Driver d;
  return d;
}

std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

gpuhal_status_t Driver::load(const std::string &library, std::string *why) {
  path = library;
  // cuda.h maps most names to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2):
  // that one first, then the plain name.
  const plugin::VendorSymbol symbols[] = {
#define GPUHAL_CUDA_REQUIRED(name, symbol, params) {plugin::slot_of(&name), true, #symbol, #name},
#define GPUHAL_CUDA_OPTIONAL(name, symbol, params) {plugin::slot_of(&name), false, #symbol, #name},
      GPUHAL_CUDA_API(GPUHAL_CUDA_REQUIRED, GPUHAL_CUDA_OPTIONAL)
#undef GPUHAL_CUDA_REQUIRED
#undef GPUHAL_CUDA_OPTIONAL
  };
  handle = plugin::load_vendor_library({library}, "the CUDA driver", symbols, why).handle;
  if (!handle) {
    unload();
    return GPUHAL_ERROR_DRIVER_NOT_LOADABLE;
  }
  const api::CUresult r = cuInit(0);
  if (r == api::CUDA_ERROR_STUB_LIBRARY) {
    *why = "the CUDA driver " + library +
           " is a stub library (CUDA_ERROR_STUB_LIBRARY from cuInit): install the NVIDIA driver";
    unload();
    return GPUHAL_ERROR_DRIVER_NOT_LOADABLE;
  }
  if (r != api::CUDA_SUCCESS && r != api::CUDA_ERROR_NO_DEVICE) {
    error(r, "cuInit");
    *why = plugin::last_error();
    unload();
    return GPUHAL_ERROR_INITIALIZATION_FAILED;
  }
  if (const api::CUresult rv = cuDriverGetVersion(&version); rv != api::CUDA_SUCCESS) {
    // Only reported: the version is informational (entry points are
    // resolved for the declared version whatever the driver says).
    version = 0;
    error(rv, "cuDriverGetVersion");
    plugin::log(GPUHAL_LOG_WARN, std::string("cuda: ") + plugin::last_error() + "; the driver version is unknown");
  }
  if (cuGetProcAddress) {
    auto *gpa = cuGetProcAddress;
    auto ask = [&](void **slot, const char *name) {
      void *p = nullptr;
      int status = 0;
      if (gpa(name, &p, api::kDeclaredCudaVersion, api::CU_GET_PROC_ADDRESS_DEFAULT, &status) == api::CUDA_SUCCESS &&
          p) {
        *slot = p;
        ++via_proc_address;
      }
    };
#define GPUHAL_CUDA_ASK(name, symbol, params) ask(reinterpret_cast<void **>(&name), #name);
    GPUHAL_CUDA_API(GPUHAL_CUDA_ASK, GPUHAL_CUDA_ASK)
#undef GPUHAL_CUDA_ASK
  }
  return GPUHAL_SUCCESS;
}

void Driver::unload() {
  // The driver is never dlclosed: its own threads may still run (the CUDA
  // runtime never unloads it either). A later load() finds it loaded.
  *this = Driver();
}

namespace {
// The CUresults with a gpuhal status of their own; any other is
// ERROR_LAUNCH_FAILED when sticky, ERROR_DRIVER otherwise.
struct StatusOf {
  api::CUresult cuda;
  gpuhal_status_t gpuhal;
};
constexpr StatusOf kStatusOf[] = {
    {api::CUDA_SUCCESS, GPUHAL_SUCCESS},
    {api::CUDA_ERROR_NOT_READY, GPUHAL_NOT_READY},
    {api::CUDA_ERROR_INVALID_VALUE, GPUHAL_ERROR_INVALID_VALUE},
    {api::CUDA_ERROR_OUT_OF_MEMORY, GPUHAL_ERROR_OUT_OF_MEMORY},
    {api::CUDA_ERROR_INVALID_HANDLE, GPUHAL_ERROR_INVALID_HANDLE},
    {api::CUDA_ERROR_INVALID_CONTEXT, GPUHAL_ERROR_INVALID_HANDLE},
    {api::CUDA_ERROR_NO_DEVICE, GPUHAL_ERROR_NO_DEVICE},
    {api::CUDA_ERROR_INVALID_DEVICE, GPUHAL_ERROR_NO_DEVICE},
    {api::CUDA_ERROR_NOT_SUPPORTED, GPUHAL_ERROR_NOT_SUPPORTED},
    {api::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, GPUHAL_ERROR_ALREADY_REGISTERED},
    {api::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, GPUHAL_ERROR_NOT_REGISTERED},
    {api::CUDA_ERROR_STUB_LIBRARY, GPUHAL_ERROR_DRIVER_NOT_LOADABLE},
    {api::CUDA_ERROR_INVALID_IMAGE, GPUHAL_ERROR_INVALID_IMAGE},
    {api::CUDA_ERROR_INVALID_PTX, GPUHAL_ERROR_INVALID_IMAGE},
    {api::CUDA_ERROR_NOT_FOUND, GPUHAL_ERROR_NOT_FOUND},
    {api::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, GPUHAL_ERROR_INVALID_VALUE},
    {api::CUDA_ERROR_UNSUPPORTED_PTX_VERSION, GPUHAL_ERROR_UNSUPPORTED_TOOLCHAIN},
    {api::CUDA_ERROR_NOT_PERMITTED, GPUHAL_ERROR_NOT_PERMITTED},
    // Stream capture: CUDA's nine reasons folded into gpuhal's three.
    {api::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, GPUHAL_ERROR_CAPTURE_UNSUPPORTED},
    {api::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, GPUHAL_ERROR_CAPTURE_INVALIDATED},
    {api::CUDA_ERROR_STREAM_CAPTURE_MERGE, GPUHAL_ERROR_CAPTURE_UNSUPPORTED},
    {api::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, GPUHAL_ERROR_CAPTURE_UNSUPPORTED},
    {api::CUDA_ERROR_STREAM_CAPTURE_UNJOINED, GPUHAL_ERROR_CAPTURE_UNJOINED},
    {api::CUDA_ERROR_STREAM_CAPTURE_ISOLATION, GPUHAL_ERROR_CAPTURE_UNSUPPORTED},
    {api::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, GPUHAL_ERROR_CAPTURE_UNSUPPORTED},
    {api::CUDA_ERROR_CAPTURED_EVENT, GPUHAL_ERROR_CAPTURE_UNSUPPORTED},
    {api::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, GPUHAL_ERROR_CAPTURE_UNSUPPORTED},
};
// The errors a kernel leaves behind. cuda.h, CUDA_ERROR_ASSERT: "The context
// cannot be used anymore, and must be destroyed"; every other one: "This
// leaves the process in an inconsistent state and any further CUDA work will
// return the same error. To continue using CUDA, the process must be
// terminated and relaunched."
constexpr api::CUresult kSticky[] = {
    api::CUDA_ERROR_ILLEGAL_ADDRESS,       api::CUDA_ERROR_LAUNCH_TIMEOUT,      api::CUDA_ERROR_ASSERT,
    api::CUDA_ERROR_HARDWARE_STACK_ERROR,  api::CUDA_ERROR_ILLEGAL_INSTRUCTION, api::CUDA_ERROR_MISALIGNED_ADDRESS,
    api::CUDA_ERROR_INVALID_ADDRESS_SPACE, api::CUDA_ERROR_INVALID_PC,          api::CUDA_ERROR_LAUNCH_FAILED,
};
}  // namespace

gpuhal_status_t Driver::status_of(api::CUresult r) {
  for (const StatusOf &m : kStatusOf)
    if (m.cuda == r) return m.gpuhal;
  return is_sticky(r) ? GPUHAL_ERROR_LAUNCH_FAILED : GPUHAL_ERROR_DRIVER;
}

bool Driver::is_sticky(api::CUresult r) {
  for (api::CUresult s : kSticky)
    if (s == r) return true;
  return false;
}

gpuhal_status_t Driver::error(api::CUresult r, const char *call) const {
  const char *name = nullptr, *text = nullptr;
  if (!cuGetErrorName || cuGetErrorName(r, &name) != api::CUDA_SUCCESS || !name) name = nullptr;
  if (!cuGetErrorString || cuGetErrorString(r, &text) != api::CUDA_SUCCESS || !text) text = nullptr;
  std::string msg = std::string(call) + " failed: " + (name ? name : "CUresult " + std::to_string(r));
  if (text) msg += std::string(" (") + text + ")";
  if (r == api::CUDA_ERROR_ASSERT)
    msg +=
        "; a kernel faulted and the context is unusable until Context::reset() (every call of it returns this "
        "error until then)";
  else if (is_sticky(r))
    msg +=
        "; a kernel faulted, and the CUDA driver keeps this error for the rest of the process: every later call "
        "returns it, Context::reset() included, until the process is restarted (the cuda backend has no "
        "Capability::FaultRecovery)";
  return plugin::fail(status_of(r), msg);
}

}  // namespace gpuhal::cuda
