// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "plugin_library.hpp"

#include "fork_guard.hpp"
#include "layers/layer_chain.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace gpuhal::detail {
namespace {

// The table's entries, from the one list (gpuhal/plugin_entries.def).
enum class Group { required, optional, host_memory, ipc, stream_ordered, peer_access, kernels, graphs, stream_priorities, rect_copies, managed_hints, virtual_memory, context_limits, memory_pools, kept_memory };
struct EntryInfo {
  size_t offset;
  const char *name;
  Group group;
};
const EntryInfo kEntries[] = {
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) {offsetof(gpuhal_plugin_table_t, name), #name, Group::group},
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
};
// What a half-present optional group is told.
struct GroupRule {
  Group group;
  const char *refusal;
};
const GroupRule kGroups[] = {
    {Group::host_memory,
     "the host-memory entries (host_alloc ... host_get_device_pointer) must be all present or all NULL"},
    {Group::ipc, "the IPC entries (ipc_get_handle, ipc_open, ipc_close) must be all present or all NULL"},
    {Group::stream_ordered, "mem_alloc_async and mem_free_async must be both present or both NULL"},
    {Group::peer_access, "device_can_access_peer and context_enable_peer_access must be both present or both NULL"},
    {Group::kernels, "the device-code entries (lower_builtin ... launch) must be all present or all NULL"},
    {Group::graphs,
     "the graph entries (stream_begin_capture ... graph_exec_set_kernel_args) must be all present or all NULL"},
    {Group::stream_priorities,
     "the stream priority entries (context_stream_priority_range, stream_create_with_priority, stream_priority) must "
     "be all present or all NULL"},
    {Group::rect_copies, "memcpy_rect_sync and memcpy_rect_async must be both present or both NULL"},
    {Group::managed_hints, "mem_prefetch_async and mem_advise must be both present or both NULL"},
    {Group::virtual_memory, "the virtual-memory entries (vm_granularity ... vm_set_access) must be all present or all NULL"},
    {Group::context_limits, "context_set_limit and context_get_limit must be both present or both NULL"},
    {Group::memory_pools, "the memory-pool entries (mem_pool_create ... mem_pool_set_attribute) must be all present or all NULL"},
    {Group::kept_memory, "mem_keep and mem_free_kept must be both present or both NULL"},
};

// Bytes of the table up to and including the last required entry.
constexpr size_t kRequiredTableSize = offsetof(gpuhal_plugin_table_t, event_elapsed_ms) + sizeof(void *);

bool entry_present(const gpuhal_plugin_table_t &t, size_t offset) {
  void *p;
  std::memcpy(&p, reinterpret_cast<const char *>(&t) + offset, sizeof p);
  return p != nullptr;
}

void log_trampoline(void *user, int32_t level, const char *message) {
  if (level < 0 || level > 3 || !message) return;
  static_cast<const Logger *>(user)->write(static_cast<LogLevel>(level), message);
}

// The logger a plugin's log callback writes through. A plugin shared by
// several runtimes keeps the one it got at its first init, so it must stay
// valid after that runtime is gone: every runtime's logger (an immutable
// value, a few bytes) lives until the process ends, reachable from here.
const Logger *lasting_logger(const Logger &logger) {
  static ProcessMutex mu;
  static auto *kept = new std::vector<std::unique_ptr<Logger>>();  // never destroyed: late plugin logs
  std::lock_guard<ProcessMutex> lock(mu);
  for (const auto &l : *kept)
    if (l->level() == logger.level()) return l.get();  // one per level is enough: loggers are values
  kept->push_back(std::make_unique<Logger>(logger));
  return kept->back().get();
}

}  // namespace

std::string version_string(uint32_t v) {
  return std::to_string(GPUHAL_VERSION_MAJOR(v)) + "." + std::to_string(GPUHAL_VERSION_MINOR(v));
}

namespace {
// Only regular files are opened: dlopen on a FIFO blocks waiting for a
// writer, and on a directory or device fails deep inside the loader.
// What the path is when it is not a regular file; nullptr otherwise (a
// bare name is the loader's to search, and a missing file dlopen's to
// report).
const char *not_a_regular_file(const std::string &path) {
  struct stat st;
  if (path.find('/') == std::string::npos || ::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return nullptr;
  return S_ISDIR(st.st_mode)                            ? "a directory"
         : S_ISFIFO(st.st_mode)                         ? "a FIFO"
         : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)   ? "a device"
         : S_ISSOCK(st.st_mode)                         ? "a socket"
                                                        : "not a plain file";
}
}  // namespace

