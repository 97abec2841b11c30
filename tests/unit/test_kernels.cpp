// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Portable kernels on the host backend: the dialect's builtins, shared /
// dynamic shared / local / constant memory, barriers (fibers) and
// barrier-free kernels (loops), and the launch API's argument rules. Bad
// kernels, modules and their cache: test_kernel_modules.cpp.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;

using test::kernel_context;

namespace {

// Each work-item reads what its neighbour wrote to shared memory: right only
// with the barrier in between. The values depend on the group, so stale data
// of an earlier group cannot pass for them.
std::string neighbour_source(bool with_barrier) {
  return std::string(R"(
GPUHAL_KERNEL void neighbour(GPUHAL_GLOBAL int *out) {
  GPUHAL_SHARED_ARRAY(int, s, 64);
  unsigned lid = gpuhal_local_id(0), n = gpuhal_local_size(0);
  s[lid] = (int)(gpuhal_group_id(0) * 1000 + lid + 1);
  )") + (with_barrier ? "gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);" : "/* no barrier */") +
         R"(
  out[gpuhal_global_id(0)] = s[(lid + 1) % n];
}
)";
}

int neighbour_mismatches(const Context &ctx, bool with_barrier) {
  auto k = Module::compile(ctx, neighbour_source(with_barrier)).kernel("neighbour");
  const unsigned groups = 8, block = 64;
  auto out = device_array(ctx, {int64_t(groups * block)}, dtypes::int32);
  out.memset(0);
  k({groups}, {block})(out);
  auto h = out.copy_to_host().to_vector<int32_t>();
  int bad = 0;
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned l = 0; l < block; ++l) bad += h[g * block + l] != int32_t(g * 1000 + (l + 1) % block + 1);
  return bad;
}

}  // namespace

TEST_CASE("kernel: to_device, saxpy, copy_to_host (the Numba docs' program) for a size not a multiple of the block",
          "[kernel]") {
  Context ctx = kernel_context();
  REQUIRE(ctx.supports(Capability::Kernels));
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i);
    y[i] = float(2 * i);
  }
  Stream s = ctx.create_stream();
  auto dx = to_device(ctx, HostView::of(x), s);
  auto dy = to_device(ctx, HostView::of(y), s);
  Module m = Module::compile(ctx, kSaxpy);
  CHECK(m.kernel_names() == std::vector<std::string>{"saxpy"});
  CHECK(m.image_format() == ImageFormat::HostSharedObject);
  Kernel k = m.kernel("saxpy");
  CHECK(k.parameter_count() == 4);
  k({(n + 255) / 256}, {256}, s)(dy, dx, 3.0f, n);
  std::vector<float> r(n, -1.0f);
  dy.copy_to_host(HostView::of(r), s);
  s.synchronize();
  for (int i = 0; i < n; ++i) REQUIRE(r[size_t(i)] == 3.0f * float(i) + float(2 * i));
}

TEST_CASE("kernel: block reduction with shared memory and barriers matches a CPU sum", "[kernel]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kReduce).kernel("block_sum");
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (unsigned n : {1u, 127u, 128u, 1000u, 4099u}) {
    std::vector<double> in(n);
    for (auto &v : in) v = dist(rng);
    const unsigned groups = (n + 127) / 128;
    auto din = to_device(ctx, HostView::of(in));
    auto partial = device_array(ctx, {int64_t(groups)}, dtypes::float64);
    k({groups}, {128})(din, partial, n);
    auto p = partial.copy_to_host().to_vector<double>();
    for (unsigned g = 0; g < groups; ++g) {
      double ref = 0;
      for (unsigned i = g * 128; i < std::min(n, (g + 1) * 128); ++i) ref += in[i];
      INFO("n " << n << " group " << g);
      REQUIRE(std::fabs(p[g] - ref) < 1e-9);
    }
  }
}

