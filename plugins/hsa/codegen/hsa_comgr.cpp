// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "hsa_comgr.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>

#include "vendor_library.hpp"

namespace gpuhal::hsa {
namespace {

// The subset of amd_comgr.h (interface 2.x) used here; handles are structs
// of one uint64_t passed by value, enums are ints.
struct Data {
  uint64_t handle;
};
struct DataSet {
  uint64_t handle;
};
struct ActionInfo {
  uint64_t handle;
};
struct MetadataNode {
  uint64_t handle;
};
// amd_comgr_metadata_kind_t (the same in interfaces 2 and 3).
constexpr int kMetadataString = 0x1, kMetadataMap = 0x2, kMetadataList = 0x3;
using Status = int;
constexpr Status kSuccess = 0;

std::mutex g_mu;  // comgr's actions are serialised

}  // namespace

#define GPUHAL_COMGR_API(X)                                                             \
  X(amd_comgr_get_version, void, (size_t *, size_t *))                                  \
  X(amd_comgr_get_isa_count, Status, (size_t *))                                        \
  X(amd_comgr_get_isa_name, Status, (size_t, const char **))                            \
  X(amd_comgr_status_string, Status, (Status, const char **))                           \
  X(amd_comgr_create_data, Status, (int, Data *))                                       \
  X(amd_comgr_release_data, Status, (Data))                                             \
  X(amd_comgr_set_data, Status, (Data, size_t, const char *))                           \
  X(amd_comgr_set_data_name, Status, (Data, const char *))                              \
  X(amd_comgr_get_data, Status, (Data, size_t *, char *))                               \
  X(amd_comgr_create_data_set, Status, (DataSet *))                                     \
  X(amd_comgr_destroy_data_set, Status, (DataSet))                                      \
  X(amd_comgr_data_set_add, Status, (DataSet, Data))                                    \
  X(amd_comgr_action_data_count, Status, (DataSet, int, size_t *))                      \
  X(amd_comgr_action_data_get_data, Status, (DataSet, int, size_t, Data *))             \
  X(amd_comgr_create_action_info, Status, (ActionInfo *))                               \
  X(amd_comgr_destroy_action_info, Status, (ActionInfo))                                \
  X(amd_comgr_action_info_set_isa_name, Status, (ActionInfo, const char *))             \
  X(amd_comgr_action_info_set_language, Status, (ActionInfo, int))                      \
  X(amd_comgr_action_info_set_option_list, Status, (ActionInfo, const char **, size_t)) \
  X(amd_comgr_action_info_set_logging, Status, (ActionInfo, bool))                      \
  X(amd_comgr_do_action, Status, (int, ActionInfo, DataSet, DataSet))                   \
  X(amd_comgr_get_data_metadata, Status, (Data, MetadataNode *))                        \
  X(amd_comgr_destroy_metadata, Status, (MetadataNode))                                 \
  X(amd_comgr_get_metadata_kind, Status, (MetadataNode, int *))                         \
  X(amd_comgr_get_metadata_string, Status, (MetadataNode, size_t *, char *))            \
  X(amd_comgr_metadata_lookup, Status, (MetadataNode, const char *, MetadataNode *))    \
  X(amd_comgr_get_metadata_list_size, Status, (MetadataNode, size_t *))                 \
  X(amd_comgr_index_list_metadata, Status, (MetadataNode, size_t, MetadataNode *))

struct Comgr::Api {
#define GPUHAL_COMGR_PTR(name, ret, params) ret(*name) params = nullptr;
  GPUHAL_COMGR_API(GPUHAL_COMGR_PTR)
#undef GPUHAL_COMGR_PTR
};

Comgr::Comgr(const std::string &library) {
  // Interface 3 first: ROCm 7 installs it; Debian 12 has only 2.
  const std::vector<std::string> names =
      library.empty() ? std::vector<std::string>{"libamd_comgr.so.3", "libamd_comgr.so.2"}
                      : std::vector<std::string>{library};
  api_ = new Api();
  const plugin::VendorSymbol symbols[] = {
#define GPUHAL_COMGR_SYM(name, ret, params) {plugin::slot_of(&api_->name), true, #name, nullptr},
      GPUHAL_COMGR_API(GPUHAL_COMGR_SYM)
#undef GPUHAL_COMGR_SYM
  };
  const plugin::VendorLibrary lib = plugin::load_vendor_library(names, "amd_comgr", symbols, &why_);
  handle_ = lib.handle;
  if (!why_.empty()) return;
  size_t major = 0, minor = 0;
  api_->amd_comgr_get_version(&major, &minor);
  description_ = "amd_comgr " + std::to_string(major) + "." + std::to_string(minor) + " (" + lib.path + ")";
  if (major == 2)
    interface_ = &kComgrInterface2;
  else if (major == 3)
    interface_ = &kComgrInterface3;
  else {
    why_ = description_ + " has an interface gpuhal does not know (it knows majors 2 and 3)";
    return;
  }
  size_t count = 0;
  if (api_->amd_comgr_get_isa_count(&count) != kSuccess) {
    why_ = description_ + ": amd_comgr_get_isa_count failed";
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const char *name = nullptr;
    if (api_->amd_comgr_get_isa_name(i, &name) == kSuccess && name) isas_.push_back(name);
  }
}

bool Comgr::knows_isa(const std::string &isa) const {
  for (const auto &n : isas_)
    if (n == isa || n.rfind(isa + ":", 0) == 0) return true;  // "...--gfx90a" or "...--gfx90a:xnack+"
  return false;
}

Comgr::~Comgr() {
  delete api_;
  if (handle_) dlclose(handle_);
}

namespace {

// Owns comgr objects for the length of one request.
struct Session {
  const Comgr::Api *a;
  std::vector<DataSet> sets;
  std::vector<Data> datas;
  ActionInfo info{0};
  ~Session();
  DataSet set() {
    DataSet s{0};
    if (a->amd_comgr_create_data_set(&s) == kSuccess) sets.push_back(s);
    return s;
  }
};

}  // namespace

namespace {

Session::~Session() {
  for (Data d : datas) a->amd_comgr_release_data(d);
  for (DataSet s : sets) a->amd_comgr_destroy_data_set(s);
  if (info.handle) a->amd_comgr_destroy_action_info(info);
}

std::string status_text(const Comgr::Api *a, Status s) {
  const char *t = nullptr;
  if (a->amd_comgr_status_string(s, &t) != kSuccess || !t) return "status " + std::to_string(s);
  return t;
}

// The text of every data of `kind` in `set` (logs), concatenated.
std::string texts(const Comgr::Api *a, DataSet set, int kind) {
  size_t n = 0;
  std::string out;
  if (a->amd_comgr_action_data_count(set, kind, &n) != kSuccess) return out;
  for (size_t i = 0; i < n; ++i) {
    Data d{0};
    if (a->amd_comgr_action_data_get_data(set, kind, i, &d) != kSuccess) continue;
    size_t size = 0;
    if (a->amd_comgr_get_data(d, &size, nullptr) == kSuccess && size) {
      std::string t(size, '\0');
      a->amd_comgr_get_data(d, &size, &t[0]);
      out += t;
    }
    a->amd_comgr_release_data(d);
  }
  return out;
}

bool first_data(const Comgr::Api *a, DataSet set, int kind, std::vector<char> *out) {
  Data d{0};
  if (a->amd_comgr_action_data_get_data(set, kind, 0, &d) != kSuccess) return false;
  size_t size = 0;
  bool ok = a->amd_comgr_get_data(d, &size, nullptr) == kSuccess && size > 0;
  if (ok) {
    out->resize(size);
    ok = a->amd_comgr_get_data(d, &size, out->data()) == kSuccess;
  }
  a->amd_comgr_release_data(d);
  return ok;
}

}  // namespace

bool Comgr::compile(const std::string &source, const std::string &isa, const std::vector<std::string> &options,
                    std::vector<char> *code_object, std::string *log) const {
  if (!ok()) {
    *log = why_;
    return false;
  }
  if (!knows_isa(isa)) {
    *log = describe() + " cannot compile for " + isa + ": it does not know that ISA (a newer amd_comgr, such as " +
           "ROCm's libamd_comgr.so.3, may; GPUHAL_AMD_COMGR selects one)";
    return false;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  const Api *a = api_;
  const ComgrInterface &v = *interface_;
  Session s{a, {}, {}, {0}};
  // Every call's status is checked: the first failure names the call.
  std::string failed;
  auto check = [&](Status st, const char *call) {
    if (st != kSuccess && failed.empty()) failed = std::string(call) + " failed (" + status_text(a, st) + ")";
    return st == kSuccess;
  };
  DataSet in{0}, bc{0}, reloc{0}, exe{0};
  for (DataSet *set : {&in, &bc, &reloc, &exe})
    if (check(a->amd_comgr_create_data_set(set), "amd_comgr_create_data_set")) s.sets.push_back(*set);
  Data src{0};
  if (check(a->amd_comgr_create_data(v.data_source, &src), "amd_comgr_create_data")) s.datas.push_back(src);
  if (failed.empty()) check(a->amd_comgr_set_data(src, source.size(), source.data()), "amd_comgr_set_data");
  if (failed.empty()) check(a->amd_comgr_set_data_name(src, "kernel.cl"), "amd_comgr_set_data_name");
  if (failed.empty()) check(a->amd_comgr_data_set_add(in, src), "amd_comgr_data_set_add");
  if (failed.empty()) check(a->amd_comgr_create_action_info(&s.info), "amd_comgr_create_action_info");
  if (failed.empty()) check(a->amd_comgr_action_info_set_isa_name(s.info, isa.c_str()), "amd_comgr_action_info_set_isa_name");
  if (failed.empty())
    check(a->amd_comgr_action_info_set_language(s.info, v.language_opencl_1_2), "amd_comgr_action_info_set_language");
  if (failed.empty()) check(a->amd_comgr_action_info_set_logging(s.info, true), "amd_comgr_action_info_set_logging");
  std::vector<const char *> opts;
  for (const auto &o : options) opts.push_back(o.c_str());
  if (failed.empty())
    check(a->amd_comgr_action_info_set_option_list(s.info, opts.data(), opts.size()),
          "amd_comgr_action_info_set_option_list");
  if (!failed.empty()) {
    *log = describe() + ": " + failed + " (for " + isa + ")";
    return false;
  }
  const struct {
    int action;
    DataSet from, to;
    const char *what;
  } steps[] = {{v.action_compile_source_to_bc, in, bc, "compile"},
               {v.action_codegen_bc_to_relocatable, bc, reloc, "codegen"},
               {v.action_link_relocatable_to_executable, reloc, exe, "link"}};
  for (const auto &step : steps) {
    const Status st = a->amd_comgr_do_action(step.action, s.info, step.from, step.to);
    const std::string messages = texts(a, step.to, v.data_log);
    if (st != kSuccess) {
      *log = describe() + " " + step.what + " failed (" + status_text(a, st) + "):\n" + messages;
      return false;
    }
  }
  if (!first_data(a, exe, v.data_executable, code_object)) {
    *log = describe() + " produced no executable";
    return false;
  }
  return true;
}

bool Comgr::disassemble(const std::vector<char> &code_object, const std::string &isa, std::string *text,
                        std::string *log) const {
  if (!ok()) {
    *log = why_;
    return false;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  const Api *a = api_;
  const ComgrInterface &v = *interface_;
  Session s{a, {}, {}, {0}};
  DataSet in = s.set(), out = s.set();
  Data exe{0};
  Status st = a->amd_comgr_create_data(v.data_executable, &exe);
  if (st == kSuccess) s.datas.push_back(exe);
  if (st == kSuccess) st = a->amd_comgr_set_data(exe, code_object.size(), code_object.data());
  if (st == kSuccess) st = a->amd_comgr_set_data_name(exe, "kernel.co");
  if (st == kSuccess) st = a->amd_comgr_data_set_add(in, exe);
  if (st == kSuccess) st = a->amd_comgr_create_action_info(&s.info);
  if (st == kSuccess) st = a->amd_comgr_action_info_set_isa_name(s.info, isa.c_str());
  if (st == kSuccess) st = a->amd_comgr_do_action(v.action_disassemble_executable_to_source, s.info, in, out);
  if (st != kSuccess) {
    *log = describe() + " disassemble failed (" + status_text(a, st) + ")";
    return false;
  }
  std::vector<char> t;
  if (!first_data(a, out, v.data_source, &t)) {
    *log = "amd_comgr produced no disassembly";
    return false;
  }
  text->assign(t.begin(), t.end());
  return true;
}

// ---- metadata ---------------------------------------------------------------------------

namespace {

// One metadata node, destroyed with its scope; a null handle is "absent".
class Node {
 public:
  Node(const Comgr::Api *a, MetadataNode n) : a_(a), n_(n) {}
  Node(Node &&o) noexcept : a_(o.a_), n_(o.n_) { o.n_.handle = 0; }
  Node(const Node &) = delete;
  ~Node() {
    if (n_.handle) a_->amd_comgr_destroy_metadata(n_);
  }
  bool present() const { return n_.handle != 0; }
  int kind() const {
    int k = 0;
    return present() && a_->amd_comgr_get_metadata_kind(n_, &k) == kSuccess ? k : 0;
  }
  // The value under `key` of a map node (absent when there is none).
  Node get(const char *key) const {
    MetadataNode v{0};
    if (kind() != kMetadataMap || a_->amd_comgr_metadata_lookup(n_, key, &v) != kSuccess) v.handle = 0;
    return Node(a_, v);
  }
  size_t size() const {
    size_t n = 0;
    return kind() == kMetadataList && a_->amd_comgr_get_metadata_list_size(n_, &n) == kSuccess ? n : 0;
  }
  Node at(size_t i) const {
    MetadataNode v{0};
    if (a_->amd_comgr_index_list_metadata(n_, i, &v) != kSuccess) v.handle = 0;
    return Node(a_, v);
  }
  // A string node's text (comgr gives MessagePack numbers as strings too).
  bool text(std::string *out) const {
    size_t n = 0;
    if (kind() != kMetadataString || a_->amd_comgr_get_metadata_string(n_, &n, nullptr) != kSuccess) return false;
    std::string s(n, '\0');
    if (n && a_->amd_comgr_get_metadata_string(n_, &n, s.data()) != kSuccess) return false;
    while (!s.empty() && s.back() == '\0') s.pop_back();
    *out = std::move(s);
    return true;
  }
  // A number that fits in uint32_t; `fallback` when absent or not a number.
  bool u32(uint32_t *out) const {
    std::string s;
    if (!text(&s) || s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    const unsigned long long v = std::stoull(s);
    if (v > UINT32_MAX) return false;
    *out = uint32_t(v);
    return true;
  }
  uint32_t u32_or(uint32_t fallback) const {
    uint32_t v = fallback;
    return present() && u32(&v) ? v : fallback;
  }

 private:
  const Comgr::Api *a_;
  MetadataNode n_;
};

}  // namespace

bool Comgr::read_metadata(const void *code_object, size_t bytes, CodeObjectMetadata *out, std::string *why) const {
  if (!ok()) return *why = why_, false;
  std::lock_guard<std::mutex> lock(g_mu);
  const Api *a = api_;
  Session s{a, {}, {}, {0}};
  Data exe{0};
  Status st = a->amd_comgr_create_data(interface_->data_executable, &exe);
  if (st == kSuccess) s.datas.push_back(exe);
  if (st == kSuccess) st = a->amd_comgr_set_data(exe, bytes, static_cast<const char *>(code_object));
  MetadataNode root_handle{0};
  if (st == kSuccess) st = a->amd_comgr_get_data_metadata(exe, &root_handle);
  if (st != kSuccess) return *why = describe() + ": amd_comgr_get_data_metadata failed (" + status_text(a, st) + ")", false;
  const Node root(a, root_handle);
  if (root.kind() != kMetadataMap)
    return *why = "no AMDGPU metadata (code object v2, or not a kernel code object)", false;
  // The same rules as read_code_object_metadata (hsa_code_object.cpp).
  CodeObjectMetadata md;
  root.get("amdhsa.target").text(&md.target);
  const Node kernels = root.get("amdhsa.kernels");
  if (kernels.kind() != kMetadataList) return *why = "malformed AMDGPU metadata: no amdhsa.kernels", false;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Node k = kernels.at(i);
    if (k.kind() != kMetadataMap) return *why = "malformed AMDGPU metadata: a kernel entry is not a map", false;
    KernelMetadata km;
    if (!k.get(".name").text(&km.name) || !k.get(".symbol").text(&km.symbol))
      return *why = "malformed AMDGPU metadata: a kernel without .name or .symbol", false;
    km.kernarg_size = k.get(".kernarg_segment_size").u32_or(0);
    km.kernarg_align = k.get(".kernarg_segment_align").u32_or(8);
    km.group_segment_fixed_size = k.get(".group_segment_fixed_size").u32_or(0);
    km.private_segment_fixed_size = k.get(".private_segment_fixed_size").u32_or(0);
    km.max_flat_workgroup_size = k.get(".max_flat_workgroup_size").u32_or(0);
    km.vgpr_count = k.get(".vgpr_count").u32_or(0);
    km.sgpr_count = k.get(".sgpr_count").u32_or(0);
    const Node args = k.get(".args");
    if (args.present()) {
      if (args.kind() != kMetadataList) return *why = "malformed AMDGPU metadata: .args of " + km.name, false;
      for (size_t j = 0; j < args.size(); ++j) {
        const Node arg = args.at(j);
        KernelArg ka;
        if (arg.kind() != kMetadataMap || !arg.get(".offset").u32(&ka.offset) || !arg.get(".size").u32(&ka.size) ||
            !arg.get(".value_kind").text(&ka.value_kind))
          return *why = "malformed AMDGPU metadata: an argument of " + km.name, false;
        if (uint64_t(ka.offset) + ka.size > km.kernarg_size)
          return *why = "malformed AMDGPU metadata: an argument of " + km.name + " lies past its kernarg segment",
                 false;
        km.args.push_back(std::move(ka));
      }
    }
    md.kernels.push_back(std::move(km));
  }
  *out = std::move(md);
  return true;
}

}  // namespace gpuhal::hsa
