// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stream capture's bookkeeping (CaptureBook) and the graphs it makes
// (GraphStore), for plugins that record their own operations
// (host, hsa): which streams capture into which capture, the recorded
// operations with the earlier ones each depends on, the events recorded in
// a capture, and CUDA's capture rules (plugin.h, ABI 1.8), so that every
// such backend keeps the same ones:
//  - default streams cannot capture; a stream captures once at a time;
//  - a stream that waits for an event recorded in a capture joins it (a
//    fork); every stream forked in must be joined back (the origin waits
//    for its last operation) before end(), else ERROR_CAPTURE_UNJOINED;
//  - refused with ERROR_CAPTURE_UNSUPPORTED, the capture invalidated:
//    whatever an entry calls refuse() for (synchronising, querying, ...),
//    a query or wait of an event recorded in a live capture, a wait across
//    the capture's boundary (or merging two captures), work on the legacy
//    stream while a blocking stream captures, synchronising the context;
//  - an invalidated capture's work is refused (ERROR_CAPTURE_INVALIDATED),
//    and so is its end(), which ends it all the same and makes no graph.
//
// Every dependency of a recorded operation points to an earlier one, so the
// list in order is a valid schedule: that is how both backends replay it.
//
// Thread safety: every member may be called from any thread (one mutex);
// any() and blocking() read counters without it, for submit paths.
// Ownership: streams and events are named by pointer; the backend calls
// stream_destroyed() and forget_event() before they go.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuhal/plugin.h"
#include "plugin_support.hpp"

namespace gpuhal::plugin {

// Whether `handle` names a default stream (NULL, legacy, per-thread): it
// neither captures nor joins a capture (plugin.h).
inline bool default_stream_handle(gpuhal_stream_t handle) {
  return !handle || handle == GPUHAL_STREAM_LEGACY || handle == GPUHAL_STREAM_PER_THREAD;
}

// stream_begin_capture's refusal of a default stream, the same on every
// backend (GPUHAL_SUCCESS for any other handle).
inline gpuhal_status_t refuse_default_stream_capture(gpuhal_stream_t handle) {
  if (!default_stream_handle(handle)) return GPUHAL_SUCCESS;
  return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
              "stream_begin_capture: a default stream cannot capture (it synchronises with the context's other "
              "streams); capture on a stream of your own");
}

template <class Stream, class Node>
class CaptureBook {
 public:
  struct Recorded {
    Node node{};
    std::vector<uint32_t> deps;  // earlier operations it waits for
    bool kernel = false;
  };
  struct Graph {
    std::vector<Recorded> nodes;
    uint32_t kernel_nodes = 0;
  };
  // Called, under the book's lock, when a blocking stream starts or stops
  // capturing (the host backend counts it busy, so that its synchronous
  // copies take the path that sees the capture).
  std::function<void(Stream *)> on_blocking_join, on_blocking_leave;

  // True while any stream of the book captures (no lock).
  bool any() const { return active_streams_.load(std::memory_order_acquire) != 0; }
  // How many blocking streams capture (no lock): the legacy stream's rule.
  int blocking() const { return blocking_.load(std::memory_order_acquire); }

  bool capturing(const Stream *s) {
    if (!any()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return streams_.count(s) != 0;
  }

  gpuhal_status_t begin(Stream *s, bool blocking, const char *entry) {
    std::lock_guard<std::mutex> lock(mu_);
    if (streams_.count(s))
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED, std::string(entry) + ": the stream is already capturing");
    auto cap = std::make_shared<Capture>();
    cap->origin = s;
    captures_.push_back(cap);
    join_locked(cap, s, blocking, -1);
    return GPUHAL_SUCCESS;
  }

