// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Virtual memory (gpuhal/virtual_memory.hpp) over the plugin's vm_* entries.
#include "gpuhal/virtual_memory.hpp"

#include <initializer_list>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"

namespace gpuhal {

namespace detail {

inline constexpr const char *kVirtualMemory = "virtual memory (Capability::VirtualMemory)";

// Physical memory: released (vm_release) with its last handle; the plugin
// keeps it while a mapping still uses it.
struct PhysicalMemoryImpl {
  std::shared_ptr<ContextImpl> ctx;
  uint64_t generation = 0;
  gpuhal_physical_memory_t handle = nullptr;
  uint64_t bytes = 0;
  ~PhysicalMemoryImpl() {
    if (!ctx || ctx->inherited() || ctx->current_generation() != generation) return;  // gone with its context
    const gpuhal_status_t st = ctx->backend().vm_release_status(ctx->handle, handle);
    if (st != GPUHAL_SUCCESS) ctx->report_release_failure(st, "vm_release");
  }
};

struct VirtualRangeImpl {
  std::shared_ptr<ContextImpl> ctx;
  uint64_t generation = 0;
  gpuhal_deviceptr_t base = 0;
  uint64_t bytes = 0;
  struct Mapping {
    uint64_t bytes = 0;
    std::shared_ptr<PhysicalMemoryImpl> physical;
    // Held by every array over the mapping (VirtualRange::array): unmap
    // refuses while anyone else holds it.
    std::shared_ptr<int> lease = std::make_shared<int>(0);
    bool accessible = false;
  };
  std::mutex mu;
  std::map<uint64_t, Mapping> mappings;  // by offset

  bool current() const { return ctx && !ctx->inherited() && ctx->current_generation() == generation; }
  ~VirtualRangeImpl() {
    if (!current()) return;  // the context's destroy took everything
    try {
      if (!mappings.empty()) ctx->synchronize();
    } catch (...) {
      return;  // a failed context: its reset or destroy frees the range
    }
    for (const auto &m : mappings) {
      const gpuhal_status_t st = ctx->backend().vm_unmap_status(ctx->handle, base + m.first, m.second.bytes);
      if (st != GPUHAL_SUCCESS) ctx->report_release_failure(st, "vm_unmap");
    }
    mappings.clear();
    const gpuhal_status_t st = ctx->backend().vm_free_status(ctx->handle, base, bytes);
    if (st != GPUHAL_SUCCESS) ctx->report_release_failure(st, "vm_free");
  }
};

}  // namespace detail

namespace {

const std::shared_ptr<detail::ContextImpl> &vm_context(const Context &ctx, const char *call) {
  const auto &c = detail::require_handle(detail::impl_of(ctx), call);
  c->check_alive(c->current_generation(), call);
  c->require_feature(c->backend().has_vm_reserve(), call, detail::kVirtualMemory);
  return c;
}

const std::shared_ptr<detail::VirtualRangeImpl> &live_range(const std::shared_ptr<detail::VirtualRangeImpl> &r,
                                                            const char *call) {
  detail::require_handle(r, call);
  r->ctx->check_alive(r->generation, call);
  return r;
}

void check_span(const detail::VirtualRangeImpl &r, uint64_t offset, uint64_t bytes, const char *call) {
  if (bytes == 0 || offset > r.bytes || bytes > r.bytes - offset)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": [" + std::to_string(offset) + ", +" +
                                                 std::to_string(bytes) + ") is empty or outside the range of " +
                                                 std::to_string(r.bytes) + " bytes");
}

uint64_t round_up(uint64_t v, uint64_t step) {
  return (v + step - 1) / step * step;
}

VmGranularity granularity_of(const std::shared_ptr<detail::ContextImpl> &c) {
  VmGranularity g;
  c->check(c->backend().vm_granularity_status(c->handle, &g.minimum, &g.recommended), "vm_granularity");
  return g;
}

// The header's promise on every backend, before the driver sees the call:
// each size and offset is a multiple of the minimum granularity (a driver
// refuses it with no word of why: CUDA_ERROR_INVALID_VALUE).
void check_granular(const std::shared_ptr<detail::ContextImpl> &c, std::initializer_list<uint64_t> values,
                    const char *what, const char *call) {
  const uint64_t minimum = granularity_of(c).minimum;
  for (uint64_t v : values)
    if (minimum != 0 && v % minimum != 0)
      throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": " + what + " (" + std::to_string(v) +
                                                   ") must be a multiple of the minimum granularity " +
                                                   std::to_string(minimum) + " (vm_granularity)");
}

}  // namespace

VmGranularity vm_granularity(const Context &ctx) {
  return granularity_of(vm_context(ctx, "vm_granularity"));
}

