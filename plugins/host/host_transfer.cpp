// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's copies and memsets: checked against the context's
// device-accessible ranges, run on the stream (or inline when it is idle),
// large copies spread over the plugin's threads (host_copy.hpp).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "copy_rect.hpp"
#include "host_plugin.hpp"
#include "host_copy.hpp"
#include "host_entries.hpp"
#include "host_kernel.hpp"
#include "host_stream.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

// ---- transfers -------------------------------------------------------------------

namespace {

// All inline on the synchronous copy's path (each call's frame is stores
// that queue behind a small copy's).

// The sides of a copy of `kind` that are device memory; false for a kind
// plugin.h does not define. check_copy and the cached path both ask here.
[[gnu::always_inline]] inline bool device_sides(uint32_t kind, bool *dst_dev, bool *src_dev) {
  if (kind != GPUHAL_COPY_HOST_TO_DEVICE && kind != GPUHAL_COPY_DEVICE_TO_HOST && kind != GPUHAL_COPY_DEVICE_TO_DEVICE)
    return false;
  *dst_dev = kind != GPUHAL_COPY_DEVICE_TO_HOST;
  *src_dev = kind != GPUHAL_COPY_HOST_TO_DEVICE;
  return true;
}

[[gnu::always_inline]] inline gpuhal_status_t check_copy(const char *entry, uint32_t kind, gpuhal_deviceptr_t dst,
                                                         gpuhal_deviceptr_t src, uint64_t bytes) {
  bool dst_dev = false, src_dev = false;
  if (!device_sides(kind, &dst_dev, &src_dev))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": unknown copy kind " + std::to_string(kind));
  if (bytes == 0) return GPUHAL_SUCCESS;
  if (!dst || !src) return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": null pointer");
  const auto &reg = plugin_state().registry;
  if (dst_dev && !reg.device_accessible(uintptr_t(dst), bytes))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": destination [" + hex(dst) + ", +" +
                                                std::to_string(bytes) + ") is not inside one device allocation");
  if (src_dev && !reg.device_accessible(uintptr_t(src), bytes))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": source [" + hex(src) + ", +" +
                                                std::to_string(bytes) + ") is not inside one device allocation");
  return GPUHAL_SUCCESS;
}

[[gnu::always_inline]] inline gpuhal_status_t copy_on(HostContext *c, const std::shared_ptr<StreamState> &s,
                                                      gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src, uint64_t bytes,
                                                      bool wait) {
  auto run = [dst, src, bytes] {
    copy_bytes(reinterpret_cast<void *>(uintptr_t(dst)), reinterpret_cast<const void *>(uintptr_t(src)), size_t(bytes));
  };
  if (wait && s->is_default && c->run_inline_if_idle(run)) return GPUHAL_SUCCESS;
  const uint64_t ticket = c->submit(s, [run](bool ok) {
    if (ok) run();
  });
  if (wait) s->progress->wait(*s, ticket);
  return GPUHAL_SUCCESS;
}

// The small synchronous copy's whole path when everything is as it was on
// this thread's last copy: the context and the device range(s) are the ones
// this thread resolved last (nothing has gone since), this thread holds the
// context's inline bias and its streams are idle. Then the copy is one
// move_bytes and this returns true. Nothing here can throw or fail, so it runs
// without guard()'s frame, whose stores (like every push and spill) queue
// behind a small copy's. False: nothing was done, and memcpy_sync_checked
// runs the same checks the long way and reports what fails. The checks
// are check_copy's own predicates: device_sides, and the registry's
// device_accessible through its lock-free half.
[[gnu::always_inline]] inline bool copy_sync_cached(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst,
                                                    gpuhal_deviceptr_t src, uint64_t bytes) {
  HostContext *c = find_context_cached(ctx);
  if (!c || bytes == 0 || bytes >= kCopySpreadBytes || !dst || !src || on_worker_thread()) return false;
  bool dst_dev = false, src_dev = false;
  if (!device_sides(kind, &dst_dev, &src_dev)) return false;
  const Registry &reg = plugin_state().registry;
  if ((dst_dev && !reg.device_accessible_cached(uintptr_t(dst), bytes)) ||
      (src_dev && !reg.device_accessible_cached(uintptr_t(src), bytes)))
    return false;
  return c->run_biased_if_idle([dst, src, bytes] {
    move_bytes(reinterpret_cast<void *>(uintptr_t(dst)), reinterpret_cast<const void *>(uintptr_t(src)),
               size_t(bytes));
  });
}

