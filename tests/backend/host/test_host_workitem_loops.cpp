// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's rewrite of barrier kernels into work-item loops
// (plugins/host/kernels/host_workitem_loops.cpp), as a pure function: which kernels
// it takes, which it leaves to fibers and why. What the rewritten kernels
// compute is checked by the [loops] and [kernel] tests in test_kernels.cpp.
#include "catch_compat.hpp"
#include <string>
#include <vector>

#include "host_workitem_loops.hpp"
#include "kernel_sources.hpp"

using gpuhal::host::make_work_item_loops;

namespace {

std::string skip_reason(const std::string &source, const std::string &kernel) {
  auto r = make_work_item_loops(source, {kernel});
  REQUIRE(r.kernels.empty());
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0].first == kernel);
  CHECK(r.text.empty());
  return r.skipped[0].second;
}

}  // namespace

TEST_CASE("work-item loops: the test suite's barrier kernels are all rewritten", "[loops-rewrite]") {
  // Whether each kernel's source asks for a dimension other than 0.
  struct Case {
    const char *source, *name;
    bool two_d;
  };
  const Case kernels[] = {{kReduce, "block_sum", false},     {kMatmul, "matmul", true},
                          {kDynamic, "dyn", false},          {kRotateRounds, "rotate_rounds", false},
                          {kBranches, "branches", true},     {kNestedLoops, "nested_loops", false}};
  for (const auto &k : kernels) {
    INFO(k.name);
    auto r = make_work_item_loops(k.source, {k.name});
    for (const auto &s : r.skipped) INFO(s.first << ": " << s.second);
    REQUIRE(r.skipped.empty());
    REQUIRE(r.kernels == std::vector<std::string>{k.name});
    // One struct per kernel with its loops for any group shape and, when the
    // source indexes a second dimension, again for 16 x 16 groups, whose row
    // loops (and only theirs) carry the hint that keeps clang from unrolling
    // them before it vectorises them.
    const std::string head = std::string("namespace {\nstruct ") + k.name +
                             "__gpuhal_loops {\nstatic void __gpuhal_any(const gpuhal_host_group *__gpuhal_g";
    const size_t any = r.text.find(head);
    REQUIRE(any != std::string::npos);
    const size_t tile = r.text.find("static void __gpuhal_tile16(const gpuhal_host_group *__gpuhal_g", any);
    const std::string row = "for (uint32_t __gpuhal_x = 0; __gpuhal_x < __gpuhal_lsz[0]; ++__gpuhal_x) {\n";
    CHECK(r.text.find(std::string("static constexpr bool __gpuhal_has_tile16 = ") + (k.two_d ? "true" : "false")) !=
          std::string::npos);
    if (!k.two_d) {
      CHECK(tile == std::string::npos);
      CHECK(r.text.find("__GPUHAL_ROW_LOOP_HINT\n" + row) == std::string::npos);
    } else {
      REQUIRE(tile != std::string::npos);
      CHECK(r.text.find("const uint32_t __gpuhal_lsz[3] = {__gpuhal_g->local_size[0], __gpuhal_g->local_size[1], "
                        "__gpuhal_g->local_size[2]};",
                        any) < tile);
      CHECK(r.text.find("const uint32_t __gpuhal_lsz[3] = {16u, 16u, __gpuhal_g->local_size[2]};", tile) !=
            std::string::npos);
      CHECK(r.text.find("__GPUHAL_ROW_LOOP_HINT\n" + row, any) > tile);
      size_t rows = 0, hinted = 0;
      for (size_t at = tile; (at = r.text.find(row, at)) != std::string::npos; ++at, ++rows)
        hinted += r.text.compare(at - 23, 23, "__GPUHAL_ROW_LOOP_HINT\n") == 0;
      CHECK(rows > 0);
      CHECK(hinted == rows);
    }
    CHECK(r.text.find(std::string(k.name) + "__gpuhal_loops_scratch") != std::string::npos);
    // The builtins are redefined for the loops and restored after them.
    CHECK(r.text.find("#pragma push_macro(\"gpuhal_local_id\")") != std::string::npos);
    CHECK(r.text.find("#pragma pop_macro(\"gpuhal_local_id\")") != std::string::npos);
  }
}

TEST_CASE("work-item loops: a dimension the source only knows at run time, or one in a macro, keeps the 16 x 16 copy",
          "[loops-rewrite]") {
  const char *const kByVariable = R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL float *x, int d) {
  GPUHAL_SHARED_ARRAY(float, s, 256);
  s[gpuhal_local_id(0)] = x[gpuhal_global_id(d)];
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  x[gpuhal_global_id(0)] = s[0];
})";
  const char *const kInMacro = R"(
