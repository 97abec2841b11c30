// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The HSA runtime (ROCr), loaded at run time.
//
// load() dlopens the runtime (libhsa-runtime64.so.1, or the
// GPUHAL_HSA_RUNTIME path handed down by the core), resolves every entry of
// GPUHAL_HSA_API once and calls hsa_init. A missing required symbol fails
// the load; a missing optional one leaves the pointer NULL (that feature is
// reported as unsupported). error() turns an hsa_status_t into the plugin's
// failure, naming the runtime call and the runtime's own text for the code
// (hsa_status_string): the one place hsa_status_t values are translated.
#pragma once

#include <string>

#include "gpuhal/plugin.h"
#include "hsa_api.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

using namespace api;  // the runtime's types, in this plugin's namespace only

struct Runtime {
#define GPUHAL_HSA_PTR(ret, name, params) ret(*name) params = nullptr;
  GPUHAL_HSA_API(GPUHAL_HSA_PTR, GPUHAL_HSA_PTR)
#undef GPUHAL_HSA_PTR
  void *handle = nullptr;
  std::string path;
  bool initialised = false;  // hsa_init succeeded (hsa_shut_down is owed)

  // Loads the library and resolves its entry points. On failure returns the
  // status and sets `why`.
  gpuhal_status_t load(const std::string &library, std::string *why);
  // hsa_init; on failure returns the status and sets `why` to the runtime's
  // own words (e.g. HSA_STATUS_ERROR_OUT_OF_RESOURCES without /dev/kfd).
  gpuhal_status_t start(std::string *why);
  // hsa_shut_down when started; the library stays loaded (never dlclosed).
  void unload();

  // "<call> failed: <HSA_STATUS_NAME> (0x....): <runtime text>" as the
  // thread's message, and the matching gpuhal status.
  gpuhal_status_t error(hsa_status_t s, const char *call) const;
  std::string describe(hsa_status_t s) const;
  static gpuhal_status_t status_of(hsa_status_t s);
};

// The process-wide runtime (loaded by init, unloaded by the last shutdown).
Runtime &runtime();
inline const Runtime &rt() {
  return runtime();
}

// Runs a runtime entry point returning hsa_status_t (NULL when this runtime
// lacks it: then ERROR_NOT_SUPPORTED) and translates its result
// (Runtime::error names the call): every runtime call that fails the entry
// goes through it, as
//   if (const gpuhal_status_t call_st = hsa_call(rt().hsa_x, "hsa_x", ...); call_st != GPUHAL_SUCCESS) return call_st;
template <class Fn, class... Args>
gpuhal_status_t hsa_call(Fn *fn, const char *name, Args... args) {
  if (!fn) return plugin::fail(GPUHAL_ERROR_NOT_SUPPORTED, std::string(name) + " is not provided by this HSA runtime");
  const api::hsa_status_t s = fn(args...);
  return s == api::HSA_STATUS_SUCCESS ? GPUHAL_SUCCESS : rt().error(s, name);
}

}  // namespace gpuhal::hsa
