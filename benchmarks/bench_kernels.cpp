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
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"
#include "machine_limits.hpp"

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

// ---- Large arrays, launch shapes, matmul, and the machine's limits ----------------
// Targets S1 (saxpy at 16M and 64M elements: >= 0.8x the triad's bandwidth
// and >= PoCL, for blocks of 64 to 1024 and a grid that does not divide the
// size) and M1 (tiled matmul with shared memory and barriers: >= 5x PoCL and
// >= 20% of the peak-FMA rate at N = 1000 and 2000). Names are fixed; in
// smoke mode (GPUHAL_BENCH_SMOKE) the sizes shrink, so that CI only checks
// the harness.

bool smoke() { return std::getenv("GPUHAL_BENCH_SMOKE") != nullptr; }
unsigned mega(unsigned m) { return smoke() ? m << 12 : m << 20; }  // "16M" elements
int matmul_n(int n) { return smoke() ? n / 10 : n; }

struct Large {
  gpuhal::Context ctx = gpuhal::Context::current();
  gpuhal::Module module = gpuhal::Module::compile(ctx, kSource);
  gpuhal::Stream stream = ctx.create_stream();
  gpuhal::DeviceArray x, y;
  explicit Large(unsigned n) {
    std::vector<float> v(n);
    for (unsigned i = 0; i < n; ++i) v[i] = float(i % 1000) * 0.001f;
    x = gpuhal::to_device(ctx, gpuhal::HostView::of(v));
    y = gpuhal::to_device(ctx, gpuhal::HostView::of(v));
  }
};

Large &large_state() {
  static Large l(mega(64));
  return l;
}

void gpuhal_saxpy_sized(benchmark::State &state, unsigned n, unsigned block) {
  auto &l = large_state();
  gpuhal::Kernel k = l.module.kernel("saxpy");
  const unsigned groups = (n + block - 1) / block;
  for (auto _ : state) {
    k({groups}, {block}, l.stream)(l.y, l.x, 1.0001f, n);
    l.stream.synchronize();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

struct PoclLarge {
  cl_mem x = nullptr, y = nullptr;
  explicit PoclLarge(Pocl &p, unsigned n) {
    std::vector<float> v(n);
    for (unsigned i = 0; i < n; ++i) v[i] = float(i % 1000) * 0.001f;
    cl_int err = 0;
    x = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, size_t(n) * 4, v.data(), &err);
    y = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, size_t(n) * 4, v.data(), &err);
  }
};

