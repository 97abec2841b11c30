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
