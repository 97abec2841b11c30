// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend stream capture and graphs: host_graph.hpp says how.
#include "host_graph.hpp"

#include <cstring>

#include "host_plugin.hpp"
#include "host_entries.hpp"
#include "host_kernel.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

// ---- the graph entries of the plugin table ---------------------------------------------------------------

gpuhal_status_t stream_begin_capture(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_begin_capture", [&](HostContext *c) -> gpuhal_status_t {
    if (const gpuhal_status_t st = plugin::refuse_default_stream_capture(stream); st != GPUHAL_SUCCESS) return st;
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_begin_capture");
    return c->captures.begin(s.get(), !s->non_blocking && !s->is_default, "stream_begin_capture");
  });
}

gpuhal_status_t stream_end_capture(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_graph_t *out) {
  return in_context(ctx, "stream_end_capture", [&](HostContext *c) -> gpuhal_status_t {
    *out = nullptr;
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_end_capture");
    HostCaptureBook::Graph recorded;
    if (gpuhal_status_t st = c->captures.end(s.get(), &recorded, "stream_end_capture")) return st;
    *out = c->graphs.add(std::move(recorded));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_is_capturing(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_is_capturing", [&](HostContext *c) -> gpuhal_status_t {
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_is_capturing");
    *out = c->captures.capturing(s.get()) ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_info(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_info_t *out) {
  return in_context(ctx, "graph_info", [&](HostContext *c) { return c->graphs.info(graph, out); });
}

gpuhal_status_t graph_destroy(gpuhal_context_t ctx, gpuhal_graph_t graph) {
  return in_context(ctx, "graph_destroy", [&](HostContext *c) { return c->graphs.destroy(graph); });
}

gpuhal_status_t graph_instantiate(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_exec_t *out) {
  return in_context(ctx, "graph_instantiate", [&](HostContext *c) { return c->graphs.instantiate(graph, out); });
}

gpuhal_status_t graph_exec_destroy(gpuhal_context_t ctx, gpuhal_graph_exec_t exec) {
  return in_context(ctx, "graph_exec_destroy", [&](HostContext *c) { return c->graphs.destroy_exec(exec); });
}

gpuhal_status_t graph_exec_launch(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "graph_exec_launch",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     gpuhal_status_t st = GPUHAL_SUCCESS;
                     std::shared_ptr<HostGraphExec> x = c->graphs.exec(exec, "graph_exec_launch", &st);
                     if (!x) return st;
                     st = c->captures.refuse(s.get(), "graph_exec_launch", "launching a graph into a capture");
                     if (st != GPUHAL_SUCCESS) return st;
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
    gpuhal_status_t st = GPUHAL_SUCCESS;
    std::shared_ptr<HostGraphExec> x = c->graphs.exec(exec, "graph_exec_set_kernel_args", &st);
    if (!x) return st;
    std::lock_guard<std::mutex> lock(x->mu);
    uint32_t index = 0;
    st = HostGraphStore::kernel_node(*x, kernel_node, args, arg_count, &index);
    if (st != GPUHAL_SUCCESS) return st;
    const KernelLaunch &old = *(*x->nodes)[index].launch;
    const gpuhal_host_kernel *k = old.kernel;
    if (arg_count != k->param_count)
      return fail(GPUHAL_ERROR_INVALID_VALUE, std::string("graph_exec_set_kernel_args: kernel '") + k->name +
                                                  "' takes " + std::to_string(k->param_count) + " argument(s), " +
                                                  std::to_string(arg_count) + " given");
    auto fresh = std::make_shared<KernelLaunch>(old);
    for (uint32_t i = 0; i < arg_count; ++i) {
      std::memset(fresh->storage.data() + 8 * i, 0, 8);
      std::memcpy(fresh->storage.data() + 8 * i, args[i], k->param_sizes[i]);
      fresh->args[i] = fresh->storage.data() + 8 * i;
    }
    set_prefetch_limits(*fresh);
    // Launches already queued keep the list they were given.
    auto nodes = std::make_shared<HostGraphNodes>(*x->nodes);
    (*nodes)[index].launch = std::move(fresh);
    x->nodes = std::move(nodes);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::host
