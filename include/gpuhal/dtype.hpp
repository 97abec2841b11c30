// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Element types: DLPack's (code, bits, lanes) triple with NumPy's names.
#pragma once

#include "gpuhal/cxx_standard.hpp"

#include <complex>
#include <cstdint>
#include <string>

namespace gpuhal {

// Codes are DLPack's DLDataTypeCode values, so a DType converts to DLDataType
// without a table.
// DLPack's type codes. Opaque is NumPy's void / record dtype ('V<n>'):
// elements of n raw bytes (a C struct), as bits 8 and lanes n.
enum class DTypeKind : uint8_t { Int = 0, UInt = 1, Float = 2, Opaque = 3, BFloat = 4, Complex = 5, Bool = 6 };

struct DType {
  DTypeKind kind = DTypeKind::Float;
  uint8_t bits = 64;
  uint16_t lanes = 1;

  // Bytes per element (bits * lanes / 8).
  int64_t itemsize() const { return int64_t(bits) * lanes / 8; }
  // NumPy name: "float64", "int8", "complex64", "bool", "bfloat16".
  std::string name() const;
  // NumPy type string: "<f8", "|b1", "<c16", "|u1".
  std::string typestr() const;
  // Parses a name or a type string ("V12" / "|V12" for records). Throws
  // ERROR_INVALID_DTYPE naming the text.
  static DType parse(const std::string &text);
  // Records (structs) of `bytes` bytes, 1 to 65535: NumPy's 'V<bytes>'.
  // Such arrays are moved, sliced and assigned like any other; kernels see
  // them through pointers to a struct the source declares. They have no
  // scalar conversions and no C type for constant arrays.
  // ERROR_INVALID_DTYPE for a size out of range.
  static DType record(int64_t bytes);
  // Throws ERROR_INVALID_DTYPE unless this is one of the supported types.
  void validate() const;

  friend bool operator==(const DType &a, const DType &b) {
    return a.kind == b.kind && a.bits == b.bits && a.lanes == b.lanes;
  }
  friend bool operator!=(const DType &a, const DType &b) { return !(a == b); }
};

namespace dtypes {
inline constexpr DType bool_{DTypeKind::Bool, 8, 1};
inline constexpr DType int8{DTypeKind::Int, 8, 1};
inline constexpr DType int16{DTypeKind::Int, 16, 1};
inline constexpr DType int32{DTypeKind::Int, 32, 1};
inline constexpr DType int64{DTypeKind::Int, 64, 1};
inline constexpr DType uint8{DTypeKind::UInt, 8, 1};
inline constexpr DType uint16{DTypeKind::UInt, 16, 1};
inline constexpr DType uint32{DTypeKind::UInt, 32, 1};
inline constexpr DType uint64{DTypeKind::UInt, 64, 1};
inline constexpr DType float16{DTypeKind::Float, 16, 1};
inline constexpr DType bfloat16{DTypeKind::BFloat, 16, 1};
inline constexpr DType float32{DTypeKind::Float, 32, 1};
inline constexpr DType float64{DTypeKind::Float, 64, 1};
inline constexpr DType complex64{DTypeKind::Complex, 64, 1};
inline constexpr DType complex128{DTypeKind::Complex, 128, 1};
}  // namespace dtypes

// dtype_of<T>() for the C++ types that have a dtype.
template <class T>
struct DTypeOf;
#define GPUHAL_DTYPE_OF(T, D)                 \
  template <>                                 \
  struct DTypeOf<T> {                         \
    static constexpr DType value = dtypes::D; \
  };
GPUHAL_DTYPE_OF(bool, bool_)
GPUHAL_DTYPE_OF(int8_t, int8)
GPUHAL_DTYPE_OF(int16_t, int16)
GPUHAL_DTYPE_OF(int32_t, int32)
GPUHAL_DTYPE_OF(int64_t, int64)
GPUHAL_DTYPE_OF(uint8_t, uint8)
GPUHAL_DTYPE_OF(uint16_t, uint16)
GPUHAL_DTYPE_OF(uint32_t, uint32)
GPUHAL_DTYPE_OF(uint64_t, uint64)
GPUHAL_DTYPE_OF(float, float32)
GPUHAL_DTYPE_OF(double, float64)
GPUHAL_DTYPE_OF(std::complex<float>, complex64)
GPUHAL_DTYPE_OF(std::complex<double>, complex128)
#undef GPUHAL_DTYPE_OF

template <class T>
constexpr DType dtype_of() {
  return DTypeOf<T>::value;
}

}  // namespace gpuhal
