#include "hsa_comgr.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>

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
using Status = int;
constexpr Status kSuccess = 0;
constexpr int kLanguageOpenCl12 = 0x1;
constexpr int kDataSource = 0x1, kDataLog = 0x5, kDataBc = 0x6, kDataRelocatable = 0x7, kDataExecutable = 0x8;
constexpr int kActionCompileSourceToBc = 0x2, kActionCodegenBcToRelocatable = 0x6,
              kActionLinkRelocatableToExecutable = 0x9, kActionDisassembleExecutableToSource = 0xC;

std::mutex g_mu;  // comgr's actions are serialised

}  // namespace

#define GPUHAL_COMGR_API(X)                                                             \
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
  X(amd_comgr_do_action, Status, (int, ActionInfo, DataSet, DataSet))

struct Comgr::Api {
#define GPUHAL_COMGR_PTR(name, ret, params) ret(*name) params = nullptr;
  GPUHAL_COMGR_API(GPUHAL_COMGR_PTR)
#undef GPUHAL_COMGR_PTR
};

Comgr::Comgr(const std::string &library) {
  const std::string lib = library.empty() ? "libamd_comgr.so.2" : library;
  dlerror();
  handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *e = dlerror();
    why_ = "cannot load amd_comgr (" + lib + "): " + (e ? e : "dlopen failed");
    return;
  }
  api_ = new Api();
#define GPUHAL_COMGR_SYM(name, ret, params)                                                   \
  if (!(api_->name = reinterpret_cast<ret(*) params>(dlsym(handle_, #name))) && why_.empty()) \
    why_ = lib + " has no " #name;
  GPUHAL_COMGR_API(GPUHAL_COMGR_SYM)
#undef GPUHAL_COMGR_SYM
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
  std::lock_guard<std::mutex> lock(g_mu);
  const Api *a = api_;
  Session s{a, {}, {}, {0}};
  DataSet in = s.set(), bc = s.set(), reloc = s.set(), exe = s.set();
  Data src{0};
  if (a->amd_comgr_create_data(kDataSource, &src) != kSuccess) {
    *log = "amd_comgr_create_data failed";
    return false;
  }
  s.datas.push_back(src);
  a->amd_comgr_set_data(src, source.size(), source.data());
  a->amd_comgr_set_data_name(src, "kernel.cl");
  a->amd_comgr_data_set_add(in, src);
  a->amd_comgr_create_action_info(&s.info);
  a->amd_comgr_action_info_set_isa_name(s.info, isa.c_str());
  a->amd_comgr_action_info_set_language(s.info, kLanguageOpenCl12);
  a->amd_comgr_action_info_set_logging(s.info, true);
  std::vector<const char *> opts;
  for (const auto &o : options) opts.push_back(o.c_str());
  a->amd_comgr_action_info_set_option_list(s.info, opts.data(), opts.size());
  const struct {
    int action;
    DataSet from, to;
    const char *what;
  } steps[] = {{kActionCompileSourceToBc, in, bc, "compile"},
               {kActionCodegenBcToRelocatable, bc, reloc, "codegen"},
               {kActionLinkRelocatableToExecutable, reloc, exe, "link"}};
  for (const auto &step : steps) {
    const Status st = a->amd_comgr_do_action(step.action, s.info, step.from, step.to);
    const std::string messages = texts(a, step.to, kDataLog);
    if (st != kSuccess) {
      *log = std::string("amd_comgr ") + step.what + " failed (" + status_text(a, st) + "):\n" + messages;
      return false;
    }
  }
  if (!first_data(a, exe, kDataExecutable, code_object)) {
    *log = "amd_comgr produced no executable";
    return false;
  }
  (void)kDataBc;
  (void)kDataRelocatable;
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
  Session s{a, {}, {}, {0}};
  DataSet in = s.set(), out = s.set();
  Data exe{0};
  a->amd_comgr_create_data(kDataExecutable, &exe);
  s.datas.push_back(exe);
  a->amd_comgr_set_data(exe, code_object.size(), code_object.data());
  a->amd_comgr_set_data_name(exe, "kernel.co");
  a->amd_comgr_data_set_add(in, exe);
  a->amd_comgr_create_action_info(&s.info);
  a->amd_comgr_action_info_set_isa_name(s.info, isa.c_str());
  const Status st = a->amd_comgr_do_action(kActionDisassembleExecutableToSource, s.info, in, out);
  if (st != kSuccess) {
    *log = "amd_comgr disassemble failed (" + status_text(a, st) + ")";
    return false;
  }
  std::vector<char> t;
  if (!first_data(a, out, kDataSource, &t)) {
    *log = "amd_comgr produced no disassembly";
    return false;
  }
  text->assign(t.begin(), t.end());
  return true;
}

}  // namespace gpuhal::hsa
