// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Target A1: pool alloc+free against the raw backend's alloc+free, 256 B to
// 4 MiB, on the host backend, in one run.
//
//   build/bin/gpuhal-bench-pool --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
//
// BM_RawBackend calls the plugin's mem_alloc / mem_free entries directly
// (the peer: what a device allocation costs without gpuhal). BM_Pool
// allocates through Context::allocate with the pool manager and drops the
// handle (the block goes back to its free list). BM_DefaultManager is the
// default manager for reference (its frees go through the deferred queue,
// flushed every 10 frees). Compare medians: the target is pool <= 0.02x raw.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "bench_backend.hpp"
#include "gpuhal/gpuhal.hpp"
#include "gpuhal/plugin.h"

namespace {

gpuhal::Context context(bool pool) {
  static gpuhal::Context pooled = [] {
    gpuhal::set_memory_manager(gpuhal::pool_memory_manager());
    gpuhal::Config c = bench::backend_config();
    gpuhal::Context ctx = gpuhal::Runtime::load(c).device(0).primary_context();
    gpuhal::clear_memory_manager();
    return ctx;
  }();
  static gpuhal::Context plain = [] {
    gpuhal::Config c = bench::backend_config();
    return gpuhal::Runtime::load(c).device(0).primary_context();
  }();
  return pool ? pooled : plain;
}

// The host plugin's own table and a context of its own.
struct RawBackend {
  const gpuhal_plugin_table_t *t = nullptr;
  gpuhal_context_t ctx = nullptr;
  RawBackend() {
    const std::string path = context(false).device().runtime().plugin_path();
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    void *sym = h ? dlsym(h, GPUHAL_PLUGIN_ENTRY_NAME) : nullptr;
    if (!sym) {
      std::fprintf(stderr, "cannot open %s\n", path.c_str());
      std::abort();
    }
    auto negotiate = reinterpret_cast<gpuhal_plugin_negotiate_fn>(sym);
    gpuhal_init_args_t args{};
    args.abi_version = GPUHAL_ABI_VERSION;
    args.struct_size = sizeof args;
    if (negotiate(GPUHAL_ABI_VERSION, &t) != GPUHAL_SUCCESS || t->init(&args) != GPUHAL_SUCCESS ||
        t->context_create(0, &ctx) != GPUHAL_SUCCESS) {
      std::fprintf(stderr, "cannot initialise the host plugin\n");
      std::abort();
    }
  }
};

void BM_RawBackend(benchmark::State &state) {
  static RawBackend raw;
  const uint64_t bytes = uint64_t(state.range(0));
  for (auto _ : state) {
    gpuhal_deviceptr_t p = 0;
    if (raw.t->mem_alloc(raw.ctx, bytes, &p) != GPUHAL_SUCCESS || raw.t->mem_free(raw.ctx, p) != GPUHAL_SUCCESS)
      state.SkipWithError("raw alloc/free failed");
    benchmark::DoNotOptimize(p);
  }
}

void BM_Pool(benchmark::State &state) {
  const gpuhal::Context ctx = context(true);
  const uint64_t bytes = uint64_t(state.range(0));
  { gpuhal::DeviceMemory warm = ctx.allocate(bytes); }
  for (auto _ : state) {
    gpuhal::DeviceMemory m = ctx.allocate(bytes);
    benchmark::DoNotOptimize(m.device_pointer());
  }
  auto &pool = dynamic_cast<gpuhal::PoolMemoryManager &>(ctx.memory_manager());
  state.counters["hit_rate"] = double(pool.stats().hits) / double(pool.stats().hits + pool.stats().misses);
}

void BM_DefaultManager(benchmark::State &state) {
  const gpuhal::Context ctx = context(false);
  const uint64_t bytes = uint64_t(state.range(0));
  for (auto _ : state) {
    gpuhal::DeviceMemory m = ctx.allocate(bytes);
    benchmark::DoNotOptimize(m.device_pointer());
  }
  ctx.flush_deallocations();
}

}  // namespace

BENCHMARK(BM_RawBackend)->RangeMultiplier(16)->Range(256, 4 << 20);
BENCHMARK(BM_Pool)->RangeMultiplier(16)->Range(256, 4 << 20);
BENCHMARK(BM_DefaultManager)->RangeMultiplier(16)->Range(256, 4 << 20);
BENCHMARK_MAIN();
