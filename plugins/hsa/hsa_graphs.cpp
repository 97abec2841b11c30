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

bool default_stream(gpuhal_stream_t s) {
  return !s || s == GPUHAL_STREAM_LEGACY || s == GPUHAL_STREAM_PER_THREAD;
}

HsaGraph *graph_of(HsaContext *c, gpuhal_graph_t g) {
  auto it = c->graphs.find(reinterpret_cast<HsaGraph *>(g));
  return it == c->graphs.end() ? nullptr : it->second.get();
}

HsaGraphExec *exec_of(HsaContext *c, gpuhal_graph_exec_t x) {
  auto it = c->graph_execs.find(reinterpret_cast<HsaGraphExec *>(x));
  return it == c->graph_execs.end() ? nullptr : it->second.get();
}

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
    if (default_stream(stream))
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                  "stream_begin_capture: a default stream cannot capture (it synchronises with the context's other "
                  "streams); capture on a stream of your own");
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_begin_capture: invalid stream");
    if (const gpuhal_status_t st = c->captures.refusal(s, false, "stream_begin_capture"); st != GPUHAL_SUCCESS)
      return st;
    return c->captures.begin(s, s->blocking, "stream_begin_capture");
  });
}

gpuhal_status_t stream_end_capture(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_graph_t *out) {
  return in_context(ctx, "stream_end_capture", [&](HsaContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_end_capture: null output pointer");
    *out = nullptr;
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_end_capture: invalid stream");
    plugin::CaptureBook<HsaStream, HsaGraphNode>::Graph recorded;
    if (const gpuhal_status_t st = c->captures.end(s, &recorded, "stream_end_capture"); st != GPUHAL_SUCCESS)
      return st;
    auto nodes = std::make_shared<HsaGraphNodes>();
    nodes->reserve(recorded.nodes.size());
    for (auto &r : recorded.nodes) nodes->push_back(std::move(r.node));
    auto g = std::make_unique<HsaGraph>();
    g->nodes = std::move(nodes);
    g->kernel_nodes = recorded.kernel_nodes;
    *out = reinterpret_cast<gpuhal_graph_t>(g.get());
    HsaGraph *key = g.get();
    c->graphs.emplace(key, std::move(g));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_is_capturing(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_is_capturing", [&](HsaContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_is_capturing: null output pointer");
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_is_capturing: invalid stream");
    *out = c->captures.capturing(s) ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_info(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_info_t *out) {
  return in_context(ctx, "graph_info", [&](HsaContext *c) -> gpuhal_status_t {
    if (!out || out->struct_size < 2 * sizeof(uint32_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_info: null or short output struct");
    std::lock_guard<std::mutex> lock(c->mu);
    HsaGraph *g = graph_of(c, graph);
    if (!g) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_info: not a graph of this context");
    gpuhal_graph_info_t info{};
    info.abi_version = GPUHAL_ABI_VERSION;
    info.struct_size = sizeof info;
    info.node_count = uint32_t(g->nodes->size());
    info.kernel_node_count = g->kernel_nodes;
    plugin::write_versioned(out, info);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_destroy(gpuhal_context_t ctx, gpuhal_graph_t graph) {
  return in_context(ctx, "graph_destroy", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    return c->graphs.erase(reinterpret_cast<HsaGraph *>(graph))
               ? GPUHAL_SUCCESS
               : fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_destroy: not a graph of this context");
  });
}

gpuhal_status_t graph_instantiate(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_exec_t *out) {
  return in_context(ctx, "graph_instantiate", [&](HsaContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_instantiate: null output pointer");
    std::lock_guard<std::mutex> lock(c->mu);
    HsaGraph *g = graph_of(c, graph);
    if (!g) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_instantiate: not a graph of this context");
    auto x = std::make_unique<HsaGraphExec>();
    x->nodes = g->nodes;  // shared until an update copies them
    for (uint32_t i = 0; i < g->nodes->size(); ++i)
      if ((*g->nodes)[i].kernel) x->kernel_node_index.push_back(i);
    *out = reinterpret_cast<gpuhal_graph_exec_t>(x.get());
    HsaGraphExec *key = x.get();
    c->graph_execs.emplace(key, std::move(x));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_exec_destroy(gpuhal_context_t ctx, gpuhal_graph_exec_t exec) {
  return in_context(ctx, "graph_exec_destroy", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    // Its submissions are the streams' own operations: they finish.
    return c->graph_execs.erase(reinterpret_cast<HsaGraphExec *>(exec))
               ? GPUHAL_SUCCESS
               : fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_destroy: not a graph exec of this context");
  });
}

gpuhal_status_t graph_exec_launch(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, gpuhal_stream_t stream) {
  return in_context(ctx, "graph_exec_launch", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_launch: invalid stream");
    HsaGraphExec *x = exec_of(c, exec);
    if (!x) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_launch: not a graph exec of this context");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "graph_exec_launch"); st != GPUHAL_SUCCESS)
      return st;
    if (const gpuhal_status_t st = c->captures.refuse(s, "graph_exec_launch", "launching a graph into a capture");
        st != GPUHAL_SUCCESS)
      return st;
    // After the exec's previous launch, wherever it ran.
    if (x->last && !x->last->done())
      if (const gpuhal_status_t st = submit_marker(s, {x->last}, nullptr); st != GPUHAL_SUCCESS) return st;
    const std::shared_ptr<const HsaGraphNodes> nodes = x->nodes;
    for (const HsaGraphNode &n : *nodes)
      if (const gpuhal_status_t st = replay(c, s, n); st != GPUHAL_SUCCESS) return st;
    x->last = s->last;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_exec_set_kernel_args(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, uint32_t kernel_node,
                                           void *const *args, uint32_t arg_count) {
  return in_context(ctx, "graph_exec_set_kernel_args", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    HsaGraphExec *x = exec_of(c, exec);
    if (!x) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_set_kernel_args: not a graph exec of this context");
    if (kernel_node >= x->kernel_node_index.size())
      return fail(GPUHAL_ERROR_INDEX_OUT_OF_RANGE, "graph_exec_set_kernel_args: kernel node " +
                                                       std::to_string(kernel_node) + " of a graph with " +
                                                       std::to_string(x->kernel_node_index.size()));
    const uint32_t index = x->kernel_node_index[kernel_node];
    const HsaGraphNode &old = (*x->nodes)[index];
    if (arg_count != old.arg_offsets.size())
      return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_exec_set_kernel_args: kernel " + old.kernel->md.name + " takes " +
                                                  std::to_string(old.arg_offsets.size()) + " argument(s), " +
                                                  std::to_string(arg_count) + " given");
    for (uint32_t i = 0; i < arg_count; ++i)
      if (!args || !args[i])
        return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_exec_set_kernel_args: argument " + std::to_string(i) + " is null");
    // Launches already made submitted their own copy of the arguments.
    auto nodes = std::make_shared<HsaGraphNodes>(*x->nodes);
    (*nodes)[index] = hsa::kernel_node(old.kernel, old.config, args);
    x->nodes = std::move(nodes);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::hsa
