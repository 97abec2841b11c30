// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's transfers: copies as hsa_amd_memory_async_copy after the
// stream's dependencies (pageable host memory through the staging chunks,
// hsa_staging.cpp), memsets as host operations over hsa_amd_memory_fill.
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "copy_rect.hpp"
#include "hsa_context.hpp"

namespace gpuhal::hsa {

namespace {

// ---- transfers ------------------------------------------------------------------------------

// The address the copy engines can use for host range [p, p + n) when it
// lies in pinned or registered memory of c, or nullptr (pageable memory).
void *pinned_address(HsaContext *c, uintptr_t p, uint64_t n) {
  if (auto it = c->host_allocations.upper_bound(p); it != c->host_allocations.begin()) {
    --it;
    if (p >= it->first && p - it->first + n <= it->second) return reinterpret_cast<void *>(p);
  }
  if (auto it = c->registrations.upper_bound(p); it != c->registrations.begin()) {
    --it;
    if (p >= it->first && p - it->first + n <= it->second.bytes)
      return static_cast<char *>(it->second.agent_ptr) + (p - it->first);
  }
  return nullptr;
}

// The agent a copy names for a "device" address: the CPU for pinned host
// memory and for the device address of registered (mapped) host memory,
// else the context's GPU. hsa_amd_memory_async_copy (hsa_ext_amd.h):
// "dst_agent: Agent associated with the dst" -- host memory is the CPU's.
// (The fake runtime holds the plugin to that reading and refuses a GPU
// agent for host memory; naming the owner is right under either reading.)
hsa_agent_t agent_of(HsaContext *c, uintptr_t p, uint64_t n) {
  if (auto it = c->host_allocations.upper_bound(p); it != c->host_allocations.begin()) {
    --it;
    if (p >= it->first && p - it->first + n <= it->second) return host_agent().agent;
  }
  for (const auto &kv : c->registrations) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(kv.second.agent_ptr);
    if (p >= base && p - base + n <= kv.second.bytes) return host_agent().agent;
  }
  return c->device->agent;
}

// Enqueues a copy on s (c->mu held). Pageable host memory goes through the
// context's staging chunks (hsa_staging.cpp).
gpuhal_status_t enqueue_copy(HsaContext *c, HsaStream *s, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                             uint64_t bytes) {
  const hsa_agent_t cpu = host_agent().agent;
  void *d = reinterpret_cast<void *>(uintptr_t(dst));
  const void *sp = reinterpret_cast<const void *>(uintptr_t(src));
  switch (kind) {
    case GPUHAL_COPY_DEVICE_TO_DEVICE:
      return submit_copy(s, d, agent_of(c, dst, bytes), sp, agent_of(c, src, bytes), bytes, nullptr);
    case GPUHAL_COPY_HOST_TO_DEVICE:
      if (void *pinned = pinned_address(c, uintptr_t(src), bytes))
        return submit_copy(s, d, agent_of(c, dst, bytes), pinned, cpu, bytes, nullptr);
      return staged_copy_to_device(s, d, agent_of(c, dst, bytes), sp, bytes);
    case GPUHAL_COPY_DEVICE_TO_HOST:
      if (void *pinned = pinned_address(c, uintptr_t(dst), bytes))
        return submit_copy(s, pinned, cpu, sp, agent_of(c, src, bytes), bytes, nullptr);
      return staged_copy_to_host(s, d, sp, agent_of(c, src, bytes), bytes);
    default:
      return fail(GPUHAL_ERROR_INVALID_VALUE, "unknown copy kind " + std::to_string(kind));
  }
}

}  // namespace

gpuhal_status_t memcpy_async(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                             uint64_t bytes, gpuhal_stream_t stream) {
  return in_context(ctx, "memcpy_async", [&](HsaContext *c) -> gpuhal_status_t {
    if (bytes == 0) return GPUHAL_SUCCESS;
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("memcpy_async");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "memcpy_async"); st != GPUHAL_SUCCESS) return st;
    if (record_in_capture(c, s, [c, kind, dst, src, bytes](HsaStream *t) {
          return enqueue_copy(c, t, kind, dst, src, bytes);
        }))
      return GPUHAL_SUCCESS;
    return enqueue_copy(c, s, kind, dst, src, bytes);
  });
}

gpuhal_status_t memcpy_sync(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                            uint64_t bytes) {
  return in_context(ctx, "memcpy_sync", [&](HsaContext *c) -> gpuhal_status_t {
    if (bytes == 0) return GPUHAL_SUCCESS;
    SignalRef last;
    HsaStream *s = c->legacy.get();
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (const gpuhal_status_t st = c->captures.refusal(s, true, "memcpy_sync"); st != GPUHAL_SUCCESS) return st;
      if (const gpuhal_status_t st = enqueue_copy(c, s, kind, dst, src, bytes); st != GPUHAL_SUCCESS) return st;
      last = s->last;
    }
    return wait_stream(c, s, last, "memcpy_sync");
  });
}

// ---- rectangular copies ---------------------------------------------------------------------

