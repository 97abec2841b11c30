// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's device-code entries: lowering (hsa_lowering.cpp),
// compilation through amd_comgr (hsa_comgr.cpp), code objects loaded into
// HSA executables, and kernel dispatch packets. A module's kernels by name,
// each with the sizes its dispatch packet needs, read once at load.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "gpuhal/plugin.h"
#include "hsa_code_object.hpp"
#include "hsa_runtime.hpp"

namespace gpuhal::hsa {

struct Device;
struct HsaContext;
struct HsaGraphNode;
struct HsaStream;

struct HsaKernel {
  uint64_t object = 0;  // HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT
  uint32_t kernarg_size = 0;
  uint32_t group_segment_size = 0;
  uint32_t count_cells = 0;  // LDS bytes of the counting barrier's cells (hsa_lowering.cpp)
  uint32_t private_segment_size = 0;
  KernelMetadata md;
};

struct HsaModule {
  uint32_t count_cells = 0;  // the image carries kCountCellsMarker: its kernels reserve the cells
  hsa_executable_t executable{};
  hsa_code_object_reader_t reader{};
  CodeObjectMetadata md;
  std::unordered_map<std::string, std::unique_ptr<HsaKernel>> kernels;
};

// hsa_kernel.cpp: a checked launch's dispatch packet on s (c->mu held),
// and the same launch as a graph's kernel node.
gpuhal_status_t dispatch(HsaContext *c, HsaStream *s, HsaKernel *k, const gpuhal_launch_config_t &config,
                         void *const *args);
HsaGraphNode kernel_node(HsaKernel *k, const gpuhal_launch_config_t &config, void *const *args);

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
