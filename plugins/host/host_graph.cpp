// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend stream capture and graphs: host_graph.hpp says how.
#include "host_graph.hpp"

#include <algorithm>
#include <cstring>

#include "host_context.hpp"
#include "host_entries.hpp"
#include "host_kernels.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

HostCapture::Member *HostCapture::member(const StreamState *s) {
  for (Member &m : members)
    if (m.stream.get() == s) return &m;
  return nullptr;
}

namespace {

// capture_mu held. Marks the capture invalid (the first reason is kept).
void invalidate(HostCapture &cap, const std::string &why) {
  if (cap.invalidated) return;
  cap.invalidated = true;
  cap.why = why;
}

// capture_mu held. `s` leaves its capture.
void leave(HostContext *c, StreamState &s) {
  s.capture.reset();
  s.capturing.store(false, std::memory_order_release);
  if (!s.non_blocking) {
    c->blocking_captures.fetch_sub(1, std::memory_order_acq_rel);
    s.progress->busy_blocking.fetch_sub(1, std::memory_order_acq_rel);
  }
}

// capture_mu held. Ends the capture: its streams run their work again.
void end(HostContext *c, HostCapture &cap) {
  cap.ended = true;
  c->active_captures.fetch_sub(1, std::memory_order_acq_rel);
  for (auto &m : cap.members) leave(c, *m.stream);
  cap.members.clear();
}

// capture_mu held. Joins `s` to `cap` with its position after node `after`
// (-1: none).
void join(HostContext *c, const std::shared_ptr<HostCapture> &cap, const std::shared_ptr<StreamState> &s,
          int64_t after) {
  cap->members.push_back({s, after});
  s->capture = cap;
  s->capturing.store(true, std::memory_order_release);
  if (!s->non_blocking) {
    c->blocking_captures.fetch_add(1, std::memory_order_acq_rel);
    // Counted busy too, so that a synchronous copy's lock-free path (which
    // runs only while no blocking stream is busy) takes the long way, where
    // capture_refusal sees the capture.
    s->progress->busy_blocking.fetch_add(1, std::memory_order_acq_rel);
  }
}

// capture_mu held. Appends a node after the stream's last one (and `extra`).
uint32_t append(HostCapture &cap, HostCapture::Member &m, HostGraphNode node, int64_t extra = -1) {
  if (m.tail >= 0) node.deps.push_back(uint32_t(m.tail));
  if (extra >= 0 && extra != m.tail) node.deps.push_back(uint32_t(extra));
  cap.nodes.push_back(std::move(node));
  m.tail = int64_t(cap.nodes.size() - 1);
  return uint32_t(m.tail);
}

// Whether node `target` is `from` or one of its ancestors.
bool reaches(const HostGraphNodes &nodes, int64_t from, int64_t target) {
  if (from < 0) return false;
  std::vector<char> seen(nodes.size(), 0);
  std::vector<uint32_t> todo{uint32_t(from)};
  while (!todo.empty()) {
    const uint32_t n = todo.back();
    todo.pop_back();
    if (int64_t(n) == target) return true;
    if (seen[n]) continue;
    seen[n] = 1;
    for (uint32_t d : nodes[n].deps) todo.push_back(d);
  }
  return false;
}

std::string capture_message(const char *entry, const std::string &what) {
  return std::string(entry) + ": " + what;
}

}  // namespace