TEST_CASE("kernel: barriers that count, and and or a predicate over the group", "[kernel]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kVotes).kernel("votes");
  auto out = device_array(ctx, {2 * 64 * 5}, dtypes::int32);
  k({2}, {64})(out, 2);
  const auto got = out.copy_to_host().to_vector<int32_t>();
  for (int g = 0; g < 128; ++g) {
    INFO("work-item " << g);
    CHECK(got[size_t(5 * g)] == 32 + 16 + 11);  // i % 2, i % 4, i % 6 == 0 among 64
    CHECK(got[size_t(5 * g + 1)] == 1);
    CHECK(got[size_t(5 * g + 2)] == 0);
    CHECK(got[size_t(5 * g + 3)] == 1);
    CHECK(got[size_t(5 * g + 4)] == 0);
  }
}

TEST_CASE("kernel: arrays of records reach kernels as pointers to the struct the source declares", "[kernel]") {
  struct Body {
    float mass;
    float pos[3];
  };
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, R"(
struct Body { float mass; float pos[3]; };
GPUHAL_KERNEL void weigh(GPUHAL_GLOBAL struct Body *bodies, GPUHAL_GLOBAL float *moments, unsigned n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) {
    moments[i] = bodies[i].mass * (bodies[i].pos[0] + bodies[i].pos[1] + bodies[i].pos[2]);
    bodies[i].mass *= 2.0f;
  }
})")
                 .kernel("weigh");
  std::vector<Body> bodies(100);
  for (int i = 0; i < 100; ++i) bodies[size_t(i)] = {float(i), {1.0f, 2.0f, float(i)}};
  DeviceArray d = to_device(ctx, HostView::of_records(bodies));
  DeviceArray moments = device_array(ctx, {100}, dtypes::float32);
  k({1}, {128})(d, moments, 100u);
  const auto m = moments.copy_to_host().to_vector<float>();
  d.copy_to_host(HostView::of_records(bodies));
  for (int i = 0; i < 100; ++i) {
    CHECK(m[size_t(i)] == float(i) * (3.0f + float(i)));
    CHECK(bodies[size_t(i)].mass == 2.0f * float(i));
  }
}

TEST_CASE("kernel: multi-dimensional and aligned shared and private arrays", "[kernel]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kArrays).kernel("arrays");
  auto out = device_array(ctx, {32}, dtypes::int32);
  auto aligned = device_array(ctx, {32}, dtypes::uint32);
  k({1}, {32})(out, aligned);
  const auto got = out.copy_to_host().to_vector<int32_t>();
  const auto flags = aligned.copy_to_host().to_vector<uint32_t>();
  for (int i = 0; i < 32; ++i) {
    INFO("work-item " << i);
    CHECK(got[size_t(i)] == 1476 + 2 * (31 - i) + 1000 * i + 2);
    CHECK(flags[size_t(i)] == 3u);  // 256-byte shared, 64-byte private
  }
}

TEST_CASE("kernel: arrays with more than four extents or a bad alignment do not compile, naming the line",
          "[kernel][errors]") {
  Context ctx = kernel_context();
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *p) {
  GPUHAL_SHARED_ARRAY(int, five, 1, 2, 3, 4, 5);
  p[0] = five[0][0][0][0][0];
})"),
                       Status::ERROR_COMPILATION_FAILED, "kernel:3");
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *p) {
  GPUHAL_LOCAL_ARRAY_ALIGNED(int, odd, 3, 4);
  odd[0] = 1;
  p[0] = odd[0];
})"),
                       Status::ERROR_COMPILATION_FAILED, "kernel:3");
  // Alignment 0: C++ ignores alignas(0), so the lowering states the rule
  // (a power of two, as the dialect and Numba say); in a kernel with a
  // barrier too (the work-item loops' own shared arrays).
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *p) {
  GPUHAL_LOCAL_ARRAY_ALIGNED(int, zero, 0, 4);
  zero[0] = 1;
  p[0] = zero[0];
})"),
                       Status::ERROR_COMPILATION_FAILED, "must be a power of two");
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *p) {
  GPUHAL_SHARED_ARRAY(double, big, 128, 128);
  p[0] = (int)big[0][0];
})"),
                       Status::ERROR_COMPILATION_FAILED, "more shared memory than a work-group has");
}

