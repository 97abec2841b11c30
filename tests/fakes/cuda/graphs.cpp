// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: stream capture and graphs, with the driver's documented
// rules (cuda.h of CUDA 13.0, quoted), the unpleasant ones first:
//  - cuStreamBeginCapture: "Capture may not be initiated if stream is
//    CU_STREAM_LEGACY" (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); a stream
//    already capturing: CUDA_ERROR_ILLEGAL_STATE.
//  - cuStreamIsCapturing: "if this is called on CU_STREAM_LEGACY (the "null
//    stream") while a blocking stream in the same context is capturing, it
//    will return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT ... The blocking stream
//    capture is not invalidated. When a blocking stream is capturing, the
//    legacy stream is in an unusable state until the blocking stream capture
//    is terminated." Work on the legacy stream then meets the same error and
//    does invalidate (its implicit dependency cannot be captured).
//  - CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: "the operation is not permitted
//    when the stream is capturing" (synchronize, query, the context's
//    synchronisation: "cudaDeviceSynchronize() will break cuda stream
//    capture regardless of the modes", TensorRT issue 2888).
//  - CUDA_ERROR_CAPTURED_EVENT: "the operation is not permitted on an event
//    which was last recorded in a capturing stream".
//  - CUDA_ERROR_STREAM_CAPTURE_ISOLATION: "a dependency would have been
//    created which crosses the capture sequence boundary";
//    CUDA_ERROR_STREAM_CAPTURE_MERGE: "would have resulted in a merge of two
//    independent capture sequences".
//  - CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: "the current capture sequence on
//    the stream has been invalidated due to a previous error"; "If capture
//    was invalidated, due to a violation of the rules of stream capture, then
//    a NULL graph will be returned" (cuStreamEndCapture).
//  - CUDA_ERROR_STREAM_CAPTURE_UNJOINED: "the capture sequence contains a
//    fork that was not joined to the primary stream";
//    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: "the capture was not initiated in
//    this stream".
//  - cuGraphLaunch: "Each launch is ordered behind both any previous work in
//    hStream and any previous launches of hGraphExec."
//  - cuGraphExecDestroy: "If the executable graph is in-flight, it will not
//    be terminated, but rather freed asynchronously on completion."
//  - cuGraphExecKernelNodeSetParams: the node must be a kernel node of the
//    graph the exec was instantiated from; later launches use the new
//    parameters, launches already made keep theirs.
#include <algorithm>

#include "fake_cuda.hpp"