PhysicalMemory PhysicalMemory::create(const Context &ctx, uint64_t bytes) {
  const auto &c = vm_context(ctx, "PhysicalMemory::create");
  check_granular(c, {bytes}, "the size", "PhysicalMemory::create");
  auto impl = std::make_shared<detail::PhysicalMemoryImpl>();
  c->check(c->backend().vm_create_status(c->handle, bytes, &impl->handle), "vm_create");
  impl->ctx = c;
  impl->generation = c->current_generation();
  impl->bytes = bytes;
  PhysicalMemory p;
  p.impl_ = std::move(impl);
  return p;
}

uint64_t PhysicalMemory::size() const {
  return impl_ ? impl_->bytes : 0;
}

VirtualRange VirtualRange::reserve(const Context &ctx, uint64_t bytes, uint64_t alignment) {
  const auto &c = vm_context(ctx, "VirtualRange::reserve");
  check_granular(c, {bytes, alignment}, "the size and the alignment", "VirtualRange::reserve");
  gpuhal_deviceptr_t base = 0;
  c->check(c->backend().vm_reserve_status(c->handle, bytes, alignment, &base), "vm_reserve");
  auto impl = std::make_shared<detail::VirtualRangeImpl>();
  impl->ctx = c;
  impl->generation = c->current_generation();
  impl->base = base;
  impl->bytes = bytes;
  VirtualRange r;
  r.impl_ = std::move(impl);
  return r;
}

DevicePointer VirtualRange::base() const {
  return impl_ ? impl_->base : 0;
}
uint64_t VirtualRange::size() const {
  return impl_ ? impl_->bytes : 0;
}
Context VirtualRange::context() const {
  return detail::Access::wrap<Context>(detail::require_handle(impl_, "VirtualRange::context")->ctx);
}

void VirtualRange::map(uint64_t offset, uint64_t bytes, const PhysicalMemory &memory, uint64_t memory_offset) const {
  const char *call = "VirtualRange::map";
  const auto &r = live_range(impl_, call);
  const auto &p = detail::require_handle(memory.impl_, call);
  if (p->ctx != r->ctx)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": the physical memory belongs to another context");
  p->ctx->check_alive(p->generation, call);
  check_span(*r, offset, bytes, call);
  check_granular(r->ctx, {offset, bytes, memory_offset}, "the offset, the size and the memory's offset", call);
  if (memory_offset > p->bytes || bytes > p->bytes - memory_offset)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": [" + std::to_string(memory_offset) + ", +" +
                                                 std::to_string(bytes) + ") reaches past the physical memory's " +
                                                 std::to_string(p->bytes) + " bytes");
  std::lock_guard<std::mutex> lock(r->mu);
  auto next = r->mappings.lower_bound(offset);
  const bool overlaps_next = next != r->mappings.end() && next->first < offset + bytes;
  const bool overlaps_previous =
      next != r->mappings.begin() && std::prev(next)->first + std::prev(next)->second.bytes > offset;
  if (overlaps_next || overlaps_previous)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": [" + std::to_string(offset) + ", +" +
                                                 std::to_string(bytes) + ") overlaps a mapping (unmap it first)");
  r->ctx->check(r->ctx->backend().vm_map_status(r->ctx->handle, r->base + offset, bytes, p->handle, memory_offset),
                "vm_map");
  detail::VirtualRangeImpl::Mapping m;
  m.bytes = bytes;
  m.physical = p;
  r->mappings[offset] = std::move(m);
}

void VirtualRange::unmap(uint64_t offset, uint64_t bytes) const {
  const char *call = "VirtualRange::unmap";
  const auto &r = live_range(impl_, call);
  std::lock_guard<std::mutex> lock(r->mu);
  auto it = r->mappings.find(offset);
  if (it == r->mappings.end() || it->second.bytes != bytes)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": no mapping is [" + std::to_string(offset) + ", +" +
                                                 std::to_string(bytes) + ") (a mapping is unmapped whole)");
  if (it->second.lease.use_count() > 1)
    throw Error(Status::ERROR_INVALID_VALUE,
                std::string(call) + ": a DeviceArray made by VirtualRange::array still covers [" +
                    std::to_string(offset) + ", +" + std::to_string(bytes) + "); drop it first");
  r->ctx->synchronize();  // work queued before may still use the range
  r->ctx->check(r->ctx->backend().vm_unmap_status(r->ctx->handle, r->base + offset, bytes), "vm_unmap");
  r->mappings.erase(it);
}

void VirtualRange::set_access(uint64_t offset, uint64_t bytes, VmAccess access, int device) const {
  const char *call = "VirtualRange::set_access";
  const auto &r = live_range(impl_, call);
  check_span(*r, offset, bytes, call);
  check_granular(r->ctx, {offset, bytes}, "the offset and the size", call);
  const int32_t dev = device < 0 ? int32_t(r->ctx->device->ordinal) : int32_t(device);
  std::lock_guard<std::mutex> lock(r->mu);
  r->ctx->check(
      r->ctx->backend().vm_set_access_status(r->ctx->handle, r->base + offset, bytes, dev, uint32_t(access)),
      "vm_set_access");
  for (auto it = r->mappings.lower_bound(offset); it != r->mappings.end() && it->first < offset + bytes; ++it)
    it->second.accessible = access != VmAccess::None;
}