gpuhal_status_t capture_refusal(HostContext *c, const std::shared_ptr<StreamState> &s, const char *entry) {
  const bool legacy_rule = s->is_default && c->blocking_captures.load(std::memory_order_acquire) != 0;
  if (!legacy_rule && !s->capturing.load(std::memory_order_acquire)) return GPUHAL_SUCCESS;
  std::lock_guard<std::mutex> lock(c->capture_mu);
  if (legacy_rule && c->blocking_captures.load(std::memory_order_acquire) != 0) {
    // CUDA's implicit synchronisation: the legacy default stream waits for
    // every blocking stream, and a capturing one has no position to wait
    // for (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); the captures are invalidated.
    std::vector<std::shared_ptr<HostCapture>> hit;
    for (const auto &s2 : c->streams_snapshot())
      if (s2->capture && !s2->non_blocking) hit.push_back(s2->capture);
    for (auto &cap : hit)
      invalidate(*cap, std::string(entry) + " on the legacy default stream while a blocking stream captured");
    return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                capture_message(entry, "work on the legacy default stream while a blocking stream of the context is "
                                       "capturing (it would wait for that stream); the capture is invalidated. Use "
                                       "non-blocking streams or another stream"));
  }
  if (s->capture && s->capture->invalidated)
    return fail(GPUHAL_ERROR_CAPTURE_INVALIDATED,
                capture_message(entry, "the stream's capture was invalidated (" + s->capture->why +
                                           "); end it with stream_end_capture"));
  return GPUHAL_SUCCESS;
}

gpuhal_status_t refuse_in_capture(HostContext *c, const std::shared_ptr<StreamState> &s, const char *entry,
                                  const std::string &what) {
  std::lock_guard<std::mutex> lock(c->capture_mu);
  if (s->capture) invalidate(*s->capture, std::string(entry) + " during the capture");
  return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
              capture_message(entry, what + " is not allowed while the stream is capturing; the capture is "
                                            "invalidated"));
}

void capture_op(HostContext *c, const std::shared_ptr<StreamState> &s, std::function<void(bool)> run) {
  std::lock_guard<std::mutex> lock(c->capture_mu);
  HostCapture *cap = s->capture.get();
  if (!cap) return;  // the capture ended meanwhile (another thread): the caller's race
  HostGraphNode node;
  node.run = std::move(run);
  append(*cap, *cap->member(s.get()), std::move(node));
}

void capture_kernel(HostContext *c, const std::shared_ptr<StreamState> &s, std::shared_ptr<const KernelLaunch> launch) {
  std::lock_guard<std::mutex> lock(c->capture_mu);
  HostCapture *cap = s->capture.get();
  if (!cap) return;
  HostGraphNode node;
  node.launch = std::move(launch);
  append(*cap, *cap->member(s.get()), std::move(node));
  ++cap->kernel_nodes;
}

void capture_record(HostContext *c, const std::shared_ptr<HostEvent> &e, const std::shared_ptr<StreamState> &s) {
  std::lock_guard<std::mutex> lock(c->capture_mu);
  const std::shared_ptr<HostCapture> cap = s->capture;
  if (!cap) return;
  HostCapture::Member *m = cap->member(s.get());
  const uint32_t node = append(*cap, *m, HostGraphNode{});
  std::lock_guard<std::mutex> elock(e->mu);
  ++e->record_id;  // a record still queued outside the capture no longer stamps it
  e->stream.reset();
  e->ticket = 0;
  e->has_time = false;
  e->capture = cap;
  e->capture_node = node;
}