namespace fake_cuda {

struct GraphNode {
  NodeType type = kEmptyNode;
  std::function<void()> run;
  std::vector<GraphNode *> deps;
  void *func = nullptr;  // kernel nodes: the function launched
};

struct Graph {
  int dev = -1;
  std::vector<std::unique_ptr<GraphNode>> nodes;
};

struct Capture {
  int dev = -1;
  uint64_t id = 0;
  Stream *origin = nullptr;
  std::unique_ptr<Graph> graph{new Graph()};
  bool invalidated = false;
  bool ended = false;
  // Every stream in the capture with its dependency set (the nodes its next
  // operation follows); kept alive while they capture.
  std::map<Stream *, std::pair<std::shared_ptr<Stream>, std::vector<GraphNode *>>> members;
  // cuStreamGetCaptureInfo's dependencies_out, valid until the next call.
  std::vector<GraphNode *> deps_out;
};

struct ExecNode {
  NodeType type;
  std::function<void()> run;
  void *func;
};

struct Exec {
  int dev = -1;
  std::mutex mu;
  std::shared_ptr<const std::vector<ExecNode>> nodes;
  std::map<const GraphNode *, size_t> index;  // the graph's nodes -> ours
  std::shared_ptr<Stream> last_stream;        // the previous launch's
  uint64_t last_ticket = 0;
};

namespace {

std::set<Capture *> g_captures;  // live ones (g_capture_mu)
uint64_t g_capture_ids = 0;
std::mutex g_graph_mu;
std::map<Graph *, std::unique_ptr<Graph>> g_graphs;
std::map<Exec *, std::shared_ptr<Exec>> g_execs;

// g_capture_mu held.
void invalidate(Capture &c) {
  c.invalidated = true;
}

// g_capture_mu held: `s` joins `cap` after `deps`.
void join(const std::shared_ptr<Capture> &cap, const std::shared_ptr<Stream> &s, std::vector<GraphNode *> deps) {
  cap->members[s.get()] = {s, std::move(deps)};
  s->capture = cap;
  s->capturing = true;
  if (s->blocking) ++g_blocking_captures[cap->dev];
}

// g_capture_mu held: every stream leaves `cap`.
void end(Capture &cap) {
  cap.ended = true;
  for (auto &m : cap.members) {
    m.second.first->capture.reset();
    m.second.first->capturing = false;
    if (m.second.first->blocking) --g_blocking_captures[cap.dev];
  }
  cap.members.clear();
  g_captures.erase(&cap);
}

// Whether `target` is `from` or an ancestor of it.
bool reaches(const GraphNode *from, const GraphNode *target) {
  std::vector<const GraphNode *> todo{from};
  std::set<const GraphNode *> seen;
  while (!todo.empty()) {
    const GraphNode *n = todo.back();
    todo.pop_back();
    if (n == target) return true;
    if (!seen.insert(n).second) continue;
    for (const GraphNode *d : n->deps) todo.push_back(d);
  }
  return false;
}

Graph *known_graph(void *g) {
  std::lock_guard<std::mutex> lock(g_graph_mu);
  auto it = g_graphs.find(static_cast<Graph *>(g));
  return it == g_graphs.end() ? nullptr : it->second.get();
}

std::shared_ptr<Exec> known_exec(void *x) {
  std::lock_guard<std::mutex> lock(g_graph_mu);
  auto it = g_execs.find(static_cast<Exec *>(x));
  return it == g_execs.end() ? nullptr : it->second;
}

}  // namespace

CUresult capture_submit(const std::shared_ptr<Stream> &target, std::function<void()> &fn, NodeType type,
                        bool *recorded, void *func) {
  *recorded = false;
  if (target == g_legacy) {
    const int dev = current();
    if (dev < 0 || g_blocking_captures[dev].load() == 0) return OK;
    std::lock_guard<std::mutex> lock(g_capture_mu);
    bool any = false;
    for (Capture *c : g_captures)
      for (auto &m : c->members)
        if (c->dev == dev && m.second.first->blocking) {
          invalidate(*c);
          any = true;
        }
    return any ? CAPTURE_IMPLICIT : OK;
  }
  if (!target->capturing.load()) return OK;
  std::lock_guard<std::mutex> lock(g_capture_mu);
  const std::shared_ptr<Capture> cap = target->capture;
  if (!cap) return OK;
  if (cap->invalidated) return CAPTURE_INVALIDATED;
  auto node = std::make_unique<GraphNode>();
  node->type = type;
  node->run = std::move(fn);
  node->func = func;
  auto &deps = cap->members[target.get()].second;
  node->deps = deps;
  deps = {node.get()};
  cap->graph->nodes.push_back(std::move(node));
  *recorded = true;
  return OK;
}

CUresult refuse_if_capturing(const std::shared_ptr<Stream> &target, CUresult code) {
  if (!target->capturing.load()) return OK;
  std::lock_guard<std::mutex> lock(g_capture_mu);
  if (!target->capture) return OK;
  invalidate(*target->capture);
  return code;
}

CUresult refuse_sync_in_capture(int dev, bool whole_context) {
  if (g_blocking_captures[dev].load() == 0 && !whole_context) return OK;
  std::lock_guard<std::mutex> lock(g_capture_mu);
  bool any = false;
  for (Capture *c : g_captures) {
    if (c->dev != dev) continue;
    bool hit = whole_context;
    for (auto &m : c->members) hit = hit || m.second.first->blocking;
    if (hit) {
      invalidate(*c);
      any = true;
    }
  }
  if (!any) return OK;
  return whole_context ? CAPTURE_UNSUPPORTED : CAPTURE_IMPLICIT;
}

// The event rules, for the entries in events.cpp and streams.cpp: an event
// last recorded in a live capture (g_capture_mu taken here).
CUresult refuse_captured_event(Event &ev) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  std::lock_guard<std::mutex> elock(ev.mu);
  if (!ev.capture || ev.capture->ended) return OK;
  invalidate(*ev.capture);
  return CAPTURED_EVENT;
}

