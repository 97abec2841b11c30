// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_context.hpp"

#include "host_device_mappings.hpp"
#include "host_entries.hpp"
#include "host_kernel.hpp"
#include "host_plugin.hpp"
#include "host_stream.hpp"

#include <sys/mman.h>

#include <cstdlib>

namespace gpuhal::host {

using plugin::fail;
using plugin::guard;

// ---- HostContext ------------------------------------------------------------

HostContext::HostContext(HostDevice *device) : device_(device), progress_(std::make_shared<Progress>()) {
  default_stream_ = std::make_shared<StreamState>(progress_, false, true);
  default_stream_->start();
  // A capturing blocking stream counts as busy, so that a synchronous
  // copy's lock-free path (which runs only while no blocking stream is busy)
  // takes the long way, where the capture's legacy-stream rule is checked.
  captures.on_blocking_join = [](StreamState *s) {
    s->progress->busy_blocking.fetch_add(1, std::memory_order_acq_rel);
  };
  captures.on_blocking_leave = [](StreamState *s) {
    s->progress->busy_blocking.fetch_sub(1, std::memory_order_acq_rel);
  };
}

HostContext::~HostContext() {
  std::vector<std::shared_ptr<StreamState>> streams;
  {
    std::lock_guard<std::mutex> lock(objects_mu_);
    for (auto &kv : streams_) {
      plugin_state().streams.remove(kv.first);
      streams.push_back(kv.second);
    }
    streams_.clear();
    per_thread_.clear();
    events_.clear();
  }
  for (auto &s : streams) s->stop();
  default_stream_->stop();
  {
    std::lock_guard<std::mutex> lock(modules_mu);
    modules.clear();  // no launch can be running any more
  }
  release_virtual_memory(this);  // its registry entries go with its mappings
  for (auto &kv : plugin_state().registry.take_all(this)) {
    if (kv.second.kind == RegionKind::Device) {
      if (device_->limit) device_->used.fetch_sub(kv.second.size);
      // Unmapped, never cached for reuse: host code may still hold the
      // addresses (managed memory, DLPack exports), and the core keeps
      // them as host memory only where nothing is mapped any more.
      unmap_device_memory(reinterpret_cast<void *>(kv.first), kv.second.size, kv.second.fd);
    } else if (kv.second.kind == RegionKind::IpcOpened) {
      unmap_device_memory(reinterpret_cast<void *>(kv.first), kv.second.size, -1);
    } else if (kv.second.kind == RegionKind::HostAlloc) {
      unmap_device_memory(reinterpret_cast<void *>(kv.first), kv.second.size, -1);
    }
  }
}

std::shared_ptr<StreamState> HostContext::stream(gpuhal_stream_t handle) {
  if (!handle || handle == GPUHAL_STREAM_LEGACY) return default_stream_;
  std::lock_guard<std::mutex> lock(objects_mu_);
  if (handle == GPUHAL_STREAM_PER_THREAD) {
    auto &s = per_thread_[std::this_thread::get_id()];
    if (!s) {
      s = std::make_shared<StreamState>(progress_, false, false);
      s->start();
      streams_[s.get()] = s;  // takes part in the legacy rules like any blocking stream
    }
    return s;
  }
  auto it = streams_.find(reinterpret_cast<StreamState *>(handle));
  if (it != streams_.end()) return it->second;
  return plugin_state().streams.find(handle, device_);  // another context's (StreamDirectory)
}

bool HostContext::owns_stream(gpuhal_stream_t handle) {
  if (!handle || handle == GPUHAL_STREAM_LEGACY || handle == GPUHAL_STREAM_PER_THREAD) return true;
  std::lock_guard<std::mutex> lock(objects_mu_);
  return streams_.count(reinterpret_cast<StreamState *>(handle)) != 0;
}

std::shared_ptr<HostEvent> HostContext::event(gpuhal_event_t handle) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  auto it = events_.find(reinterpret_cast<HostEvent *>(handle));
  return it == events_.end() ? nullptr : it->second;
}

