// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "validation_layer.hpp"

#include <cinttypes>
#include <cstdio>

namespace gpuhal::detail::layers {
namespace {

// How deep the calling thread is in stream callbacks (of any chain).
thread_local int t_callback_depth = 0;

const char *destroyer(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::context: return "context_destroy";
    case ObjectKind::stream: return "stream_destroy";
    case ObjectKind::event: return "event_destroy";
    case ObjectKind::module: return "module_unload";
    case ObjectKind::kernel: return "module_unload of its module";
    case ObjectKind::graph: return "graph_destroy";
    case ObjectKind::graph_exec: return "graph_exec_destroy";
    case ObjectKind::ipc_mapping: return "ipc_close";
    case ObjectKind::mem_pool: return "mem_pool_destroy";
    case ObjectKind::kept_memory: return "mem_free_kept";
    default: return "its release";
  }
}

}  // namespace

bool RuleCheck::lifetime(ObjectKind kind, uint64_t bits, size_t i, bool must_be_known) {
  const ObjectBook &book = layer_.book();
  const uint64_t h = bits;
  const void *shown = reinterpret_cast<const void *>(static_cast<uintptr_t>(bits));  // reported in hex
  const auto record = book.find(kind, h);
  if (!record) {
    if (book.was_destroyed(kind, h))
      return fail(GPUHAL_ERROR_INVALID_HANDLE, i, shown, std::string("used after ") + destroyer(kind));
    if (!must_be_known) return true;  // e.g. another library's stream
    return fail(GPUHAL_ERROR_INVALID_HANDLE, i, shown,
                std::string("not a live ") + to_string(kind) + " of this plugin");
  }
  if (kind != ObjectKind::context && context_ != 0 && record->context != context_) {
    char other[32];
    std::snprintf(other, sizeof other, "0x%" PRIx64, record->context);
    return fail(GPUHAL_ERROR_INVALID_HANDLE, i, shown,
                std::string("a ") + to_string(kind) + " of another context (" + other + ")");
  }
  return true;
}

ObjectKind RuleCheck::object_kind(support::HandleKind kind) {
  switch (kind) {
    case support::HandleKind::event: return ObjectKind::event;
    case support::HandleKind::module: return ObjectKind::module;
    case support::HandleKind::kernel: return ObjectKind::kernel;
    case support::HandleKind::graph: return ObjectKind::graph;
    case support::HandleKind::mem_pool: return ObjectKind::mem_pool;
    case support::HandleKind::graph_exec: break;
  }
  return ObjectKind::graph_exec;
}

bool RuleCheck::events(const gpuhal_event_t *list, uint32_t count, size_t i) {
  if (!ArgumentCheck::events(list, count, i)) return false;
  for (uint32_t k = 0; k < count; ++k)
    if (!lifetime(ObjectKind::event, bits_of(list[k]), i, true)) return false;
  return true;
}

bool RuleCheck::ordinal(int32_t v, size_t i) {
  const int32_t n = layer_.device_count();
  if (v >= 0 && (n < 0 || v < n)) return true;
  return fail(GPUHAL_ERROR_INVALID_VALUE, i, v, "a device ordinal must be in [0, " + std::to_string(n) + ")");
}

bool RuleCheck::allocation(gpuhal_deviceptr_t p, size_t i) {
  const ObjectBook &book = layer_.book();
  const auto r = book.allocation_containing(p);
  if (r && r->handle == p && r->kind != ObjectKind::ipc_mapping) return true;
  if (r && r->kind == ObjectKind::ipc_mapping)
    return fail(GPUHAL_ERROR_INVALID_VALUE, i, p, "IPC-opened memory is closed with ipc_close, never freed");
  if (r) {
    char base[32];
    std::snprintf(base, sizeof base, "0x%" PRIx64, r->handle);
    return fail(GPUHAL_ERROR_INVALID_VALUE, i, p, std::string("inside the allocation at ") + base + ", not its base");
  }
  for (ObjectKind k : {ObjectKind::device_memory, ObjectKind::managed_memory, ObjectKind::async_memory})
    if (book.was_destroyed(k, p)) return fail(GPUHAL_ERROR_INVALID_VALUE, i, p, "freed already (a double free)");
  return fail(GPUHAL_ERROR_INVALID_VALUE, i, p, "not an allocation of this plugin");
}