  // Ends the capture `s` began: *out gets its operations.
  gpuhal_status_t end(Stream *s, Graph *out, const char *entry) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(s);
    if (it == streams_.end())
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED, std::string(entry) + ": the stream is not capturing");
    const std::shared_ptr<Capture> cap = it->second;
    if (cap->origin != s) {
      invalidate(*cap, std::string(entry) + " on a stream forked into the capture");
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                  std::string(entry) +
                      ": the capture began on another stream (this one was forked into it); end it there. The "
                      "capture is invalidated");
    }
    const int64_t origin_tail = cap->member(s)->tail;
    bool joined = true;
    for (const auto &m : cap->members)
      if (m.stream != s && m.tail >= 0 && !reaches(cap->nodes, origin_tail, m.tail)) joined = false;
    end_locked(*cap);
    if (cap->invalidated)
      return fail(GPUHAL_ERROR_CAPTURE_INVALIDATED,
                  std::string(entry) + ": the capture was invalidated (" + cap->why + "); no graph was made");
    if (!joined)
      return fail(GPUHAL_ERROR_CAPTURE_UNJOINED,
                  std::string(entry) +
                      ": a forked stream has work the origin stream never waited for (record an event on it and "
                      "wait for it on the origin stream before ending the capture); no graph was made");
    out->nodes = std::move(cap->nodes);
    out->kernel_nodes = cap->kernel_nodes;
    return GPUHAL_SUCCESS;
  }

  // What an entry putting work on `s` meets first: its capture invalidated
  // (ERROR_CAPTURE_INVALIDATED), or, on the legacy stream (`legacy`), a
  // blocking stream capturing (ERROR_CAPTURE_UNSUPPORTED, those captures
  // invalidated: the legacy stream would have to wait for them).
  gpuhal_status_t refusal(Stream *s, bool legacy, const char *entry) {
    if (!any()) return GPUHAL_SUCCESS;
    std::lock_guard<std::mutex> lock(mu_);
    if (legacy && blocking_.load() != 0) {
      for (auto &cap : captures_)
        for (auto &m : cap->members)
          if (m.blocking) invalidate(*cap, std::string(entry) + " on the legacy default stream while a blocking "
                                                                "stream captured");
      return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                  std::string(entry) +
                      ": work on the legacy default stream while a blocking stream of the context is capturing (it "
                      "would wait for that stream); the capture is invalidated. Use non-blocking streams or another "
                      "stream");
    }
    auto it = streams_.find(s);
    if (it != streams_.end() && it->second->invalidated)
      return fail(GPUHAL_ERROR_CAPTURE_INVALIDATED, std::string(entry) + ": the stream's capture was invalidated (" +
                                                        it->second->why + "); end it with stream_end_capture");
    return GPUHAL_SUCCESS;
  }

  // `what` is not allowed on a capturing stream: ERROR_CAPTURE_UNSUPPORTED,
  // its capture invalidated. GPUHAL_SUCCESS when `s` does not capture.
  gpuhal_status_t refuse(Stream *s, const char *entry, const std::string &what) {
    if (!any()) return GPUHAL_SUCCESS;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(s);
    if (it == streams_.end()) return GPUHAL_SUCCESS;
    invalidate(*it->second, std::string(entry) + " during the capture");
    return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                std::string(entry) + ": " + what + " is not allowed while the stream is capturing; the capture is "
                                                   "invalidated");
  }

  // Records `node` on `s`, after its previous operation; false (nothing
  // taken) when `s` does not capture.
  bool record(Stream *s, Node &&node, bool kernel) {
    if (!any()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(s);
    if (it == streams_.end()) return false;
    Recorded r;
    r.node = std::move(node);
    r.kernel = kernel;
    append(*it->second, *it->second->member(s), std::move(r));
    if (kernel) ++it->second->kernel_nodes;
    return true;
  }

  // An event recorded on `s`: true when `s` captures (the event now stands
  // for its position in the capture); false otherwise (any earlier capture
  // mark of the event is cleared).
  bool record_event(const void *event, Stream *s) {
    if (!any()) {
      if (has_marks_.load(std::memory_order_acquire)) forget_event(event);
      return false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(s);
    if (it == streams_.end()) {
      events_.erase(event);
      return false;
    }
    auto &cap = *it->second;
    const uint32_t node = append(cap, *cap.member(s), Recorded{});
    events_[event] = Mark{it->second, node};
    has_marks_.store(true, std::memory_order_release);
    return true;
  }

  void forget_event(const void *event) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.erase(event);
  }

  // A wait of `s` for `event`. *handled: done here (a fork, a join, an edge
  // inside the capture, a refusal); false: an ordinary wait.
  // `recorded_outside`: the event's latest record was made outside any
  // capture. `s_default`: `s` is a default stream (it cannot join).
  gpuhal_status_t wait(Stream *s, const void *event, bool recorded_outside, bool s_default, bool s_blocking,
                       const char *entry, bool *handled) {
    *handled = false;
    if (!any()) return GPUHAL_SUCCESS;
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Capture> ecap;
    uint32_t enode = 0;
    auto e = events_.find(event);
    if (e != events_.end() && !e->second.capture->ended) {
      ecap = e->second.capture;
      enode = e->second.node;
    }
    auto si = streams_.find(s);
    const std::shared_ptr<Capture> scap = si == streams_.end() ? nullptr : si->second;
    if (!scap && !ecap) return GPUHAL_SUCCESS;
    *handled = true;
    if (!scap) {
      if (s_default) {
        invalidate(*ecap, std::string(entry) + ": a default stream waited for an event of the capture");
        return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                    std::string(entry) + ": a default stream cannot join a capture (it waited for an event recorded "
                                         "in one); the capture is invalidated");
      }
      if (ecap->invalidated)
        return fail(GPUHAL_ERROR_CAPTURE_INVALIDATED,
                    std::string(entry) + ": the event's capture was invalidated (" + ecap->why + ")");
      join_locked(ecap, s, s_blocking, -1);  // a fork
      append(*ecap, *ecap->member(s), Recorded{}, enode);
      return GPUHAL_SUCCESS;
    }
    if (scap->invalidated)
      return fail(GPUHAL_ERROR_CAPTURE_INVALIDATED,
                  std::string(entry) + ": the stream's capture was invalidated (" + scap->why + ")");
    if (ecap == scap) {
      append(*scap, *scap->member(s), Recorded{}, enode);  // a join, or an edge inside the capture
      return GPUHAL_SUCCESS;
    }
    if (!ecap && !recorded_outside) return GPUHAL_SUCCESS;  // never recorded: nothing to wait for
    invalidate(*scap, std::string(entry) + ": a wait across the capture's boundary");
    if (ecap) invalidate(*ecap, std::string(entry) + ": a wait across the capture's boundary");
    return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                std::string(entry) + (ecap ? ": the event was recorded in another capture (captures cannot merge); "
                                             "both are invalidated"
                                           : ": the event was recorded outside the capture: a captured stream can "
                                             "wait only for work of its own capture; the capture is invalidated"));
  }

  // Synchronising, querying or timing an event recorded in a live capture:
  // refused, the capture invalidated.
  gpuhal_status_t refuse_event(const void *event, const char *entry) {
    if (!has_marks_.load(std::memory_order_acquire)) return GPUHAL_SUCCESS;
    std::lock_guard<std::mutex> lock(mu_);
    auto e = events_.find(event);
    if (e == events_.end() || e->second.capture->ended) return GPUHAL_SUCCESS;
    invalidate(*e->second.capture, std::string(entry) + " of an event recorded in the capture");
    return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                std::string(entry) + ": the event was recorded in a capture that has not ended: it stands for no "
                                     "work yet; the capture is invalidated");
  }

  // Whether `event` was last recorded in a capture (live or ended): then it
  // stands for no work the backend ran.
  bool marked(const void *event) {
    if (!has_marks_.load(std::memory_order_acquire)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return events_.count(event) != 0;
  }

  // Synchronising the whole context while a stream of it captures: refused,
  // every capture invalidated (CUDA's cuCtxSynchronize breaks captures in
  // every capture mode).
  gpuhal_status_t refuse_context_sync(const char *entry) {
    if (!any()) return GPUHAL_SUCCESS;
    std::lock_guard<std::mutex> lock(mu_);
    if (captures_.empty()) return GPUHAL_SUCCESS;
    for (auto &cap : captures_) invalidate(*cap, std::string(entry) + " during the capture");
    return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                std::string(entry) + ": synchronising the context while a stream of it captures is not allowed; "
                                     "the captures are invalidated");
  }

  // `s` is being destroyed: its capture is invalidated (and ended, when it
  // began it).
  void stream_destroyed(Stream *s) {
    if (!any()) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(s);
    if (it == streams_.end()) return;
    const std::shared_ptr<Capture> cap = it->second;
    invalidate(*cap, "a stream of the capture was destroyed");
    if (cap->origin == s) {
      end_locked(*cap);
      return;
    }
    for (auto &m : cap->members)
      if (m.stream == s) leave_locked(m);
    cap->members.erase(std::remove_if(cap->members.begin(), cap->members.end(),
                                      [&](const Member &m) { return m.stream == s; }),
                       cap->members.end());
  }

 private:
  struct Member {
    Stream *stream = nullptr;
    bool blocking = false;
    int64_t tail = -1;  // its last operation (-1: none yet)
  };
  struct Capture {
    Stream *origin = nullptr;
    std::vector<Member> members;
    std::vector<Recorded> nodes;
    uint32_t kernel_nodes = 0;
    bool invalidated = false;
    bool ended = false;
    std::string why;  // what invalidated it (the first reason)
    Member *member(const Stream *s) {
      for (Member &m : members)
        if (m.stream == s) return &m;
      return nullptr;
    }
  };
  struct Mark {
    std::shared_ptr<Capture> capture;
    uint32_t node = 0;
  };

  static void invalidate(Capture &cap, const std::string &why) {
    if (cap.invalidated) return;
    cap.invalidated = true;
    cap.why = why;
  }

  // Appends `r` after the member's last operation (and `extra`).
  static uint32_t append(Capture &cap, Member &m, Recorded r, int64_t extra = -1) {
    if (m.tail >= 0) r.deps.push_back(uint32_t(m.tail));
    if (extra >= 0 && extra != m.tail) r.deps.push_back(uint32_t(extra));
    cap.nodes.push_back(std::move(r));
    m.tail = int64_t(cap.nodes.size() - 1);
    return uint32_t(m.tail);
  }

  // Whether operation `target` is `from` or one of its ancestors.
  static bool reaches(const std::vector<Recorded> &nodes, int64_t from, int64_t target) {
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

  void join_locked(const std::shared_ptr<Capture> &cap, Stream *s, bool blocking, int64_t tail) {
    cap->members.push_back(Member{s, blocking, tail});
    streams_[s] = cap;
    active_streams_.fetch_add(1, std::memory_order_acq_rel);
    if (blocking) {
      blocking_.fetch_add(1, std::memory_order_acq_rel);
      if (on_blocking_join) on_blocking_join(s);
    }
  }

  void leave_locked(const Member &m) {
    streams_.erase(m.stream);
    active_streams_.fetch_sub(1, std::memory_order_acq_rel);
    if (m.blocking) {
      blocking_.fetch_sub(1, std::memory_order_acq_rel);
      if (on_blocking_leave) on_blocking_leave(m.stream);
    }
  }

  void end_locked(Capture &cap) {
    cap.ended = true;
    for (const Member &m : cap.members) leave_locked(m);
    cap.members.clear();
    captures_.erase(std::remove_if(captures_.begin(), captures_.end(),
                                   [&](const std::shared_ptr<Capture> &c) { return c.get() == &cap; }),
                    captures_.end());
  }

  std::mutex mu_;
  std::unordered_map<const Stream *, std::shared_ptr<Capture>> streams_;
  std::vector<std::shared_ptr<Capture>> captures_;  // live ones
  std::unordered_map<const void *, Mark> events_;
  std::atomic<int> active_streams_{0}, blocking_{0};
  std::atomic<bool> has_marks_{false};
};

