// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The deferred deallocation queue's own rules (core/dealloc_queue.hpp),
// driven directly with a synchronise of the test's making: when a release
// may run relative to the synchronise before it, and what a failed
// synchronise leaves queued.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "catch_compat.hpp"
#include "dealloc_queue.hpp"

using gpuhal::detail::DeallocQueue;

namespace {
DeallocQueue::Item item(std::function<void()> release, uint64_t bytes = 1) {
  DeallocQueue::Item it;
  it.release = std::move(release);
  it.bytes = bytes;
  return it;
}
}  // namespace

// A release's memory may be in use by work submitted before its last handle
// went, that is, before it was queued. So a release may run only after a
// synchronise that began after it was queued. Here another thread queues a
// release while the flush is synchronising (between its synchronise and its
// releases): that release must wait for a later synchronise, not ride on the
// one that was already under way when it came.
TEST_CASE("dealloc queue: a release queued during a flush's synchronise waits for a synchronise after it",
          "[dealloc][order]") {
  int syncs = 0;
  DeallocQueue *queue = nullptr;
  std::vector<std::string> log;
  bool queued_late = false;
  DeallocQueue q(
      1000, 1u << 30,
      [&] {
        ++syncs;
        log.push_back("sync " + std::to_string(syncs));
        if (!queued_late) {
          queued_late = true;
          // Another thread drops its last handle now.
          std::thread([&] { queue->add(item([&] { log.push_back("late after sync " + std::to_string(syncs)); })); })
              .join();
        }
      },
      nullptr);
  queue = &q;
  q.add(item([&] { log.push_back("early after sync " + std::to_string(syncs)); }));
  CHECK(q.flush() == 2);
  CHECK(log == std::vector<std::string>{"sync 1", "early after sync 1", "sync 2", "late after sync 2"});
  CHECK(q.count() == 0);
  CHECK(q.bytes() == 0);
}

TEST_CASE("dealloc queue: a failed synchronise runs nothing and keeps every release queued in order",
          "[dealloc][order][errors]") {
  bool fail = true;
  std::vector<std::string> errors, ran;
  DeallocQueue q(
      1000, 1u << 30,
      [&] {
        if (fail) throw gpuhal::Error(gpuhal::Status::ERROR_LAUNCH_FAILED, "device lost");
      },
      [&](const gpuhal::Error &e) { errors.push_back(e.what()); });
  q.add(item([&] { ran.push_back("a"); }, 10));
  q.add(item([&] { ran.push_back("b"); }, 20));
  CHECK(q.flush() == 0);
  CHECK(ran.empty());
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("synchronising before the flush failed") != std::string::npos);
  CHECK(q.count() == 2);
  CHECK(q.bytes() == 30);
  q.add(item([&] { ran.push_back("c"); }, 5));
  fail = false;
  CHECK(q.flush() == 3);
  CHECK(ran == std::vector<std::string>{"a", "b", "c"});
  CHECK(q.bytes() == 0);
  // Forced, a failed synchronise still runs the releases (the context is
  // going: nothing else will).
  fail = true;
  q.add(item([&] { ran.push_back("d"); }));
  CHECK(q.flush(true) == 1);
  CHECK(ran.back() == "d");
}