bool RuleCheck::ipc_mapping(gpuhal_deviceptr_t p, size_t i) {
  return lifetime(ObjectKind::ipc_mapping, p, i, true);
}

bool RuleCheck::device_range(gpuhal_deviceptr_t p, uint64_t bytes, size_t i, size_t n) {
  if (bytes == 0) return true;
  const auto r = layer_.book().allocation_containing(p);
  if (!r) return true;  // not memory the layer saw made (host, registered, virtual): the plugin checks
  const uint64_t end = r->handle + r->bytes;
  if (bytes <= end - p) return true;
  char buf[160];
  std::snprintf(buf, sizeof buf, "[0x%" PRIx64 ", +%" PRIu64 ") runs %" PRIu64 " bytes past the allocation [0x%" PRIx64
                ", +%" PRIu64 ")",
                p, bytes, bytes - (end - p), r->handle, r->bytes);
  return fail_text(GPUHAL_ERROR_INVALID_VALUE, std::string(parameter_name(params_, i)) + ", " +
                                                   std::string(parameter_name(params_, n)) + ": " + buf);
}

bool RuleCheck::copy(uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src, uint64_t bytes, size_t k,
                     size_t d, size_t s, size_t n) {
  if (!ArgumentCheck::copy(kind, dst, src, bytes, k, d, s, n)) return false;
  const bool device_dst = kind != GPUHAL_COPY_DEVICE_TO_HOST, device_src = kind != GPUHAL_COPY_HOST_TO_DEVICE;
  return (!device_dst || device_range(dst, bytes, d, n)) && (!device_src || device_range(src, bytes, s, n));
}

bool RuleCheck::launch(const gpuhal_launch_config_t *c, size_t i) {
  if (!ArgumentCheck::launch(c, i)) return false;
  const char axis[] = "xyz";
  const auto ctx = layer_.book().find(ObjectKind::context, context_);
  const gpuhal_device_properties_t *d = ctx ? layer_.device(int32_t(ctx->bytes)) : nullptr;
  if (!d) return true;
  const uint64_t threads = uint64_t(c->block[0]) * c->block[1] * c->block[2];
  if (d->max_threads_per_block > 0 && threads > uint64_t(d->max_threads_per_block))
    return fail(GPUHAL_ERROR_INVALID_VALUE, i, c,
                "block of " + std::to_string(threads) + " work-items, more than the device's max_threads_per_block " +
                    std::to_string(d->max_threads_per_block));
  for (int k = 0; k < 3; ++k) {
    if (d->max_block_dim[k] > 0 && c->block[k] > uint32_t(d->max_block_dim[k]))
      return fail(GPUHAL_ERROR_INVALID_VALUE, i, c,
                  std::string("block.") + axis[k] + " = " + std::to_string(c->block[k]) + " exceeds the device's " +
                      std::to_string(d->max_block_dim[k]));
    if (d->max_grid_dim[k] > 0 && c->grid[k] > uint32_t(d->max_grid_dim[k]))
      return fail(GPUHAL_ERROR_INVALID_VALUE, i, c,
                  std::string("grid.") + axis[k] + " = " + std::to_string(c->grid[k]) + " exceeds the device's " +
                      std::to_string(d->max_grid_dim[k]));
  }
  return true;
}

bool RuleCheck::location(int32_t v, size_t i) {
  if (v == GPUHAL_LOCATION_HOST) return true;
  const int32_t n = layer_.device_count();
  if (v >= 0 && (n < 0 || v < n)) return true;
  return fail(GPUHAL_ERROR_INVALID_VALUE, i, v, "a device ordinal or GPUHAL_LOCATION_HOST (-1)");
}

