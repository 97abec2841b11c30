// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend: the portable kernel dialect lowered to C++ for the system
// compiler, and the entry points appended to every generated source.
#pragma once

#include <string>
#include <vector>

#include "gpuhal/plugin.h"

namespace gpuhal::host {

// lower_builtin: the definition text of `builtin` ("" = the prologue), or
// nullptr for an unknown name.
const char *host_lowering(const char *builtin);

// The C++ text that exports gpuhal_host_kernels for the given kernels
// (appended after the lowered source). `loops`: the kernels for which the
// source defines work-item loops (host_workitem_loops.hpp).
std::string host_kernel_entry_points(const gpuhal_compile_args_t &args, const std::vector<std::string> &loops);

}  // namespace gpuhal::host
