// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's contexts, and the shape of every entry that works in one
// (in_context). Each object's own state is in its header (hsa_device.hpp,
// hsa_stream.hpp for the stream model and submission, hsa_event.hpp,
// hsa_signal.hpp, hsa_kernel.hpp, hsa_graph.hpp, hsa_pinned_memory.hpp).
//
// Locking: one mutex per context guards its streams, events, allocations
// and modules, and is held while submitting (the legacy default stream
// reads every blocking stream's last signal). Waits happen without it.
//
// Errors (ROCr's rules, hsa_ext_amd.h): a failed async copy sets its
// completion signal negative; a queue that errs is suspended and the
// completion signals of its packets are never decremented (or, in newer
// ROCr, set negative); a GPU memory fault goes to the process's system
// event handler. So every wait is for "less than 1", a negative value is
// an error, and waits give up when the context has failed: the queue error
// callback and the system event handler mark the context failed
// (fail_context), and a waiter sees that within one wait slice. A failed
// context stays failed until it is destroyed (Context::reset()): every
// synchronising call and every submission returns ERROR_LAUNCH_FAILED
// naming the first failure.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture_book.hpp"
#include "hsa_device.hpp"
#include "hsa_event.hpp"
#include "hsa_graph.hpp"
#include "hsa_kernel.hpp"
#include "hsa_pinned_memory.hpp"
#include "hsa_runtime.hpp"
#include "hsa_signal.hpp"
#include "hsa_stream.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

using plugin::fail;
using plugin::guard;

struct HsaContext {
  int ordinal = 0;
  Device *device = nullptr;
  std::mutex mu;  // guards everything below except the host-operation queue
  std::unique_ptr<HsaStream> legacy;
  std::unordered_map<HsaStream *, std::unique_ptr<HsaStream>> streams;
  std::unordered_map<std::thread::id, std::unique_ptr<HsaStream>> per_thread;
  std::unordered_map<HsaEvent *, std::unique_ptr<HsaEvent>> events;
  std::map<uintptr_t, uint64_t> allocations;       // device and managed memory: base -> bytes
  std::unordered_set<uintptr_t> managed_allocations;  // which of them are managed
  std::map<uintptr_t, uint64_t> host_allocations;  // pinned host memory: base -> bytes
  std::map<uintptr_t, Registration> registrations;
  std::unordered_map<HsaModule *, std::unique_ptr<HsaModule>> modules;
  uint64_t allocated_bytes = 0;
  // Stream capture's bookkeeping and rules, and the graphs and execs made
  // here (freed with the context); each has its own lock, taken after mu.
  plugin::CaptureBook<HsaStream, HsaGraphNode> captures;
  plugin::GraphStore<HsaGraphNode, HsaGraphExec> graphs;

  // The host-operation thread (started on first use).
  std::mutex host_mu;
  std::condition_variable host_cv;
  std::deque<HostOp> host_ops;
  bool host_stop = false;
  std::thread host_thread;
  void *fill_scratch = nullptr;  // 8 pinned bytes for memset edges (host thread only)

  // The pinned chunks pageable copies are staged through (hsa_staging.cpp),
  // made on first use; guarded by mu. `busy` is the last operation that
  // reads or fills the chunk.
  struct StagingChunk {
    void *buffer = nullptr;
    SignalRef busy;
  };
  std::vector<StagingChunk> staging;
  size_t next_chunk = 0;
  void *event_scratch = nullptr;  // 8 device bytes timed events copy (guarded by mu)

  // Set (once) by fail_context: the first failure, under error_mu.
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::string failure;
  // An ordinary error of a host operation (a runtime call that failed):
  // returned once by the next synchronising call.
  std::string pending_error;

  ~HsaContext();  // joins the host-operation thread if still running
};

// Context::external_stream promises that a stream of another gpuhal
// runtime over the same plugin can be wrapped: that runtime's context is
// another HsaContext of the same device, whose lock guards the stream. The
// directory maps every stream made by stream_create to its context, from
// creation until stream_destroy or the context's end (both under the
// owner's mu; lock order: a context's mu, then the directory's).
void publish_stream(HsaStream *s);
void withdraw_stream(HsaStream *s);

// What every entry that works on a stream holds: c->mu, with `handle`
// resolved in c (stream()); a handle of another context of c's device
// (another runtime's stream) is resolved there, and that context's mu is
// held too (both taken together, std::lock, so two threads that use each
// other's streams do not deadlock). The stream's own state (its queue,
// its last signal, the legacy stream rules, its staging and host thread)
// is its context's: the submission functions reach it through s->ctx;
// what the entry names in c (memory, events, kernels) is c's. The owner
// keeps the stream and its context alive while it is used (the contract
// of external_stream). Capture is its context's own business: a stream of
// another context that is capturing is refused (ERROR_CAPTURE_UNSUPPORTED),
// and capturing one from here is not offered (refuse()).
class StreamLock {
 public:
  StreamLock(HsaContext *c, gpuhal_stream_t handle);
  StreamLock(const StreamLock &) = delete;
  StreamLock &operator=(const StreamLock &) = delete;
  // The stream, or nullptr (unknown handle, or refused: see refuse()).
  HsaStream *stream() const { return stream_; }
  // True when the stream is another context's.
  bool foreign() const { return owner_ != nullptr; }
  // The error for a null stream(): ERROR_INVALID_HANDLE naming `entry`, or
  // the refusal of another context's capturing stream.
  gpuhal_status_t refuse(const char *entry) const;

 private:
  std::unique_lock<std::mutex> mine_;    // c->mu
  std::unique_lock<std::mutex> theirs_;  // the stream's context's, when not c
  HsaContext *owner_ = nullptr;          // that context
  HsaStream *stream_ = nullptr;
  bool capturing_elsewhere_ = false;
};

// The live context for a handle, or nullptr.
HsaContext *find(gpuhal_context_t handle);
gpuhal_status_t bad_context(const char *entry);

// Marks c failed with `what` (the first failure is kept). Any thread.
void fail_context(HsaContext *c, const std::string &what);
// ERROR_LAUNCH_FAILED naming c's failure and `entry` when c failed (every
// time), or its pending host-operation error (once), else success.
gpuhal_status_t context_failure(HsaContext *c, const char *entry);
// Calls fn for every registered context (the system event handler's lookup;
// hsa_faults.cpp). Contexts are registered from creation to destruction.
void for_each_context(const std::function<void(HsaContext *)> &fn);
void register_context(HsaContext *c);
void unregister_context(HsaContext *c);
// After the runtime started: the wait slice from its clock, and the system
// event handler that keeps memory faults from aborting the process. True
// when the handler is registered (a fault then fails its contexts, and a
// reset makes them anew: recovers_from_faults).
bool watch_faults();
// Waits for every stream of c and the host-operation thread (c->mu not held).
gpuhal_status_t synchronize_context(HsaContext *c);
void stop_host_thread(HsaContext *c);
// The shape of every entry that works in a context: resolves the handle
// (ERROR_INVALID_HANDLE naming `entry`) and runs body(c) under guard() (an
// exception becomes a status naming `entry`).
template <class Body>
gpuhal_status_t in_context(gpuhal_context_t ctx, const char *entry, Body &&body) {
  HsaContext *c = find(ctx);
  if (!c) return bad_context(entry);
  return plugin::guard(entry, [&]() -> gpuhal_status_t { return body(c); });
}

}  // namespace gpuhal::hsa
