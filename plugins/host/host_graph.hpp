// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend stream capture and graphs (plugin.h, ABI 1.8).
//
// A capture records the backend's own operations (the closures submit()
// would queue, and kernel launches with their arguments copied), with the
// bookkeeping and CUDA's capture rules of plugins/common/capture_book.hpp.
// The recorded list in order is a valid schedule: a launch of the
// instantiated graph runs the whole list as one operation on its stream,
// without the entries' validation, argument packing or a hand-off per
// operation. Fork and join across streams are recorded and checked (a
// stream forked into the capture must be joined back), but a replay runs the
// branches one after the other on the launching stream's worker.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "capture_book.hpp"
#include "gpuhal/plugin.h"
#include "host_kernel_runner.hpp"
#include "host_stream.hpp"

namespace gpuhal::host {

class HostContext;
struct HostEvent;

struct HostGraphNode {
  // A copy, memset or callback (run(false): the graph's launch failed
  // before it, callbacks see the error); empty for the operations that only
  // order (event records, waits).
  std::function<void(bool)> run;
  // A kernel launch (arguments copied at capture, replaced by
  // graph_exec_set_kernel_args in an exec's own copy of the list).
  std::shared_ptr<const KernelLaunch> launch;
};

using HostCaptureBook = plugin::CaptureBook<StreamState, HostGraphNode>;
using HostGraphNodes = std::vector<HostGraphNode>;

struct HostGraphExec {
  std::mutex mu;  // guards nodes (copied on update) and the last launch
  std::shared_ptr<const HostGraphNodes> nodes;
  std::vector<uint32_t> kernel_node_index;  // kernel node k -> its index in nodes
  Dep last_launch;                          // ordered after the previous launch (stream null: none)
};
using HostGraphStore = plugin::GraphStore<HostGraphNode, HostGraphExec>;

using plugin::default_stream_handle;

}  // namespace gpuhal::host