std::unique_ptr<PluginLibrary> PluginLibrary::open(const std::string &path, const Config &config, const Logger &logger,
                                                   LoadAttempt *attempt) {
  attempt->path = path;
  auto refuse = [&](Status status, const std::string &why) -> std::unique_ptr<PluginLibrary> {
    attempt->status = status;
    attempt->message = why;
    logger.write(LogLevel::Debug, "plugin " + path + ": refused: " + why);
    return nullptr;
  };
  logger.write(LogLevel::Debug, "plugin " + path + ": trying");
  if (const char *kind = not_a_regular_file(path))
    return refuse(Status::ERROR_INVALID_PLUGIN, std::string("not a regular file (") + kind + "): not opened");
  watch_forks();
  std::unique_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->forks_ = fork_count();
  lib->path_ = path;
  lib->logger_ = logger;
  Status status = Status::SUCCESS;
  const std::string bind_refusal = lib->bind(path, &status);
  // The backend's name, as soon as its table said it (a refusal names it).
  if (attempt->backend.empty()) attempt->backend = lib->name_;
  if (!bind_refusal.empty()) return refuse(status, bind_refusal);
  if (GPUHAL_VERSION_MINOR(lib->abi_version_) > GPUHAL_ABI_MINOR)
    logger.write(LogLevel::Debug, "plugin " + path + " speaks newer minor ABI " + version_string(lib->abi_version_) +
                                      "; using the " + version_string(GPUHAL_ABI_VERSION) + " subset");
  if (std::string why = lib->start(config, logger, &status); !why.empty()) return refuse(status, why);
  attempt->device_count = lib->device_count_;
  attempt->status = Status::SUCCESS;
  attempt->message =
      "ABI " + version_string(lib->abi_version_) + ", " + std::to_string(lib->device_count_) + " device(s)";
  // A plugin whose vendor runtime loaded but cannot reach any device says
  // why in its message (e.g. hsa_init's status without /dev/kfd).
  if (!lib->no_device_reason_.empty()) attempt->message += " (" + lib->no_device_reason_ + ")";
  logger.write(LogLevel::Debug, "plugin " + path + ": loaded backend '" + lib->name_ + "', " + attempt->message);
  return lib;
}

std::string PluginLibrary::bind(const std::string &path, Status *status) {
  *status = Status::ERROR_INVALID_PLUGIN;  // what most refusals here are
  dlerror();
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *e = dlerror();
    // A file that exists but cannot be loaded is a broken plugin, not a
    // missing one.
    struct stat st;
    const bool exists = path.find('/') != std::string::npos && ::stat(path.c_str(), &st) == 0;
    if (!exists) *status = Status::ERROR_PLUGIN_NOT_FOUND;
    return std::string(exists ? "not a loadable shared object: " : "dlopen failed: ") + (e ? e : "unknown error");
  }
  dlerror();
  void *sym = dlsym(handle_, GPUHAL_PLUGIN_ENTRY_NAME);
  if (!sym) {
    const char *e = dlerror();
    return std::string("not a gpuhal plugin: it does not export ") + GPUHAL_PLUGIN_ENTRY_NAME + " (" +
           (e ? e : "symbol is NULL") + ")";
  }
  gpuhal_plugin_negotiate_fn negotiate;
  static_assert(sizeof negotiate == sizeof sym, "function pointer size");
  std::memcpy(&negotiate, &sym, sizeof sym);

  const gpuhal_plugin_table_t *t = nullptr;
  const gpuhal_status_t st = negotiate(GPUHAL_ABI_VERSION, &t);
  const std::string core_v = version_string(GPUHAL_ABI_VERSION);
  if (st == GPUHAL_ERROR_ABI_MISMATCH) {
    *status = Status::ERROR_ABI_MISMATCH;
    return "the plugin refused the core's ABI " + core_v + " (it speaks another major version)";
  }
  if (st != GPUHAL_SUCCESS) return "negotiation failed with status " + to_string(static_cast<Status>(st));
  if (!t) return "negotiation returned no table";
  if (GPUHAL_VERSION_MAJOR(t->abi_version) != GPUHAL_ABI_MAJOR) {
    *status = Status::ERROR_ABI_MISMATCH;
    return "the plugin speaks ABI " + version_string(t->abi_version) + " but the core speaks ABI " + core_v +
           " (major versions must match)";
  }
  if (t->struct_size < kRequiredTableSize)
    return "plugin table struct_size " + std::to_string(t->struct_size) +
           " is smaller than the required part of the ABI " + core_v + " table (" +
           std::to_string(kRequiredTableSize) + " bytes)";
  // Read what both sides know; a newer minor's extra entries are ignored, an
  // older minor's missing entries stay NULL (absent, optional).
  std::memcpy(&table_, t, std::min<size_t>(t->struct_size, sizeof(gpuhal_plugin_table_t)));
  abi_version_ = t->abi_version;
  if (!table_.name || !*table_.name) return "plugin table has no backend name";
  name_ = table_.name;
  for (const auto &e : kEntries)
    if (e.group == Group::required && !entry_present(table_, e.offset))
      return std::string("required entry '") + e.name + "' is NULL";
  for (const auto &g : kGroups) {
    int present = 0, members = 0;
    for (const auto &e : kEntries)
      if (e.group == g.group) {
        ++members;
        present += entry_present(table_, e.offset);
      }
    if (present != 0 && present != members) return g.refusal;
  }
  return "";
}