namespace {

// What hsa_amd_memory_async_copy_rect takes (hsa_ext_amd.h): "All elements
// must be 4 byte aligned" (base, pitch, slice), extents in 32 bits (x in
// bytes, y and z in rows and layers).
bool rect_engine_fits(const gpuhal_copy_rect_t &r) {
  const uint64_t aligned = r.dst | r.src | r.dst_pitch | r.src_pitch | r.dst_slice_pitch | r.src_slice_pitch;
  return (aligned & 3) == 0 && r.width_bytes <= UINT32_MAX && r.height <= UINT32_MAX && r.depth <= UINT32_MAX;
}

// One hsa_amd_memory_async_copy_rect of r after s's work (c->mu held).
// Host sides are the addresses the GPU reaches them at (pinned_address);
// false in *done when r cannot go to the rect engine (a pageable host side,
// the alignment above, no such entry in this runtime).
gpuhal_status_t rect_on_engine(HsaContext *c, HsaStream *s, uint32_t kind, const gpuhal_copy_rect_t &r, bool *done) {
  *done = false;
  if (!rt().hsa_amd_memory_async_copy_rect || !rect_engine_fits(r)) return GPUHAL_SUCCESS;
  void *dst = reinterpret_cast<void *>(uintptr_t(r.dst));
  void *src = reinterpret_cast<void *>(uintptr_t(r.src));
  if (kind == GPUHAL_COPY_DEVICE_TO_HOST) dst = pinned_address(c, uintptr_t(r.dst), plugin::dst_extent(r));
  if (kind == GPUHAL_COPY_HOST_TO_DEVICE) src = pinned_address(c, uintptr_t(r.src), plugin::src_extent(r));
  if (!dst || !src || ((uintptr_t(dst) | uintptr_t(src)) & 3)) return GPUHAL_SUCCESS;
  const hsa_pitched_ptr_t d{dst, size_t(r.dst_pitch), size_t(r.dst_slice_pitch)};
  const hsa_pitched_ptr_t sp{src, size_t(r.src_pitch), size_t(r.src_slice_pitch)};
  const hsa_dim3_t zero{0, 0, 0}, range{uint32_t(r.width_bytes), uint32_t(r.height), uint32_t(r.depth)};
  const hsa_amd_copy_direction_t dir = kind == GPUHAL_COPY_HOST_TO_DEVICE   ? hsaHostToDevice
                                       : kind == GPUHAL_COPY_DEVICE_TO_HOST ? hsaDeviceToHost
                                                                            : hsaDeviceToDevice;
  *done = true;
  return submit_engine_copy(
      s, "hsa_amd_memory_async_copy_rect",
      [&](uint32_t n, const hsa_signal_t *deps, hsa_signal_t signal) {
        return rt().hsa_amd_memory_async_copy_rect(&d, &zero, &sp, &zero, &range, c->device->agent, dir, n, deps,
                                                   signal);
      },
      nullptr);
}

// r on s (c->mu held, r checked and not empty): one rect-engine copy where
// it takes r, else row by row as memcpy_async copies (staging pageable
// host memory). A region with one row per slice has its slices as rows.
gpuhal_status_t enqueue_rect(HsaContext *c, HsaStream *s, uint32_t kind, gpuhal_copy_rect_t r) {
  if (r.height == 1) {
    r.height = r.depth;
    r.dst_pitch = r.dst_slice_pitch;
    r.src_pitch = r.src_slice_pitch;
    r.depth = 1;
  }
  if (r.depth == 1) r.dst_slice_pitch = r.dst_pitch * r.height, r.src_slice_pitch = r.src_pitch * r.height;
  if (r.height > 1) {
    bool done = false;
    const gpuhal_status_t st = rect_on_engine(c, s, kind, r, &done);
    if (done || st != GPUHAL_SUCCESS) return st;
  }
  return plugin::for_each_row(
      r, [&](gpuhal_deviceptr_t d, gpuhal_deviceptr_t sp) { return enqueue_copy(c, s, kind, d, sp, r.width_bytes); });
}

}  // namespace

gpuhal_status_t memcpy_rect_async(gpuhal_context_t ctx, uint32_t kind, const gpuhal_copy_rect_t *rect,
                                  gpuhal_stream_t stream) {
  return in_context(ctx, "memcpy_rect_async", [&](HsaContext *c) -> gpuhal_status_t {
    gpuhal_copy_rect_t r;
    if (const gpuhal_status_t st = plugin::read_copy_rect("memcpy_rect_async", kind, rect, &r); st != GPUHAL_SUCCESS)
      return st;
    if (plugin::rect_empty(r)) return GPUHAL_SUCCESS;
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("memcpy_rect_async");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "memcpy_rect_async"); st != GPUHAL_SUCCESS)
      return st;
    if (record_in_capture(c, s, [c, kind, r](HsaStream *t) { return enqueue_rect(c, t, kind, r); }))
      return GPUHAL_SUCCESS;
    return enqueue_rect(c, s, kind, r);
  });
}

