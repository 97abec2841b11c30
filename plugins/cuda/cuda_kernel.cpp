// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "cuda_entries.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "array_dims.hpp"
#include "atomics_lowering.hpp"
#include "builtin_table.hpp"
#include "compiled_image.hpp"
#include "cuda_context.hpp"
#include "cuda_stream.hpp"
#include "cuda_nvrtc.hpp"
#include "cuda_thread_rules.hpp"

namespace gpuhal::cuda {
namespace {

// ---- the lowering ------------------------------------------------------------------

const char kPrologue[] =
    "typedef signed char int8_t;\n"
    "typedef unsigned char uint8_t;\n"
    "typedef short int16_t;\n"
    "typedef unsigned short uint16_t;\n"
    "typedef int int32_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef long long int64_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "typedef long long intptr_t;\n"
    "typedef unsigned long long uintptr_t;\n"
    "static __device__ __forceinline__ unsigned __gpuhal_pick(unsigned d, unsigned x, unsigned y, unsigned z) {\n"
    "  return d == 0u ? x : (d == 1u ? y : z);\n"
    "}\n"
    "extern __shared__ __align__(16) unsigned char __gpuhal_dynamic_smem[];\n"
    "static __device__ __forceinline__ unsigned __gpuhal_dynamic_smem_size() {\n"
    "  unsigned r;\n"
    "  asm volatile(\"mov.u32 %0, %%dynamic_smem_size;\" : \"=r\"(r));\n"
    "  return r;\n"
    "}";

// The helpers every atomic's lowering starts with (defined once: guarded).
#define kCudaAtomicHelpers \
  "#ifndef __GPUHAL_CU_ATOMIC_HELPERS\n" \
  "#define __GPUHAL_CU_ATOMIC_HELPERS\n" \
  "#define __GPUHAL_CU_RMW(T, name, intr, U) \\\n" \
  "  static __device__ __forceinline__ T name(T *p, T v) { return (T)intr((U *)p, (U)v); }\n" \
  "#define __GPUHAL_CU_LOOP(T, B, name, f, tobits, frombits) \\\n" \
  "  static __device__ __forceinline__ T name(T *p, T v) { \\\n" \
  "    B *bits = (B *)p; B seen = *(volatile B *)bits, want; \\\n" \
  "    for (;;) { want = tobits(f(frombits(seen), v)); B got = atomicCAS(bits, seen, want); \\\n" \
  "      if (got == seen) break; seen = got; } \\\n" \
  "    return frombits(seen); }\n" \
  "#define __GPUHAL_CU_F2B(x) __float_as_uint(x)\n" \
  "#define __GPUHAL_CU_B2F(x) __uint_as_float(x)\n" \
  "#define __GPUHAL_CU_D2B(x) ((unsigned long long)__double_as_longlong(x))\n" \
  "#define __GPUHAL_CU_B2D(x) __longlong_as_double((long long)(x))\n" \
  "#define __GPUHAL_CU_ADD_F(a, b) ((a) + (b))\n" \
  "#define __GPUHAL_CU_SUB_F(a, b) ((a) - (b))\n" \
  "#define __GPUHAL_CU_MIN_F(a, b) ((b) < (a) ? (b) : (a))\n" \
  "#define __GPUHAL_CU_MAX_F(a, b) ((b) > (a) ? (b) : (a))\n" \
  "#define __GPUHAL_CU_NEG(T, name) \\\n" \
  "  static __device__ __forceinline__ T name(T *p, T v) { \\\n" \
  "    return (T)atomicAdd((unsigned long long *)p, 0ull - (unsigned long long)v); }\n" \
  "#define __GPUHAL_CU_ULL(x) ((unsigned long long)(x))\n" \
  "#define __GPUHAL_CU_XCHG_D(name) \\\n" \
  "  static __device__ __forceinline__ double name(double *p, double v) { \\\n" \
  "    return __GPUHAL_CU_B2D(atomicExch((unsigned long long *)p, __GPUHAL_CU_D2B(v))); }\n" \
  "#define __GPUHAL_CU_CAS(T, name, U, tobits, frombits) \\\n" \
  "  static __device__ __forceinline__ T name(T *p, T e, T d) { \\\n" \
  "    return frombits(atomicCAS((U *)p, tobits(e), tobits(d))); }\n" \
  /* The _explicit forms (the scope picks the intrinsic; see the table). */ \
  "#define __GPUHAL_CU_SCOPED(intr, s, ...) \\\n" \
  "  ((s) == 1 ? intr##_block(__VA_ARGS__) : (s) == 2 ? intr(__VA_ARGS__) : intr##_system(__VA_ARGS__))\n" \
  "static __device__ __forceinline__ void __gpuhal_cu_fence(int o, int s) {\n" \
  "  if (o == 0) return;\n" \
  "  if (s == 1) __threadfence_block(); else if (s == 2) __threadfence(); else __threadfence_system();\n" \
  "}\n" \
  "#define __GPUHAL_CU_RMW_X(T, name, intr, U) \\\n" \
  "  static __device__ __forceinline__ T name(T *p, T v, int o, int s) { \\\n" \
  "    __gpuhal_cu_fence(o, s); T r = (T)__GPUHAL_CU_SCOPED(intr, s, (U *)p, (U)v); __gpuhal_cu_fence(o, s); return r; }\n" \
  "#define __GPUHAL_CU_LOOP_X(T, B, name, f, tobits, frombits) \\\n" \
  "  static __device__ __forceinline__ T name(T *p, T v, int o, int s) { \\\n" \
  "    __gpuhal_cu_fence(o, s); B *bits = (B *)p; B seen = *(volatile B *)bits, want; \\\n" \
  "    for (;;) { want = tobits(f(frombits(seen), v)); B got = __GPUHAL_CU_SCOPED(atomicCAS, s, bits, seen, want); \\\n" \
  "      if (got == seen) break; seen = got; } \\\n" \
  "    __gpuhal_cu_fence(o, s); return frombits(seen); }\n" \
  "#define __GPUHAL_CU_NEG_X(T, name) \\\n" \
  "  static __device__ __forceinline__ T name(T *p, T v, int o, int s) { \\\n" \
  "    __gpuhal_cu_fence(o, s); \\\n" \
  "    T r = (T)__GPUHAL_CU_SCOPED(atomicAdd, s, (unsigned long long *)p, 0ull - (unsigned long long)v); \\\n" \
  "    __gpuhal_cu_fence(o, s); return r; }\n" \
  "#define __GPUHAL_CU_XCHG_D_X(name) \\\n" \
  "  static __device__ __forceinline__ double name(double *p, double v, int o, int s) { \\\n" \
  "    __gpuhal_cu_fence(o, s); unsigned long long r = __GPUHAL_CU_SCOPED(atomicExch, s, \\\n" \
  "      (unsigned long long *)p, __GPUHAL_CU_D2B(v)); __gpuhal_cu_fence(o, s); return __GPUHAL_CU_B2D(r); }\n" \
  "#define __GPUHAL_CU_CAS_X(T, name, U, tobits, frombits) \\\n" \
  "  static __device__ __forceinline__ T name(T *p, T e, T d, int o, int s) { \\\n" \
  "    __gpuhal_cu_fence(o, s); U r = __GPUHAL_CU_SCOPED(atomicCAS, s, (U *)p, tobits(e), tobits(d)); \\\n" \
  "    __gpuhal_cu_fence(o, s); return frombits(r); }\n" \
  "#define __GPUHAL_CU_SAME(x) (x)\n" \
  "#endif\n"

// The helpers of the wave operations (defined once: guarded). A reduction
// folds lane + 16, + 8, ... into each lane that has such a partner, so lane
// 0 ends with every lane's value (also in a partial warp), then broadcasts.
#define kCudaWaveHelpers \
  "#ifndef __GPUHAL_CU_WAVE_HELPERS\n" \
  "#define __GPUHAL_CU_WAVE_HELPERS\n" \
  "static __device__ __forceinline__ unsigned __gpuhal_linear_local_id() {\n" \
  "  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n" \
  "}\n" \
  "static __device__ __forceinline__ unsigned __gpuhal_wave_lanes() {\n" \
  "  unsigned left = blockDim.x * blockDim.y * blockDim.z - (__gpuhal_linear_local_id() & ~31u);\n" \
  "  return left < 32u ? left : 32u;\n" \
  "}\n" \
  "static __device__ __forceinline__ unsigned __gpuhal_wave_mask() {\n" \
  "  unsigned n = __gpuhal_wave_lanes();\n" \
  "  return n >= 32u ? 0xffffffffu : (1u << n) - 1u;\n" \
  "}\n" \
  "static __device__ __forceinline__ int __gpuhal_wave_before(unsigned lane, unsigned delta) {\n" \
  "  return delta > lane ? -1 : (int)(lane - delta);\n" \
  "}\n" \
  "static __device__ __forceinline__ int __gpuhal_wave_past(unsigned lane, unsigned delta) {\n" \
  "  return delta >= 32u ? -1 : (int)(lane + delta);\n" \
  "}\n" \
  "template <typename T> static __device__ __forceinline__ T __gpuhal_wave_from(T v, int src) {\n" \
  "  unsigned lane = __gpuhal_linear_local_id() & 31u;\n" \
  "  unsigned from = (src >= 0 && (unsigned)src < __gpuhal_wave_lanes()) ? (unsigned)src : lane;\n" \
  "  return __shfl_sync(__gpuhal_wave_mask(), v, (int)from);\n" \
  "}\n" \
  "struct __gpuhal_wave_add { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };\n" \
  "struct __gpuhal_wave_min { template <typename T> __device__ T operator()(T a, T b) const { return b < a ? b : a; } };\n" \
  "struct __gpuhal_wave_max { template <typename T> __device__ T operator()(T a, T b) const { return b > a ? b : a; } };\n" \
  "template <typename T, typename F> static __device__ __forceinline__ T __gpuhal_wave_reduce(T v, F f) {\n" \
  "  unsigned lane = __gpuhal_linear_local_id() & 31u, n = __gpuhal_wave_lanes(), mask = __gpuhal_wave_mask();\n" \
  "  for (unsigned off = 16u; off > 0u; off >>= 1) {\n" \
  "    unsigned src = lane + off;\n" \
  "    T other = __shfl_sync(mask, v, (int)(src < n ? src : lane));\n" \
  "    if (src < n) v = f(v, other);\n" \
  "  }\n" \
  "  return __shfl_sync(mask, v, 0);\n" \
  "}\n" \
  "#endif\n"

// Each operation's overloads, for its plain// Each operation's overloads, for its plain (G "") or _explicit (G "_X")
// generator: one list of types for both forms.
#define kCudaAdd(G, N)                                                            \
  "__GPUHAL_CU_RMW" G "(int, " N ", atomicAdd, int)\n"                             \
  "__GPUHAL_CU_RMW" G "(unsigned int, " N ", atomicAdd, unsigned int)\n"           \
  "__GPUHAL_CU_RMW" G "(unsigned long long, " N ", atomicAdd, unsigned long long)\n" \
  "__GPUHAL_CU_RMW" G "(long long, " N ", atomicAdd, unsigned long long)\n"        \
  "__GPUHAL_CU_RMW" G "(long, " N ", atomicAdd, unsigned long long)\n"             \
  "__GPUHAL_CU_RMW" G "(unsigned long, " N ", atomicAdd, unsigned long long)\n"    \
  "__GPUHAL_CU_RMW" G "(float, " N ", atomicAdd, float)\n"                         \
  "__GPUHAL_CU_RMW" G "(double, " N ", atomicAdd, double)\n"
// 64-bit subtraction adds the two's complement (CUDA's atomicSub is 32-bit).
#define kCudaSub(G, N)                                                                                     \
  "__GPUHAL_CU_RMW" G "(int, " N ", atomicSub, int)\n"                                                      \
  "__GPUHAL_CU_RMW" G "(unsigned int, " N ", atomicSub, unsigned int)\n"                                    \
  "__GPUHAL_CU_NEG" G "(unsigned long long, " N ")\n"                                                       \
  "__GPUHAL_CU_NEG" G "(long long, " N ")\n"                                                                \
  "__GPUHAL_CU_NEG" G "(long, " N ")\n"                                                                     \
  "__GPUHAL_CU_NEG" G "(unsigned long, " N ")\n"                                                            \
  "__GPUHAL_CU_LOOP" G "(float, unsigned int, " N ", __GPUHAL_CU_SUB_F, __GPUHAL_CU_F2B, __GPUHAL_CU_B2F)\n" \
  "__GPUHAL_CU_LOOP" G "(double, unsigned long long, " N ", __GPUHAL_CU_SUB_F, __GPUHAL_CU_D2B, __GPUHAL_CU_B2D)\n"
#define kCudaMinMax(G, N, I, F)                                                                         \
  "__GPUHAL_CU_RMW" G "(int, " N ", " I ", int)\n"                                                       \
  "__GPUHAL_CU_RMW" G "(unsigned int, " N ", " I ", unsigned int)\n"                                     \
  "__GPUHAL_CU_RMW" G "(unsigned long long, " N ", " I ", unsigned long long)\n"                         \
  "__GPUHAL_CU_RMW" G "(long long, " N ", " I ", long long)\n"                                           \
  "__GPUHAL_CU_RMW" G "(long, " N ", " I ", long long)\n"                                                \
  "__GPUHAL_CU_RMW" G "(unsigned long, " N ", " I ", unsigned long long)\n"                              \
  "__GPUHAL_CU_LOOP" G "(float, unsigned int, " N ", " F ", __GPUHAL_CU_F2B, __GPUHAL_CU_B2F)\n"          \
  "__GPUHAL_CU_LOOP" G "(double, unsigned long long, " N ", " F ", __GPUHAL_CU_D2B, __GPUHAL_CU_B2D)\n"
#define kCudaBits(G, N, I)                                                  \
  "__GPUHAL_CU_RMW" G "(int, " N ", " I ", int)\n"                           \
  "__GPUHAL_CU_RMW" G "(unsigned int, " N ", " I ", unsigned int)\n"         \
  "__GPUHAL_CU_RMW" G "(unsigned long long, " N ", " I ", unsigned long long)\n" \
  "__GPUHAL_CU_RMW" G "(long long, " N ", " I ", unsigned long long)\n"      \
  "__GPUHAL_CU_RMW" G "(long, " N ", " I ", unsigned long long)\n"           \
  "__GPUHAL_CU_RMW" G "(unsigned long, " N ", " I ", unsigned long long)\n"
#define kCudaXchg(G, N)                                                              \
  kCudaBits(G, N, "atomicExch") "__GPUHAL_CU_RMW" G "(float, " N ", atomicExch, float)\n" \
  "__GPUHAL_CU_XCHG_D" G "(" N ")\n"
#define kCudaCas(G, N)                                                                              \
  "__GPUHAL_CU_CAS" G "(int, " N ", int, __GPUHAL_CU_SAME, __GPUHAL_CU_SAME)\n"                      \
  "__GPUHAL_CU_CAS" G "(unsigned int, " N ", unsigned int, __GPUHAL_CU_SAME, __GPUHAL_CU_SAME)\n"    \
  "__GPUHAL_CU_CAS" G "(unsigned long long, " N ", unsigned long long, __GPUHAL_CU_SAME, __GPUHAL_CU_SAME)\n" \
  "__GPUHAL_CU_CAS" G "(long long, " N ", unsigned long long, __GPUHAL_CU_ULL, (long long))\n"       \
  "__GPUHAL_CU_CAS" G "(long, " N ", unsigned long long, __GPUHAL_CU_ULL, (long))\n"                 \
  "__GPUHAL_CU_CAS" G "(unsigned long, " N ", unsigned long long, __GPUHAL_CU_ULL, (unsigned long))\n" \
  "__GPUHAL_CU_CAS" G "(float, " N ", unsigned int, __GPUHAL_CU_F2B, __GPUHAL_CU_B2F)\n"              \
  "__GPUHAL_CU_CAS" G "(double, " N ", unsigned long long, __GPUHAL_CU_D2B, __GPUHAL_CU_B2D)\n"

const plugin::BuiltinText kBuiltins[] = {
    {"GPUHAL_KERNEL", "#define GPUHAL_KERNEL extern \"C\" __global__"},
    {"GPUHAL_DEVICE", "#define GPUHAL_DEVICE static __device__ __forceinline__"},
    {"GPUHAL_GLOBAL", "#define GPUHAL_GLOBAL"},
    {"GPUHAL_RESTRICT", "#define GPUHAL_RESTRICT __restrict__"},
    {"GPUHAL_CONSTANT", "#define GPUHAL_CONSTANT __constant__"},
    {"GPUHAL_LOCAL_MEM_FENCE", "#define GPUHAL_LOCAL_MEM_FENCE 1u"},
    {"GPUHAL_GLOBAL_MEM_FENCE", "#define GPUHAL_GLOBAL_MEM_FENCE 2u"},
    {"gpuhal_local_id", "#define gpuhal_local_id(d) __gpuhal_pick((d), threadIdx.x, threadIdx.y, threadIdx.z)"},
    {"gpuhal_group_id", "#define gpuhal_group_id(d) __gpuhal_pick((d), blockIdx.x, blockIdx.y, blockIdx.z)"},
    {"gpuhal_local_size", "#define gpuhal_local_size(d) __gpuhal_pick((d), blockDim.x, blockDim.y, blockDim.z)"},
    {"gpuhal_num_groups", "#define gpuhal_num_groups(d) __gpuhal_pick((d), gridDim.x, gridDim.y, gridDim.z)"},
    {"gpuhal_global_id",
     "#define gpuhal_global_id(d) (gpuhal_group_id(d) * gpuhal_local_size(d) + gpuhal_local_id(d))"},
    {"gpuhal_global_size", "#define gpuhal_global_size(d) (gpuhal_num_groups(d) * gpuhal_local_size(d))"},
    // __syncthreads is bar.sync 0 and orders shared and global memory within
    // the block; a global fence flag adds __threadfence before it so that
    // the writes are visible device-wide.
    {"gpuhal_barrier", "#define gpuhal_barrier(flags) (((flags) & 2u) ? __threadfence() : (void)0, __syncthreads())"},
    {"gpuhal_wave_barrier", "#define gpuhal_wave_barrier() __syncwarp()"},
    {"gpuhal_mem_fence", "#define gpuhal_mem_fence(flags) (((flags) & 2u) ? __threadfence() : __threadfence_block())"},
    {"GPUHAL_SHARED_ARRAY", GPUHAL_PLUGIN_ARRAY_DIMS_MACROS
     "#define GPUHAL_SHARED_ARRAY(T, name, ...) __shared__ __align__(16) T name __GPUHAL_DIMS(__VA_ARGS__)"},
    {"GPUHAL_DYNAMIC_SHARED", "#define GPUHAL_DYNAMIC_SHARED(T, name) T *name = (T *)__gpuhal_dynamic_smem"},
    {"gpuhal_dynamic_shared_bytes", "#define gpuhal_dynamic_shared_bytes() __gpuhal_dynamic_smem_size()"},
    {"GPUHAL_LOCAL_ARRAY",
     GPUHAL_PLUGIN_ARRAY_DIMS_MACROS "#define GPUHAL_LOCAL_ARRAY(T, name, ...) T name __GPUHAL_DIMS(__VA_ARGS__)"},
    // __align__ only ever raises a variable's alignment.
    {"GPUHAL_SHARED_ARRAY_ALIGNED",
     GPUHAL_PLUGIN_ARRAY_DIMS_MACROS GPUHAL_PLUGIN_ALIGNMENT_CHECK_CXX
     "#define GPUHAL_SHARED_ARRAY_ALIGNED(T, name, align, ...) __GPUHAL_ALIGNMENT_OK(align, name); __shared__ "
     "__align__(align) T name __GPUHAL_DIMS(__VA_ARGS__)"},
    {"GPUHAL_LOCAL_ARRAY_ALIGNED", GPUHAL_PLUGIN_ARRAY_DIMS_MACROS GPUHAL_PLUGIN_ALIGNMENT_CHECK_CXX
     "#define GPUHAL_LOCAL_ARRAY_ALIGNED(T, name, align, ...) __GPUHAL_ALIGNMENT_OK(align, name); __align__(align) "
     "T name __GPUHAL_DIMS(__VA_ARGS__)"},
    // bar.red.popc / .and / .or: a __syncthreads that reduces the predicate.
    {"gpuhal_barrier_count", "#define gpuhal_barrier_count(p) __syncthreads_count((p) != 0)"},
    {"gpuhal_barrier_and", "#define gpuhal_barrier_and(p) __syncthreads_and((p) != 0)"},
    {"gpuhal_barrier_or", "#define gpuhal_barrier_or(p) __syncthreads_or((p) != 0)"},
    // Atomics: CUDA's atomic* intrinsics (64-bit ones through unsigned long
    // long; float min / max and the double ones CUDA lacks as atomicCAS
    // loops). The _explicit forms: the _block / plain / _system intrinsic for
    // the work-group / device / system scope, and for acq_rel and seq_cst a
    // fence of that scope before and after (__threadfence* are fence.sc: the
    // PTX memory model's release and acquire patterns around the relaxed
    // atom, at least as strong as asked).
    {"gpuhal_atomic_add", kCudaAtomicHelpers kCudaAdd("", "gpuhal_atomic_add")},
    {"gpuhal_atomic_sub", kCudaAtomicHelpers kCudaSub("", "gpuhal_atomic_sub")},
    {"gpuhal_atomic_min", kCudaAtomicHelpers kCudaMinMax("", "gpuhal_atomic_min", "atomicMin", "__GPUHAL_CU_MIN_F")},
    {"gpuhal_atomic_max", kCudaAtomicHelpers kCudaMinMax("", "gpuhal_atomic_max", "atomicMax", "__GPUHAL_CU_MAX_F")},
    {"gpuhal_atomic_and", kCudaAtomicHelpers kCudaBits("", "gpuhal_atomic_and", "atomicAnd")},
    {"gpuhal_atomic_or", kCudaAtomicHelpers kCudaBits("", "gpuhal_atomic_or", "atomicOr")},
    {"gpuhal_atomic_xor", kCudaAtomicHelpers kCudaBits("", "gpuhal_atomic_xor", "atomicXor")},
    {"gpuhal_atomic_xchg", kCudaAtomicHelpers kCudaXchg("", "gpuhal_atomic_xchg")},
    {"gpuhal_atomic_cas", kCudaAtomicHelpers kCudaCas("", "gpuhal_atomic_cas")},
    GPUHAL_PLUGIN_ATOMIC_CONSTANTS,
    {"gpuhal_atomic_add_explicit", kCudaAtomicHelpers kCudaAdd("_X", "gpuhal_atomic_add_explicit")},
    {"gpuhal_atomic_sub_explicit", kCudaAtomicHelpers kCudaSub("_X", "gpuhal_atomic_sub_explicit")},
    {"gpuhal_atomic_min_explicit",
     kCudaAtomicHelpers kCudaMinMax("_X", "gpuhal_atomic_min_explicit", "atomicMin", "__GPUHAL_CU_MIN_F")},
    {"gpuhal_atomic_max_explicit",
     kCudaAtomicHelpers kCudaMinMax("_X", "gpuhal_atomic_max_explicit", "atomicMax", "__GPUHAL_CU_MAX_F")},
    {"gpuhal_atomic_and_explicit", kCudaAtomicHelpers kCudaBits("_X", "gpuhal_atomic_and_explicit", "atomicAnd")},
    {"gpuhal_atomic_or_explicit", kCudaAtomicHelpers kCudaBits("_X", "gpuhal_atomic_or_explicit", "atomicOr")},
    {"gpuhal_atomic_xor_explicit", kCudaAtomicHelpers kCudaBits("_X", "gpuhal_atomic_xor_explicit", "atomicXor")},
    {"gpuhal_atomic_xchg_explicit", kCudaAtomicHelpers kCudaXchg("_X", "gpuhal_atomic_xchg_explicit")},
    {"gpuhal_atomic_cas_explicit", kCudaAtomicHelpers kCudaCas("_X", "gpuhal_atomic_cas_explicit")},
    // Wave operations: a warp is 32 consecutive linear thread indices (the
    // CUDA programming guide: "each warp contains threads of consecutive,
    // increasing thread IDs with the first warp containing thread 0"), so
    // the last warp of a block whose size is no multiple of 32 is partial;
    // every *_sync below names exactly the warp's lanes, and a shuffle's
    // source outside them is the caller's own lane (its own value).
    {"gpuhal_wave_size", "#define gpuhal_wave_size() 32u"},
    {"gpuhal_wave_lane", kCudaWaveHelpers "#define gpuhal_wave_lane() (__gpuhal_linear_local_id() & 31u)"},
    {"gpuhal_wave_ballot",
     kCudaWaveHelpers "#define gpuhal_wave_ballot(p) ((unsigned long long)__ballot_sync(__gpuhal_wave_mask(), (p) != 0))"},
    {"gpuhal_wave_any", kCudaWaveHelpers "#define gpuhal_wave_any(p) (__any_sync(__gpuhal_wave_mask(), (p) != 0) != 0)"},
    {"gpuhal_wave_all", kCudaWaveHelpers "#define gpuhal_wave_all(p) (__all_sync(__gpuhal_wave_mask(), (p) != 0) != 0)"},
    {"gpuhal_wave_shuffle", kCudaWaveHelpers "#define gpuhal_wave_shuffle(v, lane) __gpuhal_wave_from((v), (int)(lane))"},
    {"gpuhal_wave_shuffle_up", kCudaWaveHelpers
     "#define gpuhal_wave_shuffle_up(v, delta) __gpuhal_wave_from((v), __gpuhal_wave_before(gpuhal_wave_lane(), (delta)))"},
    {"gpuhal_wave_shuffle_down", kCudaWaveHelpers
     "#define gpuhal_wave_shuffle_down(v, delta) __gpuhal_wave_from((v), __gpuhal_wave_past(gpuhal_wave_lane(), (delta)))"},
    {"gpuhal_wave_shuffle_xor",
     kCudaWaveHelpers "#define gpuhal_wave_shuffle_xor(v, mask) __gpuhal_wave_from((v), (int)(gpuhal_wave_lane() ^ (unsigned)(mask)))"},
    {"gpuhal_wave_reduce_add", kCudaWaveHelpers "#define gpuhal_wave_reduce_add(v) __gpuhal_wave_reduce((v), __gpuhal_wave_add())"},
    {"gpuhal_wave_reduce_min", kCudaWaveHelpers "#define gpuhal_wave_reduce_min(v) __gpuhal_wave_reduce((v), __gpuhal_wave_min())"},
    {"gpuhal_wave_reduce_max", kCudaWaveHelpers "#define gpuhal_wave_reduce_max(v) __gpuhal_wave_reduce((v), __gpuhal_wave_max())"},
    // The driver's printf (its FIFO is printed at the next synchronisation)
    // and its assert: a failed one stops the kernel, and the context fails
    // with CUDA_ERROR_ASSERT until it is reset, as the driver defines it.
    {"gpuhal_printf", "#define gpuhal_printf(...) printf(__VA_ARGS__)"},
    {"gpuhal_assert",
     "#define gpuhal_assert(condition) ((condition) ? (void)0 : __assertfail(#condition, __FILE__, __LINE__, "
     "__func__, 1))"},
};

bool has_arch_option(const std::vector<std::string> &opts) {
  for (const auto &o : opts)
    if (o.rfind("--gpu-architecture", 0) == 0 || o.rfind("-arch", 0) == 0) return true;
  return false;
}

}  // namespace

gpuhal_status_t lower_builtin(const char *builtin, const char **text) {
  return plugin::lower_builtin_entry(builtin, text, plugin::find_builtin(kBuiltins, kPrologue, builtin));
}

gpuhal_status_t module_compile(gpuhal_context_t ctx, const gpuhal_compile_args_t *args, void **image, uint64_t *bytes,
                               uint32_t *format) {
  return plugin::compile_checked(args, image, bytes, format, [&] {
    return in_context(ctx, "module_compile", [&](CudaContext *c) -> gpuhal_status_t {
      std::string why;
      const Nvrtc *n = nvrtc(&why);
      if (!n) return fail(GPUHAL_ERROR_COMPILATION_FAILED, "module_compile: " + why);
      std::vector<std::string> opts = plugin::compile_options(args);
      if (!has_arch_option(opts)) {
        int major = 0, minor = 0;
        if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGetAttribute, "cuDeviceGetAttribute", &major,
                                                    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->device);
            call_st != GPUHAL_SUCCESS)
          return call_st;
        if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGetAttribute, "cuDeviceGetAttribute", &minor,
                                                    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->device);
            call_st != GPUHAL_SUCCESS)
          return call_st;
        std::string arch;
        if (const gpuhal_status_t st = choose_arch(n, 10 * major + minor, &arch); st != GPUHAL_SUCCESS) return st;
        opts.push_back("--gpu-architecture=" + arch);
      }
      std::vector<const char *> copts;
      for (const auto &o : opts) copts.push_back(o.c_str());
      nvrtcProgram prog = nullptr;
      nvrtcResult r = n->nvrtcCreateProgram(&prog, args->source, "kernel.cu", 0, nullptr, nullptr);
      if (r != NVRTC_SUCCESS)
        return fail(GPUHAL_ERROR_COMPILATION_FAILED,
                    std::string("module_compile: nvrtcCreateProgram failed: ") + n->nvrtcGetErrorString(r));
      struct Destroy {
        const Nvrtc *n;
        nvrtcProgram *p;
        ~Destroy() { n->nvrtcDestroyProgram(p); }
      } destroy{n, &prog};
      r = n->nvrtcCompileProgram(prog, int(copts.size()), copts.data());
      if (r != NVRTC_SUCCESS) {
        size_t log_size = 0;
        std::string log;
        if (n->nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
          log.resize(log_size);
          n->nvrtcGetProgramLog(prog, &log[0]);
          log.resize(std::strlen(log.c_str()));
        }
        return fail(GPUHAL_ERROR_COMPILATION_FAILED, std::string("module_compile: nvrtcCompileProgram failed (") +
                                                         n->nvrtcGetErrorString(r) + "):\n" + log);
      }
      size_t size = 0;
      if ((r = n->nvrtcGetPTXSize(prog, &size)) != NVRTC_SUCCESS || size == 0)
        return fail(GPUHAL_ERROR_COMPILATION_FAILED, "module_compile: nvrtcGetPTXSize failed");
      char *ptx = static_cast<char *>(std::malloc(size));
      if (!ptx) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "module_compile: out of host memory for the PTX");
      if ((r = n->nvrtcGetPTX(prog, ptx)) != NVRTC_SUCCESS) {
        std::free(ptx);
        return fail(GPUHAL_ERROR_COMPILATION_FAILED,
                    std::string("module_compile: nvrtcGetPTX failed: ") + n->nvrtcGetErrorString(r));
      }
      *image = ptx;
      *bytes = std::strlen(ptx);  // the text; module_load adds the NUL the driver wants
      *format = GPUHAL_IMAGE_PTX;
      return GPUHAL_SUCCESS;
    });
  });
}

