// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A plugin's threads starting and ending, kept out of fork()'s way.
//
// glibc keeps the stacks of finished threads in a cache and hands them to
// new threads; a child of fork() inherits that cache as the parent's
// threads left it. When the fork lands while another thread of the parent
// is inside pthread_create (taking a cached stack, freeing its old TLS
// vector) or is finishing a thread it joins (putting the stack back), the
// child's cache can say a block is both in use and free: the child's next
// pthread_create frees it a second time, or the child frees it again as
// whatever it was handed out as meanwhile ("double free" aborts, seen about
// once in 150 forks of a process whose other threads make and destroy
// streams). POSIX leaves a child of a multi-threaded process with only
// async-signal-safe calls until it execs; gpuhal promises more (a child's
// own runtime works), so a plugin that starts and joins threads of its own
// keeps those moments apart from fork():
//
// - a thread is started inside a transition that the new thread ends once
//   it runs (start_thread);
// - stopping a thread (telling it to return, then joining it) is one
//   transition (end_thread): the thread can only return after being told,
//   so its exit and its join both fall inside;
// - the plugin's pthread_atfork prepare handler (before_fork) waits until no
//   transition is under way and holds new ones off until the fork is done
//   (after_fork_parent / after_fork_child).
//
// The wait is bounded (kForkWait): a fork called from inside a transition's
// wait (a stream callback forking while its stream is being destroyed) goes
// ahead after it, as it did without the gate. Threads that detach instead of
// being joined (a stream destroyed from its own callback) end outside any
// transition; they are rare.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace gpuhal::plugin {

// The longest a fork waits for transitions under way.
constexpr std::chrono::milliseconds kForkWait{2000};

// Counts a transition; waits first while a fork is being prepared.
void begin_thread_transition();
void end_thread_transition();

// One transition for as long as it lives (stopping and joining threads).
class ThreadTransition {
 public:
  ThreadTransition() { begin_thread_transition(); }
  ~ThreadTransition() { end_thread_transition(); }
  ThreadTransition(const ThreadTransition &) = delete;
  ThreadTransition &operator=(const ThreadTransition &) = delete;
};

// A std::thread running `body`, started inside a transition that ends when
// the new thread begins to run. Throws what std::thread throws.
std::thread start_thread(std::function<void()> body);

// Stops a thread inside one transition: `tell_to_return` makes it return,
// then it is joined (`thread` must be joinable, and not this thread).
template <class Tell>
void end_thread(std::thread &thread, Tell &&tell_to_return) {
  ThreadTransition transition;
  tell_to_return();
  thread.join();
}

// pthread_atfork handlers (a plugin that uses the above installs them).
void before_fork();
void after_fork_parent();
void after_fork_child();

}  // namespace gpuhal::plugin
