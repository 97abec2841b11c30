// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host-backend kernels against the same kernels on PoCL (Debian's CPU
// OpenCL), side by side in one run: targets H5 (kernel throughput, without
// and with barriers + shared memory: >= 1.0x PoCL), H3 (empty-kernel
// enqueue + finish: <= 0.25x PoCL's time) and the PoCL half of H2 (a 64 MiB
// host -> device copy: >= 1.5x PoCL's buffer write) of the performance method.
//
// The kernels are one portable source. For PoCL it is lowered here to
// OpenCL C with the same builtin names (what the hsa backend's lowering
// does for amd_comgr), so both sides run the same text.
//
// Run (host backend, build tree):
//   build/bin/gpuhal-bench-kernels --benchmark_repetitions=10
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
// (one command line).
// Compare across several processes per side (the performance method's noise
// note): run it three times and take the median of the medians.
// PoCL missing (no OpenCL platform): its benchmarks report an error and skip.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"

namespace {

const char *kSource = R"(
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
)";

// The dialect in OpenCL C 1.2.
const char *kOpenClLowering = R"(
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

std::vector<float> input() {
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

Gpuhal &gpuhal_state() {
  static Gpuhal g;
  return g;
}

void BM_gpuhal_saxpy(benchmark::State &state) {
  auto &g = gpuhal_state();
  gpuhal::Kernel k = g.module.kernel("saxpy");
  for (auto _ : state) {
    k({kGroups}, {kBlock}, g.stream)(g.y, g.x, 1.0001f, kN);
    g.stream.synchronize();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * kN);
}

void BM_gpuhal_block_sum(benchmark::State &state) {
  auto &g = gpuhal_state();
  gpuhal::Kernel k = g.module.kernel("block_sum");
  for (auto _ : state) {
    k({kGroups}, {kBlock}, g.stream)(g.x, g.partial, kN);
    g.stream.synchronize();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * kN);
}

void BM_gpuhal_empty_kernel(benchmark::State &state) {
  auto &g = gpuhal_state();
  gpuhal::Kernel k = g.module.kernel("empty");
  for (auto _ : state) {
    k({1}, {1}, g.stream)(g.x);
    g.stream.synchronize();
  }
}

// ---- PoCL ------------------------------------------------------------------------

struct Pocl {
  bool ok = false;
  std::string why;
  cl_context ctx = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_mem x = nullptr, y = nullptr, partial = nullptr;

  Pocl() {
    cl_uint n = 0;
    if (clGetPlatformIDs(0, nullptr, &n) != CL_SUCCESS || n == 0) {
      why = "no OpenCL platform (install pocl-opencl-icd)";
      return;
    }
    std::vector<cl_platform_id> platforms(n);
    clGetPlatformIDs(n, platforms.data(), nullptr);
    cl_device_id device = nullptr;
    for (auto p : platforms) {
      char name[256] = {};
      clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, nullptr);
      if (std::strstr(name, "Portable Computing Language") &&
          clGetDeviceIDs(p, CL_DEVICE_TYPE_CPU, 1, &device, nullptr) == CL_SUCCESS)
        break;
      device = nullptr;
    }
    if (!device) {
      why = "no PoCL CPU device";
      return;
    }
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

Pocl &pocl_state() {
  static Pocl p;
  return p;
}

void run_pocl(benchmark::State &state, const char *name, size_t global, size_t local, int which) {
  auto &p = pocl_state();
  if (!p.ok) {
    state.SkipWithError(p.why.c_str());
    return;
  }
  cl_int err = 0;
  cl_kernel k = clCreateKernel(p.program, name, &err);
  const float a = 1.0001f;
  const cl_uint n = kN;
  if (which == 0) {
    clSetKernelArg(k, 0, sizeof(cl_mem), &p.y);
    clSetKernelArg(k, 1, sizeof(cl_mem), &p.x);
    clSetKernelArg(k, 2, sizeof a, &a);
    clSetKernelArg(k, 3, sizeof n, &n);
  } else if (which == 1) {
    clSetKernelArg(k, 0, sizeof(cl_mem), &p.x);
    clSetKernelArg(k, 1, sizeof(cl_mem), &p.partial);
    clSetKernelArg(k, 2, sizeof n, &n);
  } else {
    clSetKernelArg(k, 0, sizeof(cl_mem), &p.x);
  }
  for (auto _ : state) {
    clEnqueueNDRangeKernel(p.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    clFinish(p.queue);
  }
  clReleaseKernel(k);
  if (which != 2) state.SetItemsProcessed(int64_t(state.iterations()) * kN);
}

void BM_pocl_saxpy(benchmark::State &state) { run_pocl(state, "saxpy", kN, kBlock, 0); }
void BM_pocl_block_sum(benchmark::State &state) { run_pocl(state, "block_sum", kN, kBlock, 1); }
void BM_pocl_empty_kernel(benchmark::State &state) { run_pocl(state, "empty", 1, 1, 2); }

// H2: a large host -> device copy, against PoCL's buffer write of the same
// bytes (and, in gpuhal-bench-copy, single-thread memcpy).
constexpr size_t kBig = size_t(64) << 20;

void BM_gpuhal_h2d_64MiB(benchmark::State &state) {
  auto &g = gpuhal_state();
  static std::vector<uint8_t> src(kBig, 7);
  static gpuhal::DeviceArray d = gpuhal::device_array(g.ctx, {int64_t(kBig)}, gpuhal::dtypes::uint8);
  for (auto _ : state) d.copy_from_host(gpuhal::HostView::of(src));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBig));
}

void BM_pocl_write_64MiB(benchmark::State &state) {
  auto &p = pocl_state();
  if (!p.ok) {
    state.SkipWithError(p.why.c_str());
    return;
  }
  static std::vector<uint8_t> src(kBig, 7);
  cl_int err = 0;
  cl_mem buf = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE, kBig, nullptr, &err);
  clEnqueueWriteBuffer(p.queue, buf, CL_TRUE, 0, kBig, src.data(), 0, nullptr, nullptr);  // first touch
  for (auto _ : state) clEnqueueWriteBuffer(p.queue, buf, CL_TRUE, 0, kBig, src.data(), 0, nullptr, nullptr);
  clReleaseMemObject(buf);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBig));
}

}  // namespace

