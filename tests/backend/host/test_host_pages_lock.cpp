// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's lock on device memory's pages (plugins/host/
// host_pages_lock.hpp): readers share it, a writer excludes them, readers
// are preferred (a reader may enter again while a writer waits).
#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include "catch_compat.hpp"

#include "host_pages_lock.hpp"

using gpuhal::host::PagesLock;

// Whole cache lines: the reader count, written by every stream operation,
// shares its line with no other global.
static_assert(alignof(PagesLock) == 64 && sizeof(PagesLock) % 64 == 0);
using namespace std::chrono_literals;

TEST_CASE("pages lock: readers share it, and a writer waits for every reader to leave", "[pages-lock]") {
  PagesLock lock;
  std::shared_lock<PagesLock> a(lock);
  std::shared_lock<PagesLock> b(lock);  // a second reader enters at once
  std::atomic<bool> writing{false};
  std::thread writer([&] {
    std::unique_lock<PagesLock> w(lock);
    writing = true;
  });
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(writing);
  a.unlock();
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(writing);  // one reader is still inside
  // Readers are preferred: a thread inside may enter again while the writer waits.
  { std::shared_lock<PagesLock> again(lock); }
  b.unlock();
  writer.join();
  CHECK(writing);
}

TEST_CASE("pages lock: a reader waits while a writer holds it, and then enters", "[pages-lock]") {
  PagesLock lock;
  std::unique_lock<PagesLock> w(lock);
  int pages = 1;  // what the writer swaps
  std::atomic<bool> read{false};
  int seen = 0;
  std::thread reader([&] {
    std::shared_lock<PagesLock> r(lock);
    seen = pages;
    read = true;
  });
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(read);
  pages = 2;
  w.unlock();
  reader.join();
  CHECK(read);
  CHECK(seen == 2);  // the writer's work is visible to the reader that waited
}

TEST_CASE("pages lock: writers take turns, each alone", "[pages-lock]") {
  PagesLock lock;
  int inside = 0, most = 0, rounds = 0;
  std::atomic<int> readers_inside{0};
  std::atomic<bool> overlap{false};
  auto write = [&] {
    for (int i = 0; i < 200; ++i) {
      std::unique_lock<PagesLock> w(lock);
      if (readers_inside.load() != 0) overlap = true;
      most = std::max(most, ++inside);
      ++rounds;
      --inside;
    }
  };
  auto read = [&] {
    for (int i = 0; i < 2000; ++i) {
      std::shared_lock<PagesLock> r(lock);
      ++readers_inside;
      --readers_inside;
    }
  };
  std::thread w1(write), w2(write), r1(read), r2(read);
  w1.join();
  w2.join();
  r1.join();
  r2.join();
  CHECK(most == 1);
  CHECK(rounds == 400);
  CHECK_FALSE(overlap);
}
