// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal-bench-kernels, second half: the workloads measured against the
// machine's own limits in the same run (see bench_kernels.cpp for how to run).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "bench_kernels_shared.hpp"
#include "machine_limits.hpp"

namespace bench_kernels {
namespace {

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
// manager; nothing runs in the loop, so each release is kept as an idle block
// and the next allocation takes it back, as malloc's free list does; the
// first ones are queued until a flush has synchronised), against PoCL's
// buffer create + release and malloc + free of the same size.
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

// Beside A2: what a reference-counted handle that keeps its parent alive
// costs by itself (its object, made and freed; the parent's count up and
// down), the part of an API allocation that no allocator can remove.
struct HandleParent {
  int64_t id = 0;
};
struct HandleObject {
  std::shared_ptr<HandleParent> parent;
  uint64_t ptr = 0, size = 0, generation = 0;
};
void handle_only(benchmark::State &state) {
  const auto parent = std::make_shared<HandleParent>();
  for (auto _ : state) {
    auto h = std::make_shared<HandleObject>();
    h->parent = parent;
    benchmark::DoNotOptimize(h.get());
  }
}

// Beside it: the same handle without its parent (the object made and freed,
// its own count set and dropped), what is left of a handle if nothing had
// to be kept alive.
void handle_without_parent(benchmark::State &state) {
  for (auto _ : state) {
    auto h = std::make_shared<HandleObject>();
    benchmark::DoNotOptimize(h.get());
  }
}

// And the parent's reference alone (a shared_ptr copied and dropped:
// two locked instructions), what every handle that keeps its parent alive
// pays however its own object is made.
void parent_ref_only(benchmark::State &state) {
  const auto parent = std::make_shared<HandleParent>();
  for (auto _ : state) {
    std::shared_ptr<HandleParent> ref = parent;
    benchmark::DoNotOptimize(ref.get());
  }
}

// And one plugin call through the public API (Stream::query on an idle
// stream: the core's checks and one plugin entry that does next to
// nothing), the third term of A2's limit: twice malloc + free plus one
// plugin call, what an allocation that keeps its context alive and may
// need the backend costs at least.
void plugin_call(benchmark::State &state) {
  auto &g = gpuhal_state();
  gpuhal::Stream s = g.ctx.create_stream();
  for (auto _ : state) benchmark::DoNotOptimize(s.query());
}

// C1: a device-to-device copy with its finish, against PoCL's buffer copy
// with clFinish, of the same bytes.
void gpuhal_d2d(benchmark::State &state, uint64_t bytes) {
  auto &g = gpuhal_state();
  gpuhal::DeviceArray a = gpuhal::device_array(g.ctx, {int64_t(bytes)}, gpuhal::dtypes::uint8);
  gpuhal::DeviceArray b = gpuhal::device_array(g.ctx, {int64_t(bytes)}, gpuhal::dtypes::uint8);
  a.memset(1);
  b.memset(2);
  for (auto _ : state) {
    b.copy_from_device(a, g.stream);
    g.stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}

void pocl_d2d(benchmark::State &state, uint64_t bytes) {
  auto &p = pocl_state();
  if (!p.ok) {
    state.SkipWithError(p.why.c_str());
    return;
  }
  cl_int err = 0;
  cl_mem a = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  cl_mem b = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  const cl_uchar one = 1, two = 2;
  clEnqueueFillBuffer(p.queue, a, &one, 1, 0, bytes, 0, nullptr, nullptr);  // first touch, as the memsets above
  clEnqueueFillBuffer(p.queue, b, &two, 1, 0, bytes, 0, nullptr, nullptr);
  clFinish(p.queue);
  for (auto _ : state) {
    clEnqueueCopyBuffer(p.queue, a, b, 0, 0, bytes, 0, nullptr, nullptr);
    clFinish(p.queue);
  }
  clReleaseMemObject(a);
  clReleaseMemObject(b);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}

}  // namespace

void register_large() {
  for (uint64_t bytes : {uint64_t(4) << 10, uint64_t(64) << 10, uint64_t(1) << 20, uint64_t(64) << 20}) {
    const std::string size = std::to_string(bytes);
    benchmark::RegisterBenchmark(("BM_gpuhal_d2d/" + size).c_str(), gpuhal_d2d, bytes)->UseRealTime();
    benchmark::RegisterBenchmark(("BM_pocl_d2d/" + size).c_str(), pocl_d2d, bytes)->UseRealTime();
  }
  for (uint64_t bytes : {uint64_t(256), uint64_t(4) << 10, uint64_t(64) << 10, uint64_t(1) << 20, uint64_t(4) << 20}) {
    const std::string size = std::to_string(bytes);
    benchmark::RegisterBenchmark(("BM_gpuhal_alloc/" + size).c_str(), gpuhal_alloc, bytes);
    benchmark::RegisterBenchmark(("BM_pocl_alloc/" + size).c_str(), pocl_alloc, bytes);
    benchmark::RegisterBenchmark(("BM_malloc_free/" + size).c_str(), malloc_free, bytes);
  }
  benchmark::RegisterBenchmark("BM_handle_only", handle_only);
  benchmark::RegisterBenchmark("BM_handle_without_parent", handle_without_parent);
  benchmark::RegisterBenchmark("BM_parent_ref_only", parent_ref_only);
  benchmark::RegisterBenchmark("BM_plugin_call", plugin_call);
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


}  // namespace bench_kernels
