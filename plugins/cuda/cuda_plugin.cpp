// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend over the CUDA driver API: its process-wide state, init
// (the driver loaded, its devices counted), shutdown, and the table (each
// entry is in the file of its object, cuda_entries.hpp).
//
// Contexts are the devices' primary contexts, or another library's that
// context_adopt uses without owning them (cuda_context.cpp). Every entry
// makes its context current on the calling thread for its own duration and
// restores the caller's (cuda_thread_rules.hpp has the rules on threads,
// callbacks and fork). gpuhal's special stream handles (NULL,
// GPUHAL_STREAM_LEGACY, GPUHAL_STREAM_PER_THREAD) have CUDA's values and
// pass through unchanged.
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
#include "cuda_plugin.hpp"
#include "cuda_staging.hpp"
#include "cuda_thread_rules.hpp"
#include "handle_registry.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

CudaPlugin g_plugin;

CudaContext *find(gpuhal_context_t h) {
  return g_plugin.contexts.find(h);
}

gpuhal_status_t bad_context(const char *entry) {
  return fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": invalid context handle");
}

// ---- lifecycle ----------------------------------------------------

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
    std::lock_guard<std::mutex> lock(g_plugin.mu);
    if (g_plugin.init_count > 0) {
      if (driver().path != library)
        return fail(GPUHAL_ERROR_INITIALIZATION_FAILED,
                    "the cuda plugin is already initialised with the driver " + driver().path + " in this process");
      ++g_plugin.init_count;
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
    g_plugin.device_count = count;
    g_plugin.release_threshold = threshold;
    g_plugin.init_count = 1;
    pin_plugin_and_watch_fork();
    plugin::log(GPUHAL_LOG_DEBUG, "cuda: driver " + library + " version " + std::to_string(driver().version) + ", " +
                                      std::to_string(count) + " device(s), " +
                                      std::to_string(driver().via_proc_address) +
                                      " entry points resolved through cuGetProcAddress");
    return GPUHAL_SUCCESS;
  });
}

void shutdown() {
  std::lock_guard<std::mutex> lock(g_plugin.mu);
  if (g_plugin.init_count == 0 || --g_plugin.init_count > 0) return;
  g_plugin.contexts.take_all();  // destroyed here, before the driver goes
  driver().unload();
}

const char *last_error() {
  return plugin::last_error();
}

}  // namespace gpuhal::cuda

// Negotiation runs before the driver is loaded, so the table lists every
// entry; one whose driver entry point is missing returns ERROR_NOT_SUPPORTED.
#define GPUHAL_PLUGIN_NAMESPACE gpuhal::cuda
#define GPUHAL_PLUGIN_NAME "cuda"
#include "plugin_define.inc"
