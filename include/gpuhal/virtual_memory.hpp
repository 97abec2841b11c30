// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Virtual memory (Capability::VirtualMemory): reserve an address range,
// map physical memory into it piece by piece, and grow a buffer without
// moving it, as PyTorch's expandable segments and cuda.core's
// VirtualMemoryResource do over CUDA's cuMemAddressReserve / cuMemCreate /
// cuMemMap / cuMemSetAccess.
//
// Every size and offset is a multiple of vm_granularity(ctx).minimum
// (ERROR_INVALID_VALUE naming it otherwise). Handles are values: copies
// share the object, which keeps its context alive; a PhysicalMemory stays
// until its last handle and its last mapping are gone, a VirtualRange
// unmaps what is left and frees its addresses when its last handle (and
// every array made over it) is gone.
//
// Lifetimes the API enforces: unmap waits for the context's work first
// (work queued before may still use the range), and refuses a mapping that
// a DeviceArray made by VirtualRange::array still covers, so that no
// memory is unmapped while an array can still reach it.
//
// Thread safety: a VirtualRange's calls are serialised by its own lock.
#pragma once

#include <cstdint>
#include <memory>

#include "gpuhal/context.hpp"
#include "gpuhal/device_array.hpp"

namespace gpuhal {

namespace detail {
struct PhysicalMemoryImpl;
struct VirtualRangeImpl;
struct Access;
}  // namespace detail

// The granularity every size and offset must be a multiple of, and the one
// that performs best.
struct VmGranularity {
  uint64_t minimum = 0;
  uint64_t recommended = 0;
};
VmGranularity vm_granularity(const Context &ctx);

// Access a device has to a mapped range (CUDA's CUmemAccess_flags).
enum class VmAccess : uint32_t { None = 0, Read = 1, ReadWrite = 3 };

// Physical memory of a context's device, not at any address until mapped.
class PhysicalMemory {
 public:
  PhysicalMemory() = default;
  static PhysicalMemory create(const Context &ctx, uint64_t bytes);
  uint64_t size() const;
  explicit operator bool() const { return static_cast<bool>(impl_); }

 private:
  friend struct detail::Access;
  friend class VirtualRange;
  std::shared_ptr<detail::PhysicalMemoryImpl> impl_;
};

// A reserved range of device addresses.
class VirtualRange {
 public:
  VirtualRange() = default;
  // `alignment`: 0 or a power of two.
  static VirtualRange reserve(const Context &ctx, uint64_t bytes, uint64_t alignment = 0);
  DevicePointer base() const;
  uint64_t size() const;
  Context context() const;
  // Maps `bytes` of `memory` from `memory_offset` at `offset` of this range
  // (which must not be mapped yet); no device has access until set_access.
  void map(uint64_t offset, uint64_t bytes, const PhysicalMemory &memory, uint64_t memory_offset = 0) const;
  // Unmaps the mapping that starts at `offset` and is `bytes` long (a
  // mapping is unmapped whole), after the context's work is done.
  void unmap(uint64_t offset, uint64_t bytes) const;
  // Sets `device`'s access (-1: the context's device) to whole mappings
  // [offset, offset + bytes).
  void set_access(uint64_t offset, uint64_t bytes, VmAccess access, int device = -1) const;
  // A contiguous array of `shape` over [offset, offset + its bytes), which
  // must be mapped with access: the mappings it covers cannot be unmapped
  // while the array (or a view of it) lives.
  DeviceArray array(uint64_t offset, const Shape &shape, DType dtype) const;
  explicit operator bool() const { return static_cast<bool>(impl_); }

 private:
  friend struct detail::Access;
  std::shared_ptr<detail::VirtualRangeImpl> impl_;
};

// A 1-D device array that grows in place: one reservation of the most it
// may ever hold, physical memory mapped at its end as it grows, so that its
// device pointer never changes (no copy, no fragmentation).
class GrowableDeviceArray {
 public:
  GrowableDeviceArray() = default;
  GrowableDeviceArray(const Context &ctx, DType dtype, uint64_t max_elements);
  // Elements in use / elements mapped / the most it may hold.
  uint64_t size() const { return size_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t max_size() const { return max_elements_; }
  // Maps memory for at least `elements` (in steps of the recommended
  // granularity); ERROR_OUT_OF_MEMORY past max_size() or the device.
  void reserve(uint64_t elements);
  // reserve(elements), then size() is `elements` (new elements are not
  // initialised).
  void resize(uint64_t elements);
  // The first size() elements (the same device pointer at every size).
  DeviceArray array() const;
  DevicePointer device_pointer() const;

 private:
  VirtualRange range_;
  DType dtype_;
  uint64_t max_elements_ = 0, size_ = 0, capacity_ = 0, mapped_bytes_ = 0, step_ = 0;
};

}  // namespace gpuhal
