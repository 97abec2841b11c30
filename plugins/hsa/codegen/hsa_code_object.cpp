// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "hsa_code_object.hpp"

#include <cstring>
#include <memory>

namespace gpuhal::hsa {

size_t KernelMetadata::explicit_count() const {
  size_t n = 0;
  for (const auto &a : args)
    if (a.value_kind.compare(0, 7, "hidden_") != 0) ++n;
  return n;
}

namespace {

// ---- a small MessagePack reader -------------------------------------------------

struct Value {
  enum Kind { Nil, Bool, Int, Uint, Float, Str, Bin, Array, Map } kind = Nil;
  int64_t i = 0;
  uint64_t u = 0;
  std::string s;
  std::vector<Value> items;                      // Array
  std::vector<std::pair<Value, Value>> entries;  // Map

  bool is_int() const { return kind == Int || kind == Uint; }
  uint64_t as_u64() const { return kind == Uint ? u : uint64_t(i); }
  const Value *get(const char *key) const {
    for (const auto &e : entries)
      if (e.first.kind == Str && e.first.s == key) return &e.second;
    return nullptr;
  }
};

class Reader {
 public:
  Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  bool read(Value *v, int depth = 0) {
    if (depth > 32) return bad("nested too deeply");
    uint8_t t;
    if (!byte(&t)) return false;
    if (t <= 0x7f) return set_uint(v, t);
    if (t >= 0xe0) {
      v->kind = Value::Int;
      v->i = int8_t(t);
      return true;
    }
    if ((t & 0xf0) == 0x80) return map(v, t & 0x0f, depth);
    if ((t & 0xf0) == 0x90) return array(v, t & 0x0f, depth);
    if ((t & 0xe0) == 0xa0) return str(v, t & 0x1f, Value::Str);
    uint64_t n = 0;
    switch (t) {
      case 0xc0:
        v->kind = Value::Nil;
        return true;
      case 0xc2:
      case 0xc3:
        v->kind = Value::Bool;
        v->u = t == 0xc3;
        return true;
      case 0xc4:
      case 0xc5:
      case 0xc6:
        return uint_be(size_t(1) << (t - 0xc4), &n) && str(v, n, Value::Bin);
      case 0xca:
      case 0xcb:
        v->kind = Value::Float;
        return skip(t == 0xca ? 4 : 8);
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
        return uint_be(size_t(1) << (t - 0xcc), &n) && set_uint(v, n);
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3: {
        const size_t w = size_t(1) << (t - 0xd0);
        if (!uint_be(w, &n)) return false;
        v->kind = Value::Int;
        v->i = w == 8 ? int64_t(n) : int64_t(n << (64 - 8 * w)) >> (64 - 8 * w);
        return true;
      }
      case 0xd9:
      case 0xda:
      case 0xdb:
        return uint_be(size_t(1) << (t - 0xd9), &n) && str(v, n, Value::Str);
      case 0xdc:
      case 0xdd:
        return uint_be(t == 0xdc ? 2 : 4, &n) && array(v, n, depth);
      case 0xde:
      case 0xdf:
        return uint_be(t == 0xde ? 2 : 4, &n) && map(v, n, depth);
      default:
        return bad("unsupported MessagePack type byte " + std::to_string(t));
    }
  }
  const std::string &why() const { return why_; }

 private:
  bool bad(const std::string &what) {
    if (why_.empty()) why_ = "malformed AMDGPU metadata: " + what;
    return false;
  }
  bool byte(uint8_t *b) {
    if (pos_ >= n_) return bad("truncated");
    *b = p_[pos_++];
    return true;
  }
  bool skip(uint64_t k) {
    if (k > n_ - pos_) return bad("truncated");
    pos_ += size_t(k);
    return true;
  }
  bool uint_be(size_t w, uint64_t *out) {
    if (w > n_ - pos_) return bad("truncated");
    uint64_t x = 0;
    for (size_t k = 0; k < w; ++k) x = (x << 8) | p_[pos_ + k];
    pos_ += w;
    *out = x;
    return true;
  }
  static bool set_uint(Value *v, uint64_t x) {
    v->kind = Value::Uint;
    v->u = x;
    return true;
  }
  bool str(Value *v, uint64_t len, Value::Kind kind) {
    if (len > n_ - pos_) return bad("truncated string");
    v->kind = kind;
    v->s.assign(reinterpret_cast<const char *>(p_ + pos_), size_t(len));
    pos_ += size_t(len);
    return true;
  }
  bool array(Value *v, uint64_t count, int depth) {
    if (count > n_ - pos_) return bad("array longer than the data");  // each item takes >= 1 byte
    v->kind = Value::Array;
    v->items.resize(size_t(count));
    for (auto &item : v->items)
      if (!read(&item, depth + 1)) return false;
    return true;
  }
  bool map(Value *v, uint64_t count, int depth) {
    if (count > (n_ - pos_) / 2) return bad("map longer than the data");
    v->kind = Value::Map;
    v->entries.resize(size_t(count));
    for (auto &e : v->entries)
      if (!read(&e.first, depth + 1) || !read(&e.second, depth + 1)) return false;
    return true;
  }