gpuhal_status_t memcpy_rect_sync(gpuhal_context_t ctx, uint32_t kind, const gpuhal_copy_rect_t *rect) {
  return in_context(ctx, "memcpy_rect_sync", [&](HsaContext *c) -> gpuhal_status_t {
    gpuhal_copy_rect_t r;
    if (const gpuhal_status_t st = plugin::read_copy_rect("memcpy_rect_sync", kind, rect, &r); st != GPUHAL_SUCCESS)
      return st;
    if (plugin::rect_empty(r)) return GPUHAL_SUCCESS;
    SignalRef last;
    HsaStream *s = c->legacy.get();
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (const gpuhal_status_t st = c->captures.refusal(s, true, "memcpy_rect_sync"); st != GPUHAL_SUCCESS) return st;
      if (const gpuhal_status_t st = enqueue_rect(c, s, kind, r); st != GPUHAL_SUCCESS) return st;
      last = s->last;
    }
    return wait_stream(c, s, last, "memcpy_rect_sync");
  });
}

namespace {

// hsa_amd_memory_fill writes 32-bit words at 4-byte aligned addresses; the
// up to three bytes before and after go through the pinned scratch buffer.
void fill_bytes(HsaContext *c, uintptr_t dst, uint8_t value, uint64_t bytes) {
  auto check = [](hsa_status_t s, const char *call) {
    if (s != HSA_STATUS_SUCCESS) throw std::runtime_error(std::string(call) + " failed: " + rt().describe(s));
  };
  std::memset(c->fill_scratch, value, 8);
  auto edge = [&](uintptr_t at, uint64_t n) {
    if (n == 0) return;
    SignalRef done;
    if (make_signal(1, &done) != GPUHAL_SUCCESS) throw std::runtime_error(plugin::last_error());
    check(rt().hsa_amd_memory_async_copy(reinterpret_cast<void *>(at), c->device->agent, c->fill_scratch,
                                         host_agent().agent, size_t(n), 0, nullptr, done->handle),
          "hsa_amd_memory_async_copy");
    done->wait(&c->failed);
    if (!done->done()) {  // the context failed: the copy may still write the scratch buffer
      quarantine_signal(done);
      throw std::runtime_error("the context failed while a memset's edge bytes were copied");
    }
    if (done->failed()) throw std::runtime_error("hsa_amd_memory_async_copy of a memset's edge bytes failed");
  };
  const uint64_t head = std::min<uint64_t>(bytes, (4 - (dst & 3)) & 3);
  const uint64_t words = (bytes - head) / 4;
  const uint64_t tail = bytes - head - words * 4;
  edge(dst, head);
  if (words) {
    const uint32_t pattern = uint32_t(value) * 0x01010101u;
    check(rt().hsa_amd_memory_fill(reinterpret_cast<void *>(dst + head), pattern, size_t(words)),
          "hsa_amd_memory_fill");
  }
  edge(dst + head + words * 4, tail);
}

// A fill of [dst, dst + bytes) as a host operation of the stream. In
// registered (locked) host memory the host writes the bytes itself:
// hsa_amd_memory_fill fills the runtime's own allocations (the fake
// runtime refuses anything else), and a registration's agent address is
// the host's memory seen by the device. Called with c->mu held.
std::function<void()> fill_op(HsaContext *c, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes) {
  for (const auto &kv : c->registrations) {
    const auto agent = reinterpret_cast<uintptr_t>(kv.second.agent_ptr);
    if (dst >= agent && dst - agent + bytes <= kv.second.bytes) {
      void *host = reinterpret_cast<void *>(kv.first + (dst - agent));
      return [host, value, bytes] { std::memset(host, value, size_t(bytes)); };
    }
  }
  return [c, dst, value, bytes] { fill_bytes(c, uintptr_t(dst), value, bytes); };
}

}  // namespace

gpuhal_status_t memset_async(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes,
                             gpuhal_stream_t stream) {
  return in_context(ctx, "memset_async", [&](HsaContext *c) -> gpuhal_status_t {
    if (bytes == 0) return GPUHAL_SUCCESS;
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("memset_async");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "memset_async"); st != GPUHAL_SUCCESS) return st;
    if (record_in_capture(c, s, [op = fill_op(c, dst, value, bytes)](HsaStream *t) {
          return submit_host_op(t, op, nullptr);
        }))
      return GPUHAL_SUCCESS;
    return submit_host_op(s, fill_op(c, dst, value, bytes), nullptr);
  });
}

gpuhal_status_t memset_sync(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes) {
  return in_context(ctx, "memset_sync", [&](HsaContext *c) -> gpuhal_status_t {
    if (bytes == 0) return GPUHAL_SUCCESS;
    SignalRef last;
    HsaStream *s = c->legacy.get();
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (const gpuhal_status_t st = c->captures.refusal(s, true, "memset_sync"); st != GPUHAL_SUCCESS) return st;
      const gpuhal_status_t st = submit_host_op(s, fill_op(c, dst, value, bytes), nullptr);
      if (st != GPUHAL_SUCCESS) return st;
      last = s->last;
    }
    return wait_stream(c, s, last, "memset_sync");
  });
}

}  // namespace gpuhal::hsa
