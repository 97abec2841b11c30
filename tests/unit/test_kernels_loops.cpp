// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Barrier kernels on the host backend, each result checked against a
// simulation on the CPU. The backend runs them as work-item loops (or as
// fibers with GPUHAL_HOST_WORK_ITEM_LOOPS=0: ctest runs the [loops] tests
// both ways); the rewrite itself, as a pure function, is tested in
// test_host_workitem_loops.cpp.
#include <vector>

#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;

using test::kernel_context;

TEST_CASE("kernel: barrier loops, early returns and values carried across barriers match a CPU simulation", "[loops]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kRotateRounds).kernel("rotate_rounds");
  const unsigned groups = 3, block = 64, n = 150;
  auto out = device_array(ctx, {groups * block}, dtypes::int32);
  out.memset(0xff);
  for (int rounds : {0, 1, 5}) {
    k({groups}, {block})(out, n, rounds);
    auto h = out.copy_to_host().to_vector<int32_t>();
    for (unsigned g = 0; g < groups; ++g) {
      // Work-items past n returned after filling their slot; their slots keep it.
      std::vector<int> s(block), acc(block, 0), v(block);
      for (unsigned l = 0; l < block; ++l) s[l] = int(g * block + l);
      for (int r = 0; r < rounds; ++r) {
        for (unsigned l = 0; l < block; ++l) v[l] = s[(l + 1) % block];
        for (unsigned l = 0; l < block; ++l)
          if (g * block + l < n) {
            s[l] = v[l];
            acc[l] += v[l];
          }
      }
      for (unsigned l = 0; l < block; ++l) {
        INFO("rounds " << rounds << " group " << g << " item " << l);
        REQUIRE(h[g * block + l] == (g * block + l < n ? acc[l] * 4 : -1));
      }
    }
  }
}

// The loops are compiled for 16 x 16 groups besides the general loops
// (run_loops in host_lowering.cpp): that shape, with and without a z extent,
// the shapes beside it, and the general loops for others.
TEST_CASE("kernel: if / else, while and do-while around barriers in a 3-D block match a CPU simulation", "[loops]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kBranches).kernel("branches");
  const unsigned groups = 3;
  const Dim3 blocks[] = {{4, 4, 2},  {16, 16, 1}, {16, 8, 2}, {8, 8, 1}, {8, 8, 4},  {8, 4, 3},  {32, 8, 1},
                         {32, 4, 2}, {32, 1, 1},  {16, 1, 1}, {8, 1, 1}, {24, 2, 1}, {1, 16, 2}, {64, 4, 1}};
  for (const Dim3 &block : blocks) {
    const unsigned total = block.x * block.y * block.z;
    auto out = device_array(ctx, {groups * total}, dtypes::int32);
    for (int mode : {1, 0}) {
      out.memset(0);
      k({groups}, block)(out, mode);
      auto h = out.copy_to_host().to_vector<int32_t>();
      for (unsigned g = 0; g < groups; ++g)
        for (unsigned lin = 0; lin < total; ++lin) {
          const unsigned nb = (lin + 1) % total;
          const int s_nb = mode > 0 ? int(total - 1 - nb) : -int(nb);
          const int v = int(lin) + 3 * s_nb;
          INFO("block " << block.x << "x" << block.y << "x" << block.z << " mode " << mode << " group " << g << " item "
                        << lin);
          REQUIRE(h[g * total + lin] == v + 1000 + 2 * 100000);
        }
    }
  }
}

TEST_CASE("kernel: a barrier loop nested in a barrier loop matches a CPU simulation", "[loops]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kNestedLoops).kernel("nested_loops");
  const unsigned groups = 2, block = 128;
  std::vector<int32_t> in(groups * block);
  for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t(i * 7 % 101);
  auto din = to_device(ctx, HostView::of(in));
  auto out = device_array(ctx, {groups * block}, dtypes::int32);
  const int outer = 3, inner = 4;
  k({groups}, {block})(out, din, outer, inner);
  auto h = out.copy_to_host().to_vector<int32_t>();
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned l = 0; l < block; ++l) {
      int acc = 0;
      for (int i = 0; i < outer; ++i)
        for (int j = 0; j < inner; ++j) acc += in[g * block + (block - 1 - l)] + i * j;
      REQUIRE(h[g * block + l] == acc);
    }
}

