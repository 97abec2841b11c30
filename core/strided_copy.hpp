// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Element-wise copy between two host layouts of the same shape and itemsize
// (gather / scatter for staging buffers). Contiguous innermost runs are
// copied with memcpy.
#pragma once

#include <cstdint>

#include "gpuhal/host_array.hpp"

namespace gpuhal::detail {

// Copies every element of `src` into `dst`; shapes and itemsizes must match
// (checked: ERROR_INCOMPATIBLE).
void copy_elements(const HostView &dst, const HostView &src);

}  // namespace gpuhal::detail
