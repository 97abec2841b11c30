// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "hsa_lowering.hpp"

#include <cstring>

#include "array_dims.hpp"
#include "atomics_lowering.hpp"
#include "builtin_table.hpp"

namespace gpuhal::hsa {
namespace {

// hsa_kernel_dispatch_packet_t offsets: workgroup_size_x/y/z (u16) at 4, 6,
// 8; grid_size_x/y/z (u32) at 12, 16, 20; group_segment_size (u32) at 28.
// double needs cl_khr_fp64 in OpenCL 1.2 (amdgcn has it).
#define kFp64 "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n"

const char kPrologue[] =
    "typedef char int8_t;\n"
    "typedef unsigned char uint8_t;\n"
    "typedef short int16_t;\n"
    "typedef unsigned short uint16_t;\n"
    "typedef int int32_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef long int64_t;\n"
    "typedef unsigned long uint64_t;\n"
    "typedef long intptr_t;\n"
    "typedef unsigned long uintptr_t;\n"
    // The dialect's size_t (docs/kernels.md): OpenCL's, which the compile
    // without the default header does not declare.
    "typedef unsigned long size_t;\n"
    "typedef long ptrdiff_t;\n"
    "static inline __constant unsigned char *__gpuhal_packet(void) {\n"
    "  return (__constant unsigned char *)__builtin_amdgcn_dispatch_ptr();\n"
    "}\n"
    "static inline unsigned int __gpuhal_local_size(unsigned int d) {\n"
    "  return d < 3u ? (unsigned int)((__constant unsigned short *)(__gpuhal_packet() + 4))[d] : 1u;\n"
    "}\n"
    "static inline unsigned int __gpuhal_grid_size(unsigned int d) {\n"
    "  return d < 3u ? ((__constant unsigned int *)(__gpuhal_packet() + 12))[d] : 1u;\n"
    "}\n"
    "static inline unsigned int __gpuhal_local_id(unsigned int d) {\n"
    "  return d == 0u ? __builtin_amdgcn_workitem_id_x() : d == 1u ? __builtin_amdgcn_workitem_id_y()\n"
    "       : d == 2u ? __builtin_amdgcn_workitem_id_z() : 0u;\n"
    "}\n"
    "static inline unsigned int __gpuhal_group_id(unsigned int d) {\n"
    "  return d == 0u ? __builtin_amdgcn_workgroup_id_x() : d == 1u ? __builtin_amdgcn_workgroup_id_y()\n"
    "       : d == 2u ? __builtin_amdgcn_workgroup_id_z() : 0u;\n"
    "}\n"
    "static inline void __gpuhal_barrier(void) {\n"
    "  __builtin_amdgcn_fence(__ATOMIC_RELEASE, \"workgroup\");\n"
    "  __builtin_amdgcn_s_barrier();\n"
    "  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"workgroup\");\n"
    "}\n"
    // The dynamic part starts on a 16-byte boundary after the static part
    // (as CUDA's __align__(16) extern array does); the launcher adds the
    // same padding to the group segment size.
    // A module whose kernels count predicates at barriers (module_compile
    // defines __GPUHAL_COUNT_CELLS then) has 16 bytes of cells there first.
    "#ifndef __GPUHAL_COUNT_CELLS\n"
    "#define __GPUHAL_COUNT_CELLS 0u\n"
    "#endif\n"
    "static inline unsigned int __gpuhal_dynamic_lds_base(void) {\n"
    "  return ((__builtin_amdgcn_groupstaticsize() + 15u) & ~15u) + __GPUHAL_COUNT_CELLS;\n"
    "}\n"
    // The counting barrier: a cell of the group's LDS, cleared by one
    // work-item, incremented atomically by those whose predicate holds, read
    // by all; the first barrier keeps a previous count's readers ahead of
    // the clearing.
    "static inline int __gpuhal_barrier_count(int predicate) {\n"
    "  __local int *cell = (__local int *)(__local unsigned char *)"
    "((__builtin_amdgcn_groupstaticsize() + 15u) & ~15u);\n"
    "  __gpuhal_barrier();\n"
    "  if (__gpuhal_local_id(0) == 0u && __gpuhal_local_id(1) == 0u && __gpuhal_local_id(2) == 0u) *cell = 0;\n"
    "  __gpuhal_barrier();\n"
    "  if (predicate) __atomic_fetch_add(cell, 1, __ATOMIC_RELAXED);\n"
    "  __gpuhal_barrier();\n"
    "  return *cell;\n"
    "}\n"
    "static inline unsigned int __gpuhal_dynamic_lds_bytes(void) {\n"
    "  return *(__constant unsigned int *)(__gpuhal_packet() + 28) - __gpuhal_dynamic_lds_base();\n"
    "}";

// The helpers of the wave operations (defined once: guarded). Values of
// every width go through 32-bit ds_bpermute (by halves for 64 bits). A
// reduction folds lane + WS/2, ... into each lane that has such a partner,
// so lane 0 ends with every lane's value, even in a partial wave.
#define kHsaWaveQ "static inline __attribute__((overloadable))"
#define kHsaWaveHelpers                                                                                    \
  kFp64 "#ifndef __GPUHAL_WAVE_HELPERS\n"                                                                  \
  "#define __GPUHAL_WAVE_HELPERS\n"                                                                        \
  "#define __GPUHAL_WS ((unsigned)__AMDGCN_WAVEFRONT_SIZE)\n"                                              \
  "static inline unsigned __gpuhal_linear_local_id(void) {\n"                                              \
  "  return __gpuhal_local_id(0) + __gpuhal_local_size(0) * (__gpuhal_local_id(1) + __gpuhal_local_size(1) * " \
  "__gpuhal_local_id(2));\n"                                                                               \
  "}\n"                                                                                                    \
  "static inline unsigned __gpuhal_wave_lane(void) { return __gpuhal_linear_local_id() % __GPUHAL_WS; }\n" \
  "static inline unsigned __gpuhal_wave_lanes(void) {\n"                                                   \
  "  unsigned size = __gpuhal_local_size(0) * __gpuhal_local_size(1) * __gpuhal_local_size(2);\n"          \
  "  unsigned left = size - (__gpuhal_linear_local_id() - __gpuhal_wave_lane());\n"                        \
  "  return left < __GPUHAL_WS ? left : __GPUHAL_WS;\n"                                                    \
  "}\n"                                                                                                    \
  "static inline uint64_t __gpuhal_wave_full(void) {\n"                                                    \
  "  unsigned n = __gpuhal_wave_lanes();\n"                                                                \
  "  return n >= 64u ? ~0ul : (1ul << n) - 1ul;\n"                                                         \
  "}\n"                                                                                                    \
  "static inline unsigned __gpuhal_wave_src(int src) {\n"                                                  \
  "  return (src >= 0 && (unsigned)src < __gpuhal_wave_lanes()) ? (unsigned)src : __gpuhal_wave_lane();\n" \
  "}\n"                                                                                                    \
  "static inline int __gpuhal_wave_before(unsigned delta) {\n"                                             \
  "  unsigned lane = __gpuhal_wave_lane();\n"                                                              \
  "  return delta > lane ? -1 : (int)(lane - delta);\n"                                                    \
  "}\n"                                                                                                    \
  "static inline int __gpuhal_wave_past(unsigned delta) {\n"                                               \
  "  return delta >= __GPUHAL_WS ? -1 : (int)(__gpuhal_wave_lane() + delta);\n"                            \
  "}\n"                                                                                                    \
  kHsaWaveQ " int __gpuhal_wave_read(int v, unsigned src) {\n"                                             \
  "  return __builtin_amdgcn_ds_bpermute((int)(src << 2), v);\n"                                           \
  "}\n"                                                                                                    \
  "#define __GPUHAL_WAVE_READ_AS(T, B) " kHsaWaveQ " T __gpuhal_wave_read(T v, unsigned src) { \\\n"     \
  "  union { T t; B b; } u; u.t = v; u.b = __gpuhal_wave_read(u.b, src); return u.t; }\n"                   \
  "#define __GPUHAL_WAVE_READ_64(T) " kHsaWaveQ " T __gpuhal_wave_read(T v, unsigned src) { \\\n"        \
  "  union { T t; int h[2]; } u; u.t = v; \\\n"                                                            \
  "  u.h[0] = __gpuhal_wave_read(u.h[0], src); u.h[1] = __gpuhal_wave_read(u.h[1], src); return u.t; }\n"   \
  "__GPUHAL_WAVE_READ_AS(unsigned int, int)\n"                                                             \
  "__GPUHAL_WAVE_READ_AS(float, int)\n"                                                                    \
  "__GPUHAL_WAVE_READ_64(long)\n"                                                                          \
  "__GPUHAL_WAVE_READ_64(unsigned long)\n"                                                                 \
  "__GPUHAL_WAVE_READ_64(double)\n"                                                                        \
  "#define __GPUHAL_WAVE_ADD(a, b) ((a) + (b))\n"                                                          \
  "#define __GPUHAL_WAVE_MIN(a, b) ((b) < (a) ? (b) : (a))\n"                                              \
  "#define __GPUHAL_WAVE_MAX(a, b) ((b) > (a) ? (b) : (a))\n"                                              \
  "#define __GPUHAL_WAVE_REDUCE(T, name, f) " kHsaWaveQ " T name(T v) { \\\n"                             \
  "  unsigned lane = __gpuhal_wave_lane(), n = __gpuhal_wave_lanes(); \\\n"                              \
  "  for (unsigned off = __GPUHAL_WS / 2u; off > 0u; off >>= 1) { \\\n"                                  \
  "    unsigned src = lane + off; T other = __gpuhal_wave_read(v, src < n ? src : lane); \\\n"            \
  "    if (src < n) v = f(v, other); } \\\n"                                                               \
  "  return __gpuhal_wave_read(v, 0u); }\n"                                                                \
  "#endif\n"
#define kHsaWaveReduce(N, F)                                                                      \
  "__GPUHAL_WAVE_REDUCE(int, " N ", " F ")\n__GPUHAL_WAVE_REDUCE(unsigned int, " N ", " F ")\n"    \
  "__GPUHAL_WAVE_REDUCE(long, " N ", " F ")\n__GPUHAL_WAVE_REDUCE(unsigned long, " N ", " F ")\n"  \
  "__GPUHAL_WAVE_REDUCE(float, " N ", " F ")\n__GPUHAL_WAVE_REDUCE(double, " N ", " F ")\n"

const plugin::BuiltinText kBuiltins[] = {
    {"GPUHAL_KERNEL", "#define GPUHAL_KERNEL __kernel __attribute__((amdgpu_flat_work_group_size(1, 1024)))"},
    {"GPUHAL_DEVICE", "#define GPUHAL_DEVICE static inline"},
    {"GPUHAL_GLOBAL", "#define GPUHAL_GLOBAL __global"},
    {"GPUHAL_RESTRICT", "#define GPUHAL_RESTRICT restrict"},
    {"GPUHAL_CONSTANT", "#define GPUHAL_CONSTANT __constant"},
    {"GPUHAL_LOCAL_MEM_FENCE", "#define GPUHAL_LOCAL_MEM_FENCE 1u"},
    {"GPUHAL_GLOBAL_MEM_FENCE", "#define GPUHAL_GLOBAL_MEM_FENCE 2u"},
    {"gpuhal_local_id", "#define gpuhal_local_id(d) __gpuhal_local_id(d)"},
    {"gpuhal_group_id", "#define gpuhal_group_id(d) __gpuhal_group_id(d)"},
    {"gpuhal_local_size", "#define gpuhal_local_size(d) __gpuhal_local_size(d)"},
    {"gpuhal_num_groups",
     "#define gpuhal_num_groups(d) ((__gpuhal_grid_size(d) + __gpuhal_local_size(d) - 1u) / __gpuhal_local_size(d))"},
    {"gpuhal_global_id",
     "#define gpuhal_global_id(d) (gpuhal_group_id(d) * gpuhal_local_size(d) + gpuhal_local_id(d))"},
    {"gpuhal_global_size", "#define gpuhal_global_size(d) __gpuhal_grid_size(d)"},
    // Work-group scope release / s_barrier / acquire: the fence covers LDS
    // and global memory alike at that scope, whatever the flags (a bare
    // s_barrier would give the compiler no ordering for LDS).
    {"gpuhal_barrier", "#define gpuhal_barrier(flags) ((void)(flags), __gpuhal_barrier())"},
    {"gpuhal_wave_barrier", "#define gpuhal_wave_barrier() __builtin_amdgcn_wave_barrier()"},
    {"gpuhal_mem_fence",
     "#define gpuhal_mem_fence(flags) (((flags) & 2u) ? __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, \"agent\") "
     ": __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, \"workgroup\"))"},
    {"GPUHAL_SHARED_ARRAY", GPUHAL_PLUGIN_ARRAY_DIMS_MACROS "#define GPUHAL_SHARED_ARRAY(T, name, ...) __local T name "
                                                            "__GPUHAL_DIMS(__VA_ARGS__) __attribute__((aligned(16)))"},
    {"GPUHAL_DYNAMIC_SHARED",
     "#define GPUHAL_DYNAMIC_SHARED(T, name) __local T *name = (__local T *)(__local unsigned char *)"
     "__gpuhal_dynamic_lds_base()"},
    {"gpuhal_dynamic_shared_bytes", "#define gpuhal_dynamic_shared_bytes() __gpuhal_dynamic_lds_bytes()"},
    {"GPUHAL_LOCAL_ARRAY",
     GPUHAL_PLUGIN_ARRAY_DIMS_MACROS "#define GPUHAL_LOCAL_ARRAY(T, name, ...) T name __GPUHAL_DIMS(__VA_ARGS__)"},
    // aligned() only ever raises a variable's alignment.
    {"GPUHAL_SHARED_ARRAY_ALIGNED", GPUHAL_PLUGIN_ARRAY_DIMS_MACROS GPUHAL_PLUGIN_ALIGNMENT_CHECK_C
     "#define GPUHAL_SHARED_ARRAY_ALIGNED(T, name, align, ...) __GPUHAL_ALIGNMENT_OK(align, name); __local T name "
     "__GPUHAL_DIMS(__VA_ARGS__) __attribute__((aligned(align)))"},
    {"GPUHAL_LOCAL_ARRAY_ALIGNED", GPUHAL_PLUGIN_ARRAY_DIMS_MACROS GPUHAL_PLUGIN_ALIGNMENT_CHECK_C
     "#define GPUHAL_LOCAL_ARRAY_ALIGNED(T, name, align, ...) __GPUHAL_ALIGNMENT_OK(align, name); T name "
     "__GPUHAL_DIMS(__VA_ARGS__) __attribute__((aligned(align)))"},
    {"gpuhal_barrier_count", "#define gpuhal_barrier_count(p) __gpuhal_barrier_count((p) != 0)"},
    {"gpuhal_barrier_and", "#define gpuhal_barrier_and(p) (__gpuhal_barrier_count(!(p)) == 0)"},
    {"gpuhal_barrier_or", "#define gpuhal_barrier_or(p) (__gpuhal_barrier_count((p) != 0) != 0)"},
    // Atomics: clang's __atomic builtins on __global and __local pointers
    // (OpenCL 1.2 has no generic address space; overloadable functions).
    {"gpuhal_atomic_add", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_ARITH("add", "__atomic_fetch_add", "__GPUHAL_AT_ADD_F")
     "__GPUHAL_AT_EACH_add(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_add(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_sub", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_ARITH("sub", "__atomic_fetch_sub", "__GPUHAL_AT_SUB_F")
     "__GPUHAL_AT_EACH_sub(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_sub(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_min", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_LOOP_ALL("min", "__GPUHAL_AT_MIN_F")
     "__GPUHAL_AT_EACH_min(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_min(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_max", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_LOOP_ALL("max", "__GPUHAL_AT_MAX_F")
     "__GPUHAL_AT_EACH_max(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_max(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_and", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_INT_RMW("and", "__atomic_fetch_and")
     "__GPUHAL_AT_EACH_and(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_and(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_or", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_INT_RMW("or", "__atomic_fetch_or")
     "__GPUHAL_AT_EACH_or(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_or(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_xor", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_INT_RMW("xor", "__atomic_fetch_xor")
     "__GPUHAL_AT_EACH_xor(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_xor(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_xchg", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_BITS("xchg", "__GPUHAL_AT_XCHG")
     "__GPUHAL_AT_EACH_xchg(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_xchg(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_cas", GPUHAL_PLUGIN_ATOMIC_HELPERS kFp64 GPUHAL_PLUGIN_ATOMIC_BITS("cas", "__GPUHAL_AT_CAS")
     "__GPUHAL_AT_EACH_cas(static inline __attribute__((overloadable)), __global)\n""__GPUHAL_AT_EACH_cas(static inline __attribute__((overloadable)), __local)\n"},
    // The _explicit forms: clang's scoped __hip_atomic_* builtins, which its
    // OpenCL C 1.2 for amdgcn has (OpenCL 2.0's atomic_*_explicit need the
    // 2.0 language and atomic types); float loops CAS at the asked scope.
    GPUHAL_PLUGIN_ATOMIC_CONSTANTS,
    {"gpuhal_atomic_add_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_ARITH_G("add_explicit", "__hip_atomic_fetch_add", "__GPUHAL_AT_ADD_F", "_X")
     "__GPUHAL_AT_EACH_add_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_add_explicit(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_sub_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_ARITH_G("sub_explicit", "__gpuhal_hip_fetch_sub", "__GPUHAL_AT_SUB_F", "_X")
     "__GPUHAL_AT_EACH_sub_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_sub_explicit(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_min_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_LOOP_ALL_G("min_explicit", "__GPUHAL_AT_MIN_F", "_X")
     "__GPUHAL_AT_EACH_min_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_min_explicit(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_max_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_LOOP_ALL_G("max_explicit", "__GPUHAL_AT_MAX_F", "_X")
     "__GPUHAL_AT_EACH_max_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_max_explicit(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_and_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_INT_RMW_G("and_explicit", "__hip_atomic_fetch_and", "_X")
     "__GPUHAL_AT_EACH_and_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_and_explicit(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_or_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_INT_RMW_G("or_explicit", "__hip_atomic_fetch_or", "_X")
     "__GPUHAL_AT_EACH_or_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_or_explicit(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_xor_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_INT_RMW_G("xor_explicit", "__hip_atomic_fetch_xor", "_X")
     "__GPUHAL_AT_EACH_xor_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_xor_explicit(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_xchg_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_BITS("xchg_explicit", "__GPUHAL_AT_XCHG_X")
     "__GPUHAL_AT_EACH_xchg_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_xchg_explicit(static inline __attribute__((overloadable)), __local)\n"},
    {"gpuhal_atomic_cas_explicit", GPUHAL_PLUGIN_ATOMIC_HELPERS GPUHAL_PLUGIN_ATOMIC_SCOPES_HIP kFp64 GPUHAL_PLUGIN_ATOMIC_BITS("cas_explicit", "__GPUHAL_AT_CAS_X")
     "__GPUHAL_AT_EACH_cas_explicit(static inline __attribute__((overloadable)), __global)\n"
     "__GPUHAL_AT_EACH_cas_explicit(static inline __attribute__((overloadable)), __local)\n"},
    // Wave operations: a wavefront is __AMDGCN_WAVEFRONT_SIZE consecutive
    // linear work-item indices; ds_bpermute reads another lane's register
    // (and is only ever asked for a lane of this wave), and a ballot is the
    // compare's lane mask, whose bits past a partial wave's lanes are 0.
    {"gpuhal_wave_size", kHsaWaveHelpers "#define gpuhal_wave_size() __GPUHAL_WS"},
    {"gpuhal_wave_lane", kHsaWaveHelpers "#define gpuhal_wave_lane() __gpuhal_wave_lane()"},
    {"gpuhal_wave_ballot",
     kHsaWaveHelpers "#define gpuhal_wave_ballot(p) ((uint64_t)__builtin_amdgcn_uicmp((unsigned)((p) != 0), 0u, 33))"},
    {"gpuhal_wave_any", kHsaWaveHelpers "#define gpuhal_wave_any(p) (gpuhal_wave_ballot(p) != 0ul)"},
    {"gpuhal_wave_all", kHsaWaveHelpers "#define gpuhal_wave_all(p) (gpuhal_wave_ballot(p) == __gpuhal_wave_full())"},
    {"gpuhal_wave_shuffle",
     kHsaWaveHelpers "#define gpuhal_wave_shuffle(v, lane) __gpuhal_wave_read((v), __gpuhal_wave_src((int)(lane)))"},
    {"gpuhal_wave_shuffle_up", kHsaWaveHelpers
     "#define gpuhal_wave_shuffle_up(v, delta) __gpuhal_wave_read((v), __gpuhal_wave_src(__gpuhal_wave_before((delta))))"},
    {"gpuhal_wave_shuffle_down", kHsaWaveHelpers
     "#define gpuhal_wave_shuffle_down(v, delta) __gpuhal_wave_read((v), __gpuhal_wave_src(__gpuhal_wave_past((delta))))"},
    {"gpuhal_wave_shuffle_xor", kHsaWaveHelpers
     "#define gpuhal_wave_shuffle_xor(v, mask) __gpuhal_wave_read((v), __gpuhal_wave_src((int)(__gpuhal_wave_lane() ^ "
     "(unsigned)(mask))))"},
    {"gpuhal_wave_reduce_add", kHsaWaveHelpers kHsaWaveReduce("gpuhal_wave_reduce_add", "__GPUHAL_WAVE_ADD")},
    {"gpuhal_wave_reduce_min", kHsaWaveHelpers kHsaWaveReduce("gpuhal_wave_reduce_min", "__GPUHAL_WAVE_MIN")},
    {"gpuhal_wave_reduce_max", kHsaWaveHelpers kHsaWaveReduce("gpuhal_wave_reduce_max", "__GPUHAL_WAVE_MAX")},
    // ROCr runs no printf service (the hostcall buffer AMD's OpenCL runtime
    // serves is not ROCr's): lower_builtin says NOT_SUPPORTED, and this text
    // makes a use a compile error that names it.
    {"gpuhal_printf",
     "#define gpuhal_printf(...) ({ _Static_assert(0, \"gpuhal_printf: the hsa backend has no device printf "
     "(Capability::KernelPrintf)\"); 0; })"},
    // A trap: the queue fails, and the launch with it (ERROR_LAUNCH_FAILED,
    // without the condition and line: the trap carries none).
    {"gpuhal_assert", "#define gpuhal_assert(condition) ((condition) ? (void)0 : __builtin_trap())"},
};

}  // namespace

const char *hsa_lowering(const char *builtin) {
  return plugin::find_builtin(kBuiltins, kPrologue, builtin);
}

}  // namespace gpuhal::hsa
