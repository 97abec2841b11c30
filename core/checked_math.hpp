// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Overflow-checked int64 arithmetic for every size computation.
#pragma once

#include <cstdint>
#include <string>

#include "gpuhal/error.hpp"

namespace gpuhal::detail {

[[noreturn]] inline void throw_size_overflow(int64_t a, const char *op, int64_t b, const char *what) {
  throw Error(Status::ERROR_SIZE_OVERFLOW, std::string(what) + ": " + std::to_string(a) + op + std::to_string(b) +
                                               " overflows a signed 64-bit size");
}

inline int64_t checked_mul(int64_t a, int64_t b, const char *what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw_size_overflow(a, " * ", b, what);
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const char *what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw_size_overflow(a, " + ", b, what);
  return r;
}

}  // namespace gpuhal::detail
