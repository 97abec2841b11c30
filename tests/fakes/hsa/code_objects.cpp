// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake runtime: code-object readers and executables, kernel symbols.
#include "fake_hsa.hpp"

using namespace fake_hsa;

namespace fake_hsa {

template <class T>
bool rd(const std::vector<uint8_t> &b, uint64_t off, T *out) {
  if (off > b.size() || sizeof(T) > b.size() - off) return false;
  std::memcpy(out, b.data() + off, sizeof(T));
  return true;
}

// The kernel descriptors (*.kd symbols of 64 bytes) of an ELF code object.
bool read_kernels(const std::vector<uint8_t> &b, std::vector<std::unique_ptr<KernelObject>> *out) {
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  if (!rd(b, 40, &shoff) || !rd(b, 58, &shentsize) || !rd(b, 60, &shnum) || shentsize < 64) return false;
  auto section = [&](uint32_t i, uint32_t *type, uint64_t *addr, uint64_t *off, uint64_t *size, uint32_t *link) {
    const uint64_t h = shoff + uint64_t(i) * shentsize;
    return rd(b, h + 4, type) && rd(b, h + 16, addr) && rd(b, h + 24, off) && rd(b, h + 32, size) &&
           rd(b, h + 40, link);
  };
  for (uint32_t i = 0; i < shnum; ++i) {
    uint32_t type = 0, link = 0;
    uint64_t addr = 0, off = 0, size = 0;
    if (!section(i, &type, &addr, &off, &size, &link)) return false;
    if (type != 2 /* SHT_SYMTAB */) continue;
    uint32_t st = 0, sl = 0;
    uint64_t saddr = 0, soff = 0, ssize = 0;
    if (!section(link, &st, &saddr, &soff, &ssize, &sl)) return false;
    for (uint64_t at = off; at + 24 <= off + size; at += 24) {
      uint32_t name = 0;
      uint16_t shndx = 0;
      uint64_t value = 0, symsize = 0;
      if (!rd(b, at, &name) || !rd(b, at + 6, &shndx) || !rd(b, at + 8, &value) || !rd(b, at + 16, &symsize))
        return false;
      if (name >= ssize || soff + name >= b.size()) continue;
      const char *n = reinterpret_cast<const char *>(b.data() + soff + name);
      const std::string sname(n, strnlen(n, size_t(b.size() - (soff + name))));
      if (symsize != 64 || sname.size() < 4 || sname.compare(sname.size() - 3, 3, ".kd") != 0) continue;
      uint32_t t2 = 0, l2 = 0;
      uint64_t a2 = 0, o2 = 0, s2 = 0;
      if (!section(shndx, &t2, &a2, &o2, &s2, &l2) || value < a2) return false;
      const uint64_t kd = o2 + (value - a2);
      auto k = std::make_unique<KernelObject>();
      k->name = sname;
      if (!rd(b, kd, &k->group) || !rd(b, kd + 4, &k->priv) || !rd(b, kd + 8, &k->kernarg)) return false;
      out->push_back(std::move(k));
    }
  }
  return true;
}

}  // namespace fake_hsa

EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(const void *bytes, size_t size,
                                                              hsa_code_object_reader_t *out) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_code_object_reader_create_from_memory"); f != HSA_STATUS_SUCCESS) return f;
  if (!bytes || !size || !out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const auto *b = static_cast<const uint8_t *>(bytes);
  if (size < 64 ||
      std::memcmp(b,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      b[18] != 224)
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  auto *r = new Reader{std::vector<uint8_t>(b, b + size)};
  std::lock_guard<std::mutex> lock(g_mu);
  g_readers.insert(r);
  out->handle = reinterpret_cast<uint64_t>(r);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t reader) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto *r = reinterpret_cast<Reader *>(reader.handle);
  if (!g_readers.erase(r)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  delete r;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_create_alt(hsa_profile_t, hsa_default_float_rounding_mode_t, const char *,
                                              hsa_executable_t *out) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_executable_create_alt"); f != HSA_STATUS_SUCCESS) return f;
  if (!out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto *e = new Executable;
  std::lock_guard<std::mutex> lock(g_mu);
  g_executables.insert(e);
  out->handle = reinterpret_cast<uint64_t>(e);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t exec, hsa_agent_t agent,
                                                          hsa_code_object_reader_t reader, const char *,
                                                          hsa_loaded_code_object_t *) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_executable_load_agent_code_object"); f != HSA_STATUS_SUCCESS) return f;
  std::lock_guard<std::mutex> lock(g_mu);
  auto *e = reinterpret_cast<Executable *>(exec.handle);
  auto *r = reinterpret_cast<Reader *>(reader.handle);
  if (!g_executables.count(e)) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (!g_readers.count(r)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  if (!is_gpu(agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (e->frozen) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  // A code object runs only on the ISA it was built for (EF_AMDGPU_MACH in
  // the ELF header's e_flags, LLVM's values).
  uint32_t flags = 0;
  if (!rd(r->bytes, 48, &flags)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  const std::pair<uint32_t, const char *> machs[] = {{0x2c, "gfx900"},  {0x2f, "gfx906"},  {0x30, "gfx908"},
                                                     {0x3f, "gfx90a"},  {0x4c, "gfx942"},  {0x36, "gfx1030"},
                                                     {0x41, "gfx1100"}, {0x4e, "gfx1201"}};
  const char *built_for = nullptr;
  for (const auto &m : machs)
    if ((flags & 0xffu) == m.first) built_for = m.second;
  if (!built_for || g_isas[size_t(agent.handle - kGpuAgentBase)] != built_for) return HSA_STATUS_ERROR_INVALID_ISA;
  std::vector<std::unique_ptr<KernelObject>> kernels;
  if (!read_kernels(r->bytes, &kernels)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  gpuhal::hsa::CodeObjectMetadata md;
  std::string why;
  if (gpuhal::hsa::read_code_object_metadata(r->bytes.data(), r->bytes.size(), &md, &why))
    for (auto &k : kernels)
      for (const auto &km : md.kernels)
        if (km.symbol == k->name)
          for (const auto &a : km.args)
            if (a.value_kind.rfind("hidden_", 0) == 0) k->hidden.push_back(a);
  for (auto &k : kernels) {
    g_kernel_objects.insert(k.get());
    e->kernels.push_back(std::move(k));
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t exec, const char *) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mu);
  auto *e = reinterpret_cast<Executable *>(exec.handle);
  if (!g_executables.count(e)) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  e->frozen = true;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t exec) {
  if (const hsa_status_t f = injected("hsa_executable_destroy"); f != HSA_STATUS_SUCCESS) return f;
  std::lock_guard<std::mutex> lock(g_mu);
  auto *e = reinterpret_cast<Executable *>(exec.handle);
  if (!g_executables.erase(e)) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  for (auto &k : e->kernels) g_kernel_objects.erase(k.get());
  delete e;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t exec, const char *name, const hsa_agent_t *agent,
                                                      hsa_executable_symbol_t *out) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_executable_get_symbol_by_name"); f != HSA_STATUS_SUCCESS) return f;
  std::lock_guard<std::mutex> lock(g_mu);
  auto *e = reinterpret_cast<Executable *>(exec.handle);
  if (!g_executables.count(e) || !e->frozen) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (!name || !out || !agent || !is_gpu(*agent)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (auto &k : e->kernels)
    if (k->name == name) {
      out->handle = reinterpret_cast<uint64_t>(k.get());
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}

EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t symbol, hsa_executable_symbol_info_t what,
                                                   void *value) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mu);
  const auto *k = reinterpret_cast<const KernelObject *>(symbol.handle);
  if (!g_kernel_objects.count(k) || !value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (what) {
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
      *static_cast<uint64_t *>(value) = reinterpret_cast<uint64_t>(k);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
      *static_cast<uint32_t *>(value) = k->kernarg;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE:
      *static_cast<uint32_t *>(value) = k->group;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE:
      *static_cast<uint32_t *>(value) = k->priv;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

