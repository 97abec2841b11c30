// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "gpuhal/dtype.hpp"

#include "gpuhal/error.hpp"

namespace gpuhal {
namespace {

struct Named {
  DType dtype;
  const char *name;
  const char *typestr;
};

// The supported types. Type strings use '<' for little-endian multi-byte
// types and '|' where byte order does not apply, as NumPy prints them.
constexpr Named kTypes[] = {
    {dtypes::bool_, "bool", "|b1"},
    {dtypes::int8, "int8", "|i1"},
    {dtypes::int16, "int16", "<i2"},
    {dtypes::int32, "int32", "<i4"},
    {dtypes::int64, "int64", "<i8"},
    {dtypes::uint8, "uint8", "|u1"},
    {dtypes::uint16, "uint16", "<u2"},
    {dtypes::uint32, "uint32", "<u4"},
    {dtypes::uint64, "uint64", "<u8"},
    {dtypes::float16, "float16", "<f2"},
    {dtypes::bfloat16, "bfloat16", "<V2"},
    {dtypes::float32, "float32", "<f4"},
    {dtypes::float64, "float64", "<f8"},
    {dtypes::complex64, "complex64", "<c8"},
    {dtypes::complex128, "complex128", "<c16"},
};

const Named *find(const DType &d) {
  for (const auto &t : kTypes)
    if (t.dtype == d) return &t;
  return nullptr;
}

std::string describe_raw(const DType &d) {
  return "(kind " + std::to_string(int(d.kind)) + ", bits " + std::to_string(d.bits) + ", lanes " +
         std::to_string(d.lanes) + ")";
}

bool is_record(const DType &d) {
  return d.kind == DTypeKind::Opaque && d.bits == 8 && d.lanes >= 1;
}

}  // namespace

DType DType::record(int64_t bytes) {
  if (bytes < 1 || bytes > 65535)
    throw Error(Status::ERROR_INVALID_DTYPE,
                "record dtype of " + std::to_string(bytes) + " bytes: the size must be 1 to 65535");
  return DType{DTypeKind::Opaque, 8, uint16_t(bytes)};
}

std::string DType::name() const {
  if (is_record(*this)) return "V" + std::to_string(lanes);
  const Named *t = find(*this);
  return t ? t->name : "dtype" + describe_raw(*this);
}

std::string DType::typestr() const {
  if (is_record(*this)) return "|V" + std::to_string(lanes);
  const Named *t = find(*this);
  return t ? t->typestr : "?";
}

void DType::validate() const {
  if (!find(*this) && !is_record(*this))
    throw Error(Status::ERROR_INVALID_DTYPE, "unsupported dtype " + describe_raw(*this));
}

DType DType::parse(const std::string &text) {
  for (const auto &t : kTypes) {
    if (text == t.name || text == t.typestr) return t.dtype;
    // Accept '=' (native, little-endian here) and '|'/'<' interchangeably
    // for single-byte types, as NumPy does.
    std::string ts = t.typestr;
    if (text.size() == ts.size() && text.substr(1) == ts.substr(1) &&
        (text[0] == '=' || text[0] == '<' || text[0] == '|') && ts != "<V2")
      return t.dtype;
  }
  // Records: "V<n>" or "|V<n>" (NumPy's void type strings).
  const size_t v = text.size() > 1 && text[0] == '|' ? 1 : 0;
  if (text.size() > v + 1 && text[v] == 'V' && text.find_first_not_of("0123456789", v + 1) == std::string::npos &&
      text.size() - v - 1 <= 5)
    return record(std::stoll(text.substr(v + 1)));
  if (text == "float") return dtypes::float64;
  if (text == "complex") return dtypes::complex128;
  throw Error(Status::ERROR_INVALID_DTYPE, "unknown dtype '" + text + "'");
}

}  // namespace gpuhal