TEST_CASE("kernel: loop conditions around barriers are read from a work-item that has not returned", "[loops]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kCountdown).kernel("countdown");
  const unsigned groups = 3, block = 64, n = 100;
  auto out = device_array(ctx, {groups * block}, dtypes::int32);
  out.memset(0xff);
  k({groups}, {block})(out, n);
  auto h = out.copy_to_host().to_vector<int32_t>();
  for (unsigned i = 0; i < groups * block; ++i) {
    INFO("item " << i);
    REQUIRE(h[i] == (i < n && i % block != 0 ? 3 : -1));
  }
}

// Nine values cross the barriers: the first four scalars live in arrays on
// the loops' stack, the rest in the scratch buffer; inside a region each is
// a local copy, except `addr`, whose address is taken (a device function
// writes through it, and `q` keeps it across the barriers).
TEST_CASE(
    "kernel: values carried across barriers, on the stack, in scratch and behind a pointer, match a CPU simulation",
    "[loops]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kCarried).kernel("carried");
  const unsigned groups = 3, block = 64, n = 150;
  std::vector<int32_t> in(groups * block + 8);
  for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t(i * 13 % 97);
  auto din = to_device(ctx, HostView::of(in));
  auto out = device_array(ctx, {groups * block}, dtypes::int64);
  for (int rounds : {0, 1, 4}) {
    out.memset(0);
    k({groups}, {block})(out, din, n, rounds);
    auto h = out.copy_to_host().to_vector<int64_t>();
    for (unsigned g = 0; g < groups; ++g) {
      std::vector<int64_t> a(block), s(block, 0);
      for (unsigned l = 0; l < block; ++l) a[l] = in[g * block + l];
      int64_t b = 1, c = 2, d = 3, e = 4, addr = 0;
      double f = 0.5;
      for (int r = 0; r < rounds; ++r) {
        for (unsigned l = 0; l < block; ++l)
          if (g * block + l < n) s[l] = a[l];
        for (unsigned l = 0; l < block; ++l) a[l] = s[(l + 1) % block] + b;
        b += c;
        c += d;
        d += e;
        e += 1;
        f *= 2.0;
        addr += in[size_t(r) + 1] + 1;
      }
      for (unsigned l = 0; l < block; ++l) {
        INFO("rounds " << rounds << " group " << g << " item " << l);
        const bool live = g * block + l < n;
        REQUIRE(h[g * block + l] == (live ? a[l] * 3 + b + c + d + e + int64_t(f) + addr : -1));
      }
    }
  }
}

// Groups run in whatever order the backend picks (bands of columns on the
// host): each must still run exactly once, with its own ids, for grids
// whose width is no multiple of the band's.
TEST_CASE("kernel: every group of a 3-D grid runs once with its own ids, with and without barriers", "[loops]") {
  Context ctx = kernel_context();
  Module m = Module::compile(ctx, kWhereGroups);
  for (const char *name : {"where_barrier", "where_plain"}) {
    for (const Dim3 grid : {Dim3{19, 7, 3}, Dim3{3, 5, 1}, Dim3{8, 2, 2}, Dim3{1, 1, 1}, Dim3{40, 1, 1}}) {
      const unsigned block = 4, slots = grid.x * grid.y * grid.z * block;
      auto out = device_array(ctx, {slots}, dtypes::uint32);
      out.memset(0);
      m.kernel(name)(grid, {block})(out);
      auto h = out.copy_to_host().to_vector<uint32_t>();
      for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
          for (unsigned x = 0; x < grid.x; ++x)
            for (unsigned l = 0; l < block; ++l) {
              INFO(name << " grid " << grid.x << "x" << grid.y << "x" << grid.z << " group " << x << "," << y << ","
                        << z << " item " << l);
              REQUIRE(h[((z * grid.y + y) * grid.x + x) * block + l] == 1 + x + 100 * y + 10000 * z + 1000000 * l);
            }
    }
  }
}

TEST_CASE("kernel: a shared array declared inside a loop around barriers keeps its contents from round to round",
          "[loops]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kSharedAcrossRounds).kernel("shared_rounds");
  const unsigned groups = 4, block = 64;
  auto out = device_array(ctx, {groups * block}, dtypes::int32);
  for (int rounds : {1, 3, 6}) {
    out.memset(0);
    k({groups}, {block})(out, rounds);
    auto h = out.copy_to_host().to_vector<int32_t>();
    for (unsigned i = 0; i < groups * block; ++i) {
      int acc = 1000;
      for (int r = 0; r < rounds; ++r) acc += int((i % block + 1) % block) + r;
      INFO("rounds " << rounds << " item " << i);
      REQUIRE(h[i] == acc);
    }
  }
}
