// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Managed-memory prefetch and advice (Capability::ManagedHints): migrate a
// managed array's pages before work needs them, and tell the backend how
// they will be used, as cuMemPrefetchAsync / cuMemAdvise do. Numba has no
// such names; Python has gpuhal.prefetch and gpuhal.advise.
//
// Hints only: a managed array stays coherent and usable from the host and
// every device whatever they say. Errors: ERROR_INVALID_HANDLE (an empty
// array), ERROR_INVALID_VALUE (not a managed array, a location that is not
// a device of the runtime, a stream of another context), ERROR_NOT_SUPPORTED
// (a backend without Capability::ManagedHints, or a device that cannot act
// on hints, naming why). The arrays' whole span is named (views included).
#pragma once

#include <cstdint>

#include "gpuhal/device_array.hpp"
#include "gpuhal/stream.hpp"

namespace gpuhal {

// Where pages go: the host, or a device of the runtime (by ordinal).
class Location {
 public:
  static Location host() { return Location(-1); }
  static Location device(int ordinal) { return Location(ordinal); }
  bool is_host() const { return value_ < 0; }
  int ordinal() const { return value_; }  // -1 for the host

 private:
  explicit Location(int value) : value_(value) {}
  int value_;
};

// cuMemAdvise's advice (the location matters for SetPreferredLocation,
// SetAccessedBy and UnsetAccessedBy; the others ignore it).
enum class Advice : uint32_t {
  SetReadMostly = 1,           // mostly read: processors may keep read-only copies
  UnsetReadMostly = 2,
  SetPreferredLocation = 3,    // keep the pages at `where` where possible
  UnsetPreferredLocation = 4,
  SetAccessedBy = 5,           // `where` maps the pages wherever they are (no faults there)
  UnsetAccessedBy = 6,
};

// Migrates the pages of `managed` to `to`, ordered on `stream`.
void prefetch(const DeviceArray &managed, Location to, const Stream &stream);
// Applies `advice` to the pages of `managed` (immediately, not on a stream).
void advise(const DeviceArray &managed, Advice advice, Location where = Location::host());

// The same for bytes [offset, offset + bytes) of managed memory (a range:
// UR's urEnqueueUSMPrefetch / urEnqueueUSMAdvise form). A range past the
// memory's end is ERROR_INDEX_OUT_OF_RANGE; an empty range does nothing.
void prefetch(const DeviceMemory &managed, uint64_t offset, uint64_t bytes, Location to, const Stream &stream);
void advise(const DeviceMemory &managed, uint64_t offset, uint64_t bytes, Advice advice,
            Location where = Location::host());

}  // namespace gpuhal