// Not tagged [kernel]: the work-item loops of this module do not compile,
// which unit.barrier_kernels_compile_as_work_item_loops would report.
TEST_CASE("kernel: a shared array aligned to 0 in a kernel with barriers does not compile", "[errors][alignment]") {
  Context ctx = kernel_context();
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, kAlignedToZero),
                       Status::ERROR_COMPILATION_FAILED, "must be a power of two");
}

TEST_CASE("kernel: tiled matrix multiply with shared memory matches a CPU reference", "[kernel]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kMatmul).kernel("matmul");
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct Dims {
    int M, K, N;
  };
  for (Dims d : {Dims{16, 16, 16}, Dims{37, 53, 29}, Dims{1, 70, 3}}) {
    std::vector<float> A(size_t(d.M * d.K)), B(size_t(d.K * d.N)), C(size_t(d.M * d.N), -7.0f);
    for (auto &v : A) v = dist(rng);
    for (auto &v : B) v = dist(rng);
    auto dA = to_device(ctx, HostView::of(A, {d.M, d.K}));
    auto dB = to_device(ctx, HostView::of(B, {d.K, d.N}));
    auto dC = device_array(ctx, {d.M, d.N}, dtypes::float32);
    k({unsigned(d.N + 15) / 16, unsigned(d.M + 15) / 16}, {16, 16})(dA, dB, dC, d.M, d.K, d.N);
    dC.copy_to_host(HostView::of(C, {d.M, d.N}));
    for (int r = 0; r < d.M; ++r)
      for (int c = 0; c < d.N; ++c) {
        float ref = 0;
        for (int j = 0; j < d.K; ++j) ref += A[size_t(r * d.K + j)] * B[size_t(j * d.N + c)];
        INFO(d.M << "x" << d.K << "x" << d.N << " at " << r << "," << c);
        REQUIRE(std::fabs(C[size_t(r * d.N + c)] - ref) < 1e-4f);
      }
  }
}

TEST_CASE("kernel: work-items see each other's shared-memory writes across a barrier, and do not without it",
          "[kernel]") {
  Context ctx = kernel_context();
  CHECK(neighbour_mismatches(ctx, true) == 0);
  // Without the barrier the kernel runs as a loop: each work-item reads its
  // neighbour's slot before the neighbour wrote it.
  CHECK(neighbour_mismatches(ctx, false) > 0);
}

TEST_CASE("kernel: dynamic shared memory is sized at launch and all dynamic arrays alias one base", "[kernel]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, kDynamic).kernel("dyn");
  const unsigned groups = 5, block = 96;
  auto out = device_array(ctx, {groups * block}, dtypes::float32);
  auto bytes = device_array(ctx, {groups * 2}, dtypes::uint32);
  k({groups}, {block}, ctx.default_stream(), block * 4)(out, bytes);
  auto o = out.copy_to_host().to_vector<float>();
  auto b = bytes.copy_to_host().to_vector<uint32_t>();
  for (unsigned g = 0; g < groups; ++g) {
    for (unsigned l = 0; l < block; ++l) REQUIRE(o[g * block + l] == float(g * block + (block - 1 - l)) + 0.5f);
    CHECK(b[g * 2] == block * 4);
    // i[0] reads the bytes of f[0]: the group's own value for its item 0.
    const float f0 = float(g * block) + 0.5f;
    uint32_t bits;
    std::memcpy(&bits, &f0, 4);
    CHECK(b[g * 2 + 1] == bits);
  }
}

