// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's lowering of the portable kernel dialect: OpenCL C 1.2
// for amd_comgr, using clang's AMDGPU builtins directly (no ROCm device
// libraries needed).
//
// Barriers follow the design (and not numba.roc): a work-group release
// fence, s_barrier, a work-group acquire fence; a barrier without fence
// flags is still fenced for local memory. Work-item indices come from the
// AMDGPU builtins, sizes from the dispatch packet; dynamic LDS starts after
// the kernel's static LDS (__builtin_amdgcn_groupstaticsize) and its size is
// the packet's group segment size minus the static part.
#pragma once

#include <string>

namespace gpuhal::hsa {

// lower_builtin's text for `builtin` ("" = the prologue), or nullptr.
const char *hsa_lowering(const char *builtin);

}  // namespace gpuhal::hsa
