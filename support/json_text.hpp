// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// JSON text for the tools' --json output and the trace layer's file: one
// string writer, so that every document they print is valid JSON and valid
// UTF-8 whatever a plugin or a driver put in a name or a message. Bytes that
// are not well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF) become U+FFFD, one per bad byte, as decoders do.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace gpuhal::support {

// The length of the well-formed UTF-8 sequence at s[i], or 0 if there is none.
inline size_t utf8_sequence(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  auto cont = [&](size_t k) { return (at(k) & 0xC0u) == 0x80u; };
  const unsigned c = at(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;  // no overlongs, no surrogates
    return at(1) >= lo && at(1) <= hi && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;  // U+10000..U+10FFFF
    return at(1) >= lo && at(1) <= hi && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// `s` as a JSON string literal, quotes included.
inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.data() + i, n);
      i += n;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(s[i++]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

inline const char *json_bool(bool b) {
  return b ? "true" : "false";
}

}  // namespace gpuhal::support
