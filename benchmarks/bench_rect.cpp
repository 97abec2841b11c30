// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// RC1: a 1024x1024 float32 sub-tile of an 8192x8192 array moved in each
// direction three ways, in one run:
//   rect        what the core does now with Capability::RectCopies: one
//               memcpy_rect (only the tile's 4 MiB move);
//   staged      the core's path before rectangular copies, written out with
//               the public API: D2H copies the tile's whole span (1024
//               rows of 8192 floats, 32 MiB) to a staging buffer and
//               scatters the tile's rows; H2D gathers the tile's rows into a
//               staging buffer and copies it;
//   contiguous  the same 4 MiB as one contiguous copy (the machine's
//               floor for these bytes through the backend);
//   rows        the machine's limit for the tile's layout: a plain loop of
//               one memcpy per row between the 8192-wide host array and a
//               dense buffer (no gpuhal), so that the cost of the layout
//               itself (rows 32 KiB apart) is seen apart from the backend's.
// Target: rect within 1.3x of contiguous (docs/performance.md, RC1).
// GPUHAL_BENCH_SMOKE (scripts/bench.sh --smoke) shrinks it to a 256x256
// tile of a 2048x2048 array.
//
//   build/bin/gpuhal-bench-rect --benchmark_repetitions=10 --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true   (one line)
//
// GPUHAL_BACKEND picks the backend (host when unset); every buffer is
// written before timing.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_backend.hpp"
#include "gpuhal/gpuhal.hpp"

namespace {

using gpuhal::Slice;

const bool kSmoke = std::getenv("GPUHAL_BENCH_SMOKE") != nullptr;
const int64_t kFull = kSmoke ? 2048 : 8192, kTile = kSmoke ? 256 : 1024, kRow0 = kSmoke ? 250 : 1000,
              kCol0 = kSmoke ? 500 : 2000;

struct Arrays {
  gpuhal::Context ctx;
  gpuhal::DeviceArray big, dense;        // 8192x8192 and 1024x1024 on the device
  std::vector<float> host_big, host_tile, staging;  // the host sides
  Arrays() {
    ctx = gpuhal::Runtime::load(bench::backend_config()).device(0).primary_context();
    big = gpuhal::device_array(ctx, {kFull, kFull}, gpuhal::dtypes::float32);
    dense = gpuhal::device_array(ctx, {kTile, kTile}, gpuhal::dtypes::float32);
    big.memset(1);
    dense.memset(2);
    host_big.assign(size_t(kFull * kFull), 3.0f);
    host_tile.assign(size_t(kTile * kTile), 4.0f);
    staging.assign(size_t(kTile * kFull), 5.0f);
  }
  gpuhal::DeviceArray tile() const { return big.view({Slice(kRow0, kRow0 + kTile), Slice(kCol0, kCol0 + kTile)}); }
  // The tile's place in host_big, with host_big's strides.
  gpuhal::HostView host_big_tile() {
    return gpuhal::HostView::of(host_big.data() + kRow0 * kFull + kCol0, {kTile, kTile}, {kFull * 4, 4});
  }
};

Arrays &arrays() {
  static Arrays a;
  return a;
}

void bytes(benchmark::State &state) {
  state.SetBytesProcessed(int64_t(state.iterations()) * kTile * kTile * 4);
}

void BM_TileD2H_Rect(benchmark::State &state) {
  Arrays &a = arrays();
  const gpuhal::DeviceArray tile = a.tile();
  const gpuhal::HostView dst = a.host_big_tile();
  for (auto _ : state) tile.copy_to_host(dst);
  bytes(state);
}

void BM_TileD2H_Staged(benchmark::State &state) {
  Arrays &a = arrays();
  const gpuhal::DeviceArray span = a.big.view({Slice(kRow0, kRow0 + kTile)});
  const gpuhal::HostView staging = gpuhal::HostView::of(a.staging, {kTile, kFull});
  for (auto _ : state) {
    span.copy_to_host(staging);
    for (int64_t r = 0; r < kTile; ++r)
      std::memcpy(&a.host_big[size_t((kRow0 + r) * kFull + kCol0)], &a.staging[size_t(r * kFull + kCol0)], kTile * 4);
    benchmark::ClobberMemory();
  }
  bytes(state);
}

void BM_TileRows_Memcpy(benchmark::State &state) {
  Arrays &a = arrays();
  for (auto _ : state) {
    for (int64_t r = 0; r < kTile; ++r)
      std::memcpy(&a.host_tile[size_t(r * kTile)], &a.host_big[size_t((kRow0 + r) * kFull + kCol0)], kTile * 4);
    benchmark::ClobberMemory();
  }
  bytes(state);
}

void BM_TileD2H_Contiguous(benchmark::State &state) {
  Arrays &a = arrays();
  const gpuhal::HostView dst = gpuhal::HostView::of(a.host_tile, {kTile, kTile});
  for (auto _ : state) a.dense.copy_to_host(dst);
  bytes(state);
}

void BM_TileH2D_Rect(benchmark::State &state) {
  Arrays &a = arrays();
  const gpuhal::HostView src = a.host_big_tile();
  for (auto _ : state) a.dense.copy_from_host(src);
  bytes(state);
}

void BM_TileH2D_Staged(benchmark::State &state) {
  Arrays &a = arrays();
  const gpuhal::HostView staging = gpuhal::HostView::of(a.staging.data(), {kTile, kTile});
  for (auto _ : state) {
    for (int64_t r = 0; r < kTile; ++r)
      std::memcpy(&a.staging[size_t(r * kTile)], &a.host_big[size_t((kRow0 + r) * kFull + kCol0)], kTile * 4);
    a.dense.copy_from_host(staging);
  }
  bytes(state);
}

void BM_TileH2D_Contiguous(benchmark::State &state) {
  Arrays &a = arrays();
  const gpuhal::HostView src = gpuhal::HostView::of(a.host_tile, {kTile, kTile});
  for (auto _ : state) a.dense.copy_from_host(src);
  bytes(state);
}

// D2D: the tile into the same tile of a second big array (before
// rectangular copies: the backend's assign kernel).
void BM_TileD2D_Rect(benchmark::State &state) {
  Arrays &a = arrays();
  static gpuhal::DeviceArray other = [&] {
    gpuhal::DeviceArray o = gpuhal::device_array(a.ctx, {kFull, kFull}, gpuhal::dtypes::float32);
    o.memset(6);
    return o;
  }();
  const gpuhal::DeviceArray src = a.tile();
  const gpuhal::DeviceArray dst = other.view({Slice(kRow0, kRow0 + kTile), Slice(kCol0, kCol0 + kTile)});
  for (auto _ : state) dst.assign(src);
  bytes(state);
}

void BM_TileD2D_Contiguous(benchmark::State &state) {
  Arrays &a = arrays();
  static gpuhal::DeviceArray other = [&] {
    gpuhal::DeviceArray o = gpuhal::device_array(a.ctx, {kTile, kTile}, gpuhal::dtypes::float32);
    o.memset(7);
    return o;
  }();
  for (auto _ : state) other.copy_from_device(a.dense);
  bytes(state);
}

}  // namespace

BENCHMARK(BM_TileD2H_Rect)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TileD2H_Staged)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TileD2H_Contiguous)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TileH2D_Rect)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TileH2D_Staged)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TileH2D_Contiguous)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TileD2D_Rect)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TileD2D_Contiguous)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TileRows_Memcpy)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
