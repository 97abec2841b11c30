// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's stream capture and graphs (plugin.h, ABI 1.8): the
// driver's own (cuStreamBeginCapture in relaxed mode, cuStreamEndCapture,
// cuGraphInstantiateWithFlags, cuGraphLaunch,
// cuGraphExecKernelNodeSetParams). The capture rules are the driver's; the
// plugin adds what the ABI says and the driver leaves open: default streams
// cannot capture (CUDA lets the per-thread one), a second begin and an end
// without a capture are refused by name, and pageable host memory is
// refused in a captured copy (cuda_transfer.cpp: its staging would copy the
// data once, at capture).
//
// Relaxed mode: gpuhal's core and other libraries in the process may make
// "potentially unsafe" calls (cuMemAlloc) on the capturing thread; the
// stream-level rules still hold in that mode.
//
// Kernel nodes: after each launch on a capturing stream the driver's
// capture info names the node just added (the stream's only dependency);
// the plugin keeps it, with the launch, per capture, in capture order.
#include <memory>
#include <string>

#include "cuda_context.hpp"
#include "cuda_stream.hpp"
#include "capture_book.hpp"
#include "cuda_entries.hpp"
#include "cuda_thread_rules.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

namespace {

// The driver's capture status of `s` (CU_STREAM_CAPTURE_STATUS_*).
gpuhal_status_t capture_status(CUstream s, CUstreamCaptureStatus *status) {
  return cu_call(drv().cuStreamIsCapturing, "cuStreamIsCapturing", s, status);
}

// capture_mu held: c's capture begun on `s` ends.
void end_capture_locked(CudaContext *c, CUstream s) {
  if (c->captures.erase(s) != 0) c->active_captures.fetch_sub(1, std::memory_order_acq_rel);
}

}  // namespace

void note_captured_launch(CudaContext *c, CUstream stream, CUfunction f, const gpuhal_launch_config_t &config,
                          uint32_t arg_count) {
  if (!drv().cuStreamGetCaptureInfo_v3) return;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  uint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode *deps = nullptr;
  const api::CUgraphEdgeData *edges = nullptr;
  size_t count = 0;
  if (drv().cuStreamGetCaptureInfo_v3(stream, &status, &id, &graph, &deps, &edges, &count) != CUDA_SUCCESS ||
      status != CU_STREAM_CAPTURE_STATUS_ACTIVE || count != 1 || !deps)
    return;
  CudaKernelNode k;
  k.node = deps[0];
  k.function = f;
  for (int d = 0; d < 3; ++d) {
    k.grid[d] = config.grid[d];
    k.block[d] = config.block[d];
  }
  k.shared_bytes = config.dynamic_shared_bytes;
  k.arg_count = arg_count;
  std::lock_guard<std::mutex> lock(c->capture_mu);
  for (auto &cap : c->captures)
    if (cap.second.graph == graph) {
      cap.second.kernels.push_back(k);
      return;
    }
}

namespace {

// The graph `stream` captures into (null: it does not capture).
CUgraph capture_graph(CUstream stream, const CUgraphNode **deps, size_t *count) {
  if (!drv().cuStreamGetCaptureInfo_v3) return nullptr;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  uint64_t id = 0;
  CUgraph graph = nullptr;
  const api::CUgraphEdgeData *edges = nullptr;
  if (drv().cuStreamGetCaptureInfo_v3(stream, &status, &id, &graph, deps, &edges, count) != CUDA_SUCCESS ||
      status == CU_STREAM_CAPTURE_STATUS_NONE)
    return nullptr;
  return graph;
}

}  // namespace

bool stream_capturing(CudaContext *c, CUstream stream) {
  if (c->active_captures.load(std::memory_order_acquire) == 0) return false;
  const CUgraphNode *deps = nullptr;
  size_t count = 0;
  return capture_graph(stream, &deps, &count) != nullptr;
}

bool keep_for_capture(CudaContext *c, CUstream stream, std::shared_ptr<void> keep) {
  const CUgraphNode *deps = nullptr;
  size_t count = 0;
  const CUgraph graph = capture_graph(stream, &deps, &count);
  if (!graph) return false;
  std::lock_guard<std::mutex> lock(c->capture_mu);
  for (auto &cap : c->captures)
    if (cap.second.graph == graph) cap.second.kept.push_back(std::move(keep));
  return true;
}

void forget_capture(CudaContext *c, CUstream stream) {
  std::lock_guard<std::mutex> lock(c->capture_mu);
  end_capture_locked(c, stream);
}

void release_graphs(CudaContext *c) {
  std::lock_guard<std::mutex> lock(c->capture_mu);
  for (auto &x : c->graph_execs)
    if (drv().cuGraphExecDestroy) drv().cuGraphExecDestroy(x.second->exec);
  for (auto &g : c->graphs)
    if (drv().cuGraphDestroy) drv().cuGraphDestroy(g.second->graph);
  c->graph_execs.clear();
  c->graphs.clear();
  c->captures.clear();
  c->active_captures.store(0, std::memory_order_release);
}

