// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MirroredArray: Numba's SmartArray in C++ -- one array with a host and a
// device side, each marked valid or stale, copied on demand.
//
// get_host() / get_device() return that side, first allocating it (lazily,
// with the other side's shape, strides and dtype) and copying from the
// other side when that side is the newer one. After
// writing to a side, call mark_changed(side): the other side becomes stale.
// Copies of a MirroredArray share the sides and flags. Thread-safe; the
// arrays returned are shared, not snapshots.
#pragma once

#include <memory>

#include "gpuhal/device_array.hpp"
#include "gpuhal/host_array.hpp"

namespace gpuhal {

enum class Where { host, device };

class MirroredArray {
 public:
  MirroredArray() = default;
  // Host side from existing data (valid); no device allocation yet.
  static MirroredArray from_host(const Context &ctx, HostArray host);
  // Uninitialised, on the side `where` (valid there; Numba's
  // SmartArray(shape=..., where='host' / 'gpu')); the other side is made
  // when first asked for.
  static MirroredArray empty(const Context &ctx, const Shape &shape, DType dtype = dtypes::float64, char order = 'C',
                             Where where = Where::host);
  // Device side from an existing device array (valid; Numba's
  // SmartArray(obj=device_array, where='gpu')); no host allocation yet.
  // ERROR_NOT_CONTIGUOUS unless it is contiguous at its core.
  static MirroredArray from_device(DeviceArray device);

  const HostArray &get_host() const;      // allocates / syncs device -> host when needed
  const DeviceArray &get_device() const;  // allocates / syncs host -> device when needed
  // The side `where` was written: the other becomes stale.
  void mark_changed(Where where) const;
  bool valid(Where where) const;
  bool has_device() const;
  bool has_host() const;
  const Shape &shape() const;
  DType dtype() const;
  // The context its device side lives in (kernels of other contexts refuse
  // it, as they refuse device arrays of other contexts).
  Context context() const;

 private:
  struct State;
  // A handle with new state for ctx, shape and dtype (no side yet).
  static MirroredArray with_state(const Context &ctx, const Shape &shape, DType dtype);
  bool has_device_locked() const;
  std::shared_ptr<State> state_;
};

}  // namespace gpuhal