DeviceArray VirtualRange::array(uint64_t offset, const Shape &shape, DType dtype) const {
  const char *call = "VirtualRange::array";
  const auto &r = live_range(impl_, call);
  dtype.validate();
  const Layout layout = Layout::make(shape, dtype.itemsize());
  if (layout.size() == 0) return device_array(detail::Access::wrap<Context>(r->ctx), shape, dtype);
  const auto bytes = uint64_t(layout.span_bytes());
  check_span(*r, offset, bytes, call);
  struct Keep {
    std::shared_ptr<detail::VirtualRangeImpl> range;
    std::vector<std::shared_ptr<int>> leases;
  };
  auto keep = std::make_shared<Keep>();
  keep->range = r;
  {
    // The array's bytes must lie in mappings that follow each other, each
    // with access granted.
    std::lock_guard<std::mutex> lock(r->mu);
    auto it = r->mappings.upper_bound(offset);
    uint64_t at = offset;
    if (it != r->mappings.begin()) {
      --it;
      if (it->first + it->second.bytes <= offset) ++it;
    }
    for (; it != r->mappings.end() && at < offset + bytes; ++it) {
      if (it->first > at || !it->second.accessible) break;
      keep->leases.push_back(it->second.lease);
      at = it->first + it->second.bytes;
    }
    if (at < offset + bytes)
      throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": [" + std::to_string(offset) + ", +" +
                                                   std::to_string(bytes) +
                                                   ") is not mapped with access in full (map and set_access first)");
  }
  auto a = std::make_shared<detail::Allocation>();
  a->ctx = r->ctx;
  a->generation = r->generation;
  a->owns_device_memory = false;
  a->ptr = r->base + offset;
  a->size = bytes;
  a->keep_alive = std::move(keep);
  return DeviceArray(detail::Access::wrap<DeviceMemory>(std::move(a)), layout, dtype);
}

GrowableDeviceArray::GrowableDeviceArray(const Context &ctx, DType dtype, uint64_t max_elements)
    : dtype_(dtype), max_elements_(max_elements) {
  dtype.validate();
  const VmGranularity g = vm_granularity(ctx);
  step_ = g.recommended ? g.recommended : g.minimum;
  const uint64_t itemsize = uint64_t(dtype.itemsize());
  if (max_elements == 0 || max_elements > (uint64_t(1) << 48) / itemsize)
    throw Error(Status::ERROR_INVALID_VALUE, "GrowableDeviceArray: max_elements " + std::to_string(max_elements) +
                                                 " is 0 or past 256 TiB");
  range_ = VirtualRange::reserve(ctx, round_up(max_elements * itemsize, step_), step_);
}

void GrowableDeviceArray::reserve(uint64_t elements) {
  const char *call = "GrowableDeviceArray::reserve";
  if (!range_) throw Error(Status::ERROR_INVALID_HANDLE, std::string(call) + ": empty GrowableDeviceArray");
  live_range(detail::impl_of(range_), call);  // a reset context refuses even growth that maps nothing
  if (elements > max_elements_)
    throw Error(Status::ERROR_OUT_OF_MEMORY, std::string(call) + ": " + std::to_string(elements) +
                                                 " elements pass max_size() " + std::to_string(max_elements_));
  const uint64_t need = round_up(elements * uint64_t(dtype_.itemsize()), step_);
  if (need <= mapped_bytes_) return;
  // One new piece of physical memory for the whole growth, mapped at the
  // end with access: the addresses before it do not move.
  const uint64_t more = need - mapped_bytes_;
  PhysicalMemory piece = PhysicalMemory::create(range_.context(), more);
  range_.map(mapped_bytes_, more, piece);
  try {
    range_.set_access(mapped_bytes_, more, VmAccess::ReadWrite);
  } catch (...) {
    range_.unmap(mapped_bytes_, more);
    throw;
  }
  mapped_bytes_ = need;
  capacity_ = std::min<uint64_t>(mapped_bytes_ / uint64_t(dtype_.itemsize()), max_elements_);
}

void GrowableDeviceArray::resize(uint64_t elements) {
  reserve(elements);
  size_ = elements;
}

DeviceArray GrowableDeviceArray::array() const {
  if (!range_) throw Error(Status::ERROR_INVALID_HANDLE, "GrowableDeviceArray::array: empty GrowableDeviceArray");
  return range_.array(0, {int64_t(size_)}, dtype_);
}

DevicePointer GrowableDeviceArray::device_pointer() const {
  return range_.base();
}

}  // namespace gpuhal
