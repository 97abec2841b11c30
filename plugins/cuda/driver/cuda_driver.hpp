// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The CUDA driver, loaded at run time.
//
// load() dlopens the driver (libcuda.so.1, or the GPUHAL_CUDA_DRIVER path
// handed down by the core) and resolves every entry of GPUHAL_CUDA_API once:
// with dlsym, the versioned symbol cuda.h maps the name to first
// (cuMemAlloc_v2 ...), then the plain name; then, where the driver has
// cuGetProcAddress, through it (asking for the CUDA version the in-tree
// declarations follow), which is how NVIDIA wants entry points found. A missing required symbol fails the load; a
// missing optional one leaves the pointer NULL (the feature is reported as unsupported). error() turns a CUresult into
// the plugin's failure, naming the driver call and the driver's own name and text for the code: the one place CUresults
// are translated.
#pragma once

#include <string>

#include "cuda_driver_api.hpp"
#include "gpuhal/plugin.h"

namespace gpuhal::cuda {

using namespace api;  // the driver types, in this plugin's namespace only

struct Driver {
#define GPUHAL_CUDA_PTR(name, symbol, params) api::CUresult(*name) params = nullptr;
  GPUHAL_CUDA_API(GPUHAL_CUDA_PTR, GPUHAL_CUDA_PTR)
#undef GPUHAL_CUDA_PTR
  void *handle = nullptr;
  std::string path;
  int version = 0;           // cuDriverGetVersion
  int via_proc_address = 0;  // entry points resolved through cuGetProcAddress

  // Loads and initialises the driver. On failure returns the status and
  // sets `why` (the dlerror text, a missing symbol, a stub library...).
  gpuhal_status_t load(const std::string &library, std::string *why);
  // Forgets the entry points; the library stays loaded (never dlclosed).
  void unload();

  // The gpuhal status for `r`, with the thread's message set to
  // "<call>: <CUDA_ERROR_NAME> (<driver text>)".
  gpuhal_status_t error(api::CUresult r, const char *call) const;
  static gpuhal_status_t status_of(api::CUresult r);
  // The errors a faulting kernel leaves: the context's until it is reset
  // (CUDA_ERROR_ASSERT), or the process's until it ends (the others).
  static bool is_sticky(api::CUresult r);
};

// "<major>.<minor>" of a cuDriverGetVersion number (12040 -> "12.4").
std::string cuda_version_text(int version);

// The process-wide driver (loaded by init, unloaded by the last shutdown).
Driver &driver();

}  // namespace gpuhal::cuda