void image_free(void *image) {
  std::free(image);
}

namespace {
// What to say when the driver refuses PTX as too new: the versions of the
// driver and of the NVRTC that made it (if gpuhal's) and the PTX's own.
std::string toolchain_mismatch(const void *image, uint64_t bytes, uint32_t format) {
  std::string ptx_version = "?", target = "?";
  if (format == GPUHAL_IMAGE_PTX) {
    const std::string text(static_cast<const char *>(image), size_t(std::min<uint64_t>(bytes, 4096)));
    auto field = [&](const char *key) {
      const size_t p = text.find(key);
      if (p == std::string::npos) return std::string("?");
      const size_t b = p + std::strlen(key), e = text.find_first_of(" \t\r\n,", b);
      return text.substr(b, e == std::string::npos ? std::string::npos : e - b);
    };
    ptx_version = field(".version ");
    target = field(".target ");
  }
  const std::string nvrtc_text = nvrtc_provenance();
  std::string arch = target;
  if (arch.rfind("sm_", 0) == 0) arch = "compute_" + arch.substr(3);
  return "the CUDA " + cuda_version_text(driver().version) + " driver is older than the toolchain of this image (PTX ISA " +
         ptx_version + " for " + arch + nvrtc_text +
         "): update the NVIDIA driver, or use an NVRTC no newer than the driver (GPUHAL_NVRTC)";
}
}  // namespace

