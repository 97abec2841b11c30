// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host-backend kernels against the same kernels on PoCL (Debian's CPU
// OpenCL), side by side in one run: targets H5 (kernel throughput, without
// and with barriers + shared memory: >= 1.0x PoCL), H3 (empty-kernel
// enqueue + finish: <= 0.25x PoCL's time) and the PoCL half of H2 (a 64 MiB
// host -> device copy: >= 1.5x PoCL's buffer write) of the performance method;
// bench_kernels_large.cpp adds S1/S2 (saxpy at 16M and 64M elements and its
// launch shapes), M1 (tiled matmul), A2 (allocation), C1 (device-to-device
// copies), each beside PoCL and the machine's own limit (machine_limits.hpp);
// H6 is a histogram through atomics.
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

#include <cmath>

#include "bench_kernels_shared.hpp"

namespace {

using namespace bench_kernels;

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

// H6: a 256-bin histogram of 64 MiB of random bytes (atomics on shared
// memory per group, then on global memory), against the same source on
// PoCL (OpenCL 1.2's atomic_add). Each iteration clears the bins and
// counts; the first result is checked against a count on the host.
constexpr unsigned kHistBytes = 64u << 20;
constexpr unsigned kHistGroups = 512;

const char *kHistogram = R"(
GPUHAL_KERNEL void histogram(GPUHAL_GLOBAL const unsigned char *data, unsigned n, GPUHAL_GLOBAL unsigned *bins) {
  GPUHAL_SHARED_ARRAY(unsigned, local_bins, 256);
  unsigned lid = gpuhal_local_id(0);
  local_bins[lid] = 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned i = gpuhal_global_id(0); i < n; i += gpuhal_global_size(0)) gpuhal_atomic_add(&local_bins[data[i]], 1u);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  if (local_bins[lid]) gpuhal_atomic_add(&bins[lid], local_bins[lid]);
}
)";

const std::vector<unsigned char> &histogram_data() {
  static const std::vector<unsigned char> data = [] {
    std::vector<unsigned char> d(kHistBytes);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (auto &b : d) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      b = (unsigned char)(x >> 56);
    }
    return d;
  }();
  return data;
}

bool histogram_right(const std::vector<uint32_t> &bins) {
  std::vector<uint32_t> want(256, 0);
  for (unsigned char b : histogram_data()) ++want[b];
  return bins == want;
}

void BM_gpuhal_histogram(benchmark::State &state) {
  auto &g = gpuhal_state();
  static gpuhal::Kernel k = gpuhal::Module::compile(g.ctx, kHistogram).kernel("histogram");
  static gpuhal::DeviceArray data = gpuhal::to_device(g.ctx, gpuhal::HostView::of(histogram_data()));
  static gpuhal::DeviceArray bins = gpuhal::device_array(g.ctx, {256}, gpuhal::dtypes::uint32);
  bool checked = false;
  for (auto _ : state) {
    bins.memset(0, g.stream);
    k({kHistGroups}, {256}, g.stream)(data, kHistBytes, bins);
    g.stream.synchronize();
    if (!checked) {
      state.PauseTiming();
      checked = true;
      if (!histogram_right(bins.copy_to_host().to_vector<uint32_t>())) state.SkipWithError("wrong histogram counts");
      state.ResumeTiming();
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kHistBytes);
}

void BM_pocl_histogram(benchmark::State &state) {
  auto &p = pocl_state();
  if (!p.ok) {
    state.SkipWithError(p.why.c_str());
    return;
  }
  cl_int err = 0;
  const std::string src = std::string(kOpenClLowering) + "#define gpuhal_global_size(d) ((unsigned)get_global_size(d))\n" +
                          "#define gpuhal_atomic_add(p, v) atomic_add((p), (v))\n" + kHistogram;
  const char *text = src.c_str();
  cl_program program = clCreateProgramWithSource(p.ctx, 1, &text, nullptr, &err);
  if (clBuildProgram(program, 0, nullptr, "-cl-std=CL1.2", nullptr, nullptr) != CL_SUCCESS) {
    state.SkipWithError("PoCL could not build the histogram");
    clReleaseProgram(program);
    return;
  }
  cl_kernel k = clCreateKernel(program, "histogram", &err);
  const auto &host = histogram_data();
  cl_mem data = clCreateBuffer(p.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kHistBytes,
                               const_cast<unsigned char *>(host.data()), &err);
  cl_mem bins = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE, 256 * 4, nullptr, &err);
  const cl_uint n = kHistBytes, zero = 0;
  clSetKernelArg(k, 0, sizeof(cl_mem), &data);
  clSetKernelArg(k, 1, sizeof n, &n);
  clSetKernelArg(k, 2, sizeof(cl_mem), &bins);
  const size_t global = size_t(kHistGroups) * 256, local = 256;
  bool checked = false;
  for (auto _ : state) {
    clEnqueueFillBuffer(p.queue, bins, &zero, sizeof zero, 0, 256 * 4, 0, nullptr, nullptr);
    clEnqueueNDRangeKernel(p.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    clFinish(p.queue);
    if (!checked) {
      state.PauseTiming();
      checked = true;
      std::vector<uint32_t> got(256);
      clEnqueueReadBuffer(p.queue, bins, CL_TRUE, 0, 256 * 4, got.data(), 0, nullptr, nullptr);
      if (!histogram_right(got)) state.SkipWithError("PoCL: wrong histogram counts");
      state.ResumeTiming();
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kHistBytes);
  clReleaseMemObject(bins);
  clReleaseMemObject(data);
  clReleaseKernel(k);
  clReleaseProgram(program);
}

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

// The matmul kernel against a plain loop, at a size that is no multiple of
// the tile (PoCL runs the same text).
static bool check_matmul() {
  const int n = 50;
  auto &g = gpuhal_state();
  std::vector<float> a = matrix(n, 1), b = matrix(n, 2), want(size_t(n) * n, 0.0f);
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < n; ++k)
      for (int c = 0; c < n; ++c) want[size_t(r * n + c)] += a[size_t(r * n + k)] * b[size_t(k * n + c)];
  auto da = gpuhal::to_device(g.ctx, gpuhal::HostView::of(a));
  auto db = gpuhal::to_device(g.ctx, gpuhal::HostView::of(b));
  auto dc = gpuhal::device_array(g.ctx, {int64_t(n) * n}, gpuhal::dtypes::float32);
  g.module.kernel("matmul")({4, 4}, {16, 16}, g.stream)(da, db, dc, n);
  g.stream.synchronize();
  const auto got = dc.copy_to_host().to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-3f) {
      std::fprintf(stderr, "matmul differs at %zu: gpuhal %g, expected %g\n", i, double(got[i]), double(want[i]));
      return false;
    }
  return true;
}

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
  return check_matmul();
}

BENCHMARK(BM_gpuhal_saxpy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pocl_saxpy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gpuhal_block_sum)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pocl_block_sum)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gpuhal_empty_kernel)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_pocl_empty_kernel)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_gpuhal_histogram)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pocl_histogram)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gpuhal_h2d_64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pocl_write_64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (!check_results()) return 1;
  bench_kernels::register_large();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
