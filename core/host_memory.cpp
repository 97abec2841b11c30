// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Pinned, mapped and registered host memory over the plugin's host-memory
// entries, with the core's reference-counted registry of registered ranges.
#include "gpuhal/host_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"
#include "huge_pages.hpp"

namespace gpuhal {
namespace {

using detail::ContextImpl;

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

const std::shared_ptr<ContextImpl> &require_host_memory(const Context &ctx, const char *what, bool mapped) {
  if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, std::string(what) + ": null context");
  const auto &c = detail::impl_of(ctx);
  c->check_alive(c->current_generation(), what);
  if (!c->backend().has_host_alloc())
    throw Error(Status::ERROR_NOT_SUPPORTED,
                std::string(what) + ": backend '" + c->lib().name() + "' has no pinned/registered host memory");
  if (mapped && !c->device->properties.can_map_host_memory)
    throw Error(Status::ERROR_NOT_SUPPORTED,
                std::string(what) + ": device " + std::to_string(c->device->ordinal) + " cannot map host memory");
  return c;
}

uint32_t to_bits(HostMemoryFlags f) {
  return (f.portable ? GPUHAL_HOST_ALLOC_PORTABLE : 0u) | (f.mapped ? GPUHAL_HOST_ALLOC_MAPPED : 0u) |
         (f.write_combined ? GPUHAL_HOST_ALLOC_WRITE_COMBINED : 0u);
}

// The bytes a view spans: [first, first + bytes).
void span_of(const HostView &v, char **first, uint64_t *bytes) {
  *first = static_cast<char *>(v.data()) + (v.layout().span_begin() - v.layout().offset());
  *bytes = uint64_t(v.layout().span_bytes());
}

// ---- the registry -------------------------------------------------------------------
//
// Users register ranges that may repeat, nest and overlap (two DLPack
// imports over one buffer, an import inside a PinnedScope); drivers take one
// registration per byte (cuMemHostRegister: HOST_MEMORY_ALREADY_REGISTERED;
// hsa_amd_memory_lock the same). So the core keeps two maps under
// registrations_mutex: the user's registrations (start, size) -> count, and
// the plugin's pieces start -> {size, flags, users}. A registration
// registers with the plugin only the bytes no piece covers (one piece per
// gap) and counts every piece it touches; its release uncounts them and
// unregisters the pieces no registration uses any more. A piece is made
// mapped whenever the device can map host memory (what CUDA's runtime does
// by default with unified addressing: "the memory will be both mapped and
// portable"), so a mapped use of bytes first pinned unmapped shares them;
// portable stays the caller's choice, and a portable registration over a
// piece made without it is refused (the plugin cannot change a piece's flags
// while transfers may use it).

// The flags every piece of a registration asked with `flags` gets.
uint32_t piece_flags(const ContextImpl &c, HostMemoryFlags flags) {
  return to_bits(flags) | (c.device->properties.can_map_host_memory ? GPUHAL_HOST_ALLOC_MAPPED : 0u);
}

// The pieces overlapping [base, base + bytes), in address order.
template <class Map>
std::vector<typename Map::iterator> pieces_over(Map &pieces, uintptr_t base, uint64_t bytes) {
  std::vector<typename Map::iterator> out;
  auto it = pieces.lower_bound(base);
  if (it != pieces.begin() && std::prev(it)->first + std::prev(it)->second.size > base) --it;
  for (; it != pieces.end() && it->first < base + bytes; ++it) out.push_back(it);
  return out;
}

// Uncounts the pieces of one released registration; unregisters those no
// registration uses. Every piece is tried; the first failure is thrown after
// (a piece whose unregister failed stays, uncounted, and is retried later).
void release_pieces(ContextImpl &c, uintptr_t base, uint64_t bytes) {
  std::unique_ptr<Error> first;
  for (auto it : pieces_over(c.registrations, base, bytes)) {
    if (it->second.count > 0) --it->second.count;
    if (it->second.count > 0) continue;
    const gpuhal_status_t st = c.backend().host_unregister_status(c.handle, reinterpret_cast<void *>(it->first));
    if (st == GPUHAL_SUCCESS) {
      c.registrations.erase(it);
    } else if (!first) {
      try {
        c.check(st, "host_unregister");
      } catch (const Error &e) {
        first = std::make_unique<Error>(e);
      }
    }
  }
  if (first) throw *first;
}

void unregister_range(ContextImpl &c, uintptr_t base, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(c.registrations_mutex);
  auto user = c.user_registrations.find({base, bytes});
  if (user == c.user_registrations.end())
    throw Error(Status::ERROR_NOT_REGISTERED, "unregister: [" + hex(base) + ", +" + std::to_string(bytes) +
                                                  ") is not a registered range (not the start of one, or not "
                                                  "its size: release the view that was registered)");
  if (--user->second == 0) c.user_registrations.erase(user);
  release_pieces(c, base, bytes);
}

// Registers [base, base + bytes) with `flags` (see above). Called with
// registrations_mutex held.
void register_range(ContextImpl &c, char *first, uint64_t bytes, HostMemoryFlags flags) {
  const auto base = reinterpret_cast<uintptr_t>(first);
  const uint32_t want = piece_flags(c, flags);
  auto covering = pieces_over(c.registrations, base, bytes);
  for (auto it : covering) {
    const uint32_t missing = want & ~it->second.flags & (GPUHAL_HOST_ALLOC_PORTABLE | GPUHAL_HOST_ALLOC_MAPPED);
    if (missing)
      throw Error(Status::ERROR_ALREADY_REGISTERED,
                  "register_host: [" + hex(base) + ", +" + std::to_string(bytes) + ") overlaps [" + hex(it->first) +
                      ", +" + std::to_string(it->second.size) + "), registered without " +
                      ((missing & GPUHAL_HOST_ALLOC_PORTABLE) ? "PORTABLE" : "MAPPED") +
                      " (a registration's flags cannot change while it is in use: release it first)");
  }
  // The gaps between the covering pieces, registered one by one; on a
  // failure the ones made so far are undone.
  std::vector<std::pair<uintptr_t, uint64_t>> gaps;
  uintptr_t at = base;
  const uintptr_t end = base + bytes;
  for (auto it : covering) {
    if (it->first > at) gaps.emplace_back(at, it->first - at);
    at = std::max<uintptr_t>(at, it->first + it->second.size);
  }
  if (at < end) gaps.emplace_back(at, end - at);
  std::vector<uintptr_t> made;
  try {
    for (const auto &g : gaps) {
      c.backend().host_register(c.handle, reinterpret_cast<void *>(g.first), g.second, want);
      made.push_back(g.first);
      c.registrations[g.first] = detail::Registration{g.second, want, 0};
    }
  } catch (...) {
    for (uintptr_t m : made) {
      if (c.backend().host_unregister_status(c.handle, reinterpret_cast<void *>(m)) == GPUHAL_SUCCESS) c.registrations.erase(m);
    }
    throw;
  }
  for (auto it : pieces_over(c.registrations, base, bytes)) ++it->second.count;
  ++c.user_registrations[{base, bytes}];
}

// Device array over host memory at device address `dptr`, not owning it.
DeviceArray device_view(const std::shared_ptr<ContextImpl> &c, gpuhal_deviceptr_t dptr, uint64_t bytes,
                        const Layout &layout, DType dtype, std::shared_ptr<void> keep_alive) {
  auto a = std::make_shared<detail::Allocation>();
  a->ctx = c;
  a->ptr = dptr;
  a->size = bytes;
  a->generation = c->current_generation();
  a->owns_device_memory = false;
  a->views_host_memory = true;
  a->keep_alive = std::move(keep_alive);
  // Element 0 of `layout` sits at offset - span_begin from the span's start.
  return DeviceArray(detail::Access::wrap<DeviceMemory>(a), layout.with_offset(layout.offset() - layout.span_begin()),
                     dtype);
}

}  // namespace

