// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugins' fork gate (plugins/common/fork_thread_gate.hpp): a fork
// waits for threads being started or joined, holds new ones off until it is
// done, and does not wait forever. The fork test (test_fork.cpp, "while
// other threads are inside gpuhal") is what it is for: without it about one
// child in 150 aborted with a double free in glibc's thread-stack cache.
#include <atomic>
#include <chrono>
#include <thread>

#include "catch_compat.hpp"
#include "fork_thread_gate.hpp"

namespace gate = gpuhal::plugin;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST_CASE("fork gate: a fork waits for a thread being joined, and holds new starts until it is done", "[fork][gate]") {
  std::atomic<bool> release{false};
  std::thread worker = gate::start_thread([&] {
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
  });
  // The stopper says when it is inside its transition (no sleep stands in for
  // that: under a loaded sanitizer run a thread may not run for tens of ms).
  std::atomic<bool> inside{false};
  std::thread stopper([&] {
    gate::end_thread(worker, [&] {
      inside = true;
      std::this_thread::sleep_for(milliseconds(50));  // the fork comes meanwhile
      release = true;
    });
  });
  while (!inside.load()) std::this_thread::sleep_for(milliseconds(1));
  gate::before_fork();
  // It waited for the whole transition: the worker was told and joined.
  CHECK(release.load());
  CHECK(!worker.joinable());
  // While "forking", a new start waits.
  std::atomic<bool> started{false};
  std::thread starter([&] {
    std::thread t = gate::start_thread([] {});
    started = true;
    t.join();
  });
  std::this_thread::sleep_for(milliseconds(30));
  CHECK_FALSE(started.load());
  gate::after_fork_parent();
  starter.join();
  CHECK(started.load());
  stopper.join();
}

TEST_CASE("fork gate: a fork does not wait forever for a transition that does not end", "[fork][gate]") {
  gate::begin_thread_transition();  // never ended before the fork
  const auto t0 = steady_clock::now();
  gate::before_fork();
  const auto waited = steady_clock::now() - t0;
  gate::after_fork_parent();
  gate::end_thread_transition();
  CHECK(waited >= gate::kForkWait);
  CHECK(waited < gate::kForkWait + std::chrono::seconds(2));
  // Nothing left under way: the next fork does not wait out kForkWait (the
  // bound, not a small figure: a loaded sanitizer run may stall any thread).
  const auto t1 = steady_clock::now();
  gate::before_fork();
  gate::after_fork_parent();
  CHECK(steady_clock::now() - t1 < gate::kForkWait);
}
