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

// The alignment of the _ALIGNED builtins must be a power of two (the
// dialect's rule; Numba refuses 0 too). C++ ignores alignas(0) and a GPU
// compiler may take it, so each backend's lowering states the rule:
// __GPUHAL_ALIGNMENT_OK(align, name) before the array's declaration fails
// to compile otherwise, naming the rule. C++ backends (host, cuda) use
// static_assert; OpenCL C (hsa) an array of negative size.
#define GPUHAL_PLUGIN_ALIGNMENT_CHECK_CXX                                                         \
  "#ifndef __GPUHAL_ALIGNMENT_OK\n"                                                               \
  "#define __GPUHAL_ALIGNMENT_OK(align, name) static_assert((align) > 0 && ((align) & ((align) - " \
  "1)) == 0, \"GPUHAL_SHARED_ARRAY_ALIGNED / GPUHAL_LOCAL_ARRAY_ALIGNED: the alignment of '\" #name " \
  "\"' must be a power of two\")\n"                                                               \
  "#endif\n"
#define GPUHAL_PLUGIN_ALIGNMENT_CHECK_C                                                           \
  "#ifndef __GPUHAL_ALIGNMENT_OK\n"                                                               \
  "#define __GPUHAL_ALIGNMENT_OK(align, name) typedef char "                                      \
  "__gpuhal_alignment_must_be_a_power_of_two_##name[((align) > 0 && ((align) & ((align) - 1)) == " \
  "0) ? 1 : -1] __attribute__((unused))\n"                                                        \
  "#endif\n"
