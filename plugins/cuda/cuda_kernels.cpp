// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "cuda_entries.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "array_dims.hpp"
#include "builtin_table.hpp"
#include "compiled_image.hpp"
#include "cuda_context.hpp"
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
  "#endif\n"

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
    // long; float min / max and the double ones CUDA lacks as atomicCAS loops).
    {"gpuhal_atomic_add",
     kCudaAtomicHelpers
     "__GPUHAL_CU_RMW(int, gpuhal_atomic_add, atomicAdd, int)\n"
     "__GPUHAL_CU_RMW(unsigned int, gpuhal_atomic_add, atomicAdd, unsigned int)\n"
     "__GPUHAL_CU_RMW(unsigned long long, gpuhal_atomic_add, atomicAdd, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long long, gpuhal_atomic_add, atomicAdd, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long, gpuhal_atomic_add, atomicAdd, unsigned long long)\n"
     "__GPUHAL_CU_RMW(unsigned long, gpuhal_atomic_add, atomicAdd, unsigned long long)\n"
     "__GPUHAL_CU_RMW(float, gpuhal_atomic_add, atomicAdd, float)\n"
     "__GPUHAL_CU_RMW(double, gpuhal_atomic_add, atomicAdd, double)\n"},
    {"gpuhal_atomic_sub",
     kCudaAtomicHelpers
     "__GPUHAL_CU_RMW(int, gpuhal_atomic_sub, atomicSub, int)\n"
     "__GPUHAL_CU_RMW(unsigned int, gpuhal_atomic_sub, atomicSub, unsigned int)\n"
     "static __device__ __forceinline__ unsigned long long gpuhal_atomic_sub(unsigned long long *p, unsigned long long v) { return (unsigned long long)atomicAdd((unsigned long long *)p, 0ull - (unsigned long long)v); }\n"
     "static __device__ __forceinline__ long long gpuhal_atomic_sub(long long *p, long long v) { return (long long)atomicAdd((unsigned long long *)p, 0ull - (unsigned long long)v); }\n"
     "static __device__ __forceinline__ long gpuhal_atomic_sub(long *p, long v) { return (long)atomicAdd((unsigned long long *)p, 0ull - (unsigned long long)v); }\n"
     "static __device__ __forceinline__ unsigned long gpuhal_atomic_sub(unsigned long *p, unsigned long v) { return (unsigned long)atomicAdd((unsigned long long *)p, 0ull - (unsigned long long)v); }\n"
     "__GPUHAL_CU_LOOP(float, unsigned int, gpuhal_atomic_sub, __GPUHAL_CU_SUB_F, __GPUHAL_CU_F2B, __GPUHAL_CU_B2F)\n"
     "__GPUHAL_CU_LOOP(double, unsigned long long, gpuhal_atomic_sub, __GPUHAL_CU_SUB_F, __GPUHAL_CU_D2B, __GPUHAL_CU_B2D)\n"},
    {"gpuhal_atomic_min",
     kCudaAtomicHelpers
     "__GPUHAL_CU_RMW(int, gpuhal_atomic_min, atomicMin, int)\n"
     "__GPUHAL_CU_RMW(unsigned int, gpuhal_atomic_min, atomicMin, unsigned int)\n"
     "__GPUHAL_CU_RMW(unsigned long long, gpuhal_atomic_min, atomicMin, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long long, gpuhal_atomic_min, atomicMin, long long)\n"
     "__GPUHAL_CU_RMW(long, gpuhal_atomic_min, atomicMin, long long)\n"
     "__GPUHAL_CU_RMW(unsigned long, gpuhal_atomic_min, atomicMin, unsigned long long)\n"
     "__GPUHAL_CU_LOOP(float, unsigned int, gpuhal_atomic_min, __GPUHAL_CU_MIN_F, __GPUHAL_CU_F2B, __GPUHAL_CU_B2F)\n"
     "__GPUHAL_CU_LOOP(double, unsigned long long, gpuhal_atomic_min, __GPUHAL_CU_MIN_F, __GPUHAL_CU_D2B, __GPUHAL_CU_B2D)\n"},
    {"gpuhal_atomic_max",
     kCudaAtomicHelpers
     "__GPUHAL_CU_RMW(int, gpuhal_atomic_max, atomicMax, int)\n"
     "__GPUHAL_CU_RMW(unsigned int, gpuhal_atomic_max, atomicMax, unsigned int)\n"
     "__GPUHAL_CU_RMW(unsigned long long, gpuhal_atomic_max, atomicMax, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long long, gpuhal_atomic_max, atomicMax, long long)\n"
     "__GPUHAL_CU_RMW(long, gpuhal_atomic_max, atomicMax, long long)\n"
     "__GPUHAL_CU_RMW(unsigned long, gpuhal_atomic_max, atomicMax, unsigned long long)\n"
     "__GPUHAL_CU_LOOP(float, unsigned int, gpuhal_atomic_max, __GPUHAL_CU_MAX_F, __GPUHAL_CU_F2B, __GPUHAL_CU_B2F)\n"
     "__GPUHAL_CU_LOOP(double, unsigned long long, gpuhal_atomic_max, __GPUHAL_CU_MAX_F, __GPUHAL_CU_D2B, __GPUHAL_CU_B2D)\n"},
    {"gpuhal_atomic_and",
     kCudaAtomicHelpers
     "__GPUHAL_CU_RMW(int, gpuhal_atomic_and, atomicAnd, int)\n"
     "__GPUHAL_CU_RMW(unsigned int, gpuhal_atomic_and, atomicAnd, unsigned int)\n"
     "__GPUHAL_CU_RMW(unsigned long long, gpuhal_atomic_and, atomicAnd, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long long, gpuhal_atomic_and, atomicAnd, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long, gpuhal_atomic_and, atomicAnd, unsigned long long)\n"
     "__GPUHAL_CU_RMW(unsigned long, gpuhal_atomic_and, atomicAnd, unsigned long long)\n"},
    {"gpuhal_atomic_or",
     kCudaAtomicHelpers
     "__GPUHAL_CU_RMW(int, gpuhal_atomic_or, atomicOr, int)\n"
     "__GPUHAL_CU_RMW(unsigned int, gpuhal_atomic_or, atomicOr, unsigned int)\n"
     "__GPUHAL_CU_RMW(unsigned long long, gpuhal_atomic_or, atomicOr, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long long, gpuhal_atomic_or, atomicOr, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long, gpuhal_atomic_or, atomicOr, unsigned long long)\n"
     "__GPUHAL_CU_RMW(unsigned long, gpuhal_atomic_or, atomicOr, unsigned long long)\n"},
    {"gpuhal_atomic_xor",
     kCudaAtomicHelpers
     "__GPUHAL_CU_RMW(int, gpuhal_atomic_xor, atomicXor, int)\n"
     "__GPUHAL_CU_RMW(unsigned int, gpuhal_atomic_xor, atomicXor, unsigned int)\n"
     "__GPUHAL_CU_RMW(unsigned long long, gpuhal_atomic_xor, atomicXor, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long long, gpuhal_atomic_xor, atomicXor, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long, gpuhal_atomic_xor, atomicXor, unsigned long long)\n"
     "__GPUHAL_CU_RMW(unsigned long, gpuhal_atomic_xor, atomicXor, unsigned long long)\n"},
    {"gpuhal_atomic_xchg",
     kCudaAtomicHelpers
     "__GPUHAL_CU_RMW(int, gpuhal_atomic_xchg, atomicExch, int)\n"
     "__GPUHAL_CU_RMW(unsigned int, gpuhal_atomic_xchg, atomicExch, unsigned int)\n"
     "__GPUHAL_CU_RMW(unsigned long long, gpuhal_atomic_xchg, atomicExch, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long long, gpuhal_atomic_xchg, atomicExch, unsigned long long)\n"
     "__GPUHAL_CU_RMW(long, gpuhal_atomic_xchg, atomicExch, unsigned long long)\n"
     "__GPUHAL_CU_RMW(unsigned long, gpuhal_atomic_xchg, atomicExch, unsigned long long)\n"
     "__GPUHAL_CU_RMW(float, gpuhal_atomic_xchg, atomicExch, float)\n"
     "static __device__ __forceinline__ double gpuhal_atomic_xchg(double *p, double v) { return __GPUHAL_CU_B2D(atomicExch((unsigned long long *)p, __GPUHAL_CU_D2B(v))); }\n"},
    {"gpuhal_atomic_cas",
     kCudaAtomicHelpers
     "static __device__ __forceinline__ int gpuhal_atomic_cas(int *p, int e, int d) { return (int)atomicCAS((int *)p, (int)e, (int)d); }\n"
     "static __device__ __forceinline__ unsigned int gpuhal_atomic_cas(unsigned int *p, unsigned int e, unsigned int d) { return (unsigned int)atomicCAS((unsigned int *)p, (unsigned int)e, (unsigned int)d); }\n"
     "static __device__ __forceinline__ unsigned long long gpuhal_atomic_cas(unsigned long long *p, unsigned long long e, unsigned long long d) { return (unsigned long long)atomicCAS((unsigned long long *)p, (unsigned long long)e, (unsigned long long)d); }\n"
     "static __device__ __forceinline__ long long gpuhal_atomic_cas(long long *p, long long e, long long d) { return (long long)atomicCAS((unsigned long long *)p, (unsigned long long)e, (unsigned long long)d); }\n"
     "static __device__ __forceinline__ long gpuhal_atomic_cas(long *p, long e, long d) { return (long)atomicCAS((unsigned long long *)p, (unsigned long long)e, (unsigned long long)d); }\n"
     "static __device__ __forceinline__ unsigned long gpuhal_atomic_cas(unsigned long *p, unsigned long e, unsigned long d) { return (unsigned long)atomicCAS((unsigned long long *)p, (unsigned long long)e, (unsigned long long)d); }\n"
     "static __device__ __forceinline__ float gpuhal_atomic_cas(float *p, float e, float d) { return __GPUHAL_CU_B2F(atomicCAS((unsigned int *)p, __GPUHAL_CU_F2B(e), __GPUHAL_CU_F2B(d))); }\n"
     "static __device__ __forceinline__ double gpuhal_atomic_cas(double *p, double e, double d) { return __GPUHAL_CU_B2D(atomicCAS((unsigned long long *)p, __GPUHAL_CU_D2B(e), __GPUHAL_CU_D2B(d))); }\n"},
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
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (!c->modules.count(m)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "module_unload: not a module of this context");
    }
    // Forgotten only once unloaded: after a failure, context_destroy tries again.
    if (const gpuhal_status_t call_st = cu_call(drv().cuModuleUnload, "cuModuleUnload", m); call_st != GPUHAL_SUCCESS)
      return call_st;
    std::lock_guard<std::mutex> lock(c->mu);
    c->modules.erase(m);
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
