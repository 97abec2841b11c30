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
enum class Group { required, optional, host_memory, ipc, stream_ordered, peer_access, kernels, graphs, stream_priorities, rect_copies, managed_hints, virtual_memory, context_limits };
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
  // Only regular files are opened: dlopen on a FIFO blocks waiting for a
  // writer, and on a directory or device fails deep inside the loader.
  if (path.find('/') != std::string::npos) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      const char *kind = S_ISDIR(st.st_mode)                           ? "a directory"
                         : S_ISFIFO(st.st_mode)                        ? "a FIFO"
                         : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)  ? "a device"
                         : S_ISSOCK(st.st_mode)                        ? "a socket"
                                                                       : "not a plain file";
      return refuse(Status::ERROR_INVALID_PLUGIN, std::string("not a regular file (") + kind + "): not opened");
    }
  }
  watch_forks();
  std::unique_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->forks_ = fork_count();
  lib->path_ = path;
  lib->logger_ = logger;
  dlerror();
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char *e = dlerror();
    // A file that exists but cannot be loaded is a broken plugin, not a
    // missing one.
    struct stat st;
    const bool exists = path.find('/') != std::string::npos && ::stat(path.c_str(), &st) == 0;
    return refuse(
        exists ? Status::ERROR_INVALID_PLUGIN : Status::ERROR_PLUGIN_NOT_FOUND,
        std::string(exists ? "not a loadable shared object: " : "dlopen failed: ") + (e ? e : "unknown error"));
  }
  dlerror();
  void *sym = dlsym(lib->handle_, GPUHAL_PLUGIN_ENTRY_NAME);
  if (!sym) {
    const char *e = dlerror();
    return refuse(Status::ERROR_INVALID_PLUGIN, std::string("not a gpuhal plugin: it does not export ") +
                                                    GPUHAL_PLUGIN_ENTRY_NAME + " (" + (e ? e : "symbol is NULL") + ")");
  }
  gpuhal_plugin_negotiate_fn negotiate;
  static_assert(sizeof negotiate == sizeof sym, "function pointer size");
  std::memcpy(&negotiate, &sym, sizeof sym);

  const gpuhal_plugin_table_t *t = nullptr;
  const gpuhal_status_t st = negotiate(GPUHAL_ABI_VERSION, &t);
  const std::string core_v = version_string(GPUHAL_ABI_VERSION);
  if (st == GPUHAL_ERROR_ABI_MISMATCH)
    return refuse(Status::ERROR_ABI_MISMATCH,
                  "the plugin refused the core's ABI " + core_v + " (it speaks another major version)");
  if (st != GPUHAL_SUCCESS)
    return refuse(Status::ERROR_INVALID_PLUGIN, "negotiation failed with status " + to_string(static_cast<Status>(st)));
  if (!t) return refuse(Status::ERROR_INVALID_PLUGIN, "negotiation returned no table");
  if (GPUHAL_VERSION_MAJOR(t->abi_version) != GPUHAL_ABI_MAJOR)
    return refuse(Status::ERROR_ABI_MISMATCH, "the plugin speaks ABI " + version_string(t->abi_version) +
                                                  " but the core speaks ABI " + core_v +
                                                  " (major versions must match)");
  if (t->struct_size < kRequiredTableSize)
    return refuse(Status::ERROR_INVALID_PLUGIN, "plugin table struct_size " + std::to_string(t->struct_size) +
                                                    " is smaller than the required part of the ABI " + core_v +
                                                    " table (" + std::to_string(kRequiredTableSize) + " bytes)");
  // Read what both sides know; a newer minor's extra entries are ignored, an
  // older minor's missing entries stay NULL (absent, optional).
  std::memcpy(&lib->table_, t, std::min<size_t>(t->struct_size, sizeof(gpuhal_plugin_table_t)));
  lib->abi_version_ = t->abi_version;
  if (!lib->table_.name || !*lib->table_.name)
    return refuse(Status::ERROR_INVALID_PLUGIN, "plugin table has no backend name");
  lib->name_ = lib->table_.name;
  attempt->backend = attempt->backend.empty() ? lib->name_ : attempt->backend;
  for (const auto &e : kEntries)
    if (e.group == Group::required && !entry_present(lib->table_, e.offset))
      return refuse(Status::ERROR_INVALID_PLUGIN, std::string("required entry '") + e.name + "' is NULL");
  for (const auto &g : kGroups) {
    int present = 0, members = 0;
    for (const auto &e : kEntries)
      if (e.group == g.group) {
        ++members;
        present += entry_present(lib->table_, e.offset);
      }
    if (present != 0 && present != members) return refuse(Status::ERROR_INVALID_PLUGIN, g.refusal);
  }
  if (GPUHAL_VERSION_MINOR(t->abi_version) > GPUHAL_ABI_MINOR)
    logger.write(LogLevel::Debug, "plugin " + path + " speaks newer minor ABI " + version_string(t->abi_version) +
                                      "; using the " + core_v + " subset");

  // The layers wrap the validated table, so that init is seen too.
  if (!config.layers.empty()) {
    try {
      lib->layers_ = layers::LayerChain::create(lib->table_, lib->name_, config, logger);
    } catch (const Error &e) {
      return refuse(e.status(), e.what());
    }
    lib->table_ = lib->layers_->table();
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
  args.log_user = const_cast<Logger *>(lasting_logger(lib->logger_));
  const gpuhal_status_t ist = lib->table_.init(&args);
  // A missing vendor driver is reported as such (it is normal on machines
  // without that vendor's hardware); any other init failure is a failure.
  if (ist != GPUHAL_SUCCESS)
    return refuse(ist == GPUHAL_ERROR_DRIVER_NOT_LOADABLE ? Status::ERROR_DRIVER_NOT_LOADABLE
                                                          : Status::ERROR_INITIALIZATION_FAILED,
                  "init failed (" + to_string(static_cast<Status>(ist)) + "): " + lib->last_message());
  lib->initialised_ = true;
  int32_t count = 0;
  const gpuhal_status_t cst = lib->table_.device_count(&count);
  if (cst != GPUHAL_SUCCESS)
    return refuse(static_cast<Status>(cst), std::string("device_count failed: ") + lib->last_message());
  if (count < 0) return refuse(Status::ERROR_INVALID_PLUGIN, "device_count returned a negative count");
  if (count > kMaxDevices)
    return refuse(Status::ERROR_INVALID_PLUGIN, "device_count says " + std::to_string(count) +
                                                    " devices, more than gpuhal accepts from a plugin (" +
                                                    std::to_string(kMaxDevices) + ")");
  lib->device_count_ = count;
  attempt->device_count = count;
  attempt->status = Status::SUCCESS;
  attempt->message = "ABI " + version_string(t->abi_version) + ", " + std::to_string(count) + " device(s)";
  // A plugin whose vendor runtime loaded but cannot reach any device says
  // why in its message (e.g. hsa_init's status without /dev/kfd).
  if (count == 0) {
    const char *why = lib->table_.last_error();
    if (why && *why) {
      lib->no_device_reason_ = why;
      attempt->message += " (" + lib->no_device_reason_ + ")";
    }
  }
  logger.write(LogLevel::Debug, "plugin " + path + ": loaded backend '" + lib->name_ + "', " + attempt->message);
  return lib;
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
