// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend stream capture and graphs: host_graph.hpp says how.
#include "host_graph.hpp"

#include <cstring>

#include "host_context.hpp"
#include "host_entries.hpp"
#include "host_kernels.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

// ---- the graph entries of the plugin table ---------------------------------------------------------------

gpuhal_status_t stream_begin_capture(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_begin_capture", [&](HostContext *c) -> gpuhal_status_t {
    if (default_stream_handle(stream))
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                  "stream_begin_capture: a default stream cannot capture (it synchronises with the context's other "
                  "streams); capture on a stream of your own");
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_begin_capture");
    return c->captures.begin(s.get(), !s->non_blocking && !s->is_default, "stream_begin_capture");
  });
}

gpuhal_status_t stream_end_capture(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_graph_t *out) {
  return in_context(ctx, "stream_end_capture", [&](HostContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_end_capture: null output pointer");
    *out = nullptr;
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_end_capture");
    HostCaptureBook::Graph recorded;
    if (gpuhal_status_t st = c->captures.end(s.get(), &recorded, "stream_end_capture")) return st;
    auto nodes = std::make_shared<HostGraphNodes>();
    nodes->reserve(recorded.nodes.size());
    for (auto &r : recorded.nodes) nodes->push_back(std::move(r.node));
    auto g = std::make_unique<HostGraph>();
    g->kernel_nodes = recorded.kernel_nodes;
    g->nodes = std::move(nodes);
    *out = reinterpret_cast<gpuhal_graph_t>(g.get());
    std::lock_guard<std::mutex> lock(c->graphs_mu);
    HostGraph *key = g.get();
    c->graphs.emplace(key, std::move(g));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_is_capturing(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_is_capturing", [&](HostContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_is_capturing: null output pointer");
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_is_capturing");
    *out = c->captures.capturing(s.get()) ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

namespace {

HostGraph *find_graph(HostContext *c, gpuhal_graph_t graph) {
  auto it = c->graphs.find(reinterpret_cast<HostGraph *>(graph));
  return it == c->graphs.end() ? nullptr : it->second.get();
}

std::shared_ptr<HostGraphExec> find_exec(HostContext *c, gpuhal_graph_exec_t exec) {
  std::lock_guard<std::mutex> lock(c->graphs_mu);
  auto it = c->graph_execs.find(reinterpret_cast<HostGraphExec *>(exec));
  return it == c->graph_execs.end() ? nullptr : it->second;
}

}  // namespace

gpuhal_status_t graph_info(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_info_t *out) {
  return in_context(ctx, "graph_info", [&](HostContext *c) -> gpuhal_status_t {
    if (!out || out->struct_size < 2 * sizeof(uint32_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_info: null or short output struct");
    std::lock_guard<std::mutex> lock(c->graphs_mu);
    HostGraph *g = find_graph(c, graph);
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
  return in_context(ctx, "graph_destroy", [&](HostContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->graphs_mu);
    return c->graphs.erase(reinterpret_cast<HostGraph *>(graph))
               ? GPUHAL_SUCCESS
               : fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_destroy: not a graph of this context");
  });
}

gpuhal_status_t graph_instantiate(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_exec_t *out) {
  return in_context(ctx, "graph_instantiate", [&](HostContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_instantiate: null output pointer");
    std::lock_guard<std::mutex> lock(c->graphs_mu);
    HostGraph *g = find_graph(c, graph);
    if (!g) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_instantiate: not a graph of this context");
    auto x = std::make_shared<HostGraphExec>();
    x->nodes = g->nodes;  // shared until an update copies them
    for (uint32_t i = 0; i < g->nodes->size(); ++i)
      if ((*g->nodes)[i].launch) x->kernel_node_index.push_back(i);
    c->graph_execs.emplace(x.get(), x);
    *out = reinterpret_cast<gpuhal_graph_exec_t>(x.get());
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_exec_destroy(gpuhal_context_t ctx, gpuhal_graph_exec_t exec) {
  return in_context(ctx, "graph_exec_destroy", [&](HostContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->graphs_mu);
    // Launches still queued hold the node list: they finish.
    return c->graph_execs.erase(reinterpret_cast<HostGraphExec *>(exec))
               ? GPUHAL_SUCCESS
               : fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_destroy: not a graph exec of this context");
  });
}

gpuhal_status_t graph_exec_launch(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "graph_exec_launch",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     std::shared_ptr<HostGraphExec> x = find_exec(c, exec);
                     if (!x) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_launch: not a graph exec of this context");
                     if (gpuhal_status_t st = c->captures.refuse(s.get(), "graph_exec_launch",
                                                                 "launching a graph into a capture"))
                       return st;
                     std::lock_guard<std::mutex> lock(x->mu);
                     std::vector<Dep> deps;
                     if (x->last_launch.stream) deps.push_back(x->last_launch);
                     ThreadPool *pool = &shared_pool();
                     StackPool *stacks = &shared_stacks();
                     const uint64_t ticket = c->submit(
                         s,
                         [c, nodes = x->nodes, pool, stacks](bool ok) {
                           for (const HostGraphNode &n : *nodes) {
                             if (n.launch) {
                               if (!ok) continue;
                               const std::string err = run_kernel(*pool, *stacks, *n.launch);
                               if (!err.empty()) {
                                 c->set_kernel_error(err);
                                 ok = false;  // what follows a failed kernel does not run; callbacks see the error
                               }
                             } else if (n.run) {
                               n.run(ok);
                             }
                           }
                         },
                         std::move(deps));
                     x->last_launch = Dep{s, ticket};
                     return GPUHAL_SUCCESS;
                   });
}

gpuhal_status_t graph_exec_set_kernel_args(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, uint32_t kernel_node,
                                           void *const *args, uint32_t arg_count) {
  return in_context(ctx, "graph_exec_set_kernel_args", [&](HostContext *c) -> gpuhal_status_t {
    std::shared_ptr<HostGraphExec> x = find_exec(c, exec);
    if (!x) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_set_kernel_args: not a graph exec of this context");
    std::lock_guard<std::mutex> lock(x->mu);
    if (kernel_node >= x->kernel_node_index.size())
      return fail(GPUHAL_ERROR_INDEX_OUT_OF_RANGE, "graph_exec_set_kernel_args: kernel node " +
                                                       std::to_string(kernel_node) + " of a graph with " +
                                                       std::to_string(x->kernel_node_index.size()));
    const uint32_t index = x->kernel_node_index[kernel_node];
    const KernelLaunch &old = *(*x->nodes)[index].launch;
    const gpuhal_host_kernel *k = old.kernel;
    if (arg_count != k->param_count)
      return fail(GPUHAL_ERROR_INVALID_VALUE, std::string("graph_exec_set_kernel_args: kernel '") + k->name +
                                                  "' takes " + std::to_string(k->param_count) + " argument(s), " +
                                                  std::to_string(arg_count) + " given");
    for (uint32_t i = 0; i < arg_count; ++i)
      if (!args || !args[i])
        return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_exec_set_kernel_args: argument " + std::to_string(i) + " is null");
    auto fresh = std::make_shared<KernelLaunch>(old);
    for (uint32_t i = 0; i < arg_count; ++i) {
      std::memset(fresh->storage.data() + 8 * i, 0, 8);
      std::memcpy(fresh->storage.data() + 8 * i, args[i], k->param_sizes[i]);
      fresh->args[i] = fresh->storage.data() + 8 * i;
    }
    // Launches already queued keep the list they were given.
    auto nodes = std::make_shared<HostGraphNodes>(*x->nodes);
    (*nodes)[index].launch = std::move(fresh);
    x->nodes = std::move(nodes);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::host