HostRegistration::HostRegistration(HostRegistration &&o) noexcept
    : ctx_(std::move(o.ctx_)), ptr_(o.ptr_), size_(o.size_), generation_(o.generation_) {
  o.ptr_ = nullptr;
}

HostRegistration &HostRegistration::operator=(HostRegistration &&o) noexcept {
  if (this != &o) {
    this->~HostRegistration();
    new (this) HostRegistration(std::move(o));
  }
  return *this;
}

HostRegistration::~HostRegistration() {
  try {
    release();
  } catch (const Error &e) {
    if (detail::impl_of(ctx_)->deallocs) detail::impl_of(ctx_)->deallocs->report(e);  // the deallocation error handler
  } catch (const std::exception &e) {
    detail::impl_of(ctx_)->logger().write(LogLevel::Error, std::string("HostRegistration: ") + e.what());
  }
}

void HostRegistration::release() {
  if (!ptr_) return;
  void *p = ptr_;
  ptr_ = nullptr;
  auto &c = *detail::impl_of(ctx_);
  if (generation_ != c.current_generation() || c.inherited()) return;  // dropped by a reset, or a fork's child
  unregister_range(c, reinterpret_cast<uintptr_t>(p), size_);
}

HostRegistration register_host(const Context &ctx, const HostView &view, HostMemoryFlags flags) {
  const auto &c = require_host_memory(ctx, "register_host", flags.mapped);
  HostRegistration r;
  char *first;
  uint64_t bytes;
  span_of(view, &first, &bytes);
  if (bytes == 0) return r;
  if (reinterpret_cast<uintptr_t>(first) + bytes < reinterpret_cast<uintptr_t>(first))
    throw Error(Status::ERROR_INVALID_VALUE, "register_host: the range wraps around the address space");
  {
    std::lock_guard<std::mutex> lock(c->registrations_mutex);
    register_range(*c, first, bytes, flags);
  }
  r.ctx_ = ctx;
  r.ptr_ = first;
  r.size_ = bytes;
  r.generation_ = c->current_generation();
  return r;
}