TEST_CASE("kernel: local arrays are private to each work-item, across barriers too", "[kernel]") {
  Context ctx = kernel_context();
  Module m = Module::compile(ctx, R"(
GPUHAL_DEVICE int fill_and_sum(int *a, int n, int seed) {
  int s = 0;
  for (int k = 0; k < n; ++k) a[k] = seed * 100 + k;
  for (int k = 0; k < n; ++k) s += a[k];
  return s;
}
GPUHAL_KERNEL void plain(GPUHAL_GLOBAL int *out) {
  GPUHAL_LOCAL_ARRAY(int, a, 16);
  out[gpuhal_global_id(0)] = fill_and_sum(a, 16, (int)gpuhal_global_id(0));
}
GPUHAL_KERNEL void across(GPUHAL_GLOBAL int *out) {
  GPUHAL_LOCAL_ARRAY(int, a, 256);
  int id = (int)gpuhal_global_id(0);
  for (int k = 0; k < 256; ++k) a[k] = id * 1000 + k;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);   /* every other work-item fills its own array meanwhile */
  int s = 0;
  for (int k = 0; k < 256; ++k) s += a[k] - id * 1000;
  out[id] = s == 255 * 256 / 2 ? id : -1;
}
)");
  auto out = device_array(ctx, {256}, dtypes::int32);
  m.kernel("plain")({4}, {64})(out);
  auto h = out.copy_to_host().to_vector<int32_t>();
  for (int i = 0; i < 256; ++i) REQUIRE(h[size_t(i)] == 16 * i * 100 + 120);
  m.kernel("across")({2}, {128})(out);
  h = out.copy_to_host().to_vector<int32_t>();
  for (int i = 0; i < 256; ++i) REQUIRE(h[size_t(i)] == i);
}

TEST_CASE("kernel: constant arrays are baked from host data exactly (floats, extremes, empty)", "[kernel]") {
  Context ctx = kernel_context();
  const std::vector<float> f = {0.1f, -0.0f, std::numeric_limits<float>::infinity(), 1e-45f, 3.4028235e38f};
  const std::vector<int64_t> i = {std::numeric_limits<int64_t>::min(), -1, 0, std::numeric_limits<int64_t>::max()};
  const std::vector<uint8_t> u = {0, 255};
  // F-ordered 2-D data is read in C order (Numba: ascontiguousarray) and
  // keeps its two dimensions (cuda.const.array_like keeps the shape).
  const std::vector<double> fo = {1, 3, 2, 4};  // [[1,2],[3,4]] in F order
  ModuleOptions opts;
  opts.constant("cf", HostView::of(f))
      .constant("ci", HostView::of(i))
      .constant("cu", HostView::of(u))
      .constant("cd", HostView::readonly(fo.data(), {2, 2}, dtypes::float64, {8, 16}))
      .constant("empty", HostView::readonly(fo.data(), {0}, dtypes::float64));
  Module m = Module::compile(ctx, R"(
GPUHAL_KERNEL void read(GPUHAL_GLOBAL float *of, GPUHAL_GLOBAL int64_t *oi, GPUHAL_GLOBAL unsigned char *ou,
                        GPUHAL_GLOBAL double *od) {
  unsigned k = gpuhal_global_id(0);
  if (k < 5) of[k] = cf[k];
  if (k < 4) oi[k] = ci[k];
  if (k < 2) ou[k] = cu[k];
  if (k < 4) od[k] = cd[k / 2][k % 2];
}
)",
                             opts);
  CHECK_THAT(m.lowered_source(), test::contains("GPUHAL_CONSTANT float cf[5]"));
  CHECK_THAT(m.lowered_source(), test::contains("GPUHAL_CONSTANT double cd[2][2]"));  // the data's shape
  CHECK_THAT(m.lowered_source(), test::contains("GPUHAL_CONSTANT double empty[1]"));
  auto of = device_array(ctx, {5}, dtypes::float32);
  auto oi = device_array(ctx, {4}, dtypes::int64);
  auto ou = device_array(ctx, {2}, dtypes::uint8);
  auto od = device_array(ctx, {4}, dtypes::float64);
  m.kernel("read")({1}, {8})(of, oi, ou, od);
  auto hf = of.copy_to_host().to_vector<float>();
  for (size_t k = 0; k < f.size(); ++k) CHECK(std::memcmp(&hf[k], &f[k], 4) == 0);
  CHECK(oi.copy_to_host().to_vector<int64_t>() == i);
  CHECK(ou.copy_to_host().to_vector<uint8_t>() == u);
  CHECK(od.copy_to_host().to_vector<double>() == std::vector<double>{1, 2, 3, 4});

  REQUIRE_GPUHAL_ERROR(ModuleOptions().constant("1bad", HostView::of(f)), Status::ERROR_INVALID_VALUE,
                       "not a C identifier");
  REQUIRE_GPUHAL_ERROR(ModuleOptions().constant("c", HostView::of(f)).constant("c", HostView::of(f)),
                       Status::ERROR_INVALID_VALUE, "given twice");
  const std::vector<std::complex<float>> cplx(2);
  REQUIRE_GPUHAL_ERROR(ModuleOptions().constant("z", HostView::of(cplx)), Status::ERROR_INVALID_DTYPE, "no C type");
}

