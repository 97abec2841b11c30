// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ThreadBias (support/sync/thread_bias.hpp), as the host backend's inline
// operations use it: the first thread to run an operation inline gets a path
// without locked instructions; any other thread that needs the submit mutex
// revokes it for good, after the owner's operation in flight has finished. A
// mutex of the test's stands for the context's submit mutex. And BiasedLock
// (support/sync/biased_lock.hpp), the deferred deallocation queue's lock, built
// on it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

#include "catch_compat.hpp"
#include "biased_lock.hpp"
#include "thread_bias.hpp"

using gpuhal::detail::BiasedLock;
using gpuhal::detail::ThreadBias;
using std::chrono::milliseconds;

namespace {

// What HostContext::run_inline does.
template <class F>
bool run_inline(ThreadBias &bias, std::mutex &submit_mu, F &&check_and_run) {
  const ThreadBias::Ran ran = bias.try_run(check_and_run);
  if (ran != ThreadBias::Ran::NotTaken) return ran == ThreadBias::Ran::Done;
  std::lock_guard<std::mutex> lock(submit_mu);
  bias.claim_or_exclude(true);
  return check_and_run();
}

// A read, a pause and a write: an increment lost whenever two overlap.
void slow_increment(volatile uint64_t &counter) {
  const uint64_t v = counter;
  for (int i = 0; i < 20; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  counter = v + 1;
}

}  // namespace

TEST_CASE("thread bias: the first thread to run inline takes it, and no other thread runs on it", "[bias]") {
  ThreadBias bias;
  std::mutex mu;
  CHECK_FALSE(bias.biased());
  CHECK(bias.try_run([] { return true; }) == ThreadBias::Ran::NotTaken);  // nobody has claimed it
  CHECK(run_inline(bias, mu, [] { return true; }));
  if (!gpuhal::detail::thread_bias_available()) {
    WARN("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is not available (or ThreadSanitizer): no bias");
    CHECK_FALSE(bias.biased());
    return;
  }
  REQUIRE(bias.biased());
  CHECK(bias.try_run([] { return true; }) == ThreadBias::Ran::Done);
  CHECK(bias.try_run([] { return false; }) == ThreadBias::Ran::Refused);
  std::thread([&] { CHECK(bias.try_run([] { return true; }) == ThreadBias::Ran::NotTaken); }).join();
  // The owner's own submissions (claim_or_exclude under the mutex) keep it.
  {
    std::lock_guard<std::mutex> lock(mu);
    bias.claim_or_exclude(false);
  }
  CHECK(bias.biased());
}

TEST_CASE("thread bias: another thread's revocation waits for the owner's operation in flight", "[bias]") {
  if (!gpuhal::detail::thread_bias_available()) {
    WARN("no membarrier here: nothing to revoke");
    return;
  }
  ThreadBias bias;
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
  }) == ThreadBias::Ran::Done);
  revoker.join();
  CHECK(excluded.load());
  CHECK_FALSE(bias.biased());
  CHECK(bias.try_run([] { return true; }) == ThreadBias::Ran::NotTaken);  // for good
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
TEST_CASE("thread bias: no operation of the owner overlaps another thread's after the revocation", "[bias]") {
  if (!gpuhal::detail::thread_bias_available()) {
    WARN("no membarrier here: nothing to revoke");
    return;
  }
  for (int round = 0; round < 20; ++round) {
    ThreadBias bias;
    std::mutex mu;
    volatile uint64_t counter = 0;
    auto increment = [&] {
      slow_increment(counter);
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

TEST_CASE("biased lock: the first thread locks without the spin lock until another thread locks", "[bias]") {
  BiasedLock lock;
  CHECK_FALSE(lock.biased());
  { std::lock_guard<BiasedLock> held(lock); }
  if (!gpuhal::detail::thread_bias_available()) {
    WARN("no membarrier here: the spin lock alone");
    CHECK_FALSE(lock.biased());
    return;
  }
  CHECK(lock.biased());
  for (int i = 0; i < 3; ++i) std::lock_guard<BiasedLock> held(lock);  // the owner's sections keep it
  CHECK(lock.biased());
  std::thread([&] { std::lock_guard<BiasedLock> held(lock); }).join();
  CHECK_FALSE(lock.biased());  // revoked for good
  { std::lock_guard<BiasedLock> held(lock); }
  CHECK_FALSE(lock.biased());
}

TEST_CASE("biased lock: another thread's lock waits for the owner's section in flight", "[bias]") {
  BiasedLock lock;
  { std::lock_guard<BiasedLock> held(lock); }  // this thread owns it (when membarrier is there)
  std::atomic<bool> inside{false}, finished{false}, locked{false};
  std::thread other([&] {
    while (!inside.load()) std::this_thread::yield();
    std::lock_guard<BiasedLock> held(lock);
    locked = true;
    CHECK(finished.load());  // not before the section in flight was done
  });
  {
    std::lock_guard<BiasedLock> held(lock);
    inside = true;
    std::this_thread::sleep_for(milliseconds(50));
    CHECK_FALSE(locked.load());
    finished = true;
  }
  other.join();
  CHECK(locked.load());
  // And the other way round: after the revocation, the first thread waits
  // for a section of the other's.
  std::atomic<bool> other_inside{false}, other_done{false};
  std::thread holder([&] {
    std::lock_guard<BiasedLock> held(lock);
    other_inside = true;
    std::this_thread::sleep_for(milliseconds(50));
    other_done = true;
  });
  while (!other_inside.load()) std::this_thread::yield();
  {
    std::lock_guard<BiasedLock> held(lock);
    CHECK(other_done.load());
  }
  holder.join();
}

// The counter test above, through the lock: the owner biased, the other
// thread through the spin lock after revoking; and a third joining later.
TEST_CASE("biased lock: no two sections overlap, before, during and after the revocation", "[bias]") {
  for (int round = 0; round < 10; ++round) {
    BiasedLock lock;
    volatile uint64_t counter = 0;
    auto increment = [&] {
      std::lock_guard<BiasedLock> held(lock);
      slow_increment(counter);
    };
    constexpr int kOwner = 20000, kOther = 2000;
    std::atomic<int> go{0};
    auto other = [&](int start) {
      while (go.load() < start) std::this_thread::yield();
      for (int i = 0; i < kOther; ++i) increment();
    };
    std::thread second(other, 1), third(other, 2);
    for (int i = 0; i < kOwner; ++i) {
      if (i == 100) go = 1;
      if (i == 5000) go = 2;
      increment();
    }
    second.join();
    third.join();
    CHECK(counter == uint64_t(kOwner + 2 * kOther));
  }
}