void deregister_host(const Context &ctx, const HostView &view) {
  const auto &c = require_host_memory(ctx, "deregister_host", false);
  char *first;
  uint64_t bytes;
  span_of(view, &first, &bytes);
  if (bytes == 0) return;
  unregister_range(*c, reinterpret_cast<uintptr_t>(first), bytes);
}

PinnedScope::PinnedScope(const Context &ctx, std::initializer_list<HostView> views)
    : PinnedScope(ctx, std::vector<HostView>(views)) {}

PinnedScope::PinnedScope(const Context &ctx, const std::vector<HostView> &views) {
  // A failure part way unwinds the registrations made so far.
  if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, "PinnedScope: null context");
  for (const auto &v : views) registrations_.push_back(detail::impl_of(ctx)->manager->mempin(v, false));
}

MappedScope::MappedScope(const Context &ctx, const std::vector<HostView> &views) {
  const auto &c = require_host_memory(ctx, "MappedScope", true);
  for (const auto &v : views)
    if (!v.writeable())
      throw Error(Status::ERROR_INVALID_VALUE,
                  "MappedScope: a read-only host view cannot be mapped (its device array would write to it)");
  for (const auto &v : views) {
    registrations_.push_back(c->manager->mempin(v, true));
    char *first;
    uint64_t bytes;
    span_of(v, &first, &bytes);
    if (bytes == 0) {
      device_.push_back(device_array(ctx, v.shape(), v.dtype(), v.strides()));
      continue;
    }
    gpuhal_deviceptr_t dptr = 0;
    c->backend().host_get_device_pointer(c->handle, first, &dptr);
    device_.push_back(device_view(c, dptr, bytes, v.layout(), v.dtype(), nullptr));
  }
}