[[gnu::noinline]] gpuhal_status_t memcpy_sync_checked(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst,
                                                      gpuhal_deviceptr_t src, uint64_t bytes) {
  return in_context(ctx, "memcpy_sync", [&](HostContext *c) -> gpuhal_status_t {
    if (on_worker_thread()) return would_deadlock("memcpy_sync");
    if (gpuhal_status_t st = check_copy("memcpy_sync", kind, dst, src, bytes)) return st;
    if (gpuhal_status_t st = c->captures.refusal(c->default_stream().get(), true, "memcpy_sync")) return st;
    if (bytes == 0) return GPUHAL_SUCCESS;
    return copy_on(c, c->default_stream(), dst, src, bytes, true);
  });
}

}  // namespace

gpuhal_status_t memcpy_sync(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                            uint64_t bytes) {
  if (copy_sync_cached(ctx, kind, dst, src, bytes)) return GPUHAL_SUCCESS;
  return memcpy_sync_checked(ctx, kind, dst, src, bytes);
}

gpuhal_status_t memcpy_async(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                             uint64_t bytes, gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "memcpy_async",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     if (gpuhal_status_t st = check_copy("memcpy_async", kind, dst, src, bytes)) return st;
                     if (bytes == 0) return GPUHAL_SUCCESS;
                     return copy_on(c, s, dst, src, bytes, false);
                   });
}

// ---- rectangular copies ---------------------------------------------------------

namespace {

// plugin.h's rules (read_copy_rect), then check_copy's: each device side's
// whole extent inside one device allocation.
gpuhal_status_t check_rect(const char *entry, uint32_t kind, const gpuhal_copy_rect_t *in, gpuhal_copy_rect_t *r) {
  if (gpuhal_status_t st = plugin::read_copy_rect(entry, kind, in, r)) return st;
  if (plugin::rect_empty(*r)) return GPUHAL_SUCCESS;
  const auto &reg = plugin_state().registry;
  const bool dst_dev = kind != GPUHAL_COPY_DEVICE_TO_HOST, src_dev = kind != GPUHAL_COPY_HOST_TO_DEVICE;
  if (dst_dev && !reg.device_accessible(uintptr_t(r->dst), plugin::dst_extent(*r)))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": the destination region [" + hex(r->dst) + ", +" +
                                                std::to_string(plugin::dst_extent(*r)) +
                                                ") is not inside one device allocation");
  if (src_dev && !reg.device_accessible(uintptr_t(r->src), plugin::src_extent(*r)))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": the source region [" + hex(r->src) + ", +" +
                                                std::to_string(plugin::src_extent(*r)) +
                                                ") is not inside one device allocation");
  return GPUHAL_SUCCESS;
}

// The rows of `r`, each one move_bytes; from kCopySpreadBytes in all,
// groups of about 2 MiB of rows spread over the plugin's threads (as
// copy_bytes spreads a long copy).
void copy_rect_rows(const gpuhal_copy_rect_t &r) {
  const uint64_t rows = r.height * r.depth;
  auto row = [&r](uint64_t i) {
    const uint64_t z = i / r.height, y = i % r.height;
    move_bytes(reinterpret_cast<void *>(uintptr_t(r.dst + z * r.dst_slice_pitch + y * r.dst_pitch)),
               reinterpret_cast<const void *>(uintptr_t(r.src + z * r.src_slice_pitch + y * r.src_pitch)),
               size_t(r.width_bytes));
  };
  if (rows < 2 || rows * r.width_bytes < kCopySpreadBytes) {
    for (uint64_t i = 0; i < rows; ++i) row(i);
    return;
  }
  const uint64_t per_group = std::max<uint64_t>(1, (uint64_t(2) << 20) / r.width_bytes);
  shared_pool().parallel_for((rows + per_group - 1) / per_group, [&](uint64_t g) {
    for (uint64_t i = g * per_group; i < std::min(rows, (g + 1) * per_group); ++i) row(i);
  });
}

