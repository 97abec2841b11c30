// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Compares the hsa plugin's table of amd_comgr interface 2 values with
// amd_comgr.h of that interface (Debian's libamd-comgr-dev). The values of
// interface 3 are written down from ROCm 7's header (see hsa_comgr.hpp): no
// such header is packaged here. All checks are static_asserts: this file
// compiling is the test.
#include <amd_comgr.h>

#include <cstdio>

#include "hsa_comgr.hpp"

namespace {
constexpr gpuhal::hsa::ComgrInterface v2 = gpuhal::hsa::kComgrInterface2;
static_assert(AMD_COMGR_INTERFACE_VERSION_MAJOR == v2.major, "amd_comgr.h is not of interface 2");
static_assert(v2.language_opencl_1_2 == AMD_COMGR_LANGUAGE_OPENCL_1_2, "AMD_COMGR_LANGUAGE_OPENCL_1_2");
static_assert(v2.data_source == AMD_COMGR_DATA_KIND_SOURCE, "AMD_COMGR_DATA_KIND_SOURCE");
static_assert(v2.data_log == AMD_COMGR_DATA_KIND_LOG, "AMD_COMGR_DATA_KIND_LOG");
static_assert(v2.data_executable == AMD_COMGR_DATA_KIND_EXECUTABLE, "AMD_COMGR_DATA_KIND_EXECUTABLE");
static_assert(v2.action_compile_source_to_bc == AMD_COMGR_ACTION_COMPILE_SOURCE_TO_BC,
              "AMD_COMGR_ACTION_COMPILE_SOURCE_TO_BC");
static_assert(v2.action_codegen_bc_to_relocatable == AMD_COMGR_ACTION_CODEGEN_BC_TO_RELOCATABLE,
              "AMD_COMGR_ACTION_CODEGEN_BC_TO_RELOCATABLE");
static_assert(v2.action_link_relocatable_to_executable == AMD_COMGR_ACTION_LINK_RELOCATABLE_TO_EXECUTABLE,
              "AMD_COMGR_ACTION_LINK_RELOCATABLE_TO_EXECUTABLE");
static_assert(v2.action_disassemble_executable_to_source == AMD_COMGR_ACTION_DISASSEMBLE_EXECUTABLE_TO_SOURCE,
              "AMD_COMGR_ACTION_DISASSEMBLE_EXECUTABLE_TO_SOURCE");
static_assert(AMD_COMGR_STATUS_SUCCESS == 0, "AMD_COMGR_STATUS_SUCCESS");
// The entry points the plugin resolves, with the parameter types it uses.
static_assert(sizeof(amd_comgr_data_t) == 8 && sizeof(amd_comgr_data_set_t) == 8 &&
                  sizeof(amd_comgr_action_info_t) == 8,
              "comgr handles are one uint64_t");
}  // namespace

int main() {
  std::printf("amd_comgr interface %d values match amd_comgr.h %d.%d\n", v2.major, AMD_COMGR_INTERFACE_VERSION_MAJOR,
              AMD_COMGR_INTERFACE_VERSION_MINOR);
  return 0;
}