std::string PluginLibrary::start(const Config &config, const Logger &logger, Status *status) {
  // The layers wrap the validated table, so that init is seen too.
  if (!config.layers.empty()) {
    try {
      layers_ = layers::LayerChain::create(table_, name_, config, logger);
    } catch (const Error &e) {
      *status = e.status();
      return e.what();
    }
    table_ = layers_->table();
  }
  std::vector<gpuhal_option_t> options;
  options.reserve(config.plugin_options.size());
  for (const auto &kv : config.plugin_options) options.push_back({kv.first.c_str(), kv.second.c_str()});
  gpuhal_init_args_t args{};
  args.abi_version = GPUHAL_ABI_VERSION;
  args.struct_size = sizeof args;
  args.options = options.data();
  args.option_count = uint32_t(options.size());
  args.log_level = int32_t(logger.level());
  args.log = log_trampoline;
  args.log_user = const_cast<Logger *>(lasting_logger(logger_));
  const gpuhal_status_t ist = table_.init(&args);
  // A missing vendor driver is reported as such (it is normal on machines
  // without that vendor's hardware); any other init failure is a failure.
  if (ist != GPUHAL_SUCCESS) {
    *status = ist == GPUHAL_ERROR_DRIVER_NOT_LOADABLE ? Status::ERROR_DRIVER_NOT_LOADABLE
                                                      : Status::ERROR_INITIALIZATION_FAILED;
    return "init failed (" + to_string(static_cast<Status>(ist)) + "): " + last_message();
  }
  initialised_ = true;
  int32_t count = 0;
  if (const gpuhal_status_t cst = table_.device_count(&count); cst != GPUHAL_SUCCESS) {
    *status = static_cast<Status>(cst);
    return std::string("device_count failed: ") + last_message();
  }
  *status = Status::ERROR_INVALID_PLUGIN;
  if (count < 0) return "device_count returned a negative count";
  if (count > kMaxDevices)
    return "device_count says " + std::to_string(count) + " devices, more than gpuhal accepts from a plugin (" +
           std::to_string(kMaxDevices) + ")";
  device_count_ = count;
  if (count == 0) {
    const char *why = table_.last_error();
    if (why && *why) no_device_reason_ = why;
  }
  return "";
}

std::string PluginLibrary::last_message() const {
  const char *msg = table_.last_error ? table_.last_error() : nullptr;
  return msg ? std::string(msg) : "(no message: the plugin's last_error returned NULL)";
}

PluginLibrary::~PluginLibrary() {
  if (forks_ != fork_count()) return;  // a child of fork(): the plugin's threads and state are the parent's
  if (initialised_) table_.shutdown();
  if (handle_) dlclose(handle_);
}

void PluginLibrary::fail(gpuhal_status_t status, const char *call) const {
  const std::string msg = last_message();
  std::string text = name_ + ": " + call + " failed (" + to_string(static_cast<Status>(status)) + ")";
  if (!msg.empty()) text += ": " + msg;
  throw Error(static_cast<Status>(status), text);
}

}  // namespace gpuhal::detail
