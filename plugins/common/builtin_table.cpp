// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "builtin_table.hpp"

#include <string>

#include "plugin_support.hpp"

namespace gpuhal::plugin {

gpuhal_status_t lower_builtin_entry(const char *builtin, const char **text, const char *found) {
  if (!builtin || !text) return fail(GPUHAL_ERROR_INVALID_VALUE, "lower_builtin: null argument");
  if (!found) return fail(GPUHAL_ERROR_NOT_FOUND, std::string("lower_builtin: no builtin '") + builtin + "'");
  *text = found;
  return GPUHAL_SUCCESS;
}

}  // namespace gpuhal::plugin