// cuEventRecord on a capturing stream: true when recorded in its capture
// (*result says how it went).
bool capture_record(Event &ev, const std::shared_ptr<Stream> &target, CUresult *result) {
  if (!target->capturing.load()) {
    std::lock_guard<std::mutex> lock(g_capture_mu);
    std::lock_guard<std::mutex> elock(ev.mu);
    ev.capture.reset();  // recorded outside a capture again
    return false;
  }
  std::lock_guard<std::mutex> lock(g_capture_mu);
  const std::shared_ptr<Capture> cap = target->capture;
  if (!cap) return false;
  *result = cap->invalidated ? CAPTURE_INVALIDATED : OK;
  if (*result != OK) return true;
  std::lock_guard<std::mutex> elock(ev.mu);
  ev.capture = cap;
  ev.capture_deps.assign(cap->members[target.get()].second.begin(), cap->members[target.get()].second.end());
  ev.stream.reset();
  ev.ticket = 0;
  ev.has_time = false;
  return true;
}

// cuStreamWaitEvent when the stream captures or the event was recorded in a
// capture: true when handled here (*result says how it went).
bool capture_wait(Event &ev, const std::shared_ptr<Stream> &target, CUresult *result) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  std::shared_ptr<Capture> ecap;
  std::vector<GraphNode *> edeps;
  bool recorded_outside;
  {
    std::lock_guard<std::mutex> elock(ev.mu);
    if (ev.capture && !ev.capture->ended) {
      ecap = ev.capture;
      for (void *d : ev.capture_deps) edeps.push_back(static_cast<GraphNode *>(d));
    }
    recorded_outside = !ecap && ev.stream != nullptr;
  }
  const std::shared_ptr<Capture> scap = target->capture;
  if (!ecap && !scap) return false;
  *result = OK;
  if (ecap && !scap) {
    if (target == g_legacy) {  // the legacy stream cannot join a capture
      invalidate(*ecap);
      *result = CAPTURE_UNSUPPORTED;
    } else if (ecap->invalidated) {
      *result = CAPTURE_INVALIDATED;
    } else {
      join(ecap, target, edeps);  // a fork
    }
    return true;
  }
  if (scap->invalidated) {
    *result = CAPTURE_INVALIDATED;
    return true;
  }
  if (ecap == scap) {
    auto &deps = scap->members[target.get()].second;
    for (GraphNode *d : edeps)
      if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
    return true;
  }
  if (ecap) {
    invalidate(*ecap);
    invalidate(*scap);
    *result = CAPTURE_MERGE;
  } else if (recorded_outside) {
    invalidate(*scap);
    *result = CAPTURE_ISOLATION;
  }
  return true;
}

// cuStreamDestroy of a capturing stream: its capture is invalidated.
void capture_stream_destroyed(Stream *s) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  const std::shared_ptr<Capture> cap = s->capture;
  if (!cap) return;
  invalidate(*cap);
  if (cap->origin == s) {
    end(*cap);
    return;
  }
  if (s->blocking) --g_blocking_captures[cap->dev];
  s->capture.reset();
  s->capturing = false;
  cap->members.erase(s);
}

// destroy_context: the device's graphs and execs go with it.
void destroy_graphs_of(int dev) {
  std::lock_guard<std::mutex> lock(g_graph_mu);
  for (auto it = g_graphs.begin(); it != g_graphs.end();) it = it->second->dev == dev ? g_graphs.erase(it) : std::next(it);
  for (auto it = g_execs.begin(); it != g_execs.end();) it = it->second->dev == dev ? g_execs.erase(it) : std::next(it);
}

}  // namespace fake_cuda

using namespace fake_cuda;

