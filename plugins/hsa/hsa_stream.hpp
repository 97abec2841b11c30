// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's streams (hsa_stream.cpp: the entries; hsa_submission.cpp:
// queues, submission, the host-operation thread).
//
// Stream model. A stream is an AQL queue plus the completion signal of the
// last operation submitted to it. Every operation depends on that signal, so
// a stream's work runs in order and its last signal reaching 0 means all of
// it completed:
//  - packets on the stream's queue (kernel dispatches, event markers,
//    barriers) carry the barrier bit, which orders them after the queue's
//    earlier packets; when the previous operation was not a packet (an async
//    copy, a host operation) or other streams must be waited for, barrier-AND
//    packets carrying those signals go first (five per packet, chained);
//  - copies are hsa_amd_memory_async_copy calls whose dependency list holds
//    the same signals;
//  - host operations (callbacks, memsets, the second half of a copy into
//    pageable memory) run on the context's host-operation thread, in
//    submission order, each after its dependency signal reached 0.
// Signals are reference-counted: an operation keeps the signals it depends
// on until it has completed (a packet must not outlive a signal it names);
// completed operations are reaped by the next submission or synchronisation
// on their stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "gpuhal/plugin.h"
#include "hsa_runtime.hpp"
#include "hsa_signal.hpp"

