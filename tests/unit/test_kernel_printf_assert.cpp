// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal_printf and gpuhal_assert on the host backend: every line whole and
// each work-item's lines in its order; a failed assertion fails the launch
// at the next synchronisation, naming the kernel, the condition, the line
// and the work-item, and the context goes on (the next launch is clean).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;

namespace {

// What `body` writes to the process's stdout (file descriptor 1).
template <class Body>
std::string captured_stdout(Body &&body) {
  std::fflush(stdout);
  char path[] = "/tmp/gpuhal-printf-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const int saved = dup(1);
  dup2(fd, 1);
  try {
    body();
  } catch (...) {
    std::fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(fd);
    unlink(path);
    throw;
  }
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  return text.str();
}

const char *const kTwoLines = R"(
GPUHAL_KERNEL void two_lines(GPUHAL_GLOBAL const int *x) {
  unsigned i = gpuhal_global_id(0);
  gpuhal_printf("first %u %d\n", i, x[i]);
  gpuhal_printf("second %u\n", i);
}
)";

}  // namespace

TEST_CASE("kernel printf: every work-item's lines are whole and in its order on the host backend",
          "[kernel][printf]") {
  Context ctx = test::kernel_context();
  REQUIRE(ctx.supports(Capability::KernelPrintf));
  Kernel k = Module::compile(ctx, kTwoLines).kernel("two_lines");
  std::vector<int> values(512);
  for (size_t i = 0; i < values.size(); ++i) values[i] = int(i) * 7;
  DeviceArray x = to_device(ctx, HostView::of(values));
  const std::string out = captured_stdout([&] {
    k({8}, {64})(x);  // 512 work-items: on the stream's worker and the pool's threads
    ctx.synchronize();
  });
  std::map<unsigned, int> first_at, second_at;
  std::istringstream lines(out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    unsigned i = 0;
    int v = 0;
    if (std::sscanf(line.c_str(), "first %u %d", &i, &v) == 2 && v == int(i) * 7 &&
        line == "first " + std::to_string(i) + " " + std::to_string(v)) {
      CHECK(first_at.emplace(i, n).second);
    } else if (std::sscanf(line.c_str(), "second %u", &i) == 1 && line == "second " + std::to_string(i)) {
      CHECK(second_at.emplace(i, n).second);
    } else {
      FAIL("a line that is not whole: '" << line << "'");
    }
    ++n;
  }
  CHECK(first_at.size() == 512);
  CHECK(second_at.size() == 512);
  for (const auto &f : first_at) CHECK(f.second < second_at[f.first]);
}

TEST_CASE("kernel assert: a failed gpuhal_assert fails the launch naming the kernel, condition, line and work-item",
          "[kernel][assert]") {
  Context ctx = test::kernel_context();
  Kernel k = Module::compile(ctx, kPrintAssert).kernel("checked");
  DeviceArray x = device_array(ctx, {256}, dtypes::int32);
  x.memset(0);
  captured_stdout([&] {
    k({4}, {64})(x, 256u);  // holds everywhere
    ctx.synchronize();
    k({4}, {64})(x, 255u);  // fails for work-item 255 only: (63, 0, 0) of group (3, 0, 0)
    REQUIRE_GPUHAL_ERROR(ctx.synchronize(), Status::ERROR_LAUNCH_FAILED,
                         "kernel 'checked': gpuhal_assert(i < limit) failed at kernel:5 in checked(), work-item "
                         "(63, 0, 0) of work-group (3, 0, 0)");
    // Reported once; the context goes on, and the next launch is judged on its own.
    k({4}, {64})(x, 256u);
    ctx.synchronize();
  });
  const std::vector<int32_t> h = x.copy_to_host().to_vector<int32_t>();
  CHECK(h[0] == 3);  // three launches ran work-item 0
}

TEST_CASE("kernel assert: a failure in a kernel with barriers is reported, and no later work-group starts",
          "[kernel][assert]") {
  Context ctx = test::kernel_context();
  Kernel k = Module::compile(ctx, R"(
GPUHAL_KERNEL void staged(GPUHAL_GLOBAL int *x, unsigned bad_group) {
  GPUHAL_SHARED_ARRAY(int, s, 64);
  unsigned lid = gpuhal_local_id(0);
  s[lid] = (int)lid;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  gpuhal_assert(gpuhal_group_id(0) != bad_group || lid != 5);
  x[gpuhal_global_id(0)] = s[63 - lid];
})").kernel("staged");
  const unsigned groups = 4096;
  DeviceArray x = device_array(ctx, {int64_t(groups) * 64}, dtypes::int32);
  // The launch stops early: work-groups handed out after the failure never
  // run. Which ones depends on how the threads were scheduled (a loaded
  // machine can let another thread take every chunk before the failing one
  // records its failure), so up to five launches are tried: with the stop
  // broken, every one of them would run every group.
  bool stopped_early = false;
  for (int attempt = 0; attempt < 5 && !stopped_early; ++attempt) {
    x.fill(int32_t(-1));
    k({groups}, {64})(x, 0u);
    REQUIRE_GPUHAL_ERROR(ctx.synchronize(), Status::ERROR_LAUNCH_FAILED,
                         "gpuhal_assert(gpuhal_group_id(0) != bad_group || lid != 5) failed at kernel:7 in staged(), "
                         "work-item (5, 0, 0) of work-group (0, 0, 0)");
    const std::vector<int32_t> h = x.copy_to_host().to_vector<int32_t>();
    stopped_early = std::count(h.begin(), h.end(), -1) != 0;
  }
  CHECK(stopped_early);
  k({groups}, {64})(x, groups);  // no group fails
  ctx.synchronize();
  CHECK(x.copy_to_host().to_vector<int32_t>().back() == 0);
}
