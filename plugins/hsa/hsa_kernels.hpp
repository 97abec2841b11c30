// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's device-code entries: lowering (hsa_lowering.cpp),
// compilation through amd_comgr (hsa_comgr.cpp), code objects loaded into
// HSA executables, and kernel dispatch packets.
#pragma once

#include <string>

#include "gpuhal/plugin.h"

namespace gpuhal::hsa {

// GPUHAL_AMD_COMGR from init ("" = libamd_comgr.so.2); amd_comgr is loaded
// at the first compilation.
void set_comgr_library(const std::string &path);

}  // namespace gpuhal::hsa