namespace gpuhal::hsa {

struct HsaContext;

// A submitted operation, kept until its completion signal reached 0.
struct Op {
  SignalRef done;
  std::vector<SignalRef> keep;    // signals its packets or copies name
  std::function<void()> on_reap;  // frees staging buffers and kernarg memory
  const char *what = "";          // for errors: "hsa_amd_memory_async_copy", "a kernel dispatch" ...
};

// A stream's kernel-argument memory: one allocation from the kernarg pool,
// made on the first launch and handed out in launch order; a launch's
// bytes are reused once its dispatch completed (hsa_kernargs.cpp).
struct KernargRing {
  void *base = nullptr;
  size_t size = 0;
  size_t head = 0;  // where the next launch's bytes go
  struct Live {
    SignalRef done;  // the dispatch's completion signal
    size_t offset, bytes;
  };
  std::deque<Live> live;  // launch order
};

struct HsaStream {
  HsaContext *ctx = nullptr;
  bool blocking = true;  // synchronises with the legacy default stream
  // Stream priority (ABI 1.9): -1 high, 0 normal (the default), 1 low: its
  // queue's hsa_amd_queue_priority_t, and the order its host operations
  // are taken in on the context's host-operation thread.
  int priority = 0;
  bool legacy = false;
  hsa_queue_t *queue = nullptr;
  SignalRef last;              // the last operation's completion signal
  bool last_on_queue = false;  // ...and it was a packet on `queue`
  // Its last packet released its writes at agent scope only: the host, the
  // copy engines and other agents see them after a system-scope release
  // (make_visible).
  bool agent_released = false;
  std::deque<Op> inflight;
  KernargRing kernargs;
};

// A host operation for the context's host-operation thread.
struct HostOp {
  int priority = 0;  // its stream's
  SignalRef dep;   // may be null
  SignalRef done;  // set to 0 after fn ran (-1 when it failed or did not run)
  std::function<void()> fn;
  std::function<void()> on_skip;  // instead of fn when the context failed (may be empty)
};

// Submission (hsa_submission.cpp); `c->mu` held unless stated.
// The stream for a handle (NULL / LEGACY / PER_THREAD or one of c's), or nullptr.
HsaStream *resolve_stream(HsaContext *c, gpuhal_stream_t s);
gpuhal_status_t create_queue(HsaContext *c, HsaStream *s);
void destroy_stream(HsaStream *s);  // after it was drained
// Packets on s's queue: barrier-AND packets for `extra` (and for the
// previous operation when it was not a packet), then `packet` (64 bytes,
// its header last). Records the operation with `done` as s's last signal.
//
// Fence scopes (hsa.h): the packet acquires at agent scope when the
// operation before it was a packet on the same queue and it waits for
// nothing else (device-only work on one agent), else at system scope (a
// copy engine, the host or another stream wrote what it may read). It
// releases at `release` scope: kernel dispatches at agent scope (the next
// kernel on the agent sees their writes; make_visible releases them to the
// rest of the system when something else looks), markers at system scope.
gpuhal_status_t submit_packet(HsaStream *s, const void *packet, SignalRef done, std::vector<SignalRef> extra,
                              std::function<void()> on_reap, const char *what,
                              uint16_t release = HSA_FENCE_SCOPE_SYSTEM);
// When s's last packet released its writes at agent scope only, queues a
// barrier packet that releases them at system scope (it becomes s's last
// operation), so that the host, a copy engine or another agent can read
// them once it completes (c->mu held).
gpuhal_status_t make_visible(HsaStream *s);
// An async copy after s's dependencies; on_reap runs once it completed (or
// at once when it could not be submitted).
gpuhal_status_t submit_copy(HsaStream *s, void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                            uint64_t bytes, std::function<void()> on_reap);
// The same for any copy-engine call: `issue` gets s's dependencies and the
// completion signal and makes the call; `what` names it in errors.
gpuhal_status_t submit_engine_copy(HsaStream *s, const char *what,
                                   const std::function<hsa_status_t(uint32_t, const hsa_signal_t *, hsa_signal_t)> &issue,
                                   std::function<void()> on_reap);
// Copies through the context's staging chunks (hsa_staging.cpp; c->mu held).
// The agent names the memory's owner on the other side of the copy (the GPU,
// or the CPU for mapped host memory).
gpuhal_status_t staged_copy_to_device(HsaStream *s, void *dst, hsa_agent_t dst_agent, const void *src, uint64_t bytes);
gpuhal_status_t staged_copy_to_host(HsaStream *s, void *dst, const void *src, hsa_agent_t src_agent, uint64_t bytes);
// Frees the staging chunks (context_destroy, after it synchronised).
void release_staging(HsaContext *c);
// `bytes` of kernel-argument memory on s for a dispatch completing `done`
// (c->mu held); *out is nullptr when the launch needs its own allocation
// (more than a quarter of the ring). give_back_kernargs undoes the last
// take (its dispatch was not submitted); release_kernargs frees the ring
// (destroy_stream).
gpuhal_status_t take_kernargs(HsaStream *s, size_t bytes, const SignalRef &done, void **out);
void give_back_kernargs(HsaStream *s);
void release_kernargs(HsaStream *s);
// The signals a new operation on s must wait for: s's last and, for the
// legacy default stream's semantics, other streams' (completed ones left out).
std::vector<SignalRef> dependencies(HsaStream *s, bool include_last = true);
// The same for work that is not a packet of s's agent (a copy, a host
// operation): the streams it waits for first release their writes at
// system scope (make_visible).
gpuhal_status_t visible_dependencies(HsaStream *s, std::vector<SignalRef> *out);
void reap(HsaStream *s);
// Queues a host operation after `dep` on s; `done` becomes s's last signal
// (c->mu held).
// on_skip runs instead of fn when the context failed before fn could run.
gpuhal_status_t submit_host_op(HsaStream *s, std::function<void()> fn, std::function<void()> on_reap,
                               std::function<void()> on_skip = nullptr);
// A marker on s's queue after s's work and `extra` (c->mu held).
gpuhal_status_t submit_marker(HsaStream *s, std::vector<SignalRef> extra, SignalRef *out);
// Waits for s's last operation `last` (c->mu not held), then reaps; the
// context's failure, if any.
gpuhal_status_t wait_stream(HsaContext *c, HsaStream *s, SignalRef last, const char *entry);
// Allocates a host buffer from the fine-grained system pool, accessible to
// the context's GPU.
gpuhal_status_t alloc_system(HsaContext *c, uint64_t bytes, void **out);

}  // namespace gpuhal::hsa
