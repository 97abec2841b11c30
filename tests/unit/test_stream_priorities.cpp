// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stream priorities on the host backend (plugin.h ABI 1.9): the range, the
// clamping, and what a priority does there (the stream's worker thread runs
// at a higher nice value for each step below the greatest priority).
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

// The nice value of the thread a stream's callbacks run on.
int worker_nice(const Stream &s) {
  std::atomic<int> nice{-100};
  s.add_callback([&nice] {
    errno = 0;
    nice = getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
  });
  s.synchronize();
  return nice;
}

}  // namespace

TEST_CASE("stream priorities: the host range is 2 .. 0, clamped, and a lesser priority is a higher nice value",
          "[streams][priorities]") {
  Context ctx = test::host_context();
  REQUIRE(ctx.supports(Capability::StreamPriorities));
  const StreamPriorityRange r = ctx.stream_priority_range();
  CHECK(r.least == 2);
  CHECK(r.greatest == 0);
  // The device's range is its primary context's.
  const StreamPriorityRange d = ctx.device().stream_priority_range();
  CHECK(d.least == r.least);
  CHECK(d.greatest == r.greatest);
  const int process_nice = getpriority(PRIO_PROCESS, 0);
  Stream normal = ctx.create_stream();
  Stream urgent = ctx.create_stream(StreamKind::NonBlocking, -7);  // clamped to the greatest
  Stream bulk = ctx.create_stream(StreamKind::Blocking, 9);        // clamped to the least
  CHECK(normal.priority() == 0);
  CHECK(urgent.priority() == 0);
  CHECK(bulk.priority() == 2);
  CHECK(ctx.default_stream().priority() == 0);
  CHECK(worker_nice(normal) == process_nice);
  CHECK(worker_nice(urgent) == process_nice);
  CHECK(worker_nice(bulk) == std::min(process_nice + 10, 19));
  REQUIRE_GPUHAL_ERROR(Stream().priority(), Status::ERROR_INVALID_HANDLE, "Stream::priority");
}

TEST_CASE("stream priorities: a backend without them refuses them by name", "[streams][priorities]") {
  Config c;
  c.backend = test::fake("good");
  Context ctx = Runtime::load(c).device(0).primary_context();
  CHECK_FALSE(ctx.supports(Capability::StreamPriorities));
  REQUIRE_GPUHAL_ERROR(ctx.create_stream(StreamKind::Blocking, 1), Status::ERROR_NOT_SUPPORTED,
                       "Capability::StreamPriorities");
  REQUIRE_GPUHAL_ERROR(ctx.stream_priority_range(), Status::ERROR_NOT_SUPPORTED, "Capability::StreamPriorities");
  REQUIRE_GPUHAL_ERROR(ctx.device().stream_priority_range(), Status::ERROR_NOT_SUPPORTED,
                       "Capability::StreamPriorities");
  REQUIRE_GPUHAL_ERROR(ctx.create_stream().priority(), Status::ERROR_NOT_SUPPORTED, "Capability::StreamPriorities");
}
