// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Our in-tree DLPack declarations must match the real dlpack.h.
#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdio>

#include "gpuhal/dlpack.hpp"

namespace g = gpuhal::dlpack;

static_assert(sizeof(g::DLTensor) == sizeof(::DLTensor), "DLTensor size");
static_assert(offsetof(g::DLTensor, device) == offsetof(::DLTensor, device), "DLTensor.device");
static_assert(offsetof(g::DLTensor, ndim) == offsetof(::DLTensor, ndim), "DLTensor.ndim");
static_assert(offsetof(g::DLTensor, dtype) == offsetof(::DLTensor, dtype), "DLTensor.dtype");
static_assert(offsetof(g::DLTensor, shape) == offsetof(::DLTensor, shape), "DLTensor.shape");
static_assert(offsetof(g::DLTensor, strides) == offsetof(::DLTensor, strides), "DLTensor.strides");
static_assert(offsetof(g::DLTensor, byte_offset) == offsetof(::DLTensor, byte_offset), "DLTensor.byte_offset");
static_assert(sizeof(g::DLManagedTensor) == sizeof(::DLManagedTensor), "DLManagedTensor size");
static_assert(offsetof(g::DLManagedTensor, deleter) == offsetof(::DLManagedTensor, deleter), "deleter");
static_assert(int(g::kDLCPU) == int(::kDLCPU) && int(g::kDLCUDA) == int(::kDLCUDA), "device types");
static_assert(int(g::kDLROCM) == int(::kDLROCM), "kDLROCM");

int main() {
  std::printf("gpuhal's DLPack declarations match dlpack.h %d\n", DLPACK_VERSION);
  return 0;
}