void pocl_saxpy_sized(benchmark::State &state, unsigned n) {
  auto &p = pocl_state();
  if (!p.ok) {
    state.SkipWithError(p.why.c_str());
    return;
  }
  static PoclLarge l(p, mega(64));
  cl_int err = 0;
  cl_kernel k = clCreateKernel(p.program, "saxpy", &err);
  const float a = 1.0001f;
  const cl_uint cn = n;
  clSetKernelArg(k, 0, sizeof(cl_mem), &l.y);
  clSetKernelArg(k, 1, sizeof(cl_mem), &l.x);
  clSetKernelArg(k, 2, sizeof a, &a);
  clSetKernelArg(k, 3, sizeof cn, &cn);
  const size_t local = kBlock, global = (size_t(n) + kBlock - 1) / kBlock * kBlock;
  for (auto _ : state) {
    clEnqueueNDRangeKernel(p.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    clFinish(p.queue);
  }
  clReleaseKernel(k);
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

void limit_triad(benchmark::State &state, unsigned n) {
  limits::TriadArrays t(n);
  for (auto _ : state) limits::triad(t, 1.0001f);
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

void limit_saxpy_loop(benchmark::State &state, unsigned n) {
  limits::TriadArrays t(n);
  for (auto _ : state) limits::saxpy_loop(t, 1.0001f);
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

// The peak FMA rate; its counter ns_per_flop (seconds per operation, in the
// table's "ns_per_" convention) turns a matmul's 2 N^3 operations into the
// machine's shortest time for them.
void limit_fma(benchmark::State &state) {
  const bool avx512 = limits::has_avx512();
  const uint64_t iterations = smoke() ? 1u << 18 : 1u << 24;
  double flops = 0;
  for (auto _ : state) flops += limits::fma_peak(iterations, avx512);
  state.counters["ns_per_flop"] = benchmark::Counter(flops, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(avx512 ? "AVX-512" : "AVX2+FMA");
}

std::vector<float> matrix(int n, int salt) {
  std::vector<float> m(size_t(n) * size_t(n));
  for (size_t i = 0; i < m.size(); ++i) m[i] = float(int((i * 7 + size_t(salt)) % 13) - 6) * 0.125f;
  return m;
}

void gpuhal_matmul(benchmark::State &state, int n) {
  auto &g = gpuhal_state();
  gpuhal::Kernel k = g.module.kernel("matmul");
  auto a = gpuhal::to_device(g.ctx, gpuhal::HostView::of(matrix(n, 1)));
  auto b = gpuhal::to_device(g.ctx, gpuhal::HostView::of(matrix(n, 2)));
  auto c = gpuhal::device_array(g.ctx, {int64_t(n) * n}, gpuhal::dtypes::float32);
  const unsigned groups = unsigned(n + 15) / 16;
  for (auto _ : state) {
    k({groups, groups}, {16, 16}, g.stream)(a, b, c, n);
    g.stream.synchronize();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * 2 * int64_t(n) * n * n);
}

void pocl_matmul(benchmark::State &state, int n) {
  auto &p = pocl_state();
  if (!p.ok) {
    state.SkipWithError(p.why.c_str());
    return;
  }
  cl_int err = 0;
  std::vector<float> ha = matrix(n, 1), hb = matrix(n, 2);
  const size_t bytes = size_t(n) * size_t(n) * 4;
  cl_mem a = clCreateBuffer(p.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, ha.data(), &err);
  cl_mem b = clCreateBuffer(p.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, hb.data(), &err);
  cl_mem c = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  cl_kernel k = clCreateKernel(p.program, "matmul", &err);
  clSetKernelArg(k, 0, sizeof(cl_mem), &a);
  clSetKernelArg(k, 1, sizeof(cl_mem), &b);
  clSetKernelArg(k, 2, sizeof(cl_mem), &c);
  clSetKernelArg(k, 3, sizeof n, &n);
  const size_t local[2] = {16, 16};
  const size_t global[2] = {size_t(n + 15) / 16 * 16, size_t(n + 15) / 16 * 16};
  for (auto _ : state) {
    clEnqueueNDRangeKernel(p.queue, k, 2, nullptr, global, local, 0, nullptr, nullptr);
    clFinish(p.queue);
  }
  clReleaseKernel(k);
  clReleaseMemObject(a);
  clReleaseMemObject(b);
  clReleaseMemObject(c);
  state.SetItemsProcessed(int64_t(state.iterations()) * 2 * int64_t(n) * n * n);
}

// A2: a device allocation + release on the host backend (the default memory
// manager; the release goes through the deferred queue, flushed every 10),
// against PoCL's buffer create + release and malloc + free of the same size.
void gpuhal_alloc(benchmark::State &state, uint64_t bytes) {
  auto &g = gpuhal_state();
  for (auto _ : state) {
    gpuhal::DeviceMemory m = g.ctx.allocate(bytes);
    benchmark::DoNotOptimize(m.device_pointer());
  }
  g.ctx.flush_deallocations();
}

void pocl_alloc(benchmark::State &state, uint64_t bytes) {
  auto &p = pocl_state();
  if (!p.ok) {
    state.SkipWithError(p.why.c_str());
    return;
  }
  for (auto _ : state) {
    cl_int err = 0;
    cl_mem m = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    benchmark::DoNotOptimize(m);
    clReleaseMemObject(m);
  }
}

void malloc_free(benchmark::State &state, uint64_t bytes) {
  for (auto _ : state) {
    void *m = std::malloc(bytes);
    benchmark::DoNotOptimize(m);
    std::free(m);
  }
}

void register_large() {
  for (uint64_t bytes : {uint64_t(256), uint64_t(4) << 10, uint64_t(64) << 10, uint64_t(1) << 20, uint64_t(4) << 20}) {
    const std::string size = std::to_string(bytes);
    benchmark::RegisterBenchmark(("BM_gpuhal_alloc/" + size).c_str(), gpuhal_alloc, bytes);
    benchmark::RegisterBenchmark(("BM_pocl_alloc/" + size).c_str(), pocl_alloc, bytes);
    benchmark::RegisterBenchmark(("BM_malloc_free/" + size).c_str(), malloc_free, bytes);
  }
  auto ms = [](benchmark::internal::Benchmark *b) { b->UseRealTime()->Unit(benchmark::kMillisecond); };
  for (unsigned m : {16u, 64u}) {
    const std::string size = std::to_string(m) + "M";
    ms(benchmark::RegisterBenchmark(("BM_gpuhal_saxpy_" + size).c_str(), gpuhal_saxpy_sized, mega(m), 256u));
    ms(benchmark::RegisterBenchmark(("BM_pocl_saxpy_" + size).c_str(), pocl_saxpy_sized, mega(m)));
    ms(benchmark::RegisterBenchmark(("BM_limit_triad_" + size).c_str(), limit_triad, mega(m)));
    ms(benchmark::RegisterBenchmark(("BM_limit_saxpy_loop_" + size).c_str(), limit_saxpy_loop, mega(m)));
  }
  // Launch shapes at 16M: small and large blocks, a grid that does not divide the size.
  for (unsigned block : {64u, 1024u})
    ms(benchmark::RegisterBenchmark(("BM_gpuhal_saxpy_16M_block" + std::to_string(block)).c_str(), gpuhal_saxpy_sized,
                                    mega(16), block));
  ms(benchmark::RegisterBenchmark("BM_gpuhal_saxpy_16M_ragged", gpuhal_saxpy_sized, mega(16) - 3, 256u));
  ms(benchmark::RegisterBenchmark("BM_limit_fma", limit_fma));
  for (int n : {1000, 2000}) {
    const std::string size = std::to_string(n);
    ms(benchmark::RegisterBenchmark(("BM_gpuhal_matmul_" + size).c_str(), gpuhal_matmul, matmul_n(n)));
    ms(benchmark::RegisterBenchmark(("BM_pocl_matmul_" + size).c_str(), pocl_matmul, matmul_n(n)));
  }
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
BENCHMARK(BM_gpuhal_h2d_64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pocl_write_64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (!check_results()) return 1;
  register_large();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
