// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// An entry argument as text, for the trace layer's records and the
// validation layer's reports: pointers and handles in hex ("NULL" for 0),
// device addresses (parameters named dst, src, ptr, at, base) in hex,
// strings quoted (cut at 64 bytes), other numbers in decimal.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpuhal::detail::layers {

inline bool is_address_parameter(std::string_view name) {
  return name == "dst" || name == "src" || name == "ptr" || name == "at" || name == "base";
}

inline std::string hex_text(uint64_t v) {
  if (v == 0) return "NULL";
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

template <class T>
std::string arg_text(std::string_view name, T value) {
  if constexpr (std::is_same_v<T, const char *>) {
    if (!value) return "NULL";
    std::string s(value);
    if (s.size() > 64) s = s.substr(0, 64) + "...";
    return "\"" + s + "\"";
  } else if constexpr (std::is_pointer_v<T>) {
    return hex_text(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(value)));
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(value));
    return buf;
  } else if constexpr (std::is_integral_v<T>) {
    if (is_address_parameter(name)) return hex_text(static_cast<uint64_t>(value));
    return std::to_string(value);
  } else {
    return "?";
  }
}

}  // namespace gpuhal::detail::layers