// The graphs and graph execs of one context of a plugin that replays its
// own recorded operations: handles, graph_info, destroy, instantiate, and
// the lookups the launch and the argument update need. Exec is the
// backend's exec type: it has `nodes` (std::shared_ptr<const
// std::vector<Node>>, copied when an update changes one) and
// `kernel_node_index` (kernel node k -> its index in nodes), plus what its
// launches keep (the previous launch). Thread safety: one mutex for the
// maps; an exec's own fields are the backend's to guard.
template <class Node, class Exec>
class GraphStore {
 public:
  // A graph of what a capture recorded: its handle.
  template <class Recorded>
  gpuhal_graph_t add(Recorded &&recorded) {
    auto g = std::make_shared<Stored>();
    auto nodes = std::make_shared<std::vector<Node>>();
    nodes->reserve(recorded.nodes.size());
    for (auto &r : recorded.nodes) {
      if (r.kernel) g->kernel_node_index.push_back(uint32_t(nodes->size()));
      nodes->push_back(std::move(r.node));
    }
    g->nodes = std::move(nodes);
    std::lock_guard<std::mutex> lock(mu_);
    const auto handle = reinterpret_cast<gpuhal_graph_t>(g.get());
    graphs_.emplace(handle, std::move(g));
    return handle;
  }

