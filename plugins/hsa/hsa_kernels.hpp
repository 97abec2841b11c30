// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's device-code entries: lowering (hsa_lowering.cpp),
// compilation through amd_comgr (hsa_comgr.cpp), code objects loaded into
// HSA executables, and kernel dispatch packets.
#pragma once

#include <string>

#include "gpuhal/plugin.h"

namespace gpuhal::hsa {

struct Device;
struct HsaContext;
struct HsaKernel;

// The kernel handle if it belongs to a module of c (c->mu held), or nullptr.
HsaKernel *find_kernel(HsaContext *c, gpuhal_kernel_t kernel);
// The largest block the kernel launches with: its metadata's
// .max_flat_workgroup_size within the agent's limit.
uint64_t kernel_max_threads(const Device &d, const HsaKernel &k);
// The LDS one work-group of k takes with `dynamic_shared_bytes` more.
uint64_t group_segment_bytes(const HsaKernel &k, uint32_t dynamic_shared_bytes);

// GPUHAL_AMD_COMGR from init ("" = libamd_comgr.so.2); amd_comgr is loaded
// at the first compilation.
void set_comgr_library(const std::string &path);

}  // namespace gpuhal::hsa
