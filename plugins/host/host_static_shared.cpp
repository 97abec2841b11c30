// Static shared memory per kernel and the bytes of constant arrays, read
// from a compiled host module.
//
// GPUHAL_SHARED_ARRAY lowers to a thread-local static array in the kernel's
// body (host_lowering.cpp). A kernel `name` is `static void name(...)` in
// the module, so its local statics are STT_TLS symbols named
// `_ZZL<length><name>...E<variable>` in the module's symbol table; their
// sizes add up to what a GPU would reserve per work-group. Arrays the
// compiler removed take no memory here and are not counted (on a GPU they
// would not be either, once optimised away). The reader checks every offset
// against the image: any bytes are safe to give it.
#include <cstring>

#include "host_kernels.hpp"

namespace gpuhal::host {
namespace {

template <class T>
bool read(const unsigned char *b, uint64_t size, uint64_t off, T *out) {
  if (off > size || sizeof(T) > size - off) return false;
  std::memcpy(out, b + off, sizeof(T));
  return true;
}

}  // namespace

std::map<std::string, uint64_t> static_shared_bytes(const void *image, uint64_t size) {
  std::map<std::string, uint64_t> out;
  const auto *b = static_cast<const unsigned char *>(image);
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  if (size < 64 || b[4] != 2 /* ELFCLASS64 */ || !read(b, size, 0x28, &shoff) || !read(b, size, 0x3A, &shentsize) ||
      !read(b, size, 0x3C, &shnum) || shentsize < 64)
    return out;
  for (uint32_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + uint64_t(i) * shentsize;
    uint32_t type = 0, link = 0;
    uint64_t off = 0, bytes = 0;
    if (!read(b, size, h + 4, &type) || !read(b, size, h + 0x18, &off) || !read(b, size, h + 0x20, &bytes) ||
        !read(b, size, h + 0x28, &link))
      return out;
    if (type != 2 /* SHT_SYMTAB */) continue;
    uint64_t str_off = 0, str_size = 0;
    const uint64_t sh = shoff + uint64_t(link) * shentsize;
    if (link >= shnum || !read(b, size, sh + 0x18, &str_off) || !read(b, size, sh + 0x20, &str_size) ||
        str_off > size || str_size > size - str_off)
      return out;
    for (uint64_t at = off; bytes >= 24 && at <= off + bytes - 24; at += 24) {
      uint32_t name = 0;
      uint8_t info = 0;
      uint64_t sym_size = 0;
      if (!read(b, size, at, &name) || !read(b, size, at + 4, &info) || !read(b, size, at + 16, &sym_size)) return out;
      if ((info & 0xf) != 6 /* STT_TLS */ || name >= str_size) continue;
      const char *s = reinterpret_cast<const char *>(b + str_off + name);
      const std::string sym(s, strnlen(s, size_t(str_size - name)));
      if (sym.compare(0, 4, "_ZZL") != 0) continue;
      size_t p = 4, len = 0;
      while (p < sym.size() && sym[p] >= '0' && sym[p] <= '9' && len < 100000) len = len * 10 + size_t(sym[p++] - '0');
      if (len == 0 || p + len > sym.size()) continue;
      out[sym.substr(p, len)] += sym_size;
    }
  }
  return out;
}

uint64_t section_bytes(const void *image, uint64_t size, const char *section) {
  const auto *b = static_cast<const unsigned char *>(image);
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (size < 64 || b[4] != 2 || !read(b, size, 0x28, &shoff) || !read(b, size, 0x3A, &shentsize) ||
      !read(b, size, 0x3C, &shnum) || !read(b, size, 0x3E, &shstrndx) || shentsize < 64 || shstrndx >= shnum)
    return 0;
  uint64_t names = 0, names_size = 0;
  const uint64_t nh = shoff + uint64_t(shstrndx) * shentsize;
  if (!read(b, size, nh + 0x18, &names) || !read(b, size, nh + 0x20, &names_size) || names > size ||
      names_size > size - names)
    return 0;
  uint64_t total = 0;
  for (uint32_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + uint64_t(i) * shentsize;
    uint32_t name = 0;
    uint64_t bytes = 0;
    if (!read(b, size, h, &name) || !read(b, size, h + 0x20, &bytes) || name >= names_size) return 0;
    const char *n = reinterpret_cast<const char *>(b + names + name);
    if (strnlen(n, size_t(names_size - name)) == std::strlen(section) && std::strcmp(n, section) == 0) total += bytes;
  }
  return total;
}

}  // namespace gpuhal::host