TEST_CASE("kernel: 3-D grids and blocks give every work-item its ids and sizes", "[kernel]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, R"(
GPUHAL_KERNEL void ids(GPUHAL_GLOBAL unsigned *out) {
  unsigned x = gpuhal_global_id(0), y = gpuhal_global_id(1), z = gpuhal_global_id(2);
  unsigned w = gpuhal_global_size(0), h = gpuhal_global_size(1);
  unsigned *o = out + 4 * ((z * h + y) * w + x);
  o[0] = x; o[1] = y; o[2] = z;
  o[3] = gpuhal_num_groups(0) * 100 + gpuhal_num_groups(1) * 10 + gpuhal_num_groups(2)
       + 1000 * (gpuhal_local_size(0) * 100 + gpuhal_local_size(1) * 10 + gpuhal_local_size(2));
}
)")
                 .kernel("ids");
  auto out = device_array(ctx, {4 * 6 * 4 * 3, 4}, dtypes::uint32);  // global 6 x 4 x 3... x (2x2x1 blocks)
  k({3, 2, 3}, {2, 2, 1})(out);
  auto h = out.copy_to_host().to_vector<uint32_t>();
  size_t idx = 0;
  for (unsigned z = 0; z < 3; ++z)
    for (unsigned y = 0; y < 4; ++y)
      for (unsigned x = 0; x < 6; ++x, idx += 4) {
        INFO(x << "," << y << "," << z);
        REQUIRE(h[idx] == x);
        REQUIRE(h[idx + 1] == y);
        REQUIRE(h[idx + 2] == z);
        REQUIRE(h[idx + 3] == 323u + 1000u * 221u);
      }
}

TEST_CASE("kernel: host arrays are copied in and back, mirrored arrays sync lazily, device arrays are not copied",
          "[kernel]") {
  Context ctx = kernel_context();
  Module m = Module::compile(ctx, R"(
GPUHAL_KERNEL void add(GPUHAL_GLOBAL int *io, GPUHAL_GLOBAL const int *in, int n) {
  unsigned i = gpuhal_global_id(0);
  if (i < (unsigned)n) io[i] += in[i];
}
)");
  Kernel k = m.kernel("add");
  std::vector<int> io(100, 1), in(100, 2);
  k({4}, {32})(HostView::of(io), HostView::of(in), 100);  // host arrays: back when the launch returns
  CHECK(io == std::vector<int>(100, 3));
  CHECK(in == std::vector<int>(100, 2));
  // A read-only view is copied in but never back.
  const std::vector<int> ro(100, 5);
  k({4}, {32})(HostView::of(ro), HostView::of(in), 100);
  CHECK(ro == std::vector<int>(100, 5));

  MirroredArray mir = MirroredArray::from_host(ctx, HostArray::empty({100}, dtypes::int32));
  for (int i = 0; i < 100; ++i) mir.get_host().at<int32_t>({i}) = i;
  mir.mark_changed(Where::host);
  k({4}, {32})(mir, HostView::of(in), 100);
  CHECK_FALSE(mir.valid(Where::host));  // the kernel wrote its device side
  for (int i = 0; i < 100; ++i) REQUIRE(mir.get_host().at<int32_t>({i}) == i + 2);

  auto d = to_device(ctx, HostView::of(io));
  const uint64_t ptr = d.device_pointer();
  k({4}, {32})(d, d, 100);
  CHECK(d.device_pointer() == ptr);
  CHECK(d.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>(100, 6));
}