gpuhal_status_t capture_wait(HostContext *c, const std::shared_ptr<StreamState> &s,
                             const std::shared_ptr<HostEvent> &e, const char *entry, bool *handled) {
  *handled = false;
  if (!s->capturing.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> elock(e->mu);
    if (!e->capture || e->capture->ended) return GPUHAL_SUCCESS;  // an ordinary wait
  }
  std::lock_guard<std::mutex> lock(c->capture_mu);
  std::shared_ptr<HostCapture> ecap;
  uint32_t enode = 0;
  bool recorded_outside = false;
  {
    std::lock_guard<std::mutex> elock(e->mu);
    if (e->capture && !e->capture->ended) {
      ecap = e->capture;
      enode = e->capture_node;
    }
    recorded_outside = !ecap && e->ticket != 0;
  }
  const std::shared_ptr<HostCapture> scap = s->capture;
  if (!scap && !ecap) return GPUHAL_SUCCESS;  // both ended meanwhile: an ordinary wait
  *handled = true;
  if (!scap) {
    // A fork: the stream joins the event's capture.
    if (s->is_default) {
      invalidate(*ecap, std::string(entry) + ": a default stream waited for an event of the capture");
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                  capture_message(entry, "a default stream cannot join a capture (it waited for an event recorded "
                                         "in one); the capture is invalidated"));
    }
    if (ecap->invalidated)
      return fail(GPUHAL_ERROR_CAPTURE_INVALIDATED,
                  capture_message(entry, "the event's capture was invalidated (" + ecap->why + ")"));
    join(c, ecap, s, -1);
    HostGraphNode wait;
    append(*ecap, *ecap->member(s.get()), std::move(wait), enode);
    return GPUHAL_SUCCESS;
  }
  if (scap->invalidated)
    return fail(GPUHAL_ERROR_CAPTURE_INVALIDATED,
                capture_message(entry, "the stream's capture was invalidated (" + scap->why + ")"));
  if (ecap == scap) {
    append(*scap, *scap->member(s.get()), HostGraphNode{}, enode);  // a join (or an edge within the capture)
    return GPUHAL_SUCCESS;
  }
  if (!ecap && !recorded_outside) return GPUHAL_SUCCESS;  // never recorded: nothing to wait for
  invalidate(*scap, std::string(entry) + ": a wait across the capture's boundary");
  if (ecap) invalidate(*ecap, std::string(entry) + ": a wait across the capture's boundary");
  return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
              capture_message(entry, ecap ? "the event was recorded in another capture (captures cannot merge); "
                                            "both are invalidated"
                                          : "the event was recorded outside the capture: a captured stream can wait "
                                            "only for work of its own capture; the capture is invalidated"));
}

gpuhal_status_t refuse_captured_event(HostContext *c, const std::shared_ptr<HostEvent> &e, const char *entry) {
  std::shared_ptr<HostCapture> cap;
  {
    std::lock_guard<std::mutex> elock(e->mu);
    if (!e->capture || e->capture->ended) return GPUHAL_SUCCESS;
    cap = e->capture;
  }
  std::lock_guard<std::mutex> lock(c->capture_mu);
  invalidate(*cap, std::string(entry) + " of an event recorded in the capture");
  return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
              capture_message(entry, "the event was recorded in a capture that has not ended: it stands for no work "
                                     "yet; the capture is invalidated"));
}

gpuhal_status_t refuse_context_sync_in_capture(HostContext *c, const char *entry) {
  if (c->active_captures.load(std::memory_order_acquire) == 0) return GPUHAL_SUCCESS;
  std::lock_guard<std::mutex> lock(c->capture_mu);
  bool any = false;
  for (const auto &s : c->streams_snapshot())
    if (s->capture) {
      invalidate(*s->capture, std::string(entry) + " during the capture");
      any = true;
    }
  if (!any) return GPUHAL_SUCCESS;  // ended meanwhile
  return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
              capture_message(entry, "synchronising the context while a stream of it captures is not allowed; the "
                                     "captures are invalidated"));
}

