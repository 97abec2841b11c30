// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Lowering text every backend shares for the kernel dialect's array
// builtins (GPUHAL_SHARED_ARRAY, GPUHAL_LOCAL_ARRAY and their _ALIGNED
// forms). A header of string literals only: no dependency.
#pragma once

// The lowering of an array builtin's extents, shared by every backend:
// __GPUHAL_DIMS(n0, ...) is "[(n0)]...[(n3)]" for one to four extents
// (more fail to compile). A string literal to put in front of each array
// builtin's definition (guarded: defined once).
#define GPUHAL_PLUGIN_ARRAY_DIMS_MACROS                                                              \
  "#ifndef __GPUHAL_DIMS\n"                                                                          \
  "#define __GPUHAL_PICK(_1, _2, _3, _4, N, ...) N\n"                                                \
  "#define __GPUHAL_DIMS(...) "                                                                      \
  "__GPUHAL_PICK(__VA_ARGS__, __GPUHAL_D4, __GPUHAL_D3, __GPUHAL_D2, __GPUHAL_D1, _)(__VA_ARGS__)\n" \
  "#define __GPUHAL_D1(a) [(a)]\n"                                                                   \
  "#define __GPUHAL_D2(a, b) [(a)][(b)]\n"                                                           \
  "#define __GPUHAL_D3(a, b, c) [(a)][(b)][(c)]\n"                                                   \
  "#define __GPUHAL_D4(a, b, c, d) [(a)][(b)][(c)][(d)]\n"                                           \
  "#endif\n"
