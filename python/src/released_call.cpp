// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Calls that run without the GIL, counted so that Context.reset can run
// exclusive of them (bindings.hpp, ReleasedCall).
//
// The count and the flag are atomics (sequentially consistent): a call adds
// itself, then checks the flag; a reset sets the flag, then waits for the
// count. Either the call sees the flag (and steps back, waiting without the
// GIL until the reset ends) or the reset sees the call (and waits for it).
// The mutex only orders the waits with their wake-ups.
#include <atomic>
#include <condition_variable>
#include <mutex>

#include "bindings.hpp"

namespace gpuhal_py {
namespace {

struct Exclusion {
  std::atomic<long> in_flight{0};
  std::atomic<bool> resetting{false};
  std::mutex mu;
  std::condition_variable changed;
  std::mutex resets;  // one exclusive run at a time
};

// Never destroyed: a thread may still leave a call during static destruction.
Exclusion &exclusion() {
  static auto *e = new Exclusion;
  return *e;
}

thread_local int t_depth = 0;  // this thread's calls in flight (nested ones too)

void notify(Exclusion &e) {
  { std::lock_guard<std::mutex> lock(e.mu); }
  e.changed.notify_all();
}

void leave(Exclusion &e) {
  if (e.in_flight.fetch_sub(1) == 1 && e.resetting.load()) notify(e);
}

}  // namespace

ReleasedCall::ReleasedCall() {
  Exclusion &e = exclusion();
  for (;;) {
    e.in_flight.fetch_add(1);
    if (t_depth > 0 || !e.resetting.load()) break;
    leave(e);
    // A reset runs: wait for its end without the GIL (it needs it).
    PyThreadState *waiting = PyEval_SaveThread();
    {
      std::unique_lock<std::mutex> lock(e.mu);
      e.changed.wait(lock, [&] { return !e.resetting.load(); });
    }
    PyEval_RestoreThread(waiting);
  }
  ++t_depth;
  state_ = PyEval_SaveThread();
}

ReleasedCall::~ReleasedCall() {
  --t_depth;
  leave(exclusion());
  PyEval_RestoreThread(state_);
}

void run_exclusive_of_released_calls(const char *what, const std::function<void()> &fn) {
  if (t_depth > 0)
    throw gpuhal::Error(gpuhal::Status::ERROR_NOT_PERMITTED,
                        std::string(what) + ": not from inside a gpuhal call of this thread (a memory manager's "
                                            "method): it would wait for that call to end");
  Exclusion &e = exclusion();
  PyThreadState *waiting = PyEval_SaveThread();
  std::unique_lock<std::mutex> one_at_a_time(e.resets);
  e.resetting.store(true);
  {
    std::unique_lock<std::mutex> lock(e.mu);
    e.changed.wait(lock, [&] { return e.in_flight.load() == 0; });
  }
  PyEval_RestoreThread(waiting);
  struct Done {
    Exclusion &e;
    ~Done() {
      e.resetting.store(false);
      notify(e);
    }
  } done{e};
  fn();  // with the GIL: nothing else of gpuhal runs meanwhile
}

}  // namespace gpuhal_py
