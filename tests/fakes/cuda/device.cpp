// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: error names, cuInit, the driver version, device queries
// and cuGetProcAddress.
#include "fake_cuda.hpp"

using namespace fake_cuda;

extern "C" {

struct ErrorText {
  CUresult code;
  const char *name;
  const char *text;
};
// cuda.h's names; the texts are the driver's (cuGetErrorString).
const ErrorText kErrors[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {STUB, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "an illegal memory access was encountered"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
    {718, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

API CUresult cuGetErrorName(CUresult r, const char **s) {
  if (const CUresult f = injected("cuGetErrorName"); f != OK) return f;
  if (!s) return INVALID_VALUE;
  for (const auto &e : kErrors)
    if (e.code == r) {
      *s = e.name;
      return OK;
    }
  *s = nullptr;
  return INVALID_VALUE;
}

API CUresult cuGetErrorString(CUresult r, const char **s) {
  if (const CUresult f = injected("cuGetErrorString"); f != OK) return f;
  if (!s) return INVALID_VALUE;
  for (const auto &e : kErrors)
    if (e.code == r) {
      *s = e.text;
      return OK;
    }
  *s = "fake driver error";
  return OK;
}

API CUresult cuInit(unsigned flags) {
  if (const CUresult f = injected("cuInit"); f != OK) return f;
  if (flags != 0) return INVALID_VALUE;
  if (std::getenv("FAKE_CUDA_STUB")) return STUB;
  if (std::getenv("FAKE_CUDA_NO_DEVICE")) return NO_DEVICE;
  if (!g_initialized) {
    g_legacy = std::make_shared<Stream>();
    g_legacy->start();
    g_initialized = true;
  }
  return OK;
}

API CUresult cuDriverGetVersion(int *v) {
  if (const CUresult f = injected("cuDriverGetVersion"); f != OK) return f;
  if (!v) return INVALID_VALUE;
  *v = g_driver_version;
  return OK;
}

API CUresult cuDeviceGetCount(int *n) {
  if (const CUresult r = initialized_entry("cuDeviceGetCount"); r != OK) return r;
  if (!n) return INVALID_VALUE;
  *n = g_devices;
  return OK;
}

API CUresult cuDeviceGet(int *dev, int ordinal) {
  if (const CUresult r = initialized_entry("cuDeviceGet"); r != OK) return r;
  if (!dev) return INVALID_VALUE;
  if (bad_device(ordinal)) return INVALID_DEVICE;
  *dev = ordinal;
  return OK;
}

API CUresult cuDeviceGetName(char *name, int len, int dev) {
  if (const CUresult r = initialized_entry("cuDeviceGetName"); r != OK) return r;
  if (!name || len <= 0) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  std::snprintf(name, size_t(len), "gpuhal fake CUDA device");
  return OK;
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  if (const CUresult r = initialized_entry("cuDeviceTotalMem_v2"); r != OK) return r;
  if (!bytes) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  *bytes = size_t(g_capacity);
  return OK;
}

// cuda.h: cuDeviceGetUuid (mapped to _v2) "Returns 16-octets identifying
// the device"; CUDA_ERROR_INVALID_VALUE for a null pointer,
// CUDA_ERROR_INVALID_DEVICE for a bad device. Each fake device has its own:
// "fake" in the first four bytes, its ordinal in the last.
API CUresult cuDeviceGetUuid_v2(char *uuid, int dev) {
  if (const CUresult r = initialized_entry("cuDeviceGetUuid_v2"); r != OK) return r;
  if (!uuid) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  static const char kStem[16] = {'f', 'a', 'k', 'e', 0x12, 0x34, 0x45, 0x67, char(0x89), char(0xab), 0, 0, 0, 0, 0, 0};
  std::memcpy(uuid, kStem, 16);
  uuid[15] = char(dev + 1);
  return OK;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  if (const CUresult r = initialized_entry("cuDeviceGetAttribute"); r != OK) return r;
  if (!v) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  switch (attr) {
    case 1:
      *v = 1024;
      break;
    case 2:
    case 3:
      *v = 1024;
      break;
    case 4:
      *v = 64;
      break;
    case 5:
      *v = 0x7fffffff;
      break;
    case 6:
    case 7:
      *v = 65535;
      break;
    case 8:
      *v = 48 * 1024;
      break;
    case 97:
      *v = 227 * 1024;
      break;
    case 10:
      *v = 32;
      break;
    case 13:
      *v = 1500000;
      break;
    case 16:
      *v = 4;
      break;
    case 19:
    case 31:
    case 41:
      *v = 1;
      break;
    case 33:
      *v = 0x41;
      break;
    case 34:
      *v = 0;
      break;
    case 50:
      *v = 0;
      break;
    case 11:  // CU_DEVICE_ATTRIBUTE_MAX_PITCH
      *v = int(g_max_pitch);
      break;
    case 89:  // CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
      *v = managed_memory_supported() && !std::getenv("FAKE_CUDA_NO_CONCURRENT_MANAGED_ACCESS") ? 1 : 0;
      break;
    case 119:  // CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: a POSIX file descriptor
      *v = std::getenv("FAKE_CUDA_NO_POOL_IPC") ? 0 : 1;
      break;
    case 83:  // CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY
      *v = managed_memory_supported() ? 1 : 0;
      break;
    case 75:
      *v = g_cc / 10;
      break;
    case 76:
      *v = g_cc % 10;
      break;
    default:
      return INVALID_VALUE;
  }
  return OK;
}



// cuGetProcAddress (CUDA 12 form): the versioned export of `name` if there
// is one, else `name` itself.
API CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version, unsigned long long flags, int *status) {
  if (!name || !pfn || version <= 0 || flags != 0) return INVALID_VALUE;
  *pfn = nullptr;
  if (status) *status = 1;                                   // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  if (std::getenv("FAKE_CUDA_NO_PROC_ADDRESS")) return 500;  // CUDA_ERROR_NOT_FOUND
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&cuInit), &info)) return 500;
  void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!self) return 500;
  // What CUDA 12's cuda.h maps a plain name to where the version is not _v2.
  if (std::string(name) == "cuGraphInstantiate") name = "cuGraphInstantiateWithFlags";
  void *p = dlsym(self, (std::string(name) + "_v2").c_str());
  if (!p) p = dlsym(self, name);
  dlclose(self);
  if (!p) return 500;
  *pfn = p;
  if (status) *status = 0;
  return OK;
}

}  // extern "C"
