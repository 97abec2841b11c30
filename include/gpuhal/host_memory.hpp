// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Page-locked (pinned), mapped and registered host memory.
//
// Everything here needs Capability::HostMemory (mapping also needs the
// device's can_map_host_memory); otherwise ERROR_NOT_SUPPORTED names what is
// missing. Registrations are kept per context in a reference-counted
// registry: registrations may repeat, nest and overlap (the bytes stay
// registered while any registration covering them lives); releasing a range
// that is not registered is ERROR_NOT_REGISTERED. Registrations are mapped
// whenever the device can map host memory; a portable registration over
// bytes registered without `portable` is ERROR_ALREADY_REGISTERED. Memory the
// backend allocated (pinned and mapped arrays, device memory) cannot be
// registered (ERROR_ALREADY_REGISTERED from the plugin).
// Scopes undo their registrations at once when they end, also when an
// exception unwinds (the same buffer can be pinned again right away).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "gpuhal/context.hpp"
#include "gpuhal/device_array.hpp"
#include "gpuhal/host_array.hpp"

namespace gpuhal {

struct HostMemoryFlags {
  bool portable = false;        // usable from every context (CU_MEMHOSTALLOC_PORTABLE)
  bool mapped = false;          // mapped into the device address space
  bool write_combined = false;  // write-combined (fast host writes, slow host reads)
};

// One registration of a host range (Numba ROC's register / deregister).
// Move-only; unregisters when destroyed or on release().
class HostRegistration {
 public:
  HostRegistration() = default;
  HostRegistration(HostRegistration &&other) noexcept;
  HostRegistration &operator=(HostRegistration &&other) noexcept;
  HostRegistration(const HostRegistration &) = delete;
  HostRegistration &operator=(const HostRegistration &) = delete;
  ~HostRegistration();

  // Unregisters now (throws on failure; the destructor logs instead).
  void release();
  explicit operator bool() const { return ptr_ != nullptr; }
  void *pointer() const { return ptr_; }
  uint64_t size() const { return size_; }

 private:
  friend HostRegistration register_host(const Context &, const HostView &, HostMemoryFlags);
  Context ctx_;
  void *ptr_ = nullptr;
  uint64_t size_ = 0;
  uint64_t generation_ = 0;  // a reset drops every registration of the context
};

// Registers (page-locks) the bytes `view` spans. Zero-size views register
// nothing and give an empty registration. ERROR_INVALID_VALUE when a page of
// the range is not mapped in this process (every backend: a driver cannot
// page-lock it).
HostRegistration register_host(const Context &ctx, const HostView &view, HostMemoryFlags flags = {});

// Numba ROC's deregister(ary): drops one registration count of the range
// `view` spans (unregistering at zero); ERROR_NOT_REGISTERED when that range
// is not registered. A HostRegistration of the range must then not be
// released again (its release reports ERROR_NOT_REGISTERED).
void deregister_host(const Context &ctx, const HostView &view);

// Numba's `with cuda.pinned(a, b):` -- pins every view for the scope's life.
class PinnedScope {
 public:
  PinnedScope(const Context &ctx, std::initializer_list<HostView> views);
  PinnedScope(const Context &ctx, const std::vector<HostView> &views);

 private:
  std::vector<HostRegistration> registrations_;
};

// Numba's `with cuda.mapped(a, b) as (da, db):` -- maps every view into the
// device address space and gives device arrays over the same memory, valid
// while the scope lives. ERROR_INVALID_VALUE for a read-only view (a device
// array cannot be read-only, and a write through it would change memory its
// owner promised not to), before anything is mapped.
class MappedScope {
 public:
  MappedScope(const Context &ctx, const std::vector<HostView> &views);
  const std::vector<DeviceArray> &device_arrays() const { return device_; }
  const DeviceArray &operator[](size_t i) const { return device_.at(i); }

 private:
  std::vector<HostRegistration> registrations_;
  std::vector<DeviceArray> device_;
};

// Pinned host arrays (page-locked allocations of the backend), freed through
// the context's deferred deallocation queue with their real size.
HostArray pinned_array(const Context &ctx, const Shape &shape, DType dtype = dtypes::float64,
                       const Strides &strides = {}, char order = 'C');
HostArray pinned_array_like(const Context &ctx, const HostView &like);

// A mapped host array: `host` and `device` are the same memory.
struct MappedArray {
  HostArray host;
  DeviceArray device;
};
MappedArray mapped_array(const Context &ctx, const Shape &shape, DType dtype = dtypes::float64,
                         const Strides &strides = {}, char order = 'C', bool portable = false,
                         bool write_combined = false);
MappedArray mapped_array_like(const Context &ctx, const HostView &like, bool portable = false,
                              bool write_combined = false);

}  // namespace gpuhal
