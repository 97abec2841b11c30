// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the hsa plugin reads from an AMDGPU code object before handing it to
// the runtime: the kernels' argument layouts and segment sizes, from the
// NT_AMDGPU_METADATA note (MessagePack, code object v3 and later). ROCr
// offers no query for argument offsets, and launch() must place each
// argument where the compiler expects it.
//
// The parser takes untrusted bytes: every read is bounds-checked, nesting is
// limited, and a malformed object is refused with a message (never a crash).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuhal::hsa {

struct KernelArg {
  uint32_t offset = 0;
  uint32_t size = 0;
  std::string value_kind;  // "global_buffer", "by_value", "hidden_..."
};

struct KernelMetadata {
  std::string name;    // .name
  std::string symbol;  // .symbol: the kernel descriptor, "<name>.kd"
  uint32_t kernarg_size = 0;
  uint32_t kernarg_align = 8;
  uint32_t group_segment_fixed_size = 0;
  uint32_t private_segment_fixed_size = 0;
  uint32_t max_flat_workgroup_size = 0;  // 0: not stated
  uint32_t vgpr_count = 0;               // .vgpr_count (0: not stated)
  uint32_t sgpr_count = 0;               // .sgpr_count (0: not stated)
  std::vector<KernelArg> args;           // in parameter order (hidden ones last)
  // The explicit (non-hidden) arguments: what the kernel's parameters are.
  size_t explicit_count() const;
};

struct CodeObjectMetadata {
  std::string target;  // amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx90a"
  std::vector<KernelMetadata> kernels;
};

// Parses `bytes`; on failure returns false and sets `why`.
bool read_code_object_metadata(const void *bytes, uint64_t size, CodeObjectMetadata *out, std::string *why);

}  // namespace gpuhal::hsa