gpuhal_stream_t HostContext::create_stream(bool non_blocking, int priority) {
  auto s = std::make_shared<StreamState>(progress_, non_blocking, false);
  s->priority = priority;
  s->start();
  plugin_state().streams.add(s, device_);
  std::lock_guard<std::mutex> lock(objects_mu_);
  try {
    streams_[s.get()] = s;
  } catch (...) {
    plugin_state().streams.remove(s.get());
    throw;
  }
  return reinterpret_cast<gpuhal_stream_t>(s.get());
}

std::vector<std::shared_ptr<StreamState>> HostContext::streams_snapshot() {
  std::vector<std::shared_ptr<StreamState>> out;
  std::lock_guard<std::mutex> lock(objects_mu_);
  for (auto &kv : streams_) out.push_back(kv.second);
  return out;
}

bool HostContext::destroy_stream(gpuhal_stream_t handle) {
  std::shared_ptr<StreamState> s;
  {
    std::lock_guard<std::mutex> lock(objects_mu_);
    auto it = streams_.find(reinterpret_cast<StreamState *>(handle));
    if (it == streams_.end()) return false;
    s = it->second;
    streams_.erase(it);
  }
  plugin_state().streams.remove(s.get());
  captures.stream_destroyed(s.get());
  s->stop();
  return true;
}

gpuhal_event_t HostContext::create_event(bool timing) {
  auto e = std::make_shared<HostEvent>();
  e->timing = timing;
  std::lock_guard<std::mutex> lock(objects_mu_);
  events_[e.get()] = e;
  return reinterpret_cast<gpuhal_event_t>(e.get());
}

bool HostContext::destroy_event(gpuhal_event_t handle) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  if (events_.erase(reinterpret_cast<HostEvent *>(handle)) == 0) return false;
  captures.forget_event(handle);
  return true;
}

uint64_t HostContext::submit(const std::shared_ptr<StreamState> &s, std::function<void(bool)> run,
                             std::vector<Dep> deps) {
  // A capturing stream records the operation instead (host_graph.hpp); the
  // entries that add dependencies handle capture before they get here.
  if (captures.any()) {
    HostGraphNode node;
    node.run = std::move(run);
    if (captures.record(s.get(), std::move(node), false)) return 0;
    run = std::move(node.run);  // not capturing: taken back
  }
  std::lock_guard<std::mutex> lock(submit_mu_);
  inline_bias_.claim_or_exclude(false);  // another thread's inline operations wait, from now on, for this mutex
  // Legacy default stream: it waits for the blocking streams' prior work,
  // and blocking streams wait for its prior work.
  if (s->is_default) {
    if (progress_->busy_blocking.load(std::memory_order_acquire) != 0) {
      std::lock_guard<std::mutex> olock(objects_mu_);
      for (auto &kv : streams_) {
        const auto &o = kv.second;
        if (!o->non_blocking && !o->idle()) deps.push_back({o, o->enqueued_snapshot()});
      }
    }
  } else if (!s->non_blocking && !default_stream_->idle()) {
    deps.push_back({default_stream_, default_stream_->enqueued_snapshot()});
  }
  // Counted before the push, under the submit mutex: a reader holding it
  // never sees a busy stream uncounted.
  if (s->counts_busy() && s->outstanding.fetch_add(1, std::memory_order_acq_rel) == 0)
    progress_->busy_blocking.fetch_add(1, std::memory_order_acq_rel);
  const uint64_t ticket = s->enqueued.fetch_add(1, std::memory_order_acq_rel) + 1;
  s->push(Op{std::move(run), std::move(deps)});
  return ticket;
}

