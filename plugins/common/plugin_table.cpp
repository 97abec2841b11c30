// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "plugin_table.hpp"

namespace gpuhal::plugin {

gpuhal_status_t negotiate(uint32_t core_max_abi, const gpuhal_plugin_table_t *mine, const gpuhal_plugin_table_t **out) {
  if (!out) return GPUHAL_ERROR_INVALID_VALUE;
  // plugin.h: "the core refuses a plugin whose major differs from its own";
  // the plugin refuses a core of another major for the same reason.
  if (GPUHAL_VERSION_MAJOR(core_max_abi) != GPUHAL_ABI_MAJOR) return GPUHAL_ERROR_ABI_MISMATCH;
  *out = mine;
  return GPUHAL_SUCCESS;
}

}  // namespace gpuhal::plugin
