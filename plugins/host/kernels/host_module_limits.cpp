// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What a compiled host module uses of a GPU's limited memories, read from its
// symbol table: static shared memory per kernel and the bytes of constant
// arrays.
//
// GPUHAL_SHARED_ARRAY lowers to a thread-local static array in the kernel's
// body (host_lowering.cpp). A kernel `name` is `static void name(...)` in
// the module, so its local statics are STT_TLS symbols named
// `_ZZL<length><name>...E<variable>` in the module's symbol table; their
// sizes add up to what a GPU would reserve per work-group. Arrays the
// compiler removed take no memory here and are not counted (on a GPU they
// would not be either, once optimised away). GPUHAL_CONSTANT arrays are
// file-scope `static const` objects, `_ZL<length><name>`, kept with `used`.
// The reader checks every offset against the image: any bytes are safe.
#include <cctype>
#include <cstring>
#include <set>

#include "host_kernel.hpp"

namespace gpuhal::host {
namespace {

template <class T>
bool read(const unsigned char *b, uint64_t size, uint64_t off, T *out) {
  if (off > size || sizeof(T) > size - off) return false;
  std::memcpy(out, b + off, sizeof(T));
  return true;
}

// Calls fn(name, st_info, st_size) for every symbol of every symbol table.
template <class F>
void for_each_symbol(const void *image, uint64_t size, F fn) {
  const auto *b = static_cast<const unsigned char *>(image);
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  if (size < 64 || b[4] != 2 /* ELFCLASS64 */ || !read(b, size, 0x28, &shoff) || !read(b, size, 0x3A, &shentsize) ||
      !read(b, size, 0x3C, &shnum) || shentsize < 64)
    return;
  for (uint32_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + uint64_t(i) * shentsize;
    uint32_t type = 0, link = 0;
    uint64_t off = 0, bytes = 0;
    if (!read(b, size, h + 4, &type) || !read(b, size, h + 0x18, &off) || !read(b, size, h + 0x20, &bytes) ||
        !read(b, size, h + 0x28, &link))
      return;
    if (type != 2 /* SHT_SYMTAB */) continue;
    uint64_t str_off = 0, str_size = 0;
    const uint64_t sh = shoff + uint64_t(link) * shentsize;
    if (link >= shnum || !read(b, size, sh + 0x18, &str_off) || !read(b, size, sh + 0x20, &str_size) ||
        str_off > size || str_size > size - str_off)
      return;
    for (uint64_t at = off; bytes >= 24 && at <= off + bytes - 24; at += 24) {
      uint32_t name = 0;
      uint8_t info = 0;
      uint64_t sym_size = 0;
      if (!read(b, size, at, &name) || !read(b, size, at + 4, &info) || !read(b, size, at + 16, &sym_size)) return;
      if (name >= str_size) continue;
      const char *s = reinterpret_cast<const char *>(b + str_off + name);
      fn(std::string(s, strnlen(s, size_t(str_size - name))), info, sym_size);
    }
  }
}

}  // namespace

std::map<std::string, uint64_t> static_shared_bytes(const void *image, uint64_t size) {
  std::map<std::string, uint64_t> out;
  for_each_symbol(image, size, [&](const std::string &sym, uint8_t info, uint64_t bytes) {
    if ((info & 0xf) != 6 /* STT_TLS */ || sym.compare(0, 4, "_ZZL") != 0) return;
    size_t p = 4, len = 0;
    while (p < sym.size() && sym[p] >= '0' && sym[p] <= '9' && len < 100000) len = len * 10 + size_t(sym[p++] - '0');
    if (len == 0 || p + len > sym.size()) return;
    out[sym.substr(p, len)] += bytes;
  });
  return out;
}

std::vector<std::string> constant_names(const std::string &source) {
  std::vector<std::string> names;
  static const char kWord[] = "GPUHAL_CONSTANT";
  for (size_t at = source.find(kWord); at != std::string::npos; at = source.find(kWord, at + 1)) {
    const size_t line = source.rfind('\n', at);
    const size_t first = source.find_first_not_of(" \t", line == std::string::npos ? 0 : line + 1);
    if (first != std::string::npos && source[first] == '#') continue;  // the lowering's #define
    const size_t bracket = source.find('[', at);
    const size_t stop = source.find_first_of(";{", at);
    if (bracket == std::string::npos || (stop != std::string::npos && stop < bracket)) continue;
    size_t e = bracket;
    while (e > at && (source[e - 1] == ' ' || source[e - 1] == '\t')) --e;
    size_t b = e;
    while (b > at && (std::isalnum(static_cast<unsigned char>(source[b - 1])) || source[b - 1] == '_')) --b;
    if (b < e) names.push_back(source.substr(b, e - b));
  }
  return names;
}

uint64_t constant_bytes(const void *image, uint64_t size, const std::vector<std::string> &names) {
  std::set<std::string> wanted;
  for (const auto &n : names) wanted.insert("_ZL" + std::to_string(n.size()) + n);
  uint64_t total = 0;
  for_each_symbol(image, size, [&](const std::string &sym, uint8_t info, uint64_t bytes) {
    if ((info & 0xf) == 1 /* STT_OBJECT */ && wanted.erase(sym)) total += bytes;
  });
  return total;
}

}  // namespace gpuhal::host