#define ROW gpuhal_global_id(1)
GPUHAL_KERNEL void k(GPUHAL_GLOBAL float *x) {
  GPUHAL_SHARED_ARRAY(float, s, 256);
  s[gpuhal_local_id(0)] = x[ROW];
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  x[gpuhal_global_id(0)] = s[0];
})";
  for (const char *source : {kByVariable, kInMacro}) {
    auto r = make_work_item_loops(source, {"k"});
    REQUIRE(r.kernels == std::vector<std::string>{"k"});
    CHECK(r.text.find("static constexpr bool __gpuhal_has_tile16 = true") != std::string::npos);
    CHECK(r.text.find("static void __gpuhal_tile16(") != std::string::npos);
  }
}

TEST_CASE("work-item loops: kernels with counting barriers keep their fibers, saying why", "[loops-rewrite]") {
  auto r = make_work_item_loops(kVotes, {"votes"});
  CHECK(r.kernels.empty());
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0].first == "votes");
  CHECK_THAT(r.skipped[0].second, test::contains("gpuhal_barrier_count"));
}

TEST_CASE("work-item loops: ids stay loop indices, values carried across barriers get per-item slots",
          "[loops-rewrite]") {
  auto r = make_work_item_loops(kReduce, {"block_sum"});
  REQUIRE(r.kernels.size() == 1);
  // lid = gpuhal_local_id(0) is evaluated again in every loop: no scratch.
  CHECK(r.text.find("unsigned lid = (gpuhal_local_id(0));") != std::string::npos);
  CHECK(r.text.find("__gpuhal_s0") == std::string::npos);
  CHECK(r.text.find("block_sum__gpuhal_loops_scratch = 0;") != std::string::npos);
  // The reduction's loop header stays at group level, around the loops:
  // init once, condition and step as the representative work-item sees them.
  CHECK(r.text.find("for (unsigned stride = gpuhal_local_size(0) / 2; ; ) {") != std::string::npos);
  CHECK(r.text.find("__gpuhal_c = (stride > 0);") != std::string::npos);
  CHECK(r.text.find("stride /= 2;") != std::string::npos);

  r = make_work_item_loops(kMatmul, {"matmul"});
  REQUIRE(r.kernels.size() == 1);
  // acc is written by every work-item in every tile: one slot each, in an
  // array on the loops' stack; each region works on a copy (a register)
  // and writes it back at its end.
  CHECK(r.text.find("typedef std::remove_const_t<float> matmul__gpuhal_t0;") != std::string::npos);
  CHECK(r.text.find("alignas(64) matmul__gpuhal_t0 __gpuhal_s0[gpuhal_host_max_items];") != std::string::npos);
  CHECK(r.text.find("matmul__gpuhal_loops_scratch = 0;") != std::string::npos);
  CHECK(r.text.find("matmul__gpuhal_t0 acc = 0.0f;\n") != std::string::npos);
  CHECK(r.text.find("matmul__gpuhal_t0 acc = __gpuhal_s0[__gpuhal_i];\n") != std::string::npos);
  CHECK(r.text.find("__gpuhal_s0[__gpuhal_i] = acc;\n") != std::string::npos);
  // Group-level code (the loop condition) reads the slot of the representative.
  CHECK(r.text.find("auto &acc = __gpuhal_s0[__gpuhal_r];\n") != std::string::npos);

  // The tiles, declared at the kernel's top level, live in the loops' frame.
  CHECK(r.text.find("__GPUHAL_SHARED_ARRAY_IN_FRAME(float, sA, TPB, TPB);") != std::string::npos);
  CHECK(r.text.find("__GPUHAL_SHARED_ARRAY_IN_FRAME(float, sB, TPB, TPB);") != std::string::npos);

  // One declared inside a loop around barriers stays the thread's array (a
  // frame's array would begin each round afresh).
  r = make_work_item_loops(kSharedAcrossRounds, {"shared_rounds"});
  REQUIRE(r.kernels.size() == 1);
  CHECK(r.text.find("__GPUHAL_SHARED_ARRAY_IN_FRAME(int, top, 64);") != std::string::npos);
  CHECK(r.text.find("\nGPUHAL_SHARED_ARRAY(int, s, 64);") != std::string::npos);

  r = make_work_item_loops(kCarried, {"carried"});
  REQUIRE(r.kernels.size() == 1);
  // Four scalars on the stack, the other five in scratch.
  for (int k = 0; k < 4; ++k)
    CHECK(r.text.find("alignas(64) carried__gpuhal_t" + std::to_string(k) + " __gpuhal_s" + std::to_string(k) +
                      "[gpuhal_host_max_items];") != std::string::npos);
  CHECK(r.text.find("carried__gpuhal_t4 *__gpuhal_s4 = (carried__gpuhal_t4 *)__gpuhal_at;") != std::string::npos);
  CHECK(r.text.find("carried__gpuhal_t8 *__gpuhal_s8 = (carried__gpuhal_t8 *)__gpuhal_at;") != std::string::npos);
  // addr's address is taken: every region binds its slot; q, a pointer, is copied.
  CHECK(r.text.find("auto &addr = __gpuhal_s7[__gpuhal_i]; addr = 0;") != std::string::npos);
  CHECK(r.text.find("auto &addr = __gpuhal_s7[__gpuhal_i];\n") != std::string::npos);
  CHECK(r.text.find("carried__gpuhal_t8 q = &addr;\n") != std::string::npos);
  CHECK(r.text.find("carried__gpuhal_t8 q = __gpuhal_s8[__gpuhal_i];\n") != std::string::npos);

  r = make_work_item_loops(kRotateRounds, {"rotate_rounds"});
  REQUIRE(r.kernels.size() == 1);
  // return marks the work-item done; a device function reads the thread-local item.
  CHECK(r.text.find("{ __gpuhal_done[__gpuhal_i] = 1; goto __gpuhal_next") != std::string::npos);
  CHECK(r.text.find("if (__gpuhal_done[__gpuhal_i]) continue;") != std::string::npos);
  CHECK(r.text.find("__gpuhal_item.local_id[0] = __gpuhal_x;") != std::string::npos);
  CHECK(r.text.find("typedef std::remove_const_t<int> rotate_rounds__gpuhal_t1[2];") != std::string::npos);
}

