// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the two files of gpuhal-bench-kernels share: the kernels' portable
// source (and its OpenCL C lowering for PoCL), the sizes, and one gpuhal
// and one PoCL state per process.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"

namespace bench_kernels {


inline const char *kSource = R"(
GPUHAL_KERNEL void saxpy(GPUHAL_GLOBAL float *y, GPUHAL_GLOBAL const float *x, float a, unsigned n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
GPUHAL_KERNEL void block_sum(GPUHAL_GLOBAL const float *in, GPUHAL_GLOBAL float *partial, unsigned n) {
  GPUHAL_SHARED_ARRAY(float, s, 256);
  unsigned lid = gpuhal_local_id(0);
  unsigned i = gpuhal_global_id(0);
  s[lid] = i < n ? in[i] : 0.0f;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned stride = 128; stride > 0; stride /= 2) {
    if (lid < stride) s[lid] += s[lid + stride];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[gpuhal_group_id(0)] = s[0];
}
GPUHAL_KERNEL void empty(GPUHAL_GLOBAL float *x) {
  if (gpuhal_global_id(0) == 12345u) x[0] = 1.0f;
}
#define TPB 16
GPUHAL_KERNEL void matmul(GPUHAL_GLOBAL const float *A, GPUHAL_GLOBAL const float *B, GPUHAL_GLOBAL float *C, int N) {
  GPUHAL_SHARED_ARRAY(float, sA, 256);
  GPUHAL_SHARED_ARRAY(float, sB, 256);
  int tx = gpuhal_local_id(0), ty = gpuhal_local_id(1);
  int col = gpuhal_global_id(0), row = gpuhal_global_id(1);
  float acc = 0.0f;
  for (int t = 0; t < (N + TPB - 1) / TPB; ++t) {
    int ka = t * TPB + tx, kb = t * TPB + ty;
    sA[ty * TPB + tx] = (row < N && ka < N) ? A[row * N + ka] : 0.0f;
    sB[ty * TPB + tx] = (col < N && kb < N) ? B[kb * N + col] : 0.0f;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    for (int j = 0; j < TPB; ++j) acc += sA[ty * TPB + j] * sB[j * TPB + tx];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  if (row < N && col < N) C[row * N + col] = acc;
}
)";

// The dialect in OpenCL C 1.2.
inline const char *kOpenClLowering = R"(
#define GPUHAL_KERNEL __kernel
#define GPUHAL_GLOBAL __global
#define GPUHAL_LOCAL_MEM_FENCE CLK_LOCAL_MEM_FENCE
#define GPUHAL_GLOBAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE
#define gpuhal_global_id(d) ((unsigned)get_global_id(d))
#define gpuhal_local_id(d) ((unsigned)get_local_id(d))
#define gpuhal_group_id(d) ((unsigned)get_group_id(d))
#define gpuhal_barrier(flags) barrier(flags)
#define GPUHAL_SHARED_ARRAY(T, name, n) __local T name[(n)]
)";

constexpr unsigned kN = 1u << 22;  // 16 MiB per float array
constexpr unsigned kBlock = 256;
constexpr unsigned kGroups = kN / kBlock;

inline std::vector<float> input() {
  std::vector<float> v(kN);
  for (unsigned i = 0; i < kN; ++i) v[i] = float(i % 1000) * 0.001f;
  return v;
}

// ---- gpuhal host backend -------------------------------------------------------

struct Gpuhal {
  gpuhal::Context ctx = gpuhal::Context::current();
  gpuhal::Module module = gpuhal::Module::compile(ctx, kSource);
  gpuhal::DeviceArray x = gpuhal::to_device(ctx, gpuhal::HostView::of(input()));
  gpuhal::DeviceArray y = gpuhal::to_device(ctx, gpuhal::HostView::of(input()));
  gpuhal::DeviceArray partial = gpuhal::device_array(ctx, {kGroups}, gpuhal::dtypes::float32);
  gpuhal::Stream stream = ctx.create_stream();
};

inline Gpuhal &gpuhal_state() {
  static Gpuhal g;
  return g;
}

// ---- PoCL ------------------------------------------------------------------------

// PoCL's CPU device, or nullptr with *why set (no OpenCL platform, or none
// of them PoCL's with a CPU device).
inline cl_device_id pocl_cpu_device(std::string *why) {
  cl_uint n = 0;
  if (clGetPlatformIDs(0, nullptr, &n) != CL_SUCCESS || n == 0) {
    *why = "no OpenCL platform (install pocl-opencl-icd)";
    return nullptr;
  }
  std::vector<cl_platform_id> platforms(n);
  clGetPlatformIDs(n, platforms.data(), nullptr);
  for (auto p : platforms) {
    char name[256] = {};
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, nullptr);
    cl_device_id device = nullptr;
    if (std::strstr(name, "Portable Computing Language") &&
        clGetDeviceIDs(p, CL_DEVICE_TYPE_CPU, 1, &device, nullptr) == CL_SUCCESS)
      return device;
  }
  *why = "no PoCL CPU device";
  return nullptr;
}

struct Pocl {
  bool ok = false;
  std::string why;
  cl_context ctx = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_mem x = nullptr, y = nullptr, partial = nullptr;

  Pocl() {
    cl_device_id device = pocl_cpu_device(&why);
    if (!device) return;
    cl_int err = 0;
    ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    queue = clCreateCommandQueue(ctx, device, 0, &err);
    const std::string src = std::string(kOpenClLowering) + kSource;
    const char *text = src.c_str();
    program = clCreateProgramWithSource(ctx, 1, &text, nullptr, &err);
    if (clBuildProgram(program, 1, &device, "-cl-std=CL1.2", nullptr, nullptr) != CL_SUCCESS) {
      char log[4096] = {};
      clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log, log, nullptr);
      why = std::string("PoCL build failed: ") + log;
      return;
    }
    const std::vector<float> in = input();
    x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, kN * 4, const_cast<float *>(in.data()), &err);
    y = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, kN * 4, const_cast<float *>(in.data()), &err);
    partial = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kGroups * 4, nullptr, &err);
    ok = err == CL_SUCCESS;
    if (!ok) why = "PoCL buffers: error " + std::to_string(err);
  }
};

inline Pocl &pocl_state() {
  static Pocl p;
  return p;
}

// Matrices of small exact values (sums of products stay exact in float).
inline std::vector<float> matrix(int n, int salt) {
  std::vector<float> m(size_t(n) * size_t(n));
  for (size_t i = 0; i < m.size(); ++i) m[i] = float(int((i * 7 + size_t(salt)) % 13) - 6) * 0.125f;
  return m;
}

// Registers the benchmarks of bench_kernels_large.cpp (sizes depend on the
// smoke mode, so they are registered at run time).
void register_large();

}  // namespace bench_kernels
