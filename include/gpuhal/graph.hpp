// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Graphs: work recorded once from a stream and launched again with one call
// (CUDA graphs by stream capture; a recorded list of operations on the host
// backend).
//
//   stream.begin_capture();
//   for (int i = 0; i < 100; ++i) step(grid, block, stream)(x, y, n);  // recorded, not run
//   out.copy_from_device(y, stream);
//   gpuhal::GraphExec exec = stream.end_capture().instantiate();
//   for (;;) { exec.launch(stream); ... }                              // runs all of it
//
// Recorded between begin_capture and end_capture: kernel launches (device
// arrays and scalars as arguments), copies and memsets on the stream, event
// records and waits, and callbacks. A stream that waits for an event
// recorded on a capturing stream joins the capture (a fork); it must be
// joined back (the origin stream waits for an event recorded on it) before
// end_capture, else ERROR_CAPTURE_UNJOINED. Refused with
// ERROR_CAPTURE_UNSUPPORTED, and the capture invalidated (end_capture then
// fails with ERROR_CAPTURE_INVALIDATED and the stream runs its work again):
// synchronising or querying a capturing stream or an event recorded in the
// capture, waiting for an event recorded outside it, work on the legacy
// default stream while a blocking stream captures, and a copy the backend
// must finish before it returns. Refused before anything is recorded (the
// capture stays usable): host and mirrored arrays as kernel arguments (they
// need a copy back when the kernel is done). Allocations made while
// capturing are ordinary allocations, made once: the graph only uses them.
//
// Lifetime: a graph keeps every allocation, module and callback it
// recorded alive, and each exec keeps them too, so arrays may be dropped
// while a graph that names them lives. The host data of a recorded copy is
// read (or written) at each launch: keep it valid, as for any asynchronous
// copy. Thread safety: Graph and GraphExec are handles; launches of one
// exec run one after the other in the order they were made (each waits for
// the previous), also from several streams. Capability::Graphs says whether
// the backend can capture; without it begin_capture fails with
// ERROR_NOT_SUPPORTED.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "gpuhal/context.hpp"
#include "gpuhal/kernel.hpp"
#include "gpuhal/stream.hpp"

namespace gpuhal {

namespace detail {
struct GraphImpl;
struct GraphExecImpl;
}  // namespace detail

class GraphExec;

class Graph {
 public:
  Context context() const;
  // Every recorded operation, and the kernel launches among them.
  size_t node_count() const;
  size_t kernel_node_count() const;
  // An executable copy: launch it as often as needed. The graph may be
  // dropped afterwards.
  GraphExec instantiate() const;

  Graph() = default;

 private:
  friend struct detail::Access;
  explicit Graph(std::shared_ptr<detail::GraphImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::GraphImpl> impl_;
};

class GraphExec {
 public:
  Context context() const;
  size_t kernel_node_count() const;
  // Runs the whole graph on `stream`, ordered like any other work on it and
  // after this exec's previous launch.
  void launch(const Stream &stream) const;
  // New arguments for kernel node `kernel_node` (0-based, in the order the
  // launches were captured), checked and converted as Kernel::launch does
  // (device arrays and scalars only); launches made after the call use
  // them. ERROR_INDEX_OUT_OF_RANGE for a node the graph does not have.
  void update_kernel_args(size_t kernel_node, const std::vector<KernelArg> &args) const;

  GraphExec() = default;

 private:
  friend struct detail::Access;
  explicit GraphExec(std::shared_ptr<detail::GraphExecImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::GraphExecImpl> impl_;
};

}  // namespace gpuhal
