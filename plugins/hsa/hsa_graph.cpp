// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's stream capture and graphs (plugin.h, ABI 1.8). A capture
// records the plugin's own operations (plugins/common/capture_book.hpp
// keeps the bookkeeping and CUDA's rules): kernel dispatches with their
// configuration and argument bytes, and copies, memsets and callbacks as
// closures. A launch of the graph submits them again, in the recorded
// order, to the launching stream's queue: fresh completion signals, kernel
// arguments written again into the stream's ring, the barrier-AND packets
// of the stream's own ordering; none of the launch's checks. Branches of a
// fork run one after the other there, their order inside the graph kept.
#include <cstring>
#include <memory>
#include <string>

#include "hsa_context.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

bool record_in_capture(HsaContext *c, HsaStream *s, std::function<gpuhal_status_t(HsaStream *)> submit) {
  if (!c->captures.any()) return false;
  HsaGraphNode node;
  node.submit = std::move(submit);
  return c->captures.record(s, std::move(node), false);
}

namespace {

// One recorded operation submitted again to `s` (c->mu held).
gpuhal_status_t replay(HsaContext *c, HsaStream *s, const HsaGraphNode &n) {
  if (n.kernel) {
    std::vector<void *> ptrs(n.arg_offsets.size());
    for (size_t i = 0; i < ptrs.size(); ++i)
      ptrs[i] = const_cast<uint8_t *>(n.args.data() + n.arg_offsets[i]);  // read by dispatch only
    return dispatch(c, s, n.kernel, n.config, ptrs.data());
  }
  return n.submit ? n.submit(s) : GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t stream_begin_capture(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_begin_capture", [&](HsaContext *c) -> gpuhal_status_t {
    if (const gpuhal_status_t st = plugin::refuse_default_stream_capture(stream); st != GPUHAL_SUCCESS) return st;
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("stream_begin_capture");
    if (lock.foreign())
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                  "stream_begin_capture: the stream is another context's (another runtime's); begin its capture "
                  "through its own context");
    if (const gpuhal_status_t st = c->captures.refusal(s, false, "stream_begin_capture"); st != GPUHAL_SUCCESS)
      return st;
    return c->captures.begin(s, s->blocking, "stream_begin_capture");
  });
}

gpuhal_status_t stream_end_capture(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_graph_t *out) {
  return in_context(ctx, "stream_end_capture", [&](HsaContext *c) -> gpuhal_status_t {
    *out = nullptr;
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("stream_end_capture");
    plugin::CaptureBook<HsaStream, HsaGraphNode>::Graph recorded;
    if (const gpuhal_status_t st = c->captures.end(s, &recorded, "stream_end_capture"); st != GPUHAL_SUCCESS)
      return st;
    *out = c->graphs.add(std::move(recorded));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_is_capturing(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_is_capturing", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("stream_is_capturing");
    *out = c->captures.capturing(s) ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_info(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_info_t *out) {
  return in_context(ctx, "graph_info", [&](HsaContext *c) { return c->graphs.info(graph, out); });
}

gpuhal_status_t graph_destroy(gpuhal_context_t ctx, gpuhal_graph_t graph) {
  return in_context(ctx, "graph_destroy", [&](HsaContext *c) { return c->graphs.destroy(graph); });
}

gpuhal_status_t graph_instantiate(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_exec_t *out) {
  return in_context(ctx, "graph_instantiate", [&](HsaContext *c) { return c->graphs.instantiate(graph, out); });
}

// Its submissions are the streams' own operations: they finish.
gpuhal_status_t graph_exec_destroy(gpuhal_context_t ctx, gpuhal_graph_exec_t exec) {
  return in_context(ctx, "graph_exec_destroy", [&](HsaContext *c) { return c->graphs.destroy_exec(exec); });
}

gpuhal_status_t graph_exec_launch(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, gpuhal_stream_t stream) {
  return in_context(ctx, "graph_exec_launch", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("graph_exec_launch");
    gpuhal_status_t st = GPUHAL_SUCCESS;
    const std::shared_ptr<HsaGraphExec> x = c->graphs.exec(exec, "graph_exec_launch", &st);
    if (!x) return st;
    st = c->captures.refusal(s, s->legacy, "graph_exec_launch");
    if (st == GPUHAL_SUCCESS) st = c->captures.refuse(s, "graph_exec_launch", "launching a graph into a capture");
    if (st != GPUHAL_SUCCESS) return st;
    // After the exec's previous launch, wherever it ran.
    if (x->last && !x->last->done()) st = submit_marker(s, {x->last}, nullptr);
    const std::shared_ptr<const HsaGraphNodes> nodes = x->nodes;
    for (size_t i = 0; i < nodes->size() && st == GPUHAL_SUCCESS; ++i) st = replay(c, s, (*nodes)[i]);
    if (st != GPUHAL_SUCCESS) return st;
    x->last = s->last;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_exec_set_kernel_args(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, uint32_t kernel_node,
                                           void *const *args, uint32_t arg_count) {
  return in_context(ctx, "graph_exec_set_kernel_args", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    gpuhal_status_t st = GPUHAL_SUCCESS;
    const std::shared_ptr<HsaGraphExec> x = c->graphs.exec(exec, "graph_exec_set_kernel_args", &st);
    if (!x) return st;
    uint32_t index = 0;
    st = plugin::GraphStore<HsaGraphNode, HsaGraphExec>::kernel_node(*x, kernel_node, args, arg_count, &index);
    if (st != GPUHAL_SUCCESS) return st;
    const HsaGraphNode &old = (*x->nodes)[index];
    if (arg_count != old.arg_offsets.size())
      return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_exec_set_kernel_args: kernel " + old.kernel->md.name + " takes " +
                                                  std::to_string(old.arg_offsets.size()) + " argument(s), " +
                                                  std::to_string(arg_count) + " given");
    // Launches already made submitted their own copy of the arguments.
    auto nodes = std::make_shared<HsaGraphNodes>(*x->nodes);
    (*nodes)[index] = hsa::kernel_node(old.kernel, old.config, args);
    x->nodes = std::move(nodes);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::hsa
