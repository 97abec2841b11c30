// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A host scalar converted to an element type by the rules the API promises
// (kernel.hpp's scalar arguments, DeviceArray::fill): integers must fit,
// floating values never become integers. Shared by kernel launches and
// fills; each names its own errors.
#pragma once

#include <cstdint>
#include <string>

#include "gpuhal/dtype.hpp"

namespace gpuhal::detail {

struct ScalarValue {
  DType from;
  int64_t i = 0;      // bool and Int values
  uint64_t u = 0;     // UInt values
  long double v = 0;  // the value as a number: exact for every 64-bit integer and double
  // bool, int or uint.
  bool integral() const { return from.kind != DTypeKind::Float; }
  // The integer in decimal (for messages).
  std::string text() const { return from.kind == DTypeKind::UInt ? std::to_string(u) : std::to_string(i); }
};

// Reads a bool, integer, float32 or float64 scalar of dtype `from` from
// `value` (its own size, little-endian). False for other dtypes.
bool read_scalar(DType from, const void *value, ScalarValue *out);
// Writes s as a float32 or float64 (the first bytes of `out`).
void store_float(const ScalarValue &s, DType to, unsigned char *out);
// Writes an integral s as the int / uint dtype `to` (its low bytes) when it
// fits; false, writing nothing, when it does not.
bool store_integer(const ScalarValue &s, DType to, unsigned char *out);

}  // namespace gpuhal::detail
