// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Per-thread default streams over the fake CUDA driver, which keeps cuda.h's
// rule (tests/fakes/cuda/fake_cuda.hpp, CU_STREAM_PER_THREAD): each host
// thread has its own, they do not wait for each other, and they synchronize
// with the legacy default stream. The fake once treated the handle as the
// legacy stream: the first case then failed (the second thread's copy
// queued behind the first thread's held work).
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace gpuhal;

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
namespace {

// Waits up to `seconds` for `flag`.
bool wait_for(const std::atomic<bool> &flag, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!flag && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag;
}

}  // namespace

TEST_CASE("cuda: per-thread default streams of two threads do not wait for each other", "[cuda][streams]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  std::atomic<bool> held{false}, release{false}, b_done{false};
  std::thread a([&] {
    Stream s = ctx.per_thread_default_stream();
    s.add_callback([&] {
      held = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    s.synchronize();
  });
  REQUIRE(wait_for(held, 20));
  std::thread b([&] {
    Stream s = ctx.per_thread_default_stream();
    std::vector<int32_t> v(1 << 16, 7), out(1 << 16, 0);
    DeviceArray d = to_device(ctx, HostView::of(v), s);
    d.copy_to_host(HostView::of(out), s);
    s.synchronize();
    b_done = out == v;
  });
  const bool independent = wait_for(b_done, 20);
  release = true;  // whatever happened, nothing stays held
  a.join();
  b.join();
  CHECK(independent);
}

TEST_CASE("cuda: the legacy default stream waits for a thread's per-thread default stream", "[cuda][streams]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  std::atomic<bool> held{false}, release{false};
  std::atomic<int> order{0};
  int callback_done_at = -1, legacy_done_at = -1;
  std::thread a([&] {
    Stream s = ctx.per_thread_default_stream();
    s.add_callback([&] {
      held = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      callback_done_at = order++;
    });
    s.synchronize();
  });
  REQUIRE(wait_for(held, 20));
  Stream legacy = ctx.legacy_default_stream();
  legacy.add_callback([&] { legacy_done_at = order++; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const bool legacy_waited = legacy_done_at == -1;
  release = true;
  legacy.synchronize();
  a.join();
  CHECK(legacy_waited);
  CHECK(callback_done_at == 0);
  CHECK(legacy_done_at == 1);
}
#endif