extern "C" {

API CUresult cuStreamBeginCapture_v2(CUstream s, int mode) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamBeginCapture_v2", &dev); r != OK) return r;
  const std::shared_ptr<Stream> target = lookup(s);
  if (target == g_legacy) return CAPTURE_UNSUPPORTED;
  if (mode < 0 || mode > 2) return INVALID_VALUE;
  if (mode != 2) return NOT_SUPPORTED;  // only CU_STREAM_CAPTURE_MODE_RELAXED is modelled (fake_cuda.hpp)
  std::lock_guard<std::mutex> lock(g_capture_mu);
  if (target->capture) return ILLEGAL_STATE;
  auto cap = std::make_shared<Capture>();
  cap->dev = dev;
  cap->id = ++g_capture_ids;
  cap->origin = target.get();
  cap->graph->dev = dev;
  join(cap, target, {});
  g_captures.insert(cap.get());
  return OK;
}

API CUresult cuStreamEndCapture(CUstream s, void **graph_out) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamEndCapture", &dev); r != OK) return r;
  if (!graph_out) return INVALID_VALUE;
  *graph_out = nullptr;
  const std::shared_ptr<Stream> target = lookup(s);
  std::unique_ptr<Graph> graph;
  {
    std::lock_guard<std::mutex> lock(g_capture_mu);
    const std::shared_ptr<Capture> cap = target->capture;
    if (!cap) return ILLEGAL_STATE;
    if (cap->origin != target.get()) {
      invalidate(*cap);
      return CAPTURE_UNMATCHED;
    }
    bool joined = true;
    const auto &origin_deps = cap->members[target.get()].second;
    for (const auto &m : cap->members) {
      if (m.first == target.get()) continue;
      for (const GraphNode *tail : m.second.second) {
        bool reached = false;
        for (const GraphNode *o : origin_deps) reached = reached || reaches(o, tail);
        joined = joined && reached;
      }
    }
    end(*cap);
    if (cap->invalidated) return CAPTURE_INVALIDATED;
    if (!joined) return CAPTURE_UNJOINED;
    graph = std::move(cap->graph);
  }
  std::lock_guard<std::mutex> lock(g_graph_mu);
  Graph *g = graph.get();
  g_graphs.emplace(g, std::move(graph));
  *graph_out = g;
  return OK;
}

// CUstreamCaptureStatus: 0 none, 1 active, 2 invalidated.
API CUresult cuStreamIsCapturing(CUstream s, int *status) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamIsCapturing", &dev); r != OK) return r;
  if (!status) return INVALID_VALUE;
  const std::shared_ptr<Stream> target = lookup(s);
  if (target == g_legacy && g_blocking_captures[dev].load() != 0) return CAPTURE_IMPLICIT;  // not invalidated
  std::lock_guard<std::mutex> lock(g_capture_mu);
  *status = !target->capture ? 0 : target->capture->invalidated ? 2 : 1;
  return OK;
}

API CUresult cuStreamGetCaptureInfo_v3(CUstream s, int *status, uint64_t *id, void **graph, void *const **deps,
                                       const void **edges, size_t *count) {
  if (const CUresult f = injected("cuStreamGetCaptureInfo_v3"); f != OK) return f;
  if (edges) *edges = nullptr;  // "all edges are default (zeroed)"
  int dev = -1;
  if (const CUresult c = context_call(&dev); c != OK) return c;
  if (!status) return INVALID_VALUE;
  const std::shared_ptr<Stream> target = lookup(s);
  if (target == g_legacy && g_blocking_captures[dev].load() != 0) return CAPTURE_IMPLICIT;
  std::lock_guard<std::mutex> lock(g_capture_mu);
  const std::shared_ptr<Capture> cap = target->capture;
  *status = !cap ? 0 : cap->invalidated ? 2 : 1;
  if (!cap) return OK;
  if (id) *id = cap->id;
  if (graph) *graph = cap->graph.get();
  cap->deps_out = cap->members[target.get()].second;
  if (deps) *deps = reinterpret_cast<void *const *>(cap->deps_out.data());
  if (count) *count = cap->deps_out.size();
  return OK;
}

API CUresult cuGraphGetNodes(void *graph, void **nodes, size_t *count) {
  int dev = -1;
  if (const CUresult r = context_entry("cuGraphGetNodes", &dev); r != OK) return r;
  Graph *g = known_graph(graph);
  if (!g || !count) return INVALID_VALUE;
  if (nodes)
    for (size_t i = 0; i < std::min(*count, g->nodes.size()); ++i) nodes[i] = g->nodes[i].get();
  *count = g->nodes.size();
  return OK;
}

