// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin's C table, read directly: what the core cannot check for
// every call (writes within the caller's struct_size, messages of failed
// calls).
#include <dlfcn.h>

#include <cstddef>
#include <cstring>

#include "conformance.hpp"
#include "gpuhal/plugin.h"

namespace gpuhal {
namespace conformance {
namespace {

// The plugin's table through a second dlopen of the same file (the
// runtime's handle keeps it loaded: the table is the live one).
struct RawTable {
  void *handle = nullptr;
  const gpuhal_plugin_table_t *table = nullptr;
  explicit RawTable(const std::string &path) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    expect(handle != nullptr, "dlopen of the plugin " + path + " failed");
    void *sym = dlsym(handle, GPUHAL_PLUGIN_ENTRY_NAME);
    expect(sym != nullptr, "the plugin has no " GPUHAL_PLUGIN_ENTRY_NAME);
    gpuhal_plugin_negotiate_fn negotiate;
    std::memcpy(&negotiate, &sym, sizeof sym);
    expect(negotiate(GPUHAL_ABI_VERSION, &table) == GPUHAL_SUCCESS && table, "negotiation failed the second time");
  }
  ~RawTable() {
    if (handle) dlclose(handle);
  }
  RawTable(const RawTable &) = delete;
  RawTable &operator=(const RawTable &) = delete;
};

void properties_respect_struct_size(Env &env) {
  RawTable raw(env.runtime.plugin_path());
  struct {
    gpuhal_device_properties_t props;
    unsigned char canary[64];
  } buf;
  std::memset(&buf, 0xA5, sizeof buf);
  const uint32_t small = uint32_t(offsetof(gpuhal_device_properties_t, total_memory));
  buf.props.abi_version = GPUHAL_ABI_VERSION;
  buf.props.struct_size = small;
  const gpuhal_status_t st = raw.table->device_properties(0, &buf.props);
  const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&buf);
  bool intact = true;
  for (size_t i = small; i < sizeof buf; ++i) intact &= bytes[i] == 0xA5;
  expect(st == GPUHAL_SUCCESS, "device_properties failed with a shorter struct_size");
  expect(intact, "device_properties wrote past the caller's struct_size (" + std::to_string(small) + " bytes)");
}

void failed_call_leaves_message(Env &env) {
  RawTable raw(env.runtime.plugin_path());
  gpuhal_device_properties_t p{};
  p.abi_version = GPUHAL_ABI_VERSION;
  p.struct_size = sizeof p;
  const gpuhal_status_t st = raw.table->device_properties(env.runtime.device_count(), &p);
  const char *msg = raw.table->last_error();
  expect(st != GPUHAL_SUCCESS, "device_properties of an ordinal out of range succeeded");
  expect(msg != nullptr && *msg != '\0', "a failed call left no last_error() message");
}

void optional_groups_all_or_none(Env &env) {
  RawTable raw(env.runtime.plugin_path());
  const gpuhal_plugin_table_t *t = raw.table;
  // The core refuses half-filled groups at load; this says which group a
  // plugin author got wrong when it does. Groups from the one list of
  // entries (gpuhal/plugin_entries.def).
  struct Entry {
    const char *name, *group;
    bool present;
  };
  const Entry entries[] = {
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) {#name, #group, t->name != nullptr},
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
  };
  auto group_present = [&](const std::string &group) {
    int present = 0, members = 0;
    for (const auto &e : entries)
      if (group == e.group) {
        ++members;
        present += e.present;
      }
    expect(present == 0 || present == members,
           "the " + group + " entries are neither all set nor all NULL (" + std::to_string(present) + " of " +
               std::to_string(members) + ")");
    return present != 0;
  };
  const struct {
    const char *group;
    Capability capability;
  } claims[] = {{"host_memory", Capability::HostMemory},
                {"ipc", Capability::Ipc},
                {"stream_ordered", Capability::StreamOrderedMemory},
                {"peer_access", Capability::PeerAccess},
                {"kernels", Capability::Kernels},
                {"graphs", Capability::Graphs},
                {"stream_priorities", Capability::StreamPriorities}};
  for (const auto &c : claims)
    expect(group_present(c.group) == env.runtime.supports(c.capability),
           std::string("the capability of the ") + c.group + " entries disagrees with the table");
  for (const auto &e : entries)
    expect(std::string(e.group) != "required" || e.present, std::string("required entry ") + e.name + " is NULL");
}

}  // namespace

void add_abi_checks(std::vector<Check> &checks) {
  checks.push_back({"abi.properties_respect_struct_size",
                    "device_properties writes no more than the caller's struct_size bytes",
                    properties_respect_struct_size});
  checks.push_back({"abi.failed_call_leaves_message", "a failed entry leaves a non-empty last_error() message",
                    failed_call_leaves_message});
  checks.push_back({"abi.optional_groups_all_or_none",
                    "required entries are set; each optional group is set in full or not at all, as the capabilities "
                    "say",
                    optional_groups_all_or_none});
}

}  // namespace conformance
}  // namespace gpuhal
