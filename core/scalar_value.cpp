// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "scalar_value.hpp"

#include <climits>
#include <cstring>

namespace gpuhal::detail {

bool read_scalar(DType from, const void *value, ScalarValue *out) {
  ScalarValue s;
  s.from = from;
  const auto *b = static_cast<const unsigned char *>(value);
  if (from.kind == DTypeKind::Bool) {
    s.i = b[0] != 0 ? 1 : 0;
    s.v = static_cast<long double>(s.i);
  } else if (from.kind == DTypeKind::Int && from.lanes == 1 && from.bits >= 8 && from.bits <= 64) {
    uint64_t raw = 0;
    std::memcpy(&raw, b, size_t(from.itemsize()));  // little-endian: the low bytes
    const int shift = 64 - from.bits;
    s.i = shift ? int64_t(raw << shift) >> shift : int64_t(raw);  // sign-extended
    s.v = static_cast<long double>(s.i);
  } else if (from.kind == DTypeKind::UInt && from.lanes == 1 && from.bits >= 8 && from.bits <= 64) {
    std::memcpy(&s.u, b, size_t(from.itemsize()));
    s.v = static_cast<long double>(s.u);
  } else if (from == dtypes::float32) {
    float x;
    std::memcpy(&x, b, 4);
    s.v = x;
  } else if (from == dtypes::float64) {
    double x;
    std::memcpy(&x, b, 8);
    s.v = x;
  } else {
    return false;
  }
  *out = s;
  return true;
}

void store_float(const ScalarValue &s, DType to, unsigned char *out) {
  if (to.bits == 32) {
    const float f = static_cast<float>(s.v);
    std::memcpy(out, &f, 4);
  } else {
    const double d = static_cast<double>(s.v);
    std::memcpy(out, &d, 8);
  }
}

bool store_integer(const ScalarValue &s, DType to, unsigned char *out) {
  const bool from_uint = s.from.kind == DTypeKind::UInt;
  const bool negative = !from_uint && s.i < 0;
  bool fits;
  if (to.kind == DTypeKind::UInt) {
    const uint64_t max = to.bits == 64 ? UINT64_MAX : ((uint64_t(1) << to.bits) - 1);
    fits = !negative && (from_uint ? s.u : uint64_t(s.i)) <= max;
  } else {
    const int64_t max = to.bits == 64 ? INT64_MAX : ((int64_t(1) << (to.bits - 1)) - 1);
    fits = from_uint ? s.u <= uint64_t(max) : (s.i >= -max - 1 && s.i <= max);
  }
  if (!fits) return false;
  const uint64_t bits = from_uint ? s.u : uint64_t(s.i);
  std::memcpy(out, &bits, size_t(to.itemsize()));  // little-endian: the low bytes
  return true;
}

}  // namespace gpuhal::detail
