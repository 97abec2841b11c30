// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's inline bias (plugins/host/host_inline_bias.hpp): the
// first thread to run an operation inline gets a path without locked
// instructions; any other thread that needs the submit mutex revokes it for
// good, after the owner's operation in flight has finished. A mutex of the
// test's stands for the context's submit mutex.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

#include "catch_compat.hpp"
#include "host_inline_bias.hpp"

using gpuhal::host::InlineBias;
using std::chrono::milliseconds;

namespace {

// What HostContext::run_inline does.
template <class F>
bool run_inline(InlineBias &bias, std::mutex &submit_mu, F &&check_and_run) {
  const InlineBias::Ran ran = bias.try_run(check_and_run);
  if (ran != InlineBias::Ran::NotTaken) return ran == InlineBias::Ran::Done;
  std::lock_guard<std::mutex> lock(submit_mu);
  bias.claim_or_exclude(true);
  return check_and_run();
}

}  // namespace

TEST_CASE("inline bias: the first thread to run inline takes it, and no other thread runs on it", "[host][bias]") {
  InlineBias bias;
  std::mutex mu;
  CHECK_FALSE(bias.biased());
  CHECK(bias.try_run([] { return true; }) == InlineBias::Ran::NotTaken);  // nobody has claimed it
  CHECK(run_inline(bias, mu, [] { return true; }));
  if (!gpuhal::host::inline_bias_available()) {
    WARN("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is not available (or ThreadSanitizer): no bias");
    CHECK_FALSE(bias.biased());
    return;
  }
  REQUIRE(bias.biased());
  CHECK(bias.try_run([] { return true; }) == InlineBias::Ran::Done);
  CHECK(bias.try_run([] { return false; }) == InlineBias::Ran::Refused);
  std::thread([&] { CHECK(bias.try_run([] { return true; }) == InlineBias::Ran::NotTaken); }).join();
  // The owner's own submissions (claim_or_exclude under the mutex) keep it.
  {
    std::lock_guard<std::mutex> lock(mu);
    bias.claim_or_exclude(false);
  }
  CHECK(bias.biased());
}

TEST_CASE("inline bias: another thread's revocation waits for the owner's operation in flight", "[host][bias]") {
  if (!gpuhal::host::inline_bias_available()) {
    WARN("no membarrier here: nothing to revoke");
    return;
  }
  InlineBias bias;
  std::mutex mu;
  REQUIRE(run_inline(bias, mu, [] { return true; }));  // this thread owns it
  std::atomic<bool> inside{false}, may_finish{false}, finished{false}, excluded{false};
  std::thread revoker([&] {
    while (!inside.load()) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mu);
    bias.claim_or_exclude(false);
    excluded = true;
    CHECK(finished.load());  // not before the operation in flight was done
  });
  CHECK(bias.try_run([&] {
    inside = true;
    std::this_thread::sleep_for(milliseconds(50));
    CHECK_FALSE(excluded.load());
    finished = true;
    return true;
  }) == InlineBias::Ran::Done);
  revoker.join();
  CHECK(excluded.load());
  CHECK_FALSE(bias.biased());
  CHECK(bias.try_run([] { return true; }) == InlineBias::Ran::NotTaken);  // for good
  CHECK(run_inline(bias, mu, [] { return true; }));                     // through the mutex
  CHECK_FALSE(bias.biased());
}

// Two threads increment one plain counter, the owner through the bias's fast
// path, the other under the mutex after revoking (as a submit from a second
// thread would). The read, pause and write make a lost increment likely
// whenever the two sections overlap: none may be lost. (A revoker that does
// not wait for the owner fails this at once; the barrier's own part, the
// store-load reordering it closes, is a window of nanoseconds that a test
// rarely hits.)
TEST_CASE("inline bias: no operation of the owner overlaps another thread's after the revocation", "[host][bias]") {
  if (!gpuhal::host::inline_bias_available()) {
    WARN("no membarrier here: nothing to revoke");
    return;
  }
  for (int round = 0; round < 20; ++round) {
    InlineBias bias;
    std::mutex mu;
    volatile uint64_t counter = 0;
    auto increment = [&] {
      const uint64_t v = counter;
      for (int i = 0; i < 20; ++i) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      counter = v + 1;
      return true;
    };
    REQUIRE(run_inline(bias, mu, increment));
    constexpr int kOwner = 20000, kOther = 2000;
    std::atomic<bool> go{false};
    std::thread other([&] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kOther; ++i) {
        std::lock_guard<std::mutex> lock(mu);
        bias.claim_or_exclude(false);
        increment();
      }
    });
    int refused = 0;
    for (int i = 0; i < kOwner; ++i) {
      if (i == 100) go = true;
      if (!run_inline(bias, mu, increment)) ++refused;
    }
    CHECK(refused == 0);
    other.join();
    CHECK(counter == uint64_t(1 + kOwner + kOther));
  }
}