// Results are checked once before timing: both sides must agree.
static bool check_results() {
  auto &g = gpuhal_state();
  g.module.kernel("block_sum")({kGroups}, {kBlock}, g.stream)(g.x, g.partial, kN);
  g.stream.synchronize();
  const auto mine = g.partial.copy_to_host().to_vector<float>();
  auto &p = pocl_state();
  if (!p.ok) return true;
  cl_int err = 0;
  cl_kernel k = clCreateKernel(p.program, "block_sum", &err);
  const cl_uint n = kN;
  clSetKernelArg(k, 0, sizeof(cl_mem), &p.x);
  clSetKernelArg(k, 1, sizeof(cl_mem), &p.partial);
  clSetKernelArg(k, 2, sizeof n, &n);
  const size_t global = kN, local = kBlock;
  clEnqueueNDRangeKernel(p.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
  std::vector<float> theirs(kGroups);
  clEnqueueReadBuffer(p.queue, p.partial, CL_TRUE, 0, kGroups * 4, theirs.data(), 0, nullptr, nullptr);
  clReleaseKernel(k);
  for (unsigned i = 0; i < kGroups; ++i)
    if (std::abs(mine[i] - theirs[i]) > 1e-3f) {
      std::fprintf(stderr, "block_sum differs at %u: gpuhal %g, PoCL %g\n", i, double(mine[i]), double(theirs[i]));
      return false;
    }
  return true;
}

BENCHMARK(BM_gpuhal_saxpy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pocl_saxpy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gpuhal_block_sum)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pocl_block_sum)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gpuhal_empty_kernel)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_pocl_empty_kernel)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_gpuhal_h2d_64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pocl_write_64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (!check_results()) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
