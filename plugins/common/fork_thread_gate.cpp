// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "fork_thread_gate.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <utility>

namespace gpuhal::plugin {

namespace {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int under_way = 0;     // transitions begun and not ended
  bool forking = false;  // a fork is being prepared: no new transition
};

// Never destroyed (a detached thread may end while the plugin's statics
// go), and not on the heap: it lives in the library's own storage, which
// goes with the library (a heap object would be reported as leaked once
// the plugin is unloaded).
Gate &gate() {
  alignas(Gate) static unsigned char storage[sizeof(Gate)];
  static Gate *g = new (storage) Gate();
  return *g;
}

}  // namespace

void begin_thread_transition() {
  Gate &g = gate();
  std::unique_lock<std::mutex> lock(g.mu);
  g.cv.wait(lock, [&] { return !g.forking; });
  ++g.under_way;
}

void end_thread_transition() {
  Gate &g = gate();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    --g.under_way;
  }
  g.cv.notify_all();
}

std::thread start_thread(std::function<void()> body) {
  begin_thread_transition();
  try {
    return std::thread([body = std::move(body)] {
      end_thread_transition();
      body();
    });
  } catch (...) {
    end_thread_transition();
    throw;
  }
}

void before_fork() {
  Gate &g = gate();
  std::unique_lock<std::mutex> lock(g.mu);
  g.forking = true;
  g.cv.wait_for(lock, kForkWait, [&] { return g.under_way == 0; });
}

void after_fork_parent() {
  Gate &g = gate();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    g.forking = false;
  }
  g.cv.notify_all();
}

void after_fork_child() {
  // Only the forking thread exists here: the gate starts afresh (a thread
  // of the parent that was waiting on it is not here).
  Gate &g = gate();
  new (&g.mu) std::mutex();
  new (&g.cv) std::condition_variable();
  g.under_way = 0;
  g.forking = false;
}

}  // namespace gpuhal::plugin