void leave_capture(HostContext *c, const std::shared_ptr<StreamState> &s) {
  if (!s->capturing.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(c->capture_mu);
  const std::shared_ptr<HostCapture> cap = s->capture;
  if (!cap) return;
  invalidate(*cap, "a stream of the capture was destroyed");
  if (cap->origin == s) {
    end(c, *cap);
    return;
  }
  cap->members.erase(std::remove_if(cap->members.begin(), cap->members.end(),
                                    [&](const HostCapture::Member &m) { return m.stream == s; }),
                     cap->members.end());
  leave(c, *s);
}

// ---- the graph entries of the plugin table ---------------------------------------------------------------

gpuhal_status_t stream_begin_capture(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_begin_capture", [&](HostContext *c) -> gpuhal_status_t {
    if (!stream || stream == GPUHAL_STREAM_LEGACY || stream == GPUHAL_STREAM_PER_THREAD)
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                  "stream_begin_capture: a default stream cannot capture (it synchronises with the context's other "
                  "streams); capture on a stream of your own");
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_begin_capture");
    if (gpuhal_status_t st = capture_refusal(c, s, "stream_begin_capture")) return st;
    std::lock_guard<std::mutex> lock(c->capture_mu);
    if (s->capture)
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED, "stream_begin_capture: the stream is already capturing");
    auto cap = std::make_shared<HostCapture>();
    cap->origin = s;
    join(c, cap, s, -1);
    c->active_captures.fetch_add(1, std::memory_order_acq_rel);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_end_capture(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_graph_t *out) {
  return in_context(ctx, "stream_end_capture", [&](HostContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_end_capture: null output pointer");
    *out = nullptr;
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_end_capture");
    std::lock_guard<std::mutex> lock(c->capture_mu);
    const std::shared_ptr<HostCapture> cap = s->capture;
    if (!cap) return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED, "stream_end_capture: the stream is not capturing");
    if (cap->origin != s) {
      invalidate(*cap, "stream_end_capture on a stream forked into the capture");
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                  "stream_end_capture: the capture began on another stream (this one was forked into it); end it "
                  "there. The capture is invalidated");
    }
    const int64_t origin_tail = cap->member(s.get())->tail;
    std::string unjoined;
    for (const auto &m : cap->members)
      if (m.stream != s && m.tail >= 0 && !reaches(cap->nodes, origin_tail, m.tail)) unjoined = "a forked stream";
    end(c, *cap);
    if (cap->invalidated)
      return fail(GPUHAL_ERROR_CAPTURE_INVALIDATED,
                  "stream_end_capture: the capture was invalidated (" + cap->why + "); no graph was made");
    if (!unjoined.empty())
      return fail(GPUHAL_ERROR_CAPTURE_UNJOINED,
                  "stream_end_capture: " + unjoined +
                      " has work the origin stream never waited for (record an event on it and wait for it on the "
                      "origin stream before ending the capture); no graph was made");
    auto g = std::make_unique<HostGraph>();
    g->kernel_nodes = cap->kernel_nodes;
    g->nodes = std::make_shared<const HostGraphNodes>(std::move(cap->nodes));
    *out = reinterpret_cast<gpuhal_graph_t>(g.get());
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
    *out = s->capturing.load(std::memory_order_acquire) ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

namespace {

HostGraph *find_graph(HostContext *c, gpuhal_graph_t graph) {
  auto it = c->graphs.find(reinterpret_cast<HostGraph *>(graph));
  return it == c->graphs.end() ? nullptr : it->second.get();
}

std::shared_ptr<HostGraphExec> find_exec(HostContext *c, gpuhal_graph_exec_t exec) {
  std::lock_guard<std::mutex> lock(c->capture_mu);
  auto it = c->graph_execs.find(reinterpret_cast<HostGraphExec *>(exec));
  return it == c->graph_execs.end() ? nullptr : it->second;
}

}  // namespace

gpuhal_status_t graph_info(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_info_t *out) {
  return in_context(ctx, "graph_info", [&](HostContext *c) -> gpuhal_status_t {
    if (!out || out->struct_size < 2 * sizeof(uint32_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_info: null or short output struct");
    std::lock_guard<std::mutex> lock(c->capture_mu);
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
    std::lock_guard<std::mutex> lock(c->capture_mu);
    return c->graphs.erase(reinterpret_cast<HostGraph *>(graph))
               ? GPUHAL_SUCCESS
               : fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_destroy: not a graph of this context");
  });
}

gpuhal_status_t graph_instantiate(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_exec_t *out) {
  return in_context(ctx, "graph_instantiate", [&](HostContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_instantiate: null output pointer");
    std::lock_guard<std::mutex> lock(c->capture_mu);
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
    std::lock_guard<std::mutex> lock(c->capture_mu);
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
                     if (s->capturing.load(std::memory_order_acquire))
                       return refuse_in_capture(c, s, "graph_exec_launch", "launching a graph into a capture");
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