  gpuhal_status_t info(gpuhal_graph_t graph, gpuhal_graph_info_t *out) {
    if (!out || out->struct_size < 2 * sizeof(uint32_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_info: null or short output struct");
    std::shared_ptr<const Stored> g = find_graph(graph);
    if (!g) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_info: not a graph of this context");
    gpuhal_graph_info_t full{};
    full.abi_version = GPUHAL_ABI_VERSION;
    full.struct_size = sizeof full;
    full.node_count = uint32_t(g->nodes->size());
    full.kernel_node_count = uint32_t(g->kernel_node_index.size());
    write_versioned(out, full);
    return GPUHAL_SUCCESS;
  }

  gpuhal_status_t destroy(gpuhal_graph_t graph) {
    std::lock_guard<std::mutex> lock(mu_);
    return graphs_.erase(graph) ? GPUHAL_SUCCESS
                                : fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_destroy: not a graph of this context");
  }

  gpuhal_status_t instantiate(gpuhal_graph_t graph, gpuhal_graph_exec_t *out) {
    std::shared_ptr<const Stored> g = find_graph(graph);
    if (!g) return fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_instantiate: not a graph of this context");
    auto x = std::make_shared<Exec>();
    x->nodes = g->nodes;  // shared until an update copies them
    x->kernel_node_index = g->kernel_node_index;
    const auto handle = reinterpret_cast<gpuhal_graph_exec_t>(x.get());
    std::lock_guard<std::mutex> lock(mu_);
    execs_.emplace(handle, std::move(x));
    *out = handle;
    return GPUHAL_SUCCESS;
  }

  // Launches already queued hold what they run: they finish.
  gpuhal_status_t destroy_exec(gpuhal_graph_exec_t exec) {
    std::lock_guard<std::mutex> lock(mu_);
    return execs_.erase(exec) ? GPUHAL_SUCCESS
                              : fail(GPUHAL_ERROR_INVALID_HANDLE, "graph_exec_destroy: not a graph exec of this context");
  }

  // The exec behind `exec`, or null with *st the refusal naming `entry`.
  std::shared_ptr<Exec> exec(gpuhal_graph_exec_t exec, const char *entry, gpuhal_status_t *st) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = execs_.find(exec);
    if (it != execs_.end()) return it->second;
    *st = fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": not a graph exec of this context");
    return nullptr;
  }

