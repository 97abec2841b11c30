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

}  // namespace

std::string DType::name() const {
  const Named *t = find(*this);
  return t ? t->name : "dtype" + describe_raw(*this);
}

std::string DType::typestr() const {
  const Named *t = find(*this);
  return t ? t->typestr : "?";
}

void DType::validate() const {
  if (!find(*this)) throw Error(Status::ERROR_INVALID_DTYPE, "unsupported dtype " + describe_raw(*this));
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
  if (text == "float") return dtypes::float64;
  if (text == "complex") return dtypes::complex128;
  throw Error(Status::ERROR_INVALID_DTYPE, "unknown dtype '" + text + "'");
}

}  // namespace gpuhal
