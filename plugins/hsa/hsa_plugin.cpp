// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend over AMD's ROCr HSA runtime: its process-wide state,
// init, shutdown and the table (each entry is in the file of its object,
// hsa_entries.hpp).
//
// init never fails for a runtime that loads but cannot start (hsa_init
// failing without /dev/kfd): the plugin then reports zero devices and leaves
// hsa_init's status as its message, which the core shows. Devices are the
// GPU agents (hsa_device.cpp); the CPU agent's fine-grained pool serves
// pinned and mapped host memory.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_set>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hsa_entries.hpp"
#include "hsa_kernel.hpp"
#include "hsa_plugin.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

HsaPlugin g_plugin;

// ---- lifecycle -----------------------------------------------------------------------

gpuhal_status_t init(const gpuhal_init_args_t *args) {
  return guard("init", [&]() -> gpuhal_status_t {
    if (!args || args->struct_size < 8) return fail(GPUHAL_ERROR_INVALID_VALUE, "init: missing init arguments");
    plugin::set_logger(args);
    plugin::Options opts(args);
    const std::string library = opts.get("GPUHAL_HSA_RUNTIME").value_or("libhsa-runtime64.so.1");
    set_comgr_library(opts.get("GPUHAL_AMD_COMGR").value_or(""));
    std::lock_guard<std::mutex> lock(g_plugin.mu);
    if (g_plugin.init_count > 0) {
      if (runtime().path != library)
        return fail(GPUHAL_ERROR_INITIALIZATION_FAILED,
                    "the hsa plugin is already initialised with the runtime " + runtime().path + " in this process");
      ++g_plugin.init_count;
      return GPUHAL_SUCCESS;
    }
    std::string why;
    if (const gpuhal_status_t st = runtime().load(library, &why); st != GPUHAL_SUCCESS) return fail(st, why);
    g_plugin.devices.clear();
    g_plugin.no_device_reason.clear();
    if (runtime().start(&why) != GPUHAL_SUCCESS) {
      // The runtime is installed but cannot reach a GPU: zero devices, and
      // hsa_init's status is the reason the core shows.
      g_plugin.no_device_reason = why;
      plugin::log(GPUHAL_LOG_DEBUG, "hsa: " + why);
    } else if (const gpuhal_status_t st = discover(); st != GPUHAL_SUCCESS) {
      const std::string msg = plugin::last_error();
      runtime().unload();
      return fail(st, msg);
    } else if (watch_faults()) {
      for (auto &d : g_plugin.devices) d.props.recovers_from_faults = 1;
    }
    g_plugin.init_count = 1;
    plugin::log(GPUHAL_LOG_DEBUG,
                "hsa: runtime " + library + ", " + std::to_string(g_plugin.devices.size()) + " GPU agent(s)");
    return GPUHAL_SUCCESS;
  });
}

void shutdown() {
  std::unique_lock<std::mutex> lock(g_plugin.mu);
  if (g_plugin.init_count == 0 || --g_plugin.init_count > 0) return;
  // Contexts are destroyed before shutdown (the ABI's rule); any left are
  // torn down as context_destroy would.
  lock.unlock();
  for (gpuhal_context_t c : g_plugin.contexts.handles()) context_destroy(c);
  lock.lock();
  g_plugin.contexts.take_all();
  free_kept_memory();
  g_plugin.devices.clear();
  drain_signal_pool();
  runtime().unload();
}

const char *last_error() {
  return plugin::last_error();
}

}  // namespace gpuhal::hsa

#define GPUHAL_PLUGIN_NAMESPACE gpuhal::hsa
#define GPUHAL_PLUGIN_NAME "hsa"
#include "plugin_define.inc"