namespace detail {

namespace {

// Write-combined memory: only the driver makes it (cuMemHostAlloc's
// CU_MEMHOSTALLOC_WRITECOMBINED has no registration counterpart), so the
// driver's allocation is used, tracked as host-visible: a reset keeps it as
// host memory for the host arrays over it (host_visible_memory.hpp).
std::shared_ptr<void> driver_host_alloc(const std::shared_ptr<ContextImpl> &c, uint64_t bytes, HostMemoryFlags flags) {
  void *p = nullptr;
  c->backend().host_alloc(c->handle, bytes, to_bits(flags), &p);
  const uint64_t gen = c->current_generation();
  const auto base = reinterpret_cast<uintptr_t>(p);
  try {
    c->host_visible.track(base, bytes);
  } catch (...) {
    c->backend().host_free_status(c->handle, p);
    throw;
  }
  return std::shared_ptr<void>(p, [c, gen, bytes, base](void *q) {
    ContextImpl *raw = c.get();
    if (gen != raw->current_generation() || raw->inherited()) {
      raw->release_old_host_visible(base);
      return;
    }
    raw->host_visible.untrack(base);
    try {
      raw->defer_release(
          gen, bytes, [raw, q] { return raw->backend().host_free_status(raw->handle, q); }, "host_free");
    } catch (const std::exception &e) {
      raw->logger().write(LogLevel::Error, std::string("deferred free of pinned memory: ") + e.what());
    }
  });
}

uint64_t host_page_size() {
  static const uint64_t size = uint64_t(sysconf(_SC_PAGESIZE));
  return size;
}

// Anonymous pages for pinned memory. From 2 MiB on they are aligned to
// 2 MiB (x86-64's and arm64's transparent huge page) and advised to huge
// pages, as the host backend's device memory is: copies through them and
// MPI's single-copy transfers out of them (Linux's process_vm_readv pins
// each page) run about 3x faster (benchmarks/bench_mpi.cpp: mpi-host
// against mpi-host-thp). A hint: with THP off, small pages as before. The
// unaligned ends of the larger mapping are unmapped at once, so `mapped`
// bytes from the result are the whole mapping.
void *map_pinned_pages(uint64_t mapped) {
  const uint64_t huge = uint64_t(2) << 20;
  if (mapped < huge) return mmap(nullptr, size_t(mapped), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return support::map_huge_aligned(mapped, huge);
}

// Pinned and mapped memory that is gpuhal's own: anonymous pages the
// backend registers (host_register: cuMemHostRegister, hsa_amd_memory_lock).
// The driver frees its own allocations with its context, under any NumPy
// array still over them; a registration only ends with it. So after
// Context::reset() the pages stay the process's, valid host memory until
// the last handle goes. Released through the deferred queue (unregister,
// then unmap); after a reset only unmapped.
std::shared_ptr<void> registered_host_alloc(const std::shared_ptr<ContextImpl> &c, uint64_t bytes,
                                            HostMemoryFlags flags) {
  const uint64_t page = host_page_size();
  if (bytes > uint64_t(SIZE_MAX / 2))
    throw Error(Status::ERROR_OUT_OF_MEMORY, "memhostalloc: " + std::to_string(bytes) + " bytes is more than the host has");
  const uint64_t mapped = (bytes + page - 1) / page * page;
  void *p = map_pinned_pages(mapped);
  if (p == MAP_FAILED)
    throw Error(Status::ERROR_OUT_OF_MEMORY,
                "memhostalloc: mapping " + std::to_string(bytes) + " bytes of host memory failed: " + std::strerror(errno));
  try {
    // Mapped whenever the device maps host memory, as the driver's pinned
    // memory is reachable with unified addressing whatever its flags
    // (piece_flags: the rule of every registration).
    c->backend().host_register(c->handle, p, bytes, piece_flags(*c, flags));
  } catch (...) {
    munmap(p, size_t(mapped));
    throw;
  }
  const uint64_t gen = c->current_generation();
  return std::shared_ptr<void>(p, [c, gen, bytes, mapped](void *q) {
    ContextImpl *raw = c.get();
    if (gen != raw->current_generation() || raw->inherited()) {  // the registration went with the context
      munmap(q, size_t(mapped));
      return;
    }
    try {
      // Generation 0: the item always runs, also after a reset (then it
      // only unmaps): the pages are ours whatever becomes of the context.
      raw->deallocs->add({[raw, q, gen, mapped] {
                            if (raw->handle && gen == raw->current_generation() && !raw->inherited())
                              raw->check(raw->backend().host_unregister_status(raw->handle, q), "host_unregister");
                            munmap(q, size_t(mapped));  // not reached when the unregister failed: kept registered
                          },
                          bytes, 0});
    } catch (const std::exception &e) {
      raw->logger().write(LogLevel::Error, std::string("deferred free of pinned memory: ") + e.what());
    }
  });
}

}  // namespace

// Page-locked host memory (see above), freed through the deferred queue with its real size.
std::shared_ptr<void> backend_host_alloc(const std::shared_ptr<ContextImpl> &c, uint64_t bytes, HostMemoryFlags flags) {
  require_host_memory(detail::Access::wrap<Context>(c), "memhostalloc", flags.mapped);
  if (bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, "memhostalloc: size must be positive");
  return flags.write_combined ? driver_host_alloc(c, bytes, flags) : registered_host_alloc(c, bytes, flags);
}

}  // namespace detail

namespace {

Layout checked_layout(const Shape &shape, DType dtype, const Strides &strides, char order) {
  dtype.validate();
  return Layout::make(shape, dtype.itemsize(), strides, order);
}

}  // namespace

HostArray pinned_array(const Context &ctx, const Shape &shape, DType dtype, const Strides &strides, char order) {
  const auto &c = require_host_memory(ctx, "pinned_array", false);
  const Layout layout = checked_layout(shape, dtype, strides, order);
  if (layout.span_bytes() == 0) return HostArray::adopt(nullptr, layout, dtype);
  return HostArray::adopt(c->manager->memhostalloc(uint64_t(layout.span_bytes()), HostMemoryFlags{}), layout, dtype);
}

HostArray pinned_array_like(const Context &ctx, const HostView &like) {
  return pinned_array(ctx, like.shape(), like.dtype(), strides_like(like.layout()));
}

MappedArray mapped_array(const Context &ctx, const Shape &shape, DType dtype, const Strides &strides, char order,
                         bool portable, bool write_combined) {
  const auto &c = require_host_memory(ctx, "mapped_array", true);
  const Layout layout = checked_layout(shape, dtype, strides, order);
  MappedArray out;
  if (layout.span_bytes() == 0) {
    out.host = HostArray::adopt(nullptr, layout, dtype);
    out.device = device_array(ctx, shape, dtype, strides, order);
    return out;
  }
  const uint64_t bytes = uint64_t(layout.span_bytes());
  std::shared_ptr<void> buffer = c->manager->memhostalloc(bytes, HostMemoryFlags{portable, true, write_combined});
  gpuhal_deviceptr_t dptr = 0;
  c->backend().host_get_device_pointer(c->handle, buffer.get(), &dptr);
  out.host = HostArray::adopt(buffer, layout, dtype);
  out.device = device_view(c, dptr, bytes, layout, dtype, buffer);  // the device side keeps the buffer alive
  return out;
}

MappedArray mapped_array_like(const Context &ctx, const HostView &like, bool portable, bool write_combined) {
  return mapped_array(ctx, like.shape(), like.dtype(), strides_like(like.layout()), 'C', portable, write_combined);
}

}  // namespace gpuhal