gpuhal_status_t module_load(gpuhal_context_t ctx, const void *image, uint64_t bytes, uint32_t format,
                            gpuhal_module_t *out) {
  if (!image || !bytes || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "module_load: null or empty image");
  if (format != GPUHAL_IMAGE_PTX && format != GPUHAL_IMAGE_CUBIN)
    return fail(GPUHAL_ERROR_INVALID_IMAGE,
                "module_load: the cuda backend loads PTX and cubin images (format " + std::to_string(format) + ")");
  return in_context(ctx, "module_load", [&](CudaContext *c) -> gpuhal_status_t {
    // PTX must be NUL-terminated for the driver: copy it when it is not.
    std::string text;
    const void *data = image;
    if (format == GPUHAL_IMAGE_PTX && static_cast<const char *>(image)[bytes - 1] != '\0') {
      text.assign(static_cast<const char *>(image), size_t(bytes));
      data = text.c_str();
    }
    char log[4096] = {};
    CUjit_option keys[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[2] = {log, reinterpret_cast<void *>(uintptr_t(sizeof log - 1))};
    if (!drv().cuModuleLoadDataEx)
      return fail(GPUHAL_ERROR_NOT_SUPPORTED, "cuModuleLoadDataEx is not provided by this driver");
    CUmodule m = nullptr;
    const CUresult r = drv().cuModuleLoadDataEx(&m, data, 2, keys, values);
    if (r != CUDA_SUCCESS) {
      const gpuhal_status_t st = drv().error(r, "cuModuleLoadDataEx");
      std::string message = plugin::last_error();
      if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) message += "; " + toolchain_mismatch(image, bytes, format);
      if (log[0]) message += std::string(":\n") + log;
      return fail(st, message);
    }
    {
      std::lock_guard<std::mutex> lock(c->mu);
      c->modules.insert(m);
    }
    *out = reinterpret_cast<gpuhal_module_t>(m);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t module_unload(gpuhal_context_t ctx, gpuhal_module_t module) {
  return in_context(ctx, "module_unload", [&](CudaContext *c) -> gpuhal_status_t {
    CUmodule m = reinterpret_cast<CUmodule>(module);
    // Taken out of the books before the unload (release_tracked says why),
    // put back after a failure: context_destroy then tries again.
    const gpuhal_status_t st = release_tracked(
        c, [&] { return c->modules.erase(m) != 0; }, GPUHAL_ERROR_INVALID_HANDLE,
        "module_unload: not a module of this context", [&] { return cu_call(drv().cuModuleUnload, "cuModuleUnload", m); },
        [&] { c->modules.insert(m); });
    if (st != GPUHAL_SUCCESS) return st;
    std::lock_guard<std::mutex> lock(c->mu);
    for (auto it = c->kernels.begin(); it != c->kernels.end();)
      it = it->second->module == m ? c->kernels.erase(it) : std::next(it);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t module_get_kernel(gpuhal_context_t ctx, gpuhal_module_t module, const char *name,
                                  gpuhal_kernel_t *out) {
  if (!name || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "module_get_kernel: null argument");
  return in_context(ctx, "module_get_kernel", [&](CudaContext *c) -> gpuhal_status_t {
    CUmodule m = reinterpret_cast<CUmodule>(module);
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (!c->modules.count(m))
        return fail(GPUHAL_ERROR_INVALID_HANDLE, "module_get_kernel: not a module of this context");
    }
    auto k = std::make_unique<CudaKernel>();
    k->module = m;
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuModuleGetFunction, "cuModuleGetFunction", &k->function, m, name);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    // Loaded now, never at a launch (which is stream-ordered): under lazy
    // loading a kernel loads at its first use, and "loading kernels might
    // require context synchronization" (CUDA programming guide, Lazy
    // Loading). cuFuncLoad (CUDA 12.4) finishes the load; older drivers load
    // at cuModuleGetFunction.
    if (drv().cuFuncLoad)
      if (const gpuhal_status_t call_st = cu_call(drv().cuFuncLoad, "cuFuncLoad", k->function);
          call_st != GPUHAL_SUCCESS)
        return call_st;
    if (const gpuhal_status_t call_st = cu_call(drv().cuFuncGetAttribute, "cuFuncGetAttribute", &k->max_threads,
                                                CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->function);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    if (const gpuhal_status_t call_st = cu_call(drv().cuFuncGetAttribute, "cuFuncGetAttribute", &k->static_shared,
                                                CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->function);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    const CudaKernel *raw = k.get();
    std::lock_guard<std::mutex> lock(c->mu);
    c->kernels.emplace(raw, std::move(k));
    *out = reinterpret_cast<gpuhal_kernel_t>(const_cast<CudaKernel *>(raw));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t opt_in_dynamic_shared(const CudaContext *c, CudaKernel *k, uint32_t dynamic_bytes) {
  // Above the default limit the kernel must opt in (once per size reached).
  const int dynamic = int(dynamic_bytes);
  const uint64_t shared = uint64_t(k->static_shared) + dynamic_bytes;
  if (shared <= uint64_t(c->shared_per_block) || dynamic <= k->dynamic_opt_in.load(std::memory_order_acquire))
    return GPUHAL_SUCCESS;
  // Read, raise and record under one lock: the driver keeps the last value set.
  std::lock_guard<std::mutex> lock(k->opt_in_mu);
  if (dynamic > k->dynamic_opt_in.load(std::memory_order_relaxed)) {
    if (const gpuhal_status_t call_st = cu_call(drv().cuFuncSetAttribute, "cuFuncSetAttribute", k->function,
                                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    k->dynamic_opt_in.store(dynamic, std::memory_order_release);
  }
  return GPUHAL_SUCCESS;
}

CudaKernel *kernel_of(CudaContext *c, gpuhal_kernel_t handle) {
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->kernels.find(reinterpret_cast<const CudaKernel *>(handle));
  return it == c->kernels.end() ? nullptr : it->second.get();
}

gpuhal_status_t launch(gpuhal_context_t ctx, gpuhal_kernel_t kernel, const gpuhal_launch_config_t *config,
                       void *const *args, uint32_t arg_count, gpuhal_stream_t stream) {
  if (!config || config->struct_size < sizeof(gpuhal_launch_config_t))
    return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: null or short launch configuration");
  if (!kernel) return fail(GPUHAL_ERROR_INVALID_HANDLE, "launch: null kernel");
  if (arg_count && !args) return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: null argument array");
  return in_context(ctx, "launch", [&](CudaContext *c) -> gpuhal_status_t {
    CudaKernel *k = nullptr;
    {
      // One lock for both lookups: the launch path's only one in the plugin.
      bool stream_known = true;
      {
        std::lock_guard<std::mutex> lock(c->mu);
        const bool special = !stream || stream == GPUHAL_STREAM_LEGACY || stream == GPUHAL_STREAM_PER_THREAD;
        stream_known = special || c->streams.count(native(stream)) != 0;
        auto it = c->kernels.find(reinterpret_cast<const CudaKernel *>(kernel));
        if (it == c->kernels.end()) return fail(GPUHAL_ERROR_INVALID_HANDLE, "launch: not a kernel of this context");
        k = it->second.get();
      }
      if (!stream_known && !external_stream_of(c, stream))
        return fail(GPUHAL_ERROR_INVALID_HANDLE, "launch: invalid stream");
    }
    // What this kernel can take (registers and static shared memory limit it
    // below the device's maxima), from what was read at lookup: refused here,
    // before anything is queued.
    const uint64_t threads = uint64_t(config->block[0]) * config->block[1] * config->block[2];
    if (k->max_threads > 0 && threads > uint64_t(k->max_threads))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: a block of " + std::to_string(threads) +
                                                  " threads, this kernel allows at most " +
                                                  std::to_string(k->max_threads));
    const uint64_t shared = uint64_t(k->static_shared) + config->dynamic_shared_bytes;
    if (shared > uint64_t(c->shared_optin))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: " + std::to_string(k->static_shared) + " bytes of static and " +
                                                  std::to_string(config->dynamic_shared_bytes) +
                                                  " of dynamic shared memory, the device has " +
                                                  std::to_string(c->shared_optin) + " per block");
    if (const gpuhal_status_t st = opt_in_dynamic_shared(c, k, config->dynamic_shared_bytes); st != GPUHAL_SUCCESS)
      return st;
    CUfunction f = k->function;
    const CUresult r = drv().cuLaunchKernel ? drv().cuLaunchKernel(f, config->grid[0], config->grid[1], config->grid[2],
                                                                   config->block[0], config->block[1], config->block[2],
                                                                   config->dynamic_shared_bytes, native(stream),
                                                                   const_cast<void **>(args), nullptr)
                                            : CUDA_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS) return context_error(c, r, "cuLaunchKernel");
    if (c->active_captures.load(std::memory_order_acquire) != 0)
      note_captured_launch(c, native(stream), f, *config, arg_count);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