bool RuleCheck::not_in_callback() {
  if (t_callback_depth == 0) return true;
  return fail_text(GPUHAL_ERROR_NOT_PERMITTED,
                   "called inside a stream callback: it waits for work, and the callback's stream cannot go on "
                   "until the callback returns");
}

ValidationLayer::~ValidationLayer() = default;

int32_t ValidationLayer::device_count() {
  int32_t n = device_count_.load(std::memory_order_relaxed);
  if (n >= 0) return n;
  if (next_.device_count(&n) != GPUHAL_SUCCESS) return -1;  // before init: not known yet
  device_count_.store(n, std::memory_order_relaxed);
  return n;
}

const gpuhal_device_properties_t *ValidationLayer::device(int32_t ordinal) {
  if (ordinal < 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (size_t(ordinal) >= devices_.size()) devices_.resize(size_t(ordinal) + 1);
  auto &d = devices_[size_t(ordinal)];
  if (!d) {
    auto p = std::make_unique<gpuhal_device_properties_t>();
    p->abi_version = GPUHAL_ABI_VERSION;
    p->struct_size = sizeof *p;
    if (next_.device_properties(ordinal, p.get()) != GPUHAL_SUCCESS) return nullptr;
    d = std::move(p);
  }
  return d.get();
}

void ValidationLayer::plugin_answer(const char *entry, ObjectKind kind, uint64_t handle, uint64_t bytes) {
  std::string problem;
  if (handle == 0) {
    problem = std::string("returned GPUHAL_SUCCESS with a NULL ") + to_string(kind);
  } else if (book_.find(kind, handle)) {
    problem = std::string("returned a ") + to_string(kind) + " " + hex_text(handle) + " that is still live";
  } else if (bytes != 0) {
    const auto first = book_.allocation_containing(handle), last = book_.allocation_containing(handle + bytes - 1);
    if (first || last)
      problem = "returned memory [" + hex_text(handle) + ", +" + std::to_string(bytes) + ") overlapping the live " +
                describe(first ? *first : *last);
  }
  if (problem.empty()) return;
  ++reports_;
  logger_.write(LogLevel::Error, std::string("validation: ") + entry + ": the plugin " + problem);
}

void ValidationLayer::warn_if_busy(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  if (next_.stream_is_capturing) {
    int32_t capturing = 0;
    if (next_.stream_is_capturing(ctx, stream, &capturing) != GPUHAL_SUCCESS || capturing) return;
  }
  if (next_.stream_query(ctx, stream) == GPUHAL_NOT_READY)
    logger_.write(LogLevel::Warn, "validation: stream_destroy: stream " + hex_text(bits_of(stream)) +
                                      " still has queued work (it completes, but nothing can wait for it any more)");
}

ValidationLayer::CallbackBox *ValidationLayer::wrap_callback(gpuhal_context_t ctx, gpuhal_stream_t stream,
                                                             gpuhal_host_fn fn, void *user) {
  int32_t capturing = 0;
  if (next_.stream_is_capturing && next_.stream_is_capturing(ctx, stream, &capturing) != GPUHAL_SUCCESS)
    capturing = 0;
  auto *box = new CallbackBox{fn, user, capturing != 0};
  if (box->kept) {
    std::lock_guard<std::mutex> lock(mu_);
    kept_callbacks_.emplace_back(box);
  }
  return box;
}

void ValidationLayer::unwrap_refused(CallbackBox *box) {
  if (!box->kept) {
    delete box;
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = kept_callbacks_.begin(); it != kept_callbacks_.end(); ++it)
    if (it->get() == box) {
      kept_callbacks_.erase(it);
      return;
    }
}

void ValidationLayer::run_callback(void *p, gpuhal_status_t status) {
  auto *box = static_cast<CallbackBox *>(p);
  ++t_callback_depth;
  box->fn(box->user, status);
  --t_callback_depth;
  if (!box->kept) delete box;
}

}  // namespace gpuhal::detail::layers
