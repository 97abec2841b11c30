// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's graphs (cuda_graph.cpp): the driver's graph and exec
// with the kernel nodes a capture recorded, and what streams and launches
// tell a running capture.
#pragma once

#include <memory>
#include <vector>

#include "cuda_driver.hpp"
#include "gpuhal/plugin.h"

namespace gpuhal::cuda {

// Stream capture (cuda_graph.cpp): a kernel launch recorded into a graph,
// with what cuGraphExecKernelNodeSetParams needs to replace its arguments.
struct CudaKernelNode {
  CUgraphNode node = nullptr;
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  uint32_t arg_count = 0;
};
struct CudaGraph {
  CUgraph graph = nullptr;
  std::vector<CudaKernelNode> kernels;     // in capture order
  std::vector<std::shared_ptr<void>> kept;  // the recorded callbacks
};
struct CudaGraphExec {
  CUgraphExec exec = nullptr;
  std::vector<CudaKernelNode> kernels;
  std::vector<std::shared_ptr<void>> kept;
};

struct CudaContext;

// A launch on `stream` succeeded while a capture of c runs: its node is
// recorded when the stream captures (cuda_graph.cpp).
void note_captured_launch(CudaContext *c, CUstream stream, CUfunction f, const gpuhal_launch_config_t &config,
                          uint32_t arg_count);
// True when `stream` captures (asked of the driver only while a capture of c
// runs); then `keep` goes to its capture.
bool keep_for_capture(CudaContext *c, CUstream stream, std::shared_ptr<void> keep);
bool stream_capturing(CudaContext *c, CUstream stream);
// A stream destroyed: a capture it began is forgotten.
void forget_capture(CudaContext *c, CUstream stream);
// context_destroy: the context's graphs and execs released in the driver.
void release_graphs(CudaContext *c);

}  // namespace gpuhal::cuda
