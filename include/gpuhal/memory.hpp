// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DeviceMemory: one device allocation, reference counted.
//
// Keeps its context alive. The memory is freed when the last handle (and
// every array view of it) is gone, unless the context was reset first (then
// the reset already freed it). The caller guarantees that no pending stream
// work uses the memory when the last handle is dropped (as in CUDA).
#pragma once

#include <cstdint>
#include <memory>

#include "gpuhal/context.hpp"
#include "gpuhal/native.hpp"

namespace gpuhal {

namespace detail {
struct Allocation;
struct Access;
}

class DeviceMemory {
 public:
  DeviceMemory() = default;
  // Device address of the first byte (0 for an empty handle).
  DevicePointer device_pointer() const;
  uint64_t size() const;
  Context context() const;
  explicit operator bool() const { return static_cast<bool>(impl_); }
  // The same allocation (views of it compare equal through memory()).
  friend bool operator==(const DeviceMemory &a, const DeviceMemory &b) { return a.impl_ == b.impl_; }
  friend bool operator!=(const DeviceMemory &a, const DeviceMemory &b) { return a.impl_ != b.impl_; }

 private:
  friend struct detail::Access;  // the core's only way in (core/handle_access.hpp)
  explicit DeviceMemory(std::shared_ptr<detail::Allocation> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::Allocation> impl_;
};

}  // namespace gpuhal
