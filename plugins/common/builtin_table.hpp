// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A backend's lowering of the kernel dialect: a table of the text each
// builtin (include/gpuhal/kernel_builtins.def names them) becomes, plus a
// prologue every kernel source gets first, and the lower_builtin entry
// over it. Each backend writes only its table and prologue.
//
// Thread safety: the tables are constant; everything here may be called
// from any thread. Errors: lower_builtin_entry reports null arguments
// (ERROR_INVALID_VALUE) and unknown names (ERROR_NOT_FOUND, naming it)
// through the calling thread's last error.
#pragma once

#include <cstddef>
#include <cstring>

#include "gpuhal/plugin.h"

namespace gpuhal::plugin {

struct BuiltinText {
  const char *name;
  const char *text;
};

// The text for `builtin`: the prologue for "", the table's text for a
// name, nullptr for anything else (a null `builtin` included).
template <size_t N>
const char *find_builtin(const BuiltinText (&table)[N], const char *prologue, const char *builtin) {
  if (!builtin) return nullptr;
  if (!*builtin) return prologue;
  for (const BuiltinText &b : table)
    if (std::strcmp(b.name, builtin) == 0) return b.text;
  return nullptr;
}

// The lower_builtin entry: `found` is what the backend's lookup gave for
// `builtin` (nullptr when none).
gpuhal_status_t lower_builtin_entry(const char *builtin, const char **text, const char *found);

}  // namespace gpuhal::plugin
