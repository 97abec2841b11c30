// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "kernel_source.hpp"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "gpuhal/error.hpp"
#include "kernel_tokens.hpp"

namespace gpuhal::detail {
namespace {

using dialect::ident_char;
using dialect::ident_start;
using dialect::Token;
using dialect::tokenize;

[[noreturn]] void malformed(int line, const std::string &what) {
  throw Error(Status::ERROR_COMPILATION_FAILED, "kernel source line " + std::to_string(line) + ": " + what);
}

// The barriers: plain, and those that reduce a predicate over the group.
bool is_barrier_token(const std::string &t) {
  return t == "gpuhal_barrier" || t == "gpuhal_barrier_count" || t == "gpuhal_barrier_and" || t == "gpuhal_barrier_or";
}

const std::map<std::string, DType> &type_names() {
  static const std::map<std::string, DType> m = {
      {"float", dtypes::float32},
      {"double", dtypes::float64},
      {"char", dtypes::int8},
      {"signed char", dtypes::int8},
      {"int8_t", dtypes::int8},
      {"unsigned char", dtypes::uint8},
      {"uint8_t", dtypes::uint8},
      {"short", dtypes::int16},
      {"short int", dtypes::int16},
      {"signed short", dtypes::int16},
      {"int16_t", dtypes::int16},
      {"unsigned short", dtypes::uint16},
      {"unsigned short int", dtypes::uint16},
      {"uint16_t", dtypes::uint16},
      {"int", dtypes::int32},
      {"signed", dtypes::int32},
      {"signed int", dtypes::int32},
      {"int32_t", dtypes::int32},
      {"unsigned", dtypes::uint32},
      {"unsigned int", dtypes::uint32},
      {"uint32_t", dtypes::uint32},
      {"long", dtypes::int64},
      {"long int", dtypes::int64},
      {"long long", dtypes::int64},
      {"long long int", dtypes::int64},
      {"int64_t", dtypes::int64},
      {"ptrdiff_t", dtypes::int64},
      {"intptr_t", dtypes::int64},
      {"unsigned long", dtypes::uint64},
      {"unsigned long int", dtypes::uint64},
      {"unsigned long long", dtypes::uint64},
      {"unsigned long long int", dtypes::uint64},
      {"uint64_t", dtypes::uint64},
      {"size_t", dtypes::uint64},
      {"uintptr_t", dtypes::uint64},
  };
  return m;
}

const std::set<std::string> &qualifiers() {
  static const std::set<std::string> q = {"const",      "volatile",     "GPUHAL_GLOBAL", "GPUHAL_RESTRICT", "restrict",
                                          "__restrict", "__restrict__", "__global",      "GPUHAL_CONSTANT", "struct"};
  return q;
}

KernelParam parse_param(const std::vector<Token> &toks, const std::string &kernel) {
  KernelParam p;
  std::vector<std::string> words;
  int stars = 0;
  bool const_before_star = false;
  for (const auto &t : toks) {
    if (!p.type_text.empty() && (ident_char(t.text[0]) || t.text == "*")) p.type_text += ' ';
    p.type_text += t.text;
    if (t.text == "*") {
      ++stars;
      continue;
    }
    if (t.text == "const" && stars == 0) const_before_star = true;
    if (t.text == "[" || t.text == "]" || t.text == "&")
      malformed(t.line, "parameter '" + p.type_text + "' of kernel '" + kernel +
                            "': arrays and references are not kernel parameters; use a pointer");
    if (!ident_start(t.text[0]))
      malformed(t.line, "cannot read parameter '" + p.type_text + "' of kernel '" + kernel + "'");
    if (!qualifiers().count(t.text)) words.push_back(t.text);
  }
  if (stars > 1) malformed(toks[0].line, "kernel '" + kernel + "': pointer-to-pointer parameters are not supported");
  p.pointer = stars == 1;
  p.is_const = p.pointer && const_before_star;
  // The last word is the name when more than one word is left and it is not
  // part of a type name (`unsigned`, `int`, `long` ...).
  static const std::set<std::string> type_words = {"unsigned", "signed", "int",    "long", "short",
                                                   "char",     "float",  "double", "void"};
  if (words.size() > 1 && !type_words.count(words.back())) {
    p.name = words.back();
    words.pop_back();
  }
  std::string type;
  for (const auto &w : words) type += (type.empty() ? "" : " ") + w;
  auto it = type_names().find(type);
  if (it != type_names().end()) p.dtype = it->second;
  if (!p.pointer && type == "void") malformed(toks[0].line, "kernel '" + kernel + "': a parameter of type void");
  return p;
}

}  // namespace

ScannedSource scan_kernel_source(const std::string &source) {
  const std::vector<Token> t = tokenize(source);
  ScannedSource out;
  std::set<std::string> names;
  bool barrier_elsewhere = false;
  size_t i = 0;
  while (i < t.size()) {
    if (t[i].preprocessor || t[i].text != "GPUHAL_KERNEL") {
      if (is_barrier_token(t[i].text)) barrier_elsewhere = true;
      ++i;
      continue;
    }
    const int line = t[i].line;
    // GPUHAL_KERNEL void name ( params ) { body }
    if (i + 3 >= t.size() || t[i + 1].text != "void")
      malformed(line, "GPUHAL_KERNEL must be followed by 'void name(parameters) { ... }'");
    if (!ident_start(t[i + 2].text[0])) malformed(line, "GPUHAL_KERNEL void: expected the kernel's name");
    KernelDecl k;
    k.name = t[i + 2].text;
    if (t[i + 3].text != "(") malformed(line, "kernel '" + k.name + "': expected '(' after the name");
    size_t j = i + 4;
    int depth = 1;
    std::vector<Token> cur;
    std::vector<std::vector<Token>> params;
    for (; j < t.size(); ++j) {
      const std::string &x = t[j].text;
      if (x == "(") ++depth;
      if (x == ")" && --depth == 0) break;
      if (x == "," && depth == 1) {
        params.push_back(std::move(cur));
        cur.clear();
        continue;
      }
      cur.push_back(t[j]);
    }
    if (j >= t.size()) malformed(line, "kernel '" + k.name + "': the parameter list is not closed");
    if (!cur.empty()) params.push_back(std::move(cur));
    if (params.size() == 1 && params[0].size() == 1 && params[0][0].text == "void") params.clear();
    for (const auto &ptoks : params) {
      if (ptoks.empty()) malformed(line, "kernel '" + k.name + "': an empty parameter");
      k.params.push_back(parse_param(ptoks, k.name));
    }
    ++j;
    if (j >= t.size() || t[j].text != "{")
      malformed(line, "kernel '" + k.name + "': expected its body ('{') after the parameters");
    depth = 0;
    for (; j < t.size(); ++j) {
      if (t[j].text == "{") ++depth;
      if (t[j].text == "}" && --depth == 0) break;
      if (is_barrier_token(t[j].text)) k.uses_barrier = true;
    }
    if (j >= t.size()) malformed(line, "kernel '" + k.name + "': its body is not closed");
    if (!names.insert(k.name).second) malformed(line, "kernel '" + k.name + "' is defined twice");
    out.kernels.push_back(std::move(k));
    i = j + 1;
  }
  if (out.kernels.empty())
    throw Error(Status::ERROR_COMPILATION_FAILED,
                "the kernel source defines no kernel (a kernel is 'GPUHAL_KERNEL void name(parameters) { ... }')");
  if (barrier_elsewhere)
    for (auto &k : out.kernels) k.uses_barrier = true;
  return out;
}

std::string c_type_name(DType d) {
  if (d.lanes != 1) return "";
  switch (d.kind) {
    case DTypeKind::Float:
      return d.bits == 32 ? "float" : d.bits == 64 ? "double" : "";
    case DTypeKind::Int:
    case DTypeKind::UInt:
      if (d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64)
        return std::string(d.kind == DTypeKind::UInt ? "uint" : "int") + std::to_string(d.bits) + "_t";
      return "";
    default:
      return "";
  }
}

namespace {
// A C literal of `v` of the float type whose literal suffix is `suffix`:
// hex floats are exact; inf and nan have no literal, so they are built from
// 1/0 and 0/0.
void float_literal(double v, const char *suffix, char *buf, size_t size) {
  if (v != v)
    std::snprintf(buf, size, "(0.0%s/0.0%s)", suffix, suffix);
  else if (v - v != 0)
    std::snprintf(buf, size, "(%s1.0%s/0.0%s)", v < 0 ? "-" : "", suffix, suffix);
  else
    std::snprintf(buf, size, "%a%s", v, suffix);
}
}  // namespace

std::string constant_array_text(const ConstantArray &c) {
  if (c.name.empty() || !ident_start(c.name[0]))
    throw Error(Status::ERROR_INVALID_VALUE, "constant array name '" + c.name + "' is not a C identifier");
  for (char ch : c.name)
    if (!ident_char(ch))
      throw Error(Status::ERROR_INVALID_VALUE, "constant array name '" + c.name + "' is not a C identifier");
  const std::string type = c_type_name(c.dtype);
  if (type.empty())
    throw Error(Status::ERROR_INVALID_DTYPE,
                "constant array '" + c.name + "' has dtype " + c.dtype.name() + ", which has no C type in kernels");
  if (c.count > 0 && !c.data)
    throw Error(Status::ERROR_INVALID_VALUE, "constant array '" + c.name + "' has elements but no data");
  // An empty array still needs one element in C; its count is 0 for the
  // user. Several dimensions take the flat initialiser (C's brace elision).
  std::string dims = "[" + std::to_string(c.count ? c.count : 1) + "]";
  if (c.count && c.shape.size() > 1) {
    dims.clear();
    for (int64_t d : c.shape) dims += "[" + std::to_string(d) + "]";
  }
  std::string s = "GPUHAL_CONSTANT " + type + " " + c.name + dims + " = {";
  char buf[64];
  const auto *bytes = static_cast<const unsigned char *>(c.data);
  const size_t item = size_t(c.dtype.itemsize());
  for (uint64_t k = 0; k < c.count; ++k) {
    const unsigned char *p = bytes + k * item;
    if (c.dtype == dtypes::float32) {
      float v;
      std::memcpy(&v, p, 4);
      float_literal(double(v), "f", buf, sizeof buf);
    } else if (c.dtype == dtypes::float64) {
      double v;
      std::memcpy(&v, p, 8);
      float_literal(v, "", buf, sizeof buf);
    } else if (c.dtype.kind == DTypeKind::Int) {
      int64_t v = 0;
      if (item == 1) v = int8_t(p[0]);
      if (item == 2) {
        int16_t x;
        std::memcpy(&x, p, 2);
        v = x;
      }
      if (item == 4) {
        int32_t x;
        std::memcpy(&x, p, 4);
        v = x;
      }
      if (item == 8) std::memcpy(&v, p, 8);
      // INT64_MIN has no literal either: written as (-max - 1).
      if (v == INT64_MIN)
        std::snprintf(buf, sizeof buf, "(-9223372036854775807LL-1)");
      else
        std::snprintf(buf, sizeof buf, "%" PRId64 "%s", v, item == 8 ? "LL" : "");
    } else {
      uint64_t v = 0;
      std::memcpy(&v, p, item);  // little-endian
      std::snprintf(buf, sizeof buf, "%" PRIu64 "u%s", v, item == 8 ? "LL" : "");
    }
    s += (k ? "," : "");
    s += buf;
  }
  if (c.count == 0) s += "0";
  s += "};\n";
  return s;
}

}  // namespace gpuhal::detail
