// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// CaptureImpl, GraphImpl, GraphExecImpl: what a capture in progress, a
// Graph and a GraphExec hold (graph.hpp).
//
// The core's share of capture is what the plugin cannot know: which of the
// user's objects a captured operation names. A capture keeps every device
// allocation, module and callback it recorded alive, and hands them to the
// graph and from there to each exec, so that nothing a replay touches is
// freed while a graph or exec can still launch it (the plugin's replay
// names raw pointers). It also keeps the kernel of each kernel node, in
// capture order (the plugin's numbering), for GraphExec::update_kernel_args.
//
// Locking: capture_mutex() guards every CaptureImpl and the capture fields
// of streams and events; the plugin call that records an operation is made
// under it where the node numbering matters (launches).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "gpuhal/graph.hpp"
#include "gpuhal/kernel.hpp"
#include "context_impl.hpp"
#include "stream_impl.hpp"

namespace gpuhal::detail {

std::mutex &capture_mutex();

// What a recorded operation must keep alive (memory, modules, callbacks).
using Kept = std::vector<std::shared_ptr<const void>>;

struct CaptureImpl {
  std::weak_ptr<StreamImpl> origin;
  std::vector<std::weak_ptr<StreamImpl>> streams;  // the origin and the streams forked into it
  Kept kept;
  std::vector<Kernel> kernels;  // kernel node k's kernel
  bool ended = false;
  // While a capture runs, its context's deferred releases wait (as under
  // Context::defer_cleanup): a flush synchronises the context, which the
  // drivers refuse during a capture (and CUDA answers by invalidating it).
  ContextImpl *deferring = nullptr;
};

struct GraphImpl : ContextChild<gpuhal_graph_t> {
  std::shared_ptr<const Kept> kept;
  std::vector<Kernel> kernels;
  uint32_t node_count = 0;
  ~GraphImpl();
};

struct GraphExecImpl : ContextChild<gpuhal_graph_exec_t> {
  std::shared_ptr<const Kept> kept;
  std::vector<Kernel> kernels;
  std::mutex mu;                  // guards update_kept
  std::vector<Kept> update_kept;  // per kernel node: what its updated arguments name
  ~GraphExecImpl();
};

// The capture `s` records into, or null (one load when none).
inline CaptureImpl *capturing(const StreamImpl &s) {
  return s.capturing.load(std::memory_order_acquire);
}
// Adds `what` to the capture of `s` (a no-op when it has none).
void keep_for_capture(const StreamImpl &s, std::shared_ptr<const void> what);

// The plugin's handle of `s` for a transfer `call` (DeviceArray::<call>) on
// memory of `ctx`: ERROR_INVALID_HANDLE for a null stream or one of another
// context, the stream's own error when it is gone; while `s` captures, the
// graph keeps `memory` (and `other`) alive (device_array.cpp).
gpuhal_stream_t transfer_stream(const std::shared_ptr<ContextImpl> &ctx, const Stream &s, const char *call,
                                const DeviceMemory &memory, const DeviceMemory *other = nullptr);
// Event::record on `s`, and Stream::wait for `e` (after the plugin's call
// succeeded): the event's capture, and a stream joining the event's.
void note_record(EventImpl &e, const StreamImpl &s);
void note_wait(const std::shared_ptr<StreamImpl> &s, const EventImpl &e);
// capture_mutex() held: every stream of `cap` leaves it. Returns the
// context whose deferred releases the capture held back (null: none): the
// caller calls end_deferral on it once the lock is released (a flush may
// run releases that take the lock).
ContextImpl *end_capture_locked(CaptureImpl &cap);
void end_deferral(ContextImpl *ctx);

}  // namespace gpuhal::detail