// As copy_on, for a checked, non-empty region.
gpuhal_status_t rect_on(HostContext *c, const std::shared_ptr<StreamState> &s, const gpuhal_copy_rect_t &r,
                        bool wait) {
  auto run = [r] { copy_rect_rows(r); };
  if (wait && s->is_default && c->run_inline_if_idle(run)) return GPUHAL_SUCCESS;
  const uint64_t ticket = c->submit(s, [run](bool ok) {
    if (ok) run();
  });
  if (wait) s->progress->wait(*s, ticket);
  return GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t memcpy_rect_sync(gpuhal_context_t ctx, uint32_t kind, const gpuhal_copy_rect_t *rect) {
  return in_context(ctx, "memcpy_rect_sync", [&](HostContext *c) -> gpuhal_status_t {
    if (on_worker_thread()) return would_deadlock("memcpy_rect_sync");
    gpuhal_copy_rect_t r;
    if (gpuhal_status_t st = check_rect("memcpy_rect_sync", kind, rect, &r)) return st;
    if (gpuhal_status_t st = c->captures.refusal(c->default_stream().get(), true, "memcpy_rect_sync")) return st;
    if (plugin::rect_empty(r)) return GPUHAL_SUCCESS;
    return rect_on(c, c->default_stream(), r, true);
  });
}

gpuhal_status_t memcpy_rect_async(gpuhal_context_t ctx, uint32_t kind, const gpuhal_copy_rect_t *rect,
                                  gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "memcpy_rect_async",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     gpuhal_copy_rect_t r;
                     if (gpuhal_status_t st = check_rect("memcpy_rect_async", kind, rect, &r)) return st;
                     if (plugin::rect_empty(r)) return GPUHAL_SUCCESS;
                     return rect_on(c, s, r, false);
                   });
}

// ---- memsets --------------------------------------------------------------------

namespace {

gpuhal_status_t set_on(HostContext *c, const std::shared_ptr<StreamState> &s, gpuhal_deviceptr_t dst, uint8_t value,
                       uint64_t bytes, bool wait) {
  if (bytes == 0) return GPUHAL_SUCCESS;
  if (bytes >> 56 || !plugin_state().registry.device_accessible(uintptr_t(dst), bytes))
    return fail(GPUHAL_ERROR_INVALID_VALUE,
                "memset: [" + hex(dst) + ", +" + std::to_string(bytes) + ") is not inside one device allocation");
  auto run = [dst, value, bytes] { std::memset(reinterpret_cast<void *>(uintptr_t(dst)), value, size_t(bytes)); };
  if (wait && s->is_default && c->run_inline_if_idle(run)) return GPUHAL_SUCCESS;
  // Two 8-byte captures: small enough for std::function to hold without an
  // allocation (the value rides in the top byte; sizes stay below 2^56).
  const uint64_t packed = bytes | (uint64_t(value) << 56);
  const uint64_t ticket = c->submit(s, [dst, packed](bool ok) {
    if (ok)
      std::memset(reinterpret_cast<void *>(uintptr_t(dst)), int(packed >> 56),
                  size_t(packed & ((uint64_t(1) << 56) - 1)));
  });
  if (wait) s->progress->wait(*s, ticket);
  return GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t memset_sync(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes) {
  return in_context(ctx, "memset_sync", [&](HostContext *c) -> gpuhal_status_t {
    if (on_worker_thread()) return would_deadlock("memset_sync");
    if (gpuhal_status_t st = c->captures.refusal(c->default_stream().get(), true, "memset_sync")) return st;
    return set_on(c, c->default_stream(), dst, value, bytes, true);
  });
}

gpuhal_status_t memset_async(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes,
                             gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "memset_async",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     return set_on(c, s, dst, value, bytes, false);
                   });
}

}  // namespace gpuhal::host
