// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal-bench-cold-build: what a program pays the first time it builds its
// kernels, on the host backend or on PoCL. One side per process, since a
// cold build is only cold once in a process:
//
//   gpuhal-bench-cold-build gpuhal [salt]  # GPUHAL_KERNEL_CACHE set to an empty directory
//   gpuhal-bench-cold-build pocl [salt]    # POCL_KERNEL_CACHE=0
//
// A salt is appended to every source as a comment: new sources for a cache
// that already holds the backend's precompiled prefix (a machine's second
// program), or for PoCL's cache.
//
// Each builds the four kernels of gpuhal-bench-kernels as four sources, one
// after the other, as a program with four modules would: first saxpy, which
// it launches at once over 1024 elements and waits for (the time to the
// first kernel result; PoCL generates a kernel's code at its first launch,
// the host backend when it builds), then the other three. It prints one
// line of JSON: init_ms (runtime or platform set up), first_result_ms, and
// build_ms (the four builds, launches excluded). benchmarks/cold_build.py
// runs both sides in alternation and prints medians, spread and ratios.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_kernels_shared.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// The kernels of kSource as one source each, saxpy first: a kernel runs
// from its GPUHAL_KERNEL line to the next kernel's, and a #define line
// before a kernel goes with that kernel.
std::vector<std::string> four_sources(const std::string &salt) {
  std::vector<std::string> sources;
  std::string pending, line;
  const std::string all = bench_kernels::kSource;
  for (size_t at = 0; at < all.size();) {
    size_t end = all.find('\n', at);
    end = end == std::string::npos ? all.size() : end + 1;
    line = all.substr(at, end - at);
    at = end;
    const bool starts = line.rfind("GPUHAL_KERNEL", 0) == 0 || line.rfind("#define", 0) == 0;
    if (starts && !pending.empty() && pending.find("GPUHAL_KERNEL") != std::string::npos) {
      sources.push_back(pending);
      pending.clear();
    }
    pending += line;
  }
  if (pending.find("GPUHAL_KERNEL") != std::string::npos) sources.push_back(pending);
  if (!salt.empty())
    for (auto &s : sources) s += "\n// " + salt + "\n";
  return sources;
}

int run_gpuhal(const std::string &salt) {
  const auto start = Clock::now();
  gpuhal::Context ctx = gpuhal::Context::current();
  gpuhal::DeviceArray y = gpuhal::device_array(ctx, {1024}, gpuhal::dtypes::float32);
  gpuhal::DeviceArray x = gpuhal::device_array(ctx, {1024}, gpuhal::dtypes::float32);
  x.memset(uint8_t(0));
  y.memset(uint8_t(0));
  const double init = ms_since(start);
  const std::vector<std::string> sources = four_sources(salt);
  const auto first = Clock::now();
  gpuhal::Module saxpy = gpuhal::Module::compile(ctx, sources[0]);
  double build = ms_since(first);
  saxpy.kernel("saxpy")({4}, {256})(y, x, 2.0f, 1024u);
  ctx.synchronize();
  const double first_result = ms_since(first);
  for (size_t i = 1; i < sources.size(); ++i) {
    const auto t = Clock::now();
    gpuhal::Module m = gpuhal::Module::compile(ctx, sources[i]);
    build += ms_since(t);
  }
  std::printf("{\"side\": \"gpuhal\", \"init_ms\": %.2f, \"first_result_ms\": %.2f, \"build_ms\": %.2f, \"sources\": %zu}\n",
              init, first_result, build, sources.size());
  return 0;
}

int run_pocl(const std::string &salt) {
  const auto start = Clock::now();
  std::string why;
  cl_device_id device = bench_kernels::pocl_cpu_device(&why);
  if (!device) {
    std::printf("{\"side\": \"pocl\", \"skipped\": \"%s\"}\n", why.c_str());
    return 0;
  }
  cl_int err = 0;
  cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  cl_command_queue queue = clCreateCommandQueue(ctx, device, 0, &err);
  const float zeros[1024] = {};
  cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, const_cast<float *>(zeros), &err);
  cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, const_cast<float *>(zeros), &err);
  const double init = ms_since(start);
  const std::vector<std::string> sources = four_sources(salt);
  auto build_one = [&](const std::string &source) {
    const std::string text = std::string(bench_kernels::kOpenClLowering) + source;
    const char *p = text.c_str();
    cl_program program = clCreateProgramWithSource(ctx, 1, &p, nullptr, &err);
    if (clBuildProgram(program, 1, &device, "-cl-std=CL1.2", nullptr, nullptr) != CL_SUCCESS) {
      std::fprintf(stderr, "PoCL build failed\n");
      std::exit(1);
    }
    return program;
  };
  const auto first = Clock::now();
  cl_program saxpy = build_one(sources[0]);
  double build = ms_since(first);
  cl_kernel k = clCreateKernel(saxpy, "saxpy", &err);
  const float a = 2.0f;
  const cl_uint count = 1024;
  clSetKernelArg(k, 0, sizeof(cl_mem), &y);
  clSetKernelArg(k, 1, sizeof(cl_mem), &x);
  clSetKernelArg(k, 2, sizeof a, &a);
  clSetKernelArg(k, 3, sizeof count, &count);
  const size_t global = 1024, local = 256;
  clEnqueueNDRangeKernel(queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
  clFinish(queue);
  const double first_result = ms_since(first);
  std::vector<cl_program> others;
  for (size_t i = 1; i < sources.size(); ++i) {
    const auto t = Clock::now();
    others.push_back(build_one(sources[i]));
    build += ms_since(t);
  }
  std::printf("{\"side\": \"pocl\", \"init_ms\": %.2f, \"first_result_ms\": %.2f, \"build_ms\": %.2f, \"sources\": %zu}\n",
              init, first_result, build, sources.size());
  for (cl_program p : others) clReleaseProgram(p);
  clReleaseKernel(k);
  clReleaseProgram(saxpy);
  clReleaseMemObject(x);
  clReleaseMemObject(y);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string side = argc > 1 ? argv[1] : "";
  const std::string salt = argc > 2 ? argv[2] : "";
  if (side == "gpuhal") return run_gpuhal(salt);
  if (side == "pocl") return run_pocl(salt);
  std::fprintf(stderr, "usage: gpuhal-bench-cold-build gpuhal|pocl [salt] (benchmarks/cold_build.py runs both)\n");
  return 2;
}
