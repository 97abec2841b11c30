// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend contexts: a device's streams, events, modules and captures,
// and the rules for running synchronous work inline on the calling thread.
// Destroying a context stops its streams and frees everything it made
// (the plugin's memory registry, host_memory.hpp, says what).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host_device.hpp"
#include "host_event.hpp"
#include "host_graph.hpp"
#include "host_stream.hpp"
#include "thread_bias.hpp"

namespace gpuhal::host {

struct HostModule;

class HostContext {
 public:
  explicit HostContext(HostDevice *device);
  ~HostContext();  // stops every stream (queued work finishes), frees all memory

  HostDevice *device() const { return device_; }

  // Handle resolution; NULL stream means the default stream. Returns nullptr
  // for handles not made by this context.
  std::shared_ptr<StreamState> stream(gpuhal_stream_t handle);
  // Whether `handle` is a default stream or one this context made: the
  // streams synchronize() waits for (another context's stream, which
  // stream() also finds, is not).
  bool owns_stream(gpuhal_stream_t handle);
  // The legacy default stream, without a reference count's two atomic
  // updates (it lives as long as the context).
  const std::shared_ptr<StreamState> &default_stream() const { return default_stream_; }
  std::shared_ptr<HostEvent> event(gpuhal_event_t handle);

  // `priority`: kLeastPriority (2) .. kGreatestPriority (0), host_stream.hpp.
  gpuhal_stream_t create_stream(bool non_blocking, int priority = 0);
  // The context's own streams (not the legacy default one), at the call.
  std::vector<std::shared_ptr<StreamState>> streams_snapshot();
  bool destroy_stream(gpuhal_stream_t handle);
  gpuhal_event_t create_event(bool timing);
  bool destroy_event(gpuhal_event_t handle);

  // Submits `run` to `s` after `extra` dependencies (plus the legacy default
  // stream rules); returns the operation's ticket.
  uint64_t submit(const std::shared_ptr<StreamState> &s, std::function<void(bool)> run, std::vector<Dep> extra = {});
  // Records `ev` on `s` (as a submitted operation that timestamps it).
  void record(const std::shared_ptr<HostEvent> &ev, const std::shared_ptr<StreamState> &s);
  // Synchronous operations on the default stream wait for all prior work of
  // it and of the blocking streams. When all of those are idle, `fn` runs
  // right here on the calling thread (no hand-off to the worker), holding
  // the submit mutex so that work submitted meanwhile is ordered after it.
  // The submit mutex also keeps device memory's pages in place while `fn`
  // runs (see hold_submissions; a stream's worker holds
  // device_pages_mutex() instead: two atomic read-modify-writes saved on
  // every small synchronous copy).
  // Returns false, without running `fn`, when something is pending.
  // Templates, so that a small copy's memcpy is called directly (not
  // through a std::function) on the path H1 measures. The thread that holds
  // the context's inline bias (support/sync/thread_bias.hpp) runs them without the
  // mutex, and without a locked instruction.
  template <class F>
  bool run_inline_if_idle(F &&fn) {
    return run_inline([&] {
      if (!sync_ops_may_run_now()) return false;
      fn();
      return true;
    });
  }
  // run_inline_if_idle's lock-free half: runs `fn` and returns true only on
  // the inline bias's path (this thread holds the bias, the streams are
  // idle); false means "take run_inline_if_idle", with nothing run. For
  // the small synchronous copy's path, which has nothing that can throw.
  template <class F>
  bool run_biased_if_idle(F &&fn) noexcept {
    return inline_bias_.try_run([&] {
      if (!sync_ops_may_run_now()) return false;
      fn();
      return true;
    }) == detail::ThreadBias::Ran::Done;
  }
  // The same for work submitted to `s`: runs `fn` here, under the submit
  // mutex, when `s` and what it would wait for (the legacy default stream's
  // rules) are idle; false otherwise. Small kernel launches use it: a launch
  // that has completed when it returns is one valid schedule of an
  // asynchronous launch, and it saves two thread hand-offs.
  template <class F>
  bool run_inline_if_stream_idle(const std::shared_ptr<StreamState> &s, F &&fn) {
    if (s->is_default) return run_inline_if_idle(std::forward<F>(fn));
    return run_inline([&] {
      if (!s->idle() || (!s->non_blocking && !default_stream_->idle())) return false;
      fn();
      return true;
    });
  }
  // The submit mutex, locked: no operation of this context runs inline on a
  // calling thread until it is released (submissions wait too; an inline
  // bias of another thread is revoked first). An IPC export holds it of
  // every context, with device_pages_mutex() exclusive, while it moves an
  // allocation's pages. Lock order: device_pages_mutex(), then the
  // contexts' registry, then submit mutexes.
  std::unique_lock<std::mutex> hold_submissions() {
    std::unique_lock<std::mutex> lock(submit_mu_);
    inline_bias_.claim_or_exclude(false);
    return lock;
  }
  // Dependencies for "all work submitted to this context so far".
  std::vector<Dep> all_prior_work();
  void synchronize();

