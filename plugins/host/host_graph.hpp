// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend stream capture and graphs (plugin.h, ABI 1.8).
//
// A capture is a list of the backend's own operations in the order they were
// submitted, each with the earlier nodes it depends on (its stream's
// previous node, and the node of an event it waited for). Every dependency
// points to an earlier node, so the list in order is a valid schedule: a
// launch of the instantiated graph runs the whole list as one operation on
// its stream, without the entries' validation, argument packing or a
// hand-off per node. Fork and join across streams are recorded and checked
// (a stream forked into the capture must be joined back), but a replay runs
// the branches one after the other on the launching stream's worker.
//
// The rules are CUDA's (plugin.h lists them). Locking: a context's capture
// state (every capture of its streams, the streams' and events' capture
// fields, its graphs and graph execs) is guarded by HostContext::capture_mu,
// taken after the submit mutex where both are held. StreamState::capturing
// mirrors "has a capture" for the submit paths, read without the lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpuhal/plugin.h"
#include "host_kernel_runner.hpp"
#include "host_stream.hpp"

namespace gpuhal::host {

class HostContext;
struct HostEvent;

struct HostGraphNode {
  // A copy, memset or callback (run(false): the graph's launch failed
  // before it, callbacks see the error); empty for the nodes that only
  // order (event records, waits).
  std::function<void(bool)> run;
  // A kernel node: its launch (arguments copied at capture, replaced by
  // graph_exec_set_kernel_args in an exec's own copy of the list).
  std::shared_ptr<const KernelLaunch> launch;
  std::vector<uint32_t> deps;  // earlier nodes it waits for
};

using HostGraphNodes = std::vector<HostGraphNode>;

struct HostCapture {
  std::shared_ptr<StreamState> origin;
  // Every stream in the capture (the origin and those forked into it),
  // with the index of its last node (-1: none yet).
  struct Member {
    std::shared_ptr<StreamState> stream;
    int64_t tail = -1;
  };
  std::vector<Member> members;
  HostGraphNodes nodes;
  uint32_t kernel_nodes = 0;
  bool invalidated = false;
  bool ended = false;
  std::string why;  // what invalidated it
  Member *member(const StreamState *s);
};

struct HostGraph {
  std::shared_ptr<const HostGraphNodes> nodes;
  uint32_t kernel_nodes = 0;
};

struct HostGraphExec {
  std::mutex mu;  // guards nodes (copied on update) and the last launch
  std::shared_ptr<const HostGraphNodes> nodes;
  std::vector<uint32_t> kernel_node_index;  // kernel node k -> its index in nodes
  Dep last_launch;                          // ordered after the previous launch (stream null: none)
};

// The refusal an entry on `s` meets, or GPUHAL_SUCCESS: a stream of an
// invalidated capture (ERROR_CAPTURE_INVALIDATED), or the legacy default
// stream while a blocking stream of the context captures
// (ERROR_CAPTURE_UNSUPPORTED; those captures are invalidated). Called by
// in_stream and the synchronous entries; cheap when nothing captures.
gpuhal_status_t capture_refusal(HostContext *c, const std::shared_ptr<StreamState> &s, const char *entry);
// Refuses `entry` on a capturing stream (ERROR_CAPTURE_UNSUPPORTED) and
// invalidates its capture: what synchronises or needs a result.
gpuhal_status_t refuse_in_capture(HostContext *c, const std::shared_ptr<StreamState> &s, const char *entry,
                                  const std::string &what);
// Records an operation (or a kernel launch) on a capturing stream.
void capture_op(HostContext *c, const std::shared_ptr<StreamState> &s, std::function<void(bool)> run);
void capture_kernel(HostContext *c, const std::shared_ptr<StreamState> &s, std::shared_ptr<const KernelLaunch> launch);
// event_record on a capturing stream: the event stands for the stream's
// position in the capture.
void capture_record(HostContext *c, const std::shared_ptr<HostEvent> &e, const std::shared_ptr<StreamState> &s);
// stream_wait_event (and stream_barrier's events) when the stream captures
// or the event was recorded in a capture: *handled true when done here
// (a fork, a join, a refusal); false: an ordinary wait.
gpuhal_status_t capture_wait(HostContext *c, const std::shared_ptr<StreamState> &s,
                             const std::shared_ptr<HostEvent> &e, const char *entry, bool *handled);
// event_synchronize / event_query / event_elapsed_ms of an event recorded
// in a live capture: refused, its capture invalidated.
gpuhal_status_t refuse_captured_event(HostContext *c, const std::shared_ptr<HostEvent> &e, const char *entry);
// context_synchronize while a stream of the context captures: refused, every
// capture of the context invalidated (CUDA's cuCtxSynchronize breaks
// captures in every capture mode).
gpuhal_status_t refuse_context_sync_in_capture(HostContext *c, const char *entry);
// A stream leaving (destroyed): its capture is invalidated.
void leave_capture(HostContext *c, const std::shared_ptr<StreamState> &s);

}  // namespace gpuhal::host
