// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// amd_comgr (AMD's code object manager), loaded at run time, for the hsa
// backend: compiles lowered kernel sources (OpenCL C 1.2) into AMDGPU code
// objects for an ISA such as "amdgcn-amd-amdhsa--gfx90a", and disassembles
// them (what the tests read the barrier lowering from).
//
// The library is GPUHAL_AMD_COMGR, else libamd_comgr.so.3 (ROCm 6.4 and 7),
// else libamd_comgr.so.2 (Debian 12's libamd-comgr2, which works without a
// GPU). Do not load it in a process that also loads PoCL: their LLVMs clash.
// Thread-safe (one mutex around the library).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hsa_code_object.hpp"

namespace gpuhal::hsa {

// The enum values of one major interface version of amd_comgr.h. Majors
// renumbered actions: 3 removed ADD_DEVICE_LIBRARIES and OPTIMIZE_BC_TO_BC
// (and the HC language), so the actions after them moved down.
struct ComgrInterface {
  int major;
  int language_opencl_1_2;
  int data_source, data_log, data_executable;
  int action_compile_source_to_bc, action_codegen_bc_to_relocatable, action_link_relocatable_to_executable,
      action_disassemble_executable_to_source;
};
// Interface 2 (ROCm 5 and 6.0-6.3): Debian 12's amd_comgr.h (libamd-comgr-dev
// 5.2.3, interface 2.4); tests/backend/hsa/comgr_api_check.cpp compares them.
constexpr ComgrInterface kComgrInterface2{2, 0x1, 0x1, 0x5, 0x8, 0x2, 0x6, 0x9, 0xC};
// Interface 3 (ROCm 6.4 and 7): amd_comgr.h of ROCm 7.0 (ROCm's
// llvm-project, amd/comgr/include/amd_comgr.h.in, interface 3.0), written
// down from it: no such header is packaged here to compile against.
constexpr ComgrInterface kComgrInterface3{3, 0x1, 0x1, 0x5, 0x8, 0x2, 0x4, 0x7, 0xA};

class Comgr {
 public:
  // Loads the library; on failure ok() is false and why() says what failed.
  explicit Comgr(const std::string &library = "");
  ~Comgr();
  Comgr(const Comgr &) = delete;
  Comgr &operator=(const Comgr &) = delete;
  bool ok() const { return handle_ != nullptr && why_.empty(); }
  const std::string &why() const { return why_; }
  // "amd_comgr 2.4 (libamd_comgr.so.2)": for messages.
  const std::string &describe() const { return description_; }
  // True when this comgr can compile for `isa` ("amdgcn-amd-amdhsa--gfx90a").
  bool knows_isa(const std::string &isa) const;

  // Source -> bitcode -> relocatable -> executable code object. On failure
  // returns false and `log` holds the compiler's messages.
  bool compile(const std::string &source, const std::string &isa, const std::vector<std::string> &options,
               std::vector<char> *code_object, std::string *log) const;
  // The kernels' metadata of an executable code object, through comgr's
  // metadata API (amd_comgr_get_data_metadata): what the plugin reads with
  // comgr present, with the same rules as read_code_object_metadata (the
  // hand-written reader, kept for images loaded without comgr).
  bool read_metadata(const void *code_object, size_t bytes, CodeObjectMetadata *out, std::string *why) const;
  // The code object's instructions as text.
  bool disassemble(const std::vector<char> &code_object, const std::string &isa, std::string *text,
                   std::string *log) const;

  struct Api;  // the resolved entry points (defined in hsa_comgr.cpp)

 private:
  void *handle_ = nullptr;
  Api *api_ = nullptr;
  const ComgrInterface *interface_ = nullptr;
  std::vector<std::string> isas_;  // amd_comgr_get_isa_name, every index
  std::string why_, description_;
};

}  // namespace gpuhal::hsa
