// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A fake plugin that wraps a real one and records the flags the core passed
// to the latest host_alloc and host_register (gpuhal_recording_last_host_flags),
// for tests that check what reaches a plugin. Every call goes to the target,
// whose table (and so capabilities) the wrapper mirrors. (Failing chosen
// calls is the fault layer's: GPUHAL_LAYERS=fault, core/layers/.)
//
//   GPUHAL_RECORDING_TARGET=/abs/path/libgpuhal-host.so   (environment, read
//       when the wrapper is negotiated, as a driver reads its own settings)
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "gpuhal/plugin.h"

namespace {

const gpuhal_plugin_table_t *g_target = nullptr;
std::atomic<uint32_t> g_host_alloc_flags{~0u}, g_host_register_flags{~0u};

// Every entry: the target's.
#define WRAP(entry) \
  if (g_target->entry) t.entry = [](auto... a) { return g_target->entry(a...); };

gpuhal_plugin_table_t make_table() {
  gpuhal_plugin_table_t t{};
  t.abi_version = GPUHAL_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = g_target->name;
  // Every entry of the one list (gpuhal/plugin_entries.def).
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) WRAP(name)
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
  // The host-memory entries also record their flags.
  if (g_target->host_alloc)
    t.host_alloc = [](gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out) {
      g_host_alloc_flags = flags;
      return g_target->host_alloc(ctx, bytes, flags, out);
    };
  if (g_target->host_register)
    t.host_register = [](gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags) {
      g_host_register_flags = flags;
      return g_target->host_register(ctx, ptr, bytes, flags);
    };
  return t;
}

}  // namespace

// The flags of the latest host_register (registered != 0) or host_alloc call;
// ~0u before the first.
extern "C" __attribute__((visibility("default"))) uint32_t gpuhal_recording_last_host_flags(int registered) {
  return registered ? g_host_register_flags.load() : g_host_alloc_flags.load();
}

extern "C" __attribute__((visibility("default"))) gpuhal_status_t gpuhal_plugin_negotiate(
    uint32_t core_max_abi, const gpuhal_plugin_table_t **table) {
  static gpuhal_plugin_table_t wrapped;
  static bool made = false;
  if (!made) {
    const char *path = std::getenv("GPUHAL_RECORDING_TARGET");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;  // kept loaded: the wrapper's lifetime
    void *sym = h ? dlsym(h, GPUHAL_PLUGIN_ENTRY_NAME) : nullptr;
    if (!sym) {
      std::fprintf(stderr, "recording plugin: GPUHAL_RECORDING_TARGET '%s' is not a loadable plugin\n", path ? path : "");
      return GPUHAL_ERROR_INVALID_PLUGIN;
    }
    gpuhal_plugin_negotiate_fn negotiate;
    std::memcpy(&negotiate, &sym, sizeof sym);
    if (const gpuhal_status_t st = negotiate(core_max_abi, &g_target); st != GPUHAL_SUCCESS) return st;
    wrapped = make_table();
    made = true;
  }
  *table = &wrapped;
  return GPUHAL_SUCCESS;
}