  // Loaded modules (module_unload, or the destructor once the streams have
  // stopped, unload them).
  std::mutex modules_mu;
  std::unordered_map<HostModule *, std::unique_ptr<HostModule>> modules;
  // The first failure of a kernel since the last synchronising call, which
  // reports it (GPUHAL_ERROR_LAUNCH_FAILED) and clears it: the context stays
  // usable.
  void set_kernel_error(const std::string &message);
  bool take_kernel_error(std::string *message);

  // Stream capture (host_graph.hpp), and the graphs and execs made here
  // (freed with the context).
  HostCaptureBook captures;
  HostGraphStore graphs;

 private:
  HostDevice *device_;
  std::shared_ptr<Progress> progress_;
  std::mutex submit_mu_;  // ticket order across the context's streams
  // The legacy default stream's rule for a synchronous operation run inline:
  // it and every blocking stream idle.
  bool sync_ops_may_run_now() const {
    return default_stream_->idle() && progress_->busy_blocking.load(std::memory_order_acquire) == 0;
  }
  // Inline operations of one thread without submit_mu_. A synchronous copy
  // on an idle context runs on the calling thread holding the submit mutex
  // (so that work submitted meanwhile is ordered after it and an IPC export
  // does not move its pages under it); the mutex's unlock is a locked
  // instruction right after the copy, which waits for the copy's stores to
  // drain: measured on a 4 KiB copy, the lock pair cost 23 ns of 52, where
  // memcpy alone takes 30. The owner's own submits need nothing: its program
  // order keeps them apart from its inline operations.
  detail::ThreadBias inline_bias_;
  // `check_and_run` (false: not run) on the bias's fast path, else under the
  // submit mutex (claiming the bias for this thread if nobody has it).
  template <class F>
  bool run_inline(F &&check_and_run) {
    const detail::ThreadBias::Ran ran = inline_bias_.try_run(check_and_run);
    if (ran != detail::ThreadBias::Ran::NotTaken) return ran == detail::ThreadBias::Ran::Done;
    std::lock_guard<std::mutex> lock(submit_mu_);
    inline_bias_.claim_or_exclude(true);
    return check_and_run();
  }
  std::shared_ptr<StreamState> default_stream_;
  std::mutex objects_mu_;
  std::unordered_map<StreamState *, std::shared_ptr<StreamState>> streams_;
  // GPUHAL_STREAM_PER_THREAD: one blocking stream per host thread.
  std::unordered_map<std::thread::id, std::shared_ptr<StreamState>> per_thread_;
  std::unordered_map<HostEvent *, std::shared_ptr<HostEvent>> events_;
  std::mutex kernel_error_mu_;
  std::string kernel_error_;
};

}  // namespace gpuhal::host
