// The plugin's C table, read directly: what the core cannot check for
// every call (writes within the caller's struct_size, messages of failed
// calls).
#include <dlfcn.h>

#include <cstddef>
#include <cstring>

#include "conformance.hpp"

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
  // plugin author got wrong when it does.
  const bool host[] = {t->host_alloc != nullptr, t->host_free != nullptr, t->host_register != nullptr,
                       t->host_unregister != nullptr, t->host_get_device_pointer != nullptr};
  for (bool b : host) expect(b == host[0], "the host-memory entries are neither all set nor all NULL");
  expect((t->ipc_get_handle != nullptr) == (t->ipc_open != nullptr) &&
             (t->ipc_open != nullptr) == (t->ipc_close != nullptr),
         "the IPC entries are neither all set nor all NULL");
  expect((t->mem_alloc_async != nullptr) == (t->mem_free_async != nullptr),
         "mem_alloc_async and mem_free_async are not both set or both NULL");
  expect(env.runtime.supports(Capability::HostMemory) == host[0], "Capability::HostMemory disagrees with the table");
  expect(env.runtime.supports(Capability::Ipc) == (t->ipc_get_handle != nullptr),
         "Capability::Ipc disagrees with the table");
}

}  // namespace

void add_abi_checks(std::vector<Check> &checks) {
  checks.push_back({"abi.properties_respect_struct_size",
                    "device_properties writes no more than the caller's struct_size bytes",
                    properties_respect_struct_size});
  checks.push_back({"abi.failed_call_leaves_message", "a failed entry leaves a non-empty last_error() message",
                    failed_call_leaves_message});
  checks.push_back({"abi.optional_groups_all_or_none",
                    "each optional group of entries is set in full or not at all, as the capabilities say",
                    optional_groups_all_or_none});
}

}  // namespace conformance
}  // namespace gpuhal
