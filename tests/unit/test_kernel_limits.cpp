// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the host backend refuses that a GPU would refuse too (shared and
// constant memory over a GPU's 64 KiB, a work-item's stack over its fiber
// stack), and the kernel cache's refusal of an entry under another key.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace gpuhal;

using test::kernel_context;

// Tagged apart from [kernel]: its source that must not compile would trip
// the "did not compile" watch of the work-item-loop runs.
TEST_CASE("kernel: static shared memory over the device's 64 KiB per work-group is refused, as on a GPU",
          "[kernel_limits]") {
  Context ctx = kernel_context();
  const uint64_t limit = ctx.device().properties().shared_memory_per_block;
  REQUIRE(limit == 65536);
  // One array above the limit: the compiler says so.
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, R"(
GPUHAL_KERNEL void big(GPUHAL_GLOBAL double *x) {
  GPUHAL_SHARED_ARRAY(double, s, 9000);
  s[gpuhal_local_id(0)] = 1.0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  x[gpuhal_global_id(0)] = s[0];
})"),
                       Status::ERROR_COMPILATION_FAILED, "shared memory");
  // Two arrays that fit alone but not together, and one that fits only
  // without dynamic shared memory: refused at launch, naming the sizes.
  Module m = Module::compile(ctx, R"(
GPUHAL_KERNEL void pair(GPUHAL_GLOBAL int *x) {
  GPUHAL_SHARED_ARRAY(int, a, 9000);
  GPUHAL_SHARED_ARRAY(int, b, 9000);
  a[gpuhal_local_id(0)] = 1;
  b[gpuhal_local_id(0)] = 2;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  x[gpuhal_global_id(0)] = a[0] + b[1];
}
GPUHAL_KERNEL void most(GPUHAL_GLOBAL int *x) {
  GPUHAL_SHARED_ARRAY(int, a, 15000);
  a[gpuhal_local_id(0)] = 1;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  x[gpuhal_global_id(0)] = a[0];
})");
  DeviceArray x = device_array(ctx, {64}, dtypes::int32);
  REQUIRE_GPUHAL_ERROR(m.kernel("pair")({1}, {64})(x), Status::ERROR_INVALID_VALUE,
                       "72000 bytes of static shared memory");
  m.kernel("most")({1}, {64})(x);  // 60000 bytes: fits
  REQUIRE_GPUHAL_ERROR(m.kernel("most")({1}, {64}, ctx.default_stream(), 8192)(x), Status::ERROR_INVALID_VALUE,
                       "60000 bytes of static shared memory and 8192 bytes of dynamic");
}

TEST_CASE("kernel: constant arrays over a GPU's 64 KiB of constant memory are refused, as on a GPU",
          "[kernel_limits]") {
  Context ctx = kernel_context();
  // From the source, and from ModuleOptions: together 40000 + 40000 bytes.
  std::vector<double> table(5000, 1.5);
  ModuleOptions options;
  options.constant("table", HostView::of(table));
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, R"(
GPUHAL_CONSTANT double more[5000] = {1.0};
GPUHAL_KERNEL void k(GPUHAL_GLOBAL double *x) { x[gpuhal_global_id(0)] = table[0] + more[0]; })",
                                       options),
                       Status::ERROR_COMPILATION_FAILED, "80000 bytes of constant arrays");
  // Either alone fits.
  Module ok = Module::compile(
      ctx, "GPUHAL_KERNEL void k(GPUHAL_GLOBAL double *x) { x[gpuhal_global_id(0)] = table[1]; }", options);
  DeviceArray x = device_array(ctx, {64}, dtypes::float64);
  ok.kernel("k")({1}, {64})(x);
  CHECK(x.copy_to_host().to_vector<double>() == std::vector<double>(64, 1.5));
}

// Barriers inside a device function with 32 KiB of local array per
// work-item (the work-item loops do not rewrite calls: fibers run it).
const char *const kDeepKernel = R"(
GPUHAL_DEVICE int deep(unsigned lid) {
  GPUHAL_LOCAL_ARRAY(volatile int, a, 8000);
  for (unsigned i = 0; i < 8000; ++i) a[i] = (int)(i + lid);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  return a[lid] + a[7999 - lid];
}
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *x) { x[gpuhal_global_id(0)] = deep(gpuhal_local_id(0)); })";

TEST_CASE("kernel: a work-item needing more stack than the fiber stacks have is refused at launch, not a crash",
          "[kernel_limits]") {
  // Barriers inside a device function run as fibers (the work-item loops do
  // not rewrite calls); 16 KiB fiber stacks; 32 KiB of local array.
  Context ctx = test::host_context({{"GPUHAL_HOST_FIBER_STACK", "16K"},
                                    {"GPUHAL_HOST_WORK_ITEM_LOOPS", "0"},
                                    {"GPUHAL_KERNEL_CACHE", GPUHAL_TEST_KERNEL_CACHE}});
  Module m = Module::compile(ctx, std::string(kDeepKernel) + R"(
GPUHAL_KERNEL void small(GPUHAL_GLOBAL int *x) {
  int v = (int)gpuhal_local_id(0);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  x[gpuhal_global_id(0)] = v;
})");
  DeviceArray x = device_array(ctx, {64}, dtypes::int32);
  REQUIRE_GPUHAL_ERROR(m.kernel("k")({1}, {64})(x), Status::ERROR_INVALID_VALUE, "bytes of stack");
  m.kernel("small")({1}, {64})(x);
  std::vector<int32_t> want(64);
  for (int i = 0; i < 64; ++i) want[size_t(i)] = i;
  CHECK(x.copy_to_host().to_vector<int32_t>() == want);
}