TEST_CASE("work-item loops: kernels the rewrite cannot prove right keep their fibers, with the reason",
          "[loops-rewrite]") {
  CHECK_THAT(skip_reason(R"(
GPUHAL_DEVICE void sync_all(void) { gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE); }
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) { o[0] = 1; sync_all(); gpuhal_barrier(1); }
)",
                         "k"),
             test::contains("outside kernel bodies"));
  CHECK_THAT(skip_reason(R"(
#define SYNC gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE)
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) { o[0] = 1; SYNC; }
)",
                         "k"),
             test::contains("outside kernel bodies"));
  CHECK_THAT(skip_reason(R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) {
  int i = 0;
again:
  o[i] = 1;
  gpuhal_barrier(1);
  if (++i < 2) goto again;
}
)",
                         "k"),
             test::contains("goto"));
  CHECK_THAT(skip_reason(R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o, int n) { n += (int)gpuhal_local_id(0); gpuhal_barrier(1); o[0] = n; }
)",
                         "k"),
             test::contains("parameter 'n'"));
  CHECK_THAT(skip_reason(R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) {
  for (int i = 0; i < 4; ++i) { if (o[i]) break; gpuhal_barrier(1); }
}
)",
                         "k"),
             test::contains("break"));
  CHECK_THAT(skip_reason(R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) {
  for (int i = 0; i < 4; ++i) { gpuhal_barrier(1); i += o[0]; }
}
)",
                         "k"),
             test::contains("loop variable 'i'"));
  CHECK_THAT(skip_reason(R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) { auto a = o[gpuhal_local_id(0)]; gpuhal_barrier(1); o[1] = a; }
)",
                         "k"),
             test::contains("cannot read"));
  CHECK_THAT(skip_reason(R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) { int a = (gpuhal_barrier(1), 2); o[0] = a; }
)",
                         "k"),
             test::contains("expression"));
  CHECK_THAT(skip_reason(R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) {
  int i = 0;
  gpuhal_barrier(1);
  while (i++ < 3) { gpuhal_barrier(1); }
  o[0] = i;
}
)",
                         "k"),
             test::contains("writes the per-work-item 'i'"));
  CHECK_THAT(skip_reason(R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) {
#if 1
  o[0] = 1;
#endif
  gpuhal_barrier(1);
}
)",
                         "k"),
             test::contains("preprocessor"));
  // A kernel the core marked but whose definition has another shape.
  CHECK_THAT(skip_reason("GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *o) { gpuhal_barrier(1); }", "other"),
             test::contains("not of the form"));
}

TEST_CASE("work-item loops: only the user's source after the core's marker is read", "[loops-rewrite]") {
  // The lowering's own definitions (before the marker) mention the builtins
  // and gpuhal_barrier; they must not count as uses outside kernel bodies.
  const std::string source =
      std::string("#define gpuhal_barrier(f) __gpuhal_barrier_impl()\n") + "#line 1 \"kernel\"\n" + kReduce;
  auto r = make_work_item_loops(source, {"block_sum"});
  CHECK(r.skipped.empty());
  CHECK(r.kernels == std::vector<std::string>{"block_sum"});
  // No barrier kernels: nothing to do.
  r = make_work_item_loops(kSaxpy, {});
  CHECK(r.text.empty());
  CHECK(r.kernels.empty());
}
