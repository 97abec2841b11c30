// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// D1: the cost the core adds to a plugin call. The same no-work plugin
// entry (stream_query on an idle stream of the host backend) called through
// the C++ API (Stream::query: handle checks, generation check, status
// conversion) and straight through the plugin's function pointer, side by
// side; the difference is the core's dispatch cost (target: <= 2 ns).
//
//   build/bin/gpuhal-bench-dispatch --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "gpuhal/gpuhal.hpp"
#include "gpuhal/plugin.h"

namespace {

struct State {
  gpuhal::Context ctx = gpuhal::Context::current();
  gpuhal::Stream stream = ctx.create_stream();
};

State &state() {
  static State s;
  return s;
}

void BM_core_stream_query(benchmark::State &st) {
  auto &s = state();
  for (auto _ : st) benchmark::DoNotOptimize(s.stream.query());
}

// The plugin's own table, from the library the runtime loaded (RTLD_NOLOAD:
// the same copy, already initialised by the runtime), and an idle stream of
// a context of its own.
struct Direct {
  const gpuhal_plugin_table_t *t = nullptr;
  gpuhal_context_t ctx = nullptr;
  gpuhal_stream_t stream = nullptr;
  Direct() {
    state();  // the runtime first: it loads and initialises the plugin
    void *lib = dlopen(gpuhal::Runtime::get().plugin_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
    auto negotiate = lib ? reinterpret_cast<gpuhal_plugin_negotiate_fn>(dlsym(lib, GPUHAL_PLUGIN_ENTRY_NAME)) : nullptr;
    if (!negotiate || negotiate(GPUHAL_ABI_VERSION, &t) != GPUHAL_SUCCESS || t->context_create(0, &ctx) != GPUHAL_SUCCESS ||
        t->stream_create(ctx, GPUHAL_STREAM_DEFAULT, &stream) != GPUHAL_SUCCESS) {
      std::fprintf(stderr, "bench_dispatch: cannot reach the loaded plugin's table\n");
      std::exit(1);
    }
  }
};

void BM_direct_stream_query(benchmark::State &st) {
  static Direct d;
  auto *fn = d.t->stream_query;
  benchmark::DoNotOptimize(fn);
  for (auto _ : st) benchmark::DoNotOptimize(fn(d.ctx, d.stream));
}

}  // namespace

BENCHMARK(BM_core_stream_query);
BENCHMARK(BM_direct_stream_query);
BENCHMARK_MAIN();
