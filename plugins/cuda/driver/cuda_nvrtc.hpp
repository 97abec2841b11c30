// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// NVRTC, the CUDA runtime compiler, loaded on first use.
//
// The newest NVRTC whose major is at most the driver's is chosen (PTX from
// NVRTC N needs a CUDA N driver or newer: an older one refuses it with
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION), or the library GPUHAL_NVRTC names.
// Loaded once per process; a failure is remembered and reported each time.
// Thread safety: every function here may be called from any thread.
#pragma once

#include <string>
#include <vector>

#include "gpuhal/plugin.h"

namespace gpuhal::cuda {

using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram *;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

#define GPUHAL_NVRTC_API(X)                                                                      \
  X(nvrtcVersion, nvrtcResult, (int *, int *))                                                   \
  X(nvrtcGetErrorString, const char *, (nvrtcResult))                                            \
  X(nvrtcCreateProgram, nvrtcResult,                                                             \
    (nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *)) \
  X(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram *))                                          \
  X(nvrtcCompileProgram, nvrtcResult, (nvrtcProgram, int, const char *const *))                  \
  X(nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram, size_t *))                                      \
  X(nvrtcGetPTX, nvrtcResult, (nvrtcProgram, char *))                                            \
  X(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t *))                               \
  X(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram, char *))
// Optional (NVRTC 11.2 and later): the architectures this NVRTC compiles for.
#define GPUHAL_NVRTC_OPTIONAL_API(X)                 \
  X(nvrtcGetNumSupportedArchs, nvrtcResult, (int *)) \
  X(nvrtcGetSupportedArchs, nvrtcResult, (int *))

struct Nvrtc {
#define GPUHAL_NVRTC_PTR(name, ret, params) ret(*name) params = nullptr;
  GPUHAL_NVRTC_API(GPUHAL_NVRTC_PTR)
  GPUHAL_NVRTC_OPTIONAL_API(GPUHAL_NVRTC_PTR)
#undef GPUHAL_NVRTC_PTR
  void *handle = nullptr;
  std::string path;
  std::string why;  // why it could not be loaded
  bool tried = false;
  int major = 0, minor = 0;  // nvrtcVersion
  std::vector<int> archs;    // supported compute capabilities (10 * major + minor), ascending
};

// The NVRTC library to load ("" = the default search: libnvrtc.so.<driver
// major> down to .11, libnvrtc.so, then the toolkit's usual place). Set by
// init; the first load's choice stays.
void set_nvrtc_library(const std::string &path);
// The loaded NVRTC, or nullptr with `why` set.
const Nvrtc *nvrtc(std::string *why);
// "NVRTC <major>.<minor>".
std::string nvrtc_name(const Nvrtc *n);
// ", made by NVRTC x.y (<path>)" once one is loaded, else "".
std::string nvrtc_provenance();
// The architecture to compile for, as "compute_<cc>": the device's own when
// NVRTC has it; the newest NVRTC has below it when the device is newer (the
// driver JIT-compiles PTX of an older architecture for newer devices); an
// error naming both when the device is older than all NVRTC supports.
gpuhal_status_t choose_arch(const Nvrtc *n, int cc, std::string *arch);

}  // namespace gpuhal::cuda
