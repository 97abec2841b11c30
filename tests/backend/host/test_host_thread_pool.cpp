// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's thread pool (plugins/host/exec/host_thread_pool.hpp):
// every index runs once, and ThreadPool::spread_jobs() counts the jobs
// spread over more than one thread while they run (a waiter spins past its
// short spin only while it is zero: host_stream.cpp, Progress::wait).
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>
#include "catch_compat.hpp"

#include "host_kernel_runner.hpp"

using gpuhal::host::ThreadPool;

TEST_CASE("thread pool: every index runs once, on more than one thread, counted as spread while it runs",
          "[thread-pool]") {
  ThreadPool pool(2);
  REQUIRE(ThreadPool::spread_jobs() == 0);
  constexpr uint64_t kCount = 64;
  std::vector<std::atomic<int>> runs(kCount);
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> seen_spread{0};
  pool.parallel_for(kCount, [&](uint64_t i) {
    runs[i].fetch_add(1);
    if (ThreadPool::spread_jobs() == 1) seen_spread.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
    // Hold the first index until a second thread has taken one, so that
    // the job is seen on two threads whatever the scheduler does.
    while (i == 0 && threads.size() < 2) {
      mu.unlock();
      std::this_thread::yield();
      mu.lock();
    }
  });
  for (uint64_t i = 0; i < kCount; ++i) CHECK(runs[i].load() == 1);
  CHECK(threads.size() == 2);
  CHECK(seen_spread.load() == int(kCount));
  CHECK(ThreadPool::spread_jobs() == 0);
}

TEST_CASE("thread pool: a job of one index, or a pool of one thread, runs on the caller and is not spread",
          "[thread-pool]") {
  ThreadPool one(1), two(2);
  const auto caller = std::this_thread::get_id();
  int spread_seen = -1;
  bool on_caller = false;
  two.parallel_for(1, [&](uint64_t) {
    spread_seen = ThreadPool::spread_jobs();
    on_caller = std::this_thread::get_id() == caller;
  });
  CHECK(spread_seen == 0);
  CHECK(on_caller);
  int ran = 0;
  one.parallel_for(8, [&](uint64_t) { ran += ThreadPool::spread_jobs() == 0 && std::this_thread::get_id() == caller; });
  CHECK(ran == 8);
  two.parallel_for(0, [&](uint64_t) { ran = -1; });
  CHECK(ran == 8);
}
