// Pinned, mapped and registered host memory over the plugin's host-memory
// entries, with the core's reference-counted registry of registered ranges.
#include "gpuhal/host_memory.hpp"

#include "internal.hpp"

namespace gpuhal {
namespace {

using detail::ContextImpl;

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

const std::shared_ptr<ContextImpl> &require_host_memory(const Context &ctx, const char *what, bool mapped) {
  if (!ctx.impl()) throw Error(Status::ERROR_INVALID_HANDLE, std::string(what) + ": null context");
  const auto &c = ctx.impl();
  c->check_alive(c->current_generation(), what);
  if (!c->t().host_alloc)
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

void unregister_range(ContextImpl &c, uintptr_t base) {
  std::lock_guard<std::mutex> lock(c.registrations_mutex);
  auto it = c.registrations.find(base);
  if (it == c.registrations.end())
    throw Error(Status::ERROR_NOT_REGISTERED, "unregister: " + hex(base) + " is not the start of a registered range");
  if (it->second.count > 1) {
    --it->second.count;
    return;
  }
  // Forgotten only once the plugin really unregistered it: after a failure
  // the range is still registered on both sides (and can be released again).
  c.check(c.t().host_unregister(c.handle, reinterpret_cast<void *>(base)), "host_unregister");
  c.registrations.erase(it);
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
  a->keep_alive = std::move(keep_alive);
  // Element 0 of `layout` sits at offset - span_begin from the span's start.
  return DeviceArray(DeviceMemory(a), layout.with_offset(layout.offset() - layout.span_begin()), dtype);
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
    if (ctx_.impl()->deallocs) ctx_.impl()->deallocs->report(e);  // the deallocation error handler
  } catch (const std::exception &e) {
    ctx_.impl()->logger().write(LogLevel::Error, std::string("HostRegistration: ") + e.what());
  }
}

void HostRegistration::release() {
  if (!ptr_) return;
  void *p = ptr_;
  ptr_ = nullptr;
  auto &c = *ctx_.impl();
  if (generation_ != c.current_generation() || c.inherited()) return;  // dropped by a reset, or a fork's child
  unregister_range(c, reinterpret_cast<uintptr_t>(p));
}

HostRegistration register_host(const Context &ctx, const HostView &view, HostMemoryFlags flags) {
  const auto &c = require_host_memory(ctx, "register_host", flags.mapped);
  HostRegistration r;
  char *first;
  uint64_t bytes;
  span_of(view, &first, &bytes);
  if (bytes == 0) return r;
  const auto base = reinterpret_cast<uintptr_t>(first);
  {
    std::lock_guard<std::mutex> lock(c->registrations_mutex);
    auto it = c->registrations.find(base);
    if (it != c->registrations.end() && it->second.size == bytes && it->second.flags == to_bits(flags)) {
      ++it->second.count;  // the same range again: counted
    } else {
      auto next = c->registrations.lower_bound(base);
      const bool hits_next = next != c->registrations.end() && next->first < base + bytes;
      const bool hits_prev =
          next != c->registrations.begin() && std::prev(next)->first + std::prev(next)->second.size > base;
      if (hits_next || hits_prev || it != c->registrations.end())
        throw Error(Status::ERROR_ALREADY_REGISTERED, "register_host: [" + hex(base) + ", +" + std::to_string(bytes) +
                                                          ") overlaps a different registered range");
      c->check(c->t().host_register(c->handle, first, bytes, to_bits(flags)), "host_register");
      c->registrations[base] = detail::Registration{bytes, to_bits(flags), 1};
    }
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
  unregister_range(*c, reinterpret_cast<uintptr_t>(first));
}

PinnedScope::PinnedScope(const Context &ctx, std::initializer_list<HostView> views)
    : PinnedScope(ctx, std::vector<HostView>(views)) {}

PinnedScope::PinnedScope(const Context &ctx, const std::vector<HostView> &views) {
  // A failure part way unwinds the registrations made so far.
  if (!ctx.impl()) throw Error(Status::ERROR_INVALID_HANDLE, "PinnedScope: null context");
  for (const auto &v : views) registrations_.push_back(ctx.impl()->manager->mempin(v, false));
}

MappedScope::MappedScope(const Context &ctx, const std::vector<HostView> &views) {
  const auto &c = require_host_memory(ctx, "MappedScope", true);
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
    c->check(c->t().host_get_device_pointer(c->handle, first, &dptr), "host_get_device_pointer");
    device_.push_back(device_view(c, dptr, bytes, v.layout(), v.dtype(), nullptr));
  }
}

namespace detail {

// Page-locked memory, freed through the deferred queue with its real size.
std::shared_ptr<void> backend_host_alloc(const std::shared_ptr<ContextImpl> &c, uint64_t bytes, HostMemoryFlags flags) {
  require_host_memory(Context(c), "memhostalloc", flags.mapped);
  if (bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, "memhostalloc: size must be positive");
  void *p = nullptr;
  c->check(c->t().host_alloc(c->handle, bytes, to_bits(flags), &p), "host_alloc");
  const uint64_t gen = c->current_generation();
  return std::shared_ptr<void>(p, [c, gen, bytes](void *q) {
    ContextImpl *raw = c.get();
    try {
      raw->defer_release(
          gen, bytes, [raw, q] { return raw->t().host_free(raw->handle, q); }, "host_free");
    } catch (const std::exception &e) {
      raw->logger().write(LogLevel::Error, std::string("deferred free of pinned memory: ") + e.what());
    }
  });
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
  c->check(c->t().host_get_device_pointer(c->handle, buffer.get(), &dptr), "host_get_device_pointer");
  out.host = HostArray::adopt(buffer, layout, dtype);
  out.device = device_view(c, dptr, bytes, layout, dtype, buffer);  // the device side keeps the buffer alive
  return out;
}

MappedArray mapped_array_like(const Context &ctx, const HostView &like, bool portable, bool write_combined) {
  return mapped_array(ctx, like.shape(), like.dtype(), strides_like(like.layout()), 'C', portable, write_combined);
}

}  // namespace gpuhal