gpuhal_status_t stream_begin_capture(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_begin_capture", [&](CudaContext *c) -> gpuhal_status_t {
    if (const gpuhal_status_t st = plugin::refuse_default_stream_capture(stream); st != GPUHAL_SUCCESS) return st;
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_begin_capture: invalid stream");
    const CUstream s = native(stream);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (const gpuhal_status_t st = capture_status(s, &status); st != GPUHAL_SUCCESS) return st;
    if (status != CU_STREAM_CAPTURE_STATUS_NONE)
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED, "stream_begin_capture: the stream is already capturing");
    std::lock_guard<std::mutex> lock(c->capture_mu);
    if (const gpuhal_status_t st =
            cu_call(drv().cuStreamBeginCapture, "cuStreamBeginCapture", s, CU_STREAM_CAPTURE_MODE_RELAXED);
        st != GPUHAL_SUCCESS)
      return st;
    CudaGraph record;
    uint64_t id = 0;
    const CUgraphNode *deps = nullptr;
    const api::CUgraphEdgeData *edges = nullptr;
    size_t count = 0;
    if (drv().cuStreamGetCaptureInfo_v3)
      drv().cuStreamGetCaptureInfo_v3(s, &status, &id, &record.graph, &deps, &edges, &count);
    c->captures[s] = std::move(record);
    c->active_captures.fetch_add(1, std::memory_order_acq_rel);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_end_capture(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_graph_t *out) {
  return in_context(ctx, "stream_end_capture", [&](CudaContext *c) -> gpuhal_status_t {
    *out = nullptr;
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_end_capture: invalid stream");
    const CUstream s = native(stream);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!plugin::default_stream_handle(stream)) {
      if (const gpuhal_status_t st = capture_status(s, &status); st != GPUHAL_SUCCESS) return st;
    }
    if (status == CU_STREAM_CAPTURE_STATUS_NONE)
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED, "stream_end_capture: the stream is not capturing");
    std::lock_guard<std::mutex> lock(c->capture_mu);
    CUgraph graph = nullptr;
    const CUresult r = drv().cuStreamEndCapture(s, &graph);
    if (r != CUDA_SUCCESS) {
      // The driver ends an invalidated or unjoined capture on its origin
      // stream; one ended elsewhere (UNMATCHED) goes on.
      CUstreamCaptureStatus after = CU_STREAM_CAPTURE_STATUS_NONE;
      if (drv().cuStreamIsCapturing(s, &after) == CUDA_SUCCESS && after == CU_STREAM_CAPTURE_STATUS_NONE)
        end_capture_locked(c, s);
      return drv().error(r, "cuStreamEndCapture");
    }
    auto g = std::make_unique<CudaGraph>();
    g->graph = graph;
    auto it = c->captures.find(s);
    if (it != c->captures.end()) {
      g->kernels = std::move(it->second.kernels);
      g->kept = std::move(it->second.kept);
    }
    end_capture_locked(c, s);
    *out = reinterpret_cast<gpuhal_graph_t>(g.get());
    const CudaGraph *key = g.get();
    c->graphs.emplace(key, std::move(g));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_is_capturing(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_is_capturing", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_is_capturing: invalid stream");
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (const gpuhal_status_t st = capture_status(native(stream), &status); st != GPUHAL_SUCCESS) return st;
    *out = status != CU_STREAM_CAPTURE_STATUS_NONE ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

namespace {

// capture_mu held.
CudaGraph *graph_of(CudaContext *c, gpuhal_graph_t g) {
  auto it = c->graphs.find(reinterpret_cast<const CudaGraph *>(g));
  return it == c->graphs.end() ? nullptr : it->second.get();
}
CudaGraphExec *exec_of(CudaContext *c, gpuhal_graph_exec_t x) {
  auto it = c->graph_execs.find(reinterpret_cast<const CudaGraphExec *>(x));
  return it == c->graph_execs.end() ? nullptr : it->second.get();
}

}  // namespace

gpuhal_status_t graph_info(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_info_t *out) {
  return in_context(ctx, "graph_info", [&](CudaContext *c) -> gpuhal_status_t {
    if (!out || out->struct_size < 2 * sizeof(uint32_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_info: null or short output struct");
    std::lock_guard<std::mutex> lock(c->capture_mu);
    CudaGraph *g = graph_of(c, graph);
    if (!g) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_info: not a graph of this context");
    size_t nodes = 0;
    if (const gpuhal_status_t st = cu_call(drv().cuGraphGetNodes, "cuGraphGetNodes", g->graph, nullptr, &nodes);
        st != GPUHAL_SUCCESS)
      return st;
    gpuhal_graph_info_t info{};
    info.abi_version = GPUHAL_ABI_VERSION;
    info.struct_size = sizeof info;
    info.node_count = uint32_t(nodes);
    info.kernel_node_count = uint32_t(g->kernels.size());
    plugin::write_versioned(out, info);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_destroy(gpuhal_context_t ctx, gpuhal_graph_t graph) {
  return in_context(ctx, "graph_destroy", [&](CudaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->capture_mu);
    CudaGraph *g = graph_of(c, graph);
    if (!g) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_destroy: not a graph of this context");
    if (const gpuhal_status_t st = cu_call(drv().cuGraphDestroy, "cuGraphDestroy", g->graph); st != GPUHAL_SUCCESS)
      return st;
    c->graphs.erase(g);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_instantiate(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_exec_t *out) {
  return in_context(ctx, "graph_instantiate", [&](CudaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->capture_mu);
    CudaGraph *g = graph_of(c, graph);
    if (!g) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_instantiate: not a graph of this context");
    auto x = std::make_unique<CudaGraphExec>();
    if (const gpuhal_status_t st =
            cu_call(drv().cuGraphInstantiate, "cuGraphInstantiateWithFlags", &x->exec, g->graph, 0ull);
        st != GPUHAL_SUCCESS)
      return st;
    x->kernels = g->kernels;  // the same node handles: SetParams takes the graph's node
    x->kept = g->kept;
    *out = reinterpret_cast<gpuhal_graph_exec_t>(x.get());
    const CudaGraphExec *key = x.get();
    c->graph_execs.emplace(key, std::move(x));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_exec_destroy(gpuhal_context_t ctx, gpuhal_graph_exec_t exec) {
  return in_context(ctx, "graph_exec_destroy", [&](CudaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->capture_mu);
    CudaGraphExec *x = exec_of(c, exec);
    if (!x) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_destroy: not a graph exec of this context");
    // cuda.h: "If the executable graph is in-flight, it will not be
    // terminated, but rather freed asynchronously on completion."
    if (const gpuhal_status_t st = cu_call(drv().cuGraphExecDestroy, "cuGraphExecDestroy", x->exec);
        st != GPUHAL_SUCCESS)
      return st;
    c->graph_execs.erase(x);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t graph_exec_launch(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, gpuhal_stream_t stream) {
  return in_context(ctx, "graph_exec_launch", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_launch: invalid stream");
    CUgraphExec x = nullptr;
    {
      std::lock_guard<std::mutex> lock(c->capture_mu);
      CudaGraphExec *e = exec_of(c, exec);
      if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_launch: not a graph exec of this context");
      x = e->exec;
    }
    const CUresult r = drv().cuGraphLaunch(x, native(stream));
    return r == CUDA_SUCCESS ? GPUHAL_SUCCESS : context_error(c, r, "cuGraphLaunch");
  });
}

gpuhal_status_t graph_exec_set_kernel_args(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, uint32_t kernel_node,
                                           void *const *args, uint32_t arg_count) {
  return in_context(ctx, "graph_exec_set_kernel_args", [&](CudaContext *c) -> gpuhal_status_t {
    if (arg_count && !args) return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_exec_set_kernel_args: null argument array");
    std::lock_guard<std::mutex> lock(c->capture_mu);
    CudaGraphExec *x = exec_of(c, exec);
    if (!x) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_set_kernel_args: not a graph exec of this context");
    if (kernel_node >= x->kernels.size())
      return fail(GPUHAL_ERROR_INDEX_OUT_OF_RANGE, "graph_exec_set_kernel_args: kernel node " +
                                                       std::to_string(kernel_node) + " of a graph with " +
                                                       std::to_string(x->kernels.size()));
    const CudaKernelNode &k = x->kernels[kernel_node];
    if (arg_count != k.arg_count)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_exec_set_kernel_args: the kernel was launched with " +
                                                  std::to_string(k.arg_count) + " argument(s), " +
                                                  std::to_string(arg_count) + " given");
    for (uint32_t i = 0; i < arg_count; ++i)
      if (!args[i])
        return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_exec_set_kernel_args: argument " + std::to_string(i) + " is null");
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = k.function;
    p.gridDimX = k.grid[0];
    p.gridDimY = k.grid[1];
    p.gridDimZ = k.grid[2];
    p.blockDimX = k.block[0];
    p.blockDimY = k.block[1];
    p.blockDimZ = k.block[2];
    p.sharedMemBytes = k.shared_bytes;
    p.kernelParams = const_cast<void **>(args);  // copied by the driver during the call
    return cu_call(drv().cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams", x->exec, k.node,
                   static_cast<const CUDA_KERNEL_NODE_PARAMS *>(&p));
  });
}

}  // namespace gpuhal::cuda