  const uint8_t *p_;
  size_t n_;
  size_t pos_ = 0;
  std::string why_;
};

// ---- ELF ---------------------------------------------------------------------------

template <class T>
bool load(const uint8_t *base, uint64_t size, uint64_t off, T *out) {
  if (off > size || sizeof(T) > size - off) return false;
  std::memcpy(out, base + off, sizeof(T));
  return true;
}

constexpr uint32_t kNtAmdgpuMetadata = 32;

// Finds the NT_AMDGPU_METADATA note's descriptor in the PT_NOTE segments.
bool find_metadata_note(const uint8_t *p, uint64_t size, const uint8_t **desc, uint32_t *desc_size, std::string *why) {
  if (size < 64 || std::memcmp(p,
                               "\x7f"
                               "ELF",
                               4) != 0)
    return *why = "not an ELF file", false;
  if (p[4] != 2 || p[5] != 1) return *why = "not a 64-bit little-endian ELF file", false;
  uint16_t machine = 0, phentsize = 0, phnum = 0;
  uint64_t phoff = 0;
  load(p, size, 18, &machine);
  load(p, size, 32, &phoff);
  load(p, size, 54, &phentsize);
  load(p, size, 56, &phnum);
  if (machine != 224) return *why = "not an AMDGPU code object (ELF machine " + std::to_string(machine) + ")", false;
  if (phentsize < 56) return *why = "bad ELF program header size", false;
  for (uint32_t i = 0; i < phnum; ++i) {
    const uint64_t ph = phoff + uint64_t(i) * phentsize;
    uint32_t type = 0;
    uint64_t off = 0, filesz = 0;
    if (!load(p, size, ph, &type) || !load(p, size, ph + 8, &off) || !load(p, size, ph + 32, &filesz))
      return *why = "ELF program headers lie outside the file", false;
    if (type != 4 /* PT_NOTE */) continue;
    if (off > size || filesz > size - off) return *why = "ELF note segment lies outside the file", false;
    uint64_t at = off;
    const uint64_t end = off + filesz;
    while (at + 12 <= end) {
      uint32_t namesz = 0, descsz = 0, ntype = 0;
      load(p, size, at, &namesz);
      load(p, size, at + 4, &descsz);
      load(p, size, at + 8, &ntype);
      const uint64_t name_at = at + 12;
      const uint64_t desc_at = name_at + ((uint64_t(namesz) + 3) & ~uint64_t(3));
      const uint64_t next = desc_at + ((uint64_t(descsz) + 3) & ~uint64_t(3));
      if (desc_at > end || descsz > end - desc_at) return *why = "truncated ELF note", false;
      if (ntype == kNtAmdgpuMetadata && namesz == 7 && std::memcmp(p + name_at, "AMDGPU", 7) == 0) {
        *desc = p + desc_at;
        *desc_size = descsz;
        return true;
      }
      at = next;
    }
  }
  *why = "no AMDGPU metadata note (code object v2 or not a kernel code object)";
  return false;
}

uint32_t u32_of(const Value *v, uint32_t fallback = 0) {
  return v && v->is_int() && v->as_u64() <= UINT32_MAX ? uint32_t(v->as_u64()) : fallback;
}

}  // namespace

bool read_code_object_metadata(const void *bytes, uint64_t size, CodeObjectMetadata *out, std::string *why) {
  if (!bytes) return *why = "null code object", false;
  const uint8_t *desc = nullptr;
  uint32_t desc_size = 0;
  if (!find_metadata_note(static_cast<const uint8_t *>(bytes), size, &desc, &desc_size, why)) return false;
  Reader reader(desc, desc_size);
  Value root;
  if (!reader.read(&root)) return *why = reader.why(), false;
  if (root.kind != Value::Map) return *why = "malformed AMDGPU metadata: the root is not a map", false;
  CodeObjectMetadata md;
  if (const Value *t = root.get("amdhsa.target"); t && t->kind == Value::Str) md.target = t->s;
  const Value *kernels = root.get("amdhsa.kernels");
  if (!kernels || kernels->kind != Value::Array) return *why = "malformed AMDGPU metadata: no amdhsa.kernels", false;
  for (const Value &k : kernels->items) {
    if (k.kind != Value::Map) return *why = "malformed AMDGPU metadata: a kernel entry is not a map", false;
    KernelMetadata km;
    const Value *name = k.get(".name");
    const Value *symbol = k.get(".symbol");
    if (!name || name->kind != Value::Str || !symbol || symbol->kind != Value::Str)
      return *why = "malformed AMDGPU metadata: a kernel without .name or .symbol", false;
    km.name = name->s;
    km.symbol = symbol->s;
    km.kernarg_size = u32_of(k.get(".kernarg_segment_size"));
    km.kernarg_align = u32_of(k.get(".kernarg_segment_align"), 8);
    km.group_segment_fixed_size = u32_of(k.get(".group_segment_fixed_size"));
    km.private_segment_fixed_size = u32_of(k.get(".private_segment_fixed_size"));
    km.max_flat_workgroup_size = u32_of(k.get(".max_flat_workgroup_size"));
    km.vgpr_count = u32_of(k.get(".vgpr_count"));
    km.sgpr_count = u32_of(k.get(".sgpr_count"));
    if (const Value *args = k.get(".args")) {
      if (args->kind != Value::Array) return *why = "malformed AMDGPU metadata: .args of " + km.name, false;
      for (const Value &a : args->items) {
        const Value *off = a.get(".offset"), *sz = a.get(".size"), *kind = a.get(".value_kind");
        if (a.kind != Value::Map || !off || !off->is_int() || !sz || !sz->is_int() || !kind || kind->kind != Value::Str)
          return *why = "malformed AMDGPU metadata: an argument of " + km.name, false;
        KernelArg arg{u32_of(off), u32_of(sz), kind->s};
        if (uint64_t(arg.offset) + arg.size > km.kernarg_size)
          return *why = "malformed AMDGPU metadata: an argument of " + km.name + " lies past its kernarg segment",
                 false;
        km.args.push_back(arg);
      }
    }
    md.kernels.push_back(std::move(km));
  }
  *out = std::move(md);
  return true;
}

}  // namespace gpuhal::hsa