API CUresult cuGraphDestroy(void *graph) {
  int dev = -1;
  if (const CUresult r = context_entry("cuGraphDestroy", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_graph_mu);
  return g_graphs.erase(static_cast<Graph *>(graph)) ? OK : INVALID_VALUE;
}

API CUresult cuGraphInstantiateWithFlags(void **exec_out, void *graph, unsigned long long flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuGraphInstantiateWithFlags", &dev); r != OK) return r;
  if (!exec_out || flags != 0) return INVALID_VALUE;
  Graph *g = known_graph(graph);
  if (!g) return INVALID_VALUE;
  auto x = std::make_shared<Exec>();
  x->dev = g->dev;
  auto nodes = std::make_shared<std::vector<ExecNode>>();
  // Nodes were appended after their dependencies: the list in order is a
  // valid schedule.
  for (const auto &n : g->nodes) {
    x->index[n.get()] = nodes->size();
    nodes->push_back({n->type, n->run, n->func});
  }
  x->nodes = std::move(nodes);
  std::lock_guard<std::mutex> lock(g_graph_mu);
  g_execs.emplace(x.get(), x);
  *exec_out = x.get();
  return OK;
}

API CUresult cuGraphLaunch(void *exec, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuGraphLaunch", &dev); r != OK) return r;
  const std::shared_ptr<Exec> x = known_exec(exec);
  if (!x) return INVALID_VALUE;
  const std::shared_ptr<Stream> target = lookup(s);
  if (const CUresult r = refuse_if_capturing(target, CAPTURE_UNSUPPORTED); r != OK) return r;  // no child graphs here
  std::lock_guard<std::mutex> lock(x->mu);
  const std::shared_ptr<Stream> prev = x->last_stream;
  const uint64_t prev_ticket = x->last_ticket;
  const CUresult r = submit(s, [prev, prev_ticket, nodes = x->nodes] {
    if (prev) prev->wait(prev_ticket);  // after the exec's previous launch
    for (const ExecNode &n : *nodes)
      if (n.run) n.run();
  });
  if (r != OK) return r;
  x->last_stream = target;
  x->last_ticket = target->last();
  return OK;
}

// cuda.h CUDA_KERNEL_NODE_PARAMS_v2.
struct KernelNodeParams {
  void *func;
  unsigned grid[3];
  unsigned block[3];
  unsigned sharedMemBytes;
  void **kernelParams;
  void **extra;
  void *kern;
  void *ctx;
};

API CUresult cuGraphExecKernelNodeSetParams_v2(void *exec, void *node, const KernelNodeParams *p) {
  int dev = -1;
  if (const CUresult r = context_entry("cuGraphExecKernelNodeSetParams_v2", &dev); r != OK) return r;
  const std::shared_ptr<Exec> x = known_exec(exec);
  if (!x || !p || !p->func) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(x->mu);
  auto it = x->index.find(static_cast<const GraphNode *>(node));
  if (it == x->index.end() || (*x->nodes)[it->second].type != kKernelNode) return INVALID_VALUE;
  if ((*x->nodes)[it->second].func != p->func) return INVALID_VALUE;  // "cannot change the function's context"
  PreparedLaunch launch;
  if (const CUresult r = prepare_launch(p->func, p->grid, p->block, p->sharedMemBytes, p->kernelParams, p->extra, dev,
                                        &launch);
      r != OK)
    return r;
  // Launches already made keep the list they were given.
  auto nodes = std::make_shared<std::vector<ExecNode>>(*x->nodes);
  (*nodes)[it->second].run = launch.node();
  x->nodes = std::move(nodes);
  return OK;
}

API CUresult cuGraphExecDestroy(void *exec) {
  int dev = -1;
  if (const CUresult r = context_entry("cuGraphExecDestroy", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_graph_mu);
  return g_execs.erase(static_cast<Exec *>(exec)) ? OK : INVALID_VALUE;  // launches in flight hold the nodes
}

}  // extern "C"