void HostContext::record(const std::shared_ptr<HostEvent> &ev, const std::shared_ptr<StreamState> &s) {
  if (captures.record_event(ev.get(), s.get())) {
    // The event stands for a position in the capture, no work that runs: a
    // wait for it outside the capture waits for nothing after the capture.
    std::lock_guard<std::mutex> lock(ev->mu);
    ++ev->record_id;  // a record still queued no longer stamps it
    ev->stream.reset();
    ev->ticket = 0;
    ev->has_time = false;
    return;
  }
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(ev->mu);
    id = ++ev->record_id;
    ev->has_time = false;
  }
  // The record is itself an operation: it completes when all prior work on
  // the stream has, and stamps the time then.
  const uint64_t ticket = submit(s, [ev, id](bool) {
    std::lock_guard<std::mutex> lock(ev->mu);
    if (ev->record_id != id) return;
    ev->when = std::chrono::steady_clock::now();
    ev->has_time = true;
  });
  std::lock_guard<std::mutex> lock(ev->mu);
  if (ev->record_id == id) {
    ev->stream = s;
    ev->ticket = ticket;
  }
}

std::vector<Dep> HostContext::all_prior_work() {
  std::vector<Dep> deps;
  std::lock_guard<std::mutex> lock(objects_mu_);
  for (auto &kv : streams_)
    if (!kv.second->idle()) deps.push_back({kv.second, kv.second->enqueued_snapshot()});
  if (!default_stream_->idle()) deps.push_back({default_stream_, default_stream_->enqueued_snapshot()});
  return deps;
}

void HostContext::synchronize() {
  for (const Dep &d : all_prior_work()) progress_->wait(*d.stream, d.ticket);
}

void HostContext::set_kernel_error(const std::string &message) {
  std::lock_guard<std::mutex> lock(kernel_error_mu_);
  if (kernel_error_.empty()) kernel_error_ = message;
}

bool HostContext::take_kernel_error(std::string *message) {
  std::lock_guard<std::mutex> lock(kernel_error_mu_);
  if (kernel_error_.empty()) return false;
  *message = std::move(kernel_error_);
  kernel_error_.clear();
  return true;
}

// ---- contexts ----------------------------------------------------------------

gpuhal_status_t context_create(int32_t ordinal, gpuhal_context_t *out) {
  return guard("context_create", [&]() -> gpuhal_status_t {
    HostDevice *d = device_at(ordinal);
    if (!d) return fail(GPUHAL_ERROR_INVALID_VALUE, "context_create: no host device " + std::to_string(ordinal));
    *out = plugin_state().contexts.add(std::make_unique<HostContext>(d));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t context_destroy(gpuhal_context_t ctx) {
  return guard("context_destroy", [&]() -> gpuhal_status_t {
    if (!plugin_state_exists()) return fail(GPUHAL_ERROR_INVALID_HANDLE, "context_destroy: plugin not initialised");
    forget_context_lookups();
    std::unique_ptr<HostContext> doomed = plugin_state().contexts.take(ctx);
    if (!doomed) return fail(GPUHAL_ERROR_INVALID_HANDLE, "context_destroy: invalid context handle");
    doomed.reset();  // outside the registry's lock: joins stream workers
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t context_synchronize(gpuhal_context_t ctx) {
  return in_context(ctx, "context_synchronize", [&](HostContext *c) -> gpuhal_status_t {
    if (on_worker_thread()) return would_deadlock("context_synchronize");
    if (gpuhal_status_t st = c->captures.refuse_context_sync("context_synchronize")) return st;
    c->synchronize();
    return kernel_failure(c);
  });
}

gpuhal_status_t memory_info(gpuhal_context_t ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
  return in_context(ctx, "memory_info", [&](HostContext *c) -> gpuhal_status_t {
    HostDevice *d = c->device();
    const uint64_t used = d->used.load();
    *total_bytes = d->total_memory;
    *free_bytes = d->limit ? (used < d->limit ? d->limit - used : 0) : std::min(available_memory(), d->total_memory);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::host
