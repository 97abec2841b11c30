// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Portable kernels on the cuda backend: the lowering compiled by the real
// NVRTC (where installed), the PTX assembled by the real ptxas for sm_80 and
// sm_90, and launches over the fake driver (validated and recorded there,
// field by field). Skipped, saying why, where NVRTC or ptxas is missing.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "kernel_sources.hpp"
#include "fake_cuda_hooks.hpp"
#include "test_support.hpp"

using namespace gpuhal;

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN

namespace {

Context cuda_context() {
  Config c;
  c.backend = "cuda";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.set_option("GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA);
  return Runtime::load(c).device(0).primary_context();
}

// Compiles with NVRTC, or returns an empty module after printing why it
// cannot (NVRTC not installed).
Module compile_or_skip(const Context &ctx, const char *source, const std::string &options = "") {
  ModuleOptions o;
  o.compiler_options = options;
  try {
    return Module::compile(ctx, source, o);
  } catch (const Error &e) {
    if (std::string(e.what()).find("could not be loaded") == std::string::npos) throw;
    WARN("skipped: NVRTC is not installed here: " << e.what());
    return Module();
  }
}

std::string ptxas() {
  for (const char *p : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

// Assembles PTX for `arch` with the real ptxas; returns its exit status.
int assemble(const std::string &ptx, const std::string &arch) {
  char path[] = "/tmp/gpuhal-ptx-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, ptx.data(), ptx.size()) == ssize_t(ptx.size()));
  close(fd);
  const std::string cmd = ptxas() + " -arch=" + arch + " " + path + " -o /dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  unlink(path);
  return rc;
}

std::string last_launch(long *count = nullptr) {
  auto fn = test::fake_symbol<long (*)(char *, size_t)>("fake_cuda_last_launch");
  char buf[1024];
  const long n = fn(buf, sizeof buf);
  if (count) *count = n;
  return buf;
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

TEST_CASE("cuda kernel: the lowered portable kernels compile with NVRTC and assemble with ptxas for sm_80 and sm_90",
          "[kernel][cuda]") {
  Context ctx = cuda_context();
  if (ptxas().empty()) {
    WARN("skipped: ptxas is not installed here");
    return;
  }
  for (const char *src : {kSaxpy, kReduce, kMatmul, kDynamic, kArrays, kVotes, kAtomics, kPrintAssert, kAtomicsExplicit, kWaves}) {
    for (const char *arch : {"80", "90"}) {
      Module m = compile_or_skip(ctx, src, std::string("--gpu-architecture=compute_") + arch);
      if (!m) return;
      INFO("sm_" << arch << ":\n" << m.image());
      CHECK(m.image_format() == ImageFormat::Ptx);
      CHECK_THAT(m.image(), test::contains(std::string(".target sm_") + arch));
      CHECK(assemble(m.image(), std::string("sm_") + arch) == 0);
      if (src != kSaxpy && src != kVotes && src != kPrintAssert) CHECK_THAT(m.image(), test::contains("bar.sync"));
      // The scopes reach the PTX: atom.shared.cta (work-group), .sys (system)
      // and fence.sc / membar for acq_rel and seq_cst.
      if (src == kAtomicsExplicit) CHECK_THAT(m.image(), test::contains("atom.shared.cta.add"));
      if (src == kAtomicsExplicit) CHECK_THAT(m.image(), test::contains(".sys"));
      if (src == kWaves) CHECK_THAT(m.image(), test::contains("shfl.sync"));
      if (src == kWaves) CHECK_THAT(m.image(), test::contains("vote.sync.ballot"));
      if (src == kPrintAssert) CHECK_THAT(m.image(), test::contains("vprintf"));
      if (src == kPrintAssert) CHECK_THAT(m.image(), test::contains("__assertfail"));
      if (src == kAtomics) CHECK_THAT(m.image(), test::contains("atom."));
      if (src == kVotes) CHECK_THAT(m.image(), test::contains("bar.red.popc"));
    }
  }
  // An alignment that is no power of two does not compile, naming the rule
  // (NVRTC would take __align__(0)).
  if (compile_or_skip(ctx, kSaxpy)) {
    REQUIRE_GPUHAL_ERROR(Module::compile(ctx, kAlignedToZero),
                         Status::ERROR_COMPILATION_FAILED, "must be a power of two");
  }
  // The device's own architecture when no option names one (the fake is 9.0).
  Module m = compile_or_skip(ctx, kReduce);
  if (m) CHECK_THAT(m.image(), test::contains(".target sm_90"));
}

TEST_CASE("cuda kernel: launches reach the driver with grid, block, shared bytes and every argument", "[kernel][cuda]") {
  Context ctx = cuda_context();
  Module m = compile_or_skip(ctx, kSaxpy);
  if (!m) return;
  Kernel k = m.kernel("saxpy");
  auto x = device_array(ctx, {1000}, dtypes::float32);
  auto y = device_array(ctx, {1000}, dtypes::float32);
  Stream s = ctx.create_stream();
  long before = 0;
  last_launch(&before);
  k({4}, {256}, s, 128)(y, x, 3.0f, int64_t(1000));  // the int64 converts to the int parameter
  s.synchronize();
  long after = 0;
  const std::string got = last_launch(&after);
  CHECK(after == before + 1);
  CHECK(got == "saxpy grid=4,1,1 block=256,1,1 shared=128 params=8:" + hex(y.device_pointer()) + ",8:" +
                   hex(x.device_pointer()) + ",4:0x40400000,4:0x3e8");

  // Dynamic shared memory beyond the default 48 KiB opts in; beyond the device's limit is refused.
  Module d = compile_or_skip(ctx, kDynamic);
  auto out = device_array(ctx, {256}, dtypes::float32);
  auto bytes = device_array(ctx, {4}, dtypes::uint32);
  d.kernel("dyn")({2}, {128}, s, 100 * 1024)(out, bytes);
  s.synchronize();
  CHECK_THAT(last_launch(), Catch::Matchers::StartsWith("dyn grid=2,1,1 block=128,1,1 shared=102400 "));
  REQUIRE_GPUHAL_ERROR(d.kernel("dyn")({2}, {128}, s, 240 * 1024)(out, bytes), Status::ERROR_INVALID_VALUE,
                       "dynamic shared memory");
  // The reduction's static shared array (1 KiB) counts against the limit too.
  Module r = compile_or_skip(ctx, kReduce);
  auto in = device_array(ctx, {256}, dtypes::float64);
  auto part = device_array(ctx, {2}, dtypes::float64);
  REQUIRE_GPUHAL_ERROR(r.kernel("block_sum")({2}, {128}, s, 227 * 1024 - 512)(in, part, 256u),
                       Status::ERROR_INVALID_VALUE, "1024 bytes of static");
}

TEST_CASE("cuda graphs: a captured launch reaches the driver at each replay, with the arguments update_kernel_args set",
          "[kernel][cuda][graphs]") {
  Context ctx = cuda_context();
  REQUIRE(ctx.supports(Capability::Graphs));
  Module m = compile_or_skip(ctx, kSaxpy);
  if (!m) return;
  Kernel k = m.kernel("saxpy");
  auto x = device_array(ctx, {1000}, dtypes::float32), y = device_array(ctx, {1000}, dtypes::float32);
  auto z = device_array(ctx, {1000}, dtypes::float32);
  Stream s = ctx.create_stream();
  long before = 0, after = 0;
  last_launch(&before);
  s.begin_capture();
  k({4}, {256}, s)(y, x, 2.0f, 1000);
  Graph g = s.end_capture();
  last_launch(&after);
  CHECK(after == before);  // recorded, not run
  CHECK(g.kernel_node_count() == 1);
  GraphExec exec = g.instantiate();
  exec.launch(s);
  s.synchronize();
  CHECK(last_launch(&after) == "saxpy grid=4,1,1 block=256,1,1 shared=0 params=8:" + hex(y.device_pointer()) + ",8:" +
                                   hex(x.device_pointer()) + ",4:0x40000000,4:0x3e8");
  CHECK(after == before + 1);
  exec.update_kernel_args(0, {z, y, 3.0f, 10});
  exec.launch(s);
  s.synchronize();
  CHECK(last_launch(&after) == "saxpy grid=4,1,1 block=256,1,1 shared=0 params=8:" + hex(z.device_pointer()) + ",8:" +
                                   hex(y.device_pointer()) + ",4:0x40400000,4:0xa");
  CHECK(after == before + 2);
  // Host arrays need a copy back after each launch: refused before anything is recorded.
  std::vector<float> host(1000);
  s.begin_capture();
  REQUIRE_GPUHAL_ERROR(k({4}, {256}, s)(HostView::of(host), x, 2.0f, 1000), Status::ERROR_CAPTURE_UNSUPPORTED,
                       "device arrays and scalars only");
  CHECK(s.end_capture().kernel_node_count() == 0);  // the capture is still good
  REQUIRE_GPUHAL_ERROR(exec.update_kernel_args(0, {z, y, 3.0f}), Status::ERROR_INVALID_VALUE, "takes 4 argument(s)");
}

TEST_CASE("cuda kernel: assign and fill of a strided view launch the core's assign kernel", "[kernel][cuda][assign]") {
  Context ctx = cuda_context();
  if (!compile_or_skip(ctx, kSaxpy)) return;
  auto a = device_array(ctx, {4, 6}, dtypes::float64);
  Stream s = ctx.create_stream();
  long before = 0;
  last_launch(&before);
  a.view({Slice(), Slice({}, {}, 2)}).fill(1.5, s);  // a[:, ::2] = 1.5: not a memset
  s.synchronize();
  long after = 0;
  std::string got = last_launch(&after);
  CHECK(after == before + 1);
  // One group of 256 for 12 elements; the view's bytes, element 0 at 0, 12 elements in one axis (the
  // rows' stride 48 is 3 columns of 16: merged), one 8-byte word each, the value 1.5, then n0 = 12,
  // n1..n7 = 1, d0 = 16, the rest 0.
  CHECK_THAT(got, Catch::Matchers::StartsWith("gpuhal_assign grid=1,1,1 block=256,1,1 shared=0 params=8:" +
                                              hex(a.device_pointer())));
  CHECK_THAT(got, test::contains(",8:0x0,8:0x0,8:0xc,4:0x1,4:0x8,4:0x1,4:0x1,8:0x3ff8000000000000,8:0x0,8:0xc,"
                                 "8:0x1,8:0x1,8:0x1,8:0x1,8:0x1,8:0x1,8:0x1,8:0x10,8:0x0,"));
  // A contiguous fill of zero bytes is the driver's memset: no launch.
  a.fill(0.0, s);
  s.synchronize();
  last_launch(&before);
  CHECK(before == after);
  // A transposed copy is a launch too; compiled once per context.
  auto b = device_array(ctx, {6, 4}, dtypes::float64);
  b.assign(a.T(), s);
  s.synchronize();
  got = last_launch(&after);
  CHECK(after == before + 1);
  CHECK_THAT(got, Catch::Matchers::StartsWith("gpuhal_assign grid=1,1,1 block=256,1,1"));
}

TEST_CASE("cuda kernel: compile errors, unknown kernels and bad images are reported with the driver's words",
          "[kernel][cuda]") {
  Context ctx = cuda_context();
  try {
    Module::compile(ctx, "GPUHAL_KERNEL void k(int n) {\n  int x = ;\n}\n");
    FAIL("expected a compilation failure");
  } catch (const Error &e) {
    if (std::string(e.what()).find("could not be loaded") != std::string::npos) {
      WARN("skipped: NVRTC is not installed here");
      return;
    }
    CHECK(e.status() == Status::ERROR_COMPILATION_FAILED);
    CHECK_THAT(e.what(), test::contains("kernel(2): error"));
  }
  Module m = Module::compile(ctx, kSaxpy);
  REQUIRE_GPUHAL_ERROR(m.kernel("nope"), Status::ERROR_NOT_FOUND, "no kernel 'nope'");
  const std::string junk = "this is not PTX";
  REQUIRE_GPUHAL_ERROR(Module::load(ctx, ImageFormat::Ptx, junk.data(), junk.size()), Status::ERROR_INVALID_IMAGE,
                       "CUDA_ERROR_INVALID_PTX");
  REQUIRE_GPUHAL_ERROR(Module::load(ctx, ImageFormat::HostSharedObject, junk.data(), junk.size()),
                       Status::ERROR_INVALID_IMAGE, "loads PTX and cubin");
  // A prebuilt PTX image loads and its kernels are found by name.
  Module pre = Module::load(ctx, ImageFormat::Ptx, m.image().data(), m.image().size());
  Kernel k = pre.kernel("saxpy");
  CHECK(k.parameter_count() == -1);
  // The context goes on.
  auto a = to_device(ctx, HostView::of(std::vector<float>(8, 1.0f)));
  CHECK(a.copy_to_host().to_vector<float>() == std::vector<float>(8, 1.0f));
}

TEST_CASE("cuda kernel: attributes and occupancy come from cuFuncGetAttribute and the driver's occupancy calculator",
          "[kernel][cuda][attributes]") {
  Context ctx = cuda_context();
  REQUIRE(ctx.supports(Capability::KernelAttributes));
  Module m = compile_or_skip(ctx, kReduce);
  if (!m) return;
  Kernel k = m.kernel("block_sum");
  const KernelAttributes a = k.attributes();
  CHECK(a.max_threads_per_block == 1024);
  CHECK(a.static_shared_bytes == 1024);
  CHECK(a.max_dynamic_shared_bytes == 227 * 1024 - 1024);  // launches opt in above 48 KiB
  CHECK(a.registers_per_thread > 0);                        // the fake counts the PTX's registers
  CHECK(a.registers_per_thread <= 255);
  CHECK(a.preferred_block_multiple == 32);
  // The occupancy calculator's rule for compute capability 9.0 (the fake's,
  // fake_cuda.hpp), recomputed here from the attributes.
  auto expected = [&](uint32_t block, uint32_t dynamic) {
    const uint32_t warps = (block + 31) / 32;
    uint32_t n = std::min(2048 / (warps * 32), 32u);
    n = std::min(n, 65536 / ((a.registers_per_thread * 32 + 255) / 256 * 256 * warps));
    return std::min(n, uint32_t(228 * 1024 / ((1024 + dynamic + 1024 + 127) / 128 * 128)));
  };
  CHECK(k.max_active_blocks_per_unit(128) == expected(128, 0));
  CHECK(k.max_active_blocks_per_unit(1024) == expected(1024, 0));
  // 64 KiB of dynamic shared memory: above the function's default 48 KiB
  // the driver counts 0 blocks until the kernel opts in, as a launch does.
  CHECK(k.max_active_blocks_per_unit(128, 64 * 1024) == expected(128, 64 * 1024));
  CHECK(k.max_active_blocks_per_unit(128, 64 * 1024) > 0);
  CHECK(k.max_active_blocks_per_unit(1056) == 0);                 // over the kernel's 1024 threads
  CHECK(k.max_active_blocks_per_unit(128, 227 * 1024) == 0);      // with the static 1 KiB, over the device's
  const BlockSizeSuggestion s = k.suggest_block_size();
  uint64_t best = 0;
  uint32_t best_block = 0;
  for (uint32_t b = 1024; b >= 32; b -= 32)
    if (uint64_t(expected(b, 0)) * b > best) best = uint64_t(expected(b, 0)) * b, best_block = b;
  CHECK(s.block == best_block);
  CHECK(s.min_grid == expected(best_block, 0) * uint32_t(ctx.device().properties().multiprocessor_count));
}

#endif