  // graph_exec_set_kernel_args's first checks: kernel node `k` of x (*index
  // its place in x.nodes), and non-null arguments.
  static gpuhal_status_t kernel_node(const Exec &x, uint32_t k, void *const *args, uint32_t arg_count,
                                     uint32_t *index) {
    if (k >= x.kernel_node_index.size())
      return fail(GPUHAL_ERROR_INDEX_OUT_OF_RANGE, "graph_exec_set_kernel_args: kernel node " + std::to_string(k) +
                                                       " of a graph with " +
                                                       std::to_string(x.kernel_node_index.size()));
    for (uint32_t i = 0; i < arg_count; ++i)
      if (!args || !args[i])
        return fail(GPUHAL_ERROR_INVALID_VALUE, "graph_exec_set_kernel_args: argument " + std::to_string(i) + " is null");
    *index = x.kernel_node_index[k];
    return GPUHAL_SUCCESS;
  }

 private:
  struct Stored {
    std::shared_ptr<const std::vector<Node>> nodes;
    std::vector<uint32_t> kernel_node_index;
  };
  std::shared_ptr<const Stored> find_graph(gpuhal_graph_t graph) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graphs_.find(graph);
    return it == graphs_.end() ? nullptr : it->second;
  }
  std::mutex mu_;
  std::unordered_map<gpuhal_graph_t, std::shared_ptr<const Stored>> graphs_;
  std::unordered_map<gpuhal_graph_exec_t, std::shared_ptr<Exec>> execs_;
};

}  // namespace gpuhal::plugin