TEST_CASE("kernel: a work-item with a large local array runs on fiber stacks large enough", "[kernel_limits]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_FIBER_STACK", "256K"},
                                    {"GPUHAL_HOST_WORK_ITEM_LOOPS", "0"},
                                    {"GPUHAL_KERNEL_CACHE", GPUHAL_TEST_KERNEL_CACHE}});
  Module m = Module::compile(ctx, kDeepKernel);
  DeviceArray x = device_array(ctx, {64}, dtypes::int32);
  m.kernel("k")({1}, {64})(x);
  std::vector<int32_t> want(64);
  for (int i = 0; i < 64; ++i) want[size_t(i)] = 7999 + 2 * i;  // a[lid] + a[7999 - lid], a[i] = i + lid
  CHECK(x.copy_to_host().to_vector<int32_t>() == want);
}

TEST_CASE("kernel: a cache entry whose stored key differs (a hash collision) is never loaded", "[kernel]") {
  char dir_template[] = "/tmp/gpuhal-kernel-collision-XXXXXX";
  REQUIRE(mkdtemp(dir_template));
  const std::string dir = dir_template;
  const char *const kSetOne = R"(
GPUHAL_KERNEL void fill(GPUHAL_GLOBAL int *out) { out[gpuhal_global_id(0)] = 1; }
)";
  const char *const kSetTwo = R"(
GPUHAL_KERNEL void fill(GPUHAL_GLOBAL int *out) { out[gpuhal_global_id(0)] = 2; }
)";
  auto entries = [&] {  // the cached modules, by file name
    std::set<std::string> names;
    for (const auto &e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".so") names.insert(e.path().filename().string());
    return names;
  };
  auto run = [&](const char *source) {
    Context ctx = test::host_context({{"GPUHAL_KERNEL_CACHE", dir}});
    DeviceArray out = device_array(ctx, {8}, dtypes::int32);
    Module::compile(ctx, source).kernel("fill")({1}, {8})(out);
    return out.copy_to_host().to_vector<int32_t>();
  };
  REQUIRE(run(kSetOne) == std::vector<int32_t>(8, 1));
  const auto one = entries();
  REQUIRE(run(kSetTwo) == std::vector<int32_t>(8, 2));
  auto two = entries();
  for (const auto &n : one) two.erase(n);
  REQUIRE(one.size() == 1);
  REQUIRE(two.size() == 1);
  // Plant kSetTwo's module (and everything kept beside it) under kSetOne's
  // name: what a collision of the file names would leave.
  const std::string a = dir + "/" + *one.begin(), b = dir + "/" + *two.begin();
  for (const char *suffix : {"", ".stack", ".key"}) {
    std::error_code ec;
    std::filesystem::copy_file(b + suffix, a + suffix, std::filesystem::copy_options::overwrite_existing, ec);
  }
  CHECK(run(kSetOne) == std::vector<int32_t>(8, 1));  // recompiled, not kSetTwo's code
  CHECK(run(kSetTwo) == std::vector<int32_t>(8, 2));
  std::filesystem::remove_all(dir);
}

TEST_CASE("kernel cache: GPUHAL_KERNEL_CACHE_MAX keeps the most recently used entries within the limit",
          "[kernel_limits]") {
  const std::string dir = std::filesystem::temp_directory_path() / ("gpuhal-cache-max-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auto entries = [&] {
    std::set<std::string> names;
    for (const auto &e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".so") names.insert(e.path().filename().string());
    return names;
  };
  const char *a = "GPUHAL_KERNEL void a(GPUHAL_GLOBAL int *x) { x[0] = 1; }";
  const char *b = "GPUHAL_KERNEL void b(GPUHAL_GLOBAL int *x) { x[0] = 2; }";
  {
    // 1 byte: only the entry just made stays.
    Context ctx = test::host_context({{"GPUHAL_KERNEL_CACHE", dir}, {"GPUHAL_KERNEL_CACHE_MAX", "1"}});
    Module::compile(ctx, a);
    const auto after_a = entries();
    REQUIRE(after_a.size() == 1);
    Module::compile(ctx, b);
    const auto after_b = entries();
    REQUIRE(after_b.size() == 1);
    CHECK(after_b != after_a);  // a's entry went, b's is kept
    Module::compile(ctx, a);    // compiled again, and b's goes
    CHECK(entries() == after_a);
  }
  REQUIRE_GPUHAL_ERROR(test::host_runtime({{"GPUHAL_KERNEL_CACHE", dir}, {"GPUHAL_KERNEL_CACHE_MAX", "lots"}}),
                       Status::ERROR_INITIALIZATION_FAILED, "GPUHAL_KERNEL_CACHE_MAX='lots': expected a byte count");
  std::filesystem::remove_all(dir);
}
