// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's graphs (hsa_graph.cpp): captured operations submitted
// again at each launch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gpuhal/plugin.h"
#include "hsa_signal.hpp"

namespace gpuhal::hsa {

struct HsaContext;
struct HsaKernel;
struct HsaStream;

// Stream capture (hsa_graph.cpp): an operation recorded from a capturing
// stream, submitted again at each launch of its graph with fresh completion
// signals (and kernel arguments written again): a copy, memset or callback
// as a closure over the stream it goes to (c->mu held), or a kernel
// dispatch with its configuration and its explicit arguments' bytes.
struct HsaGraphNode {
  std::function<gpuhal_status_t(HsaStream *)> submit;  // empty for kernels and for what only orders
  HsaKernel *kernel = nullptr;
  gpuhal_launch_config_t config{};
  std::vector<uint8_t> args;  // argument i at arg_offsets[i], arg_sizes[i] bytes
  std::vector<uint32_t> arg_offsets, arg_sizes;
};
using HsaGraphNodes = std::vector<HsaGraphNode>;
// Its fields are guarded by the context's mu.
struct HsaGraphExec {
  std::shared_ptr<const HsaGraphNodes> nodes;  // copied when a kernel node's arguments change
  std::vector<uint32_t> kernel_node_index;     // kernel node k -> its index in nodes
  SignalRef last;                               // the previous launch's last operation
};

// Records `submit` (a copy, memset or callback on a stream) when s captures;
// false when it does not (c->mu held).
bool record_in_capture(HsaContext *c, HsaStream *s, std::function<gpuhal_status_t(HsaStream *)> submit);

}  // namespace gpuhal::hsa
