// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A fake plugin that wraps a real one and fails chosen entries: for testing
// how the core and everything above a plugin cope with failures, without
// fault hooks in the production plugin.
//
//   GPUHAL_FAULTING_TARGET=/abs/path/libgpuhal-host.so   (environment, read
//       when the wrapper is negotiated, as a driver reads its own settings)
//   GPUHAL_FAULT=<entry>:<k>[:<status>][,...]             (a configuration
//       option, re-read at every init: a new runtime aims at another call)
//
// The k-th call (from 1, counted from the init that read the option) of a
// named entry fails without reaching the target, with the given gpuhal
// status or one fitting the entry (ERROR_OUT_OF_MEMORY for allocating
// entries, ERROR_UNKNOWN otherwise) and the message "<entry>: fault
// injected by GPUHAL_FAULT". Every other call goes to the target, whose
// table (and so capabilities) the wrapper mirrors. A malformed option
// fails init. Syntax: fault_spec.hpp.
//
// It also records the flags the core passed to the latest host_alloc and
// host_register (gpuhal_faulting_last_host_flags), for tests that check what
// reaches a plugin.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "fault_spec.hpp"
#include "gpuhal/plugin.h"

namespace {

const gpuhal_plugin_table_t *g_target = nullptr;
gpuhal::fakes::FaultRules g_rules;
thread_local bool t_injected = false;  // the calling thread's last call failed by injection
thread_local std::string t_message;
std::atomic<uint32_t> g_host_alloc_flags{~0u}, g_host_register_flags{~0u};

bool allocating(const char *entry) {
  return std::strstr(entry, "alloc") != nullptr || std::strcmp(entry, "stream_create") == 0 ||
         std::strcmp(entry, "event_create") == 0 || std::strcmp(entry, "context_create") == 0;
}

// GPUHAL_SUCCESS, or the injected failure of this call of `entry`.
gpuhal_status_t injected(const char *entry) {
  long code = 0;
  const long fallback = allocating(entry) ? GPUHAL_ERROR_OUT_OF_MEMORY : GPUHAL_ERROR_UNKNOWN;
  t_injected = g_rules.fires(entry, fallback, &code);
  if (!t_injected) return GPUHAL_SUCCESS;
  t_message = std::string(entry) + ": fault injected by GPUHAL_FAULT";
  return gpuhal_status_t(code);
}

gpuhal_status_t init(const gpuhal_init_args_t *args) {
  std::string spec;
  if (args)
    for (uint32_t i = 0; i < args->option_count; ++i)
      if (std::strcmp(args->options[i].name, "GPUHAL_FAULT") == 0) spec = args->options[i].value;
  std::string error;
  if (!g_rules.set(spec, &error)) {
    t_injected = true;
    t_message = "GPUHAL_FAULT: " + error;
    return GPUHAL_ERROR_INITIALIZATION_FAILED;
  }
  t_injected = false;
  return g_target->init(args);
}

const char *last_error() {
  return t_injected ? t_message.c_str() : g_target->last_error();
}

// Every entry but init and last_error: injected failures first (for
// entries that return a status), then the target's entry.
#define WRAP(entry)                                               \
  if (g_target->entry)                                            \
    t.entry = [](auto... a) {                                     \
      using R = decltype(g_target->entry(a...));                  \
      if constexpr (std::is_same_v<R, gpuhal_status_t>) {         \
        if (const gpuhal_status_t f = injected(#entry)) return f; \
      }                                                           \
      return g_target->entry(a...);                               \
    };

gpuhal_plugin_table_t make_table() {
  gpuhal_plugin_table_t t{};
  t.abi_version = GPUHAL_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = g_target->name;
  // Every entry of the one list (gpuhal/plugin_entries.def), then the two
  // the wrapper answers itself.
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) WRAP(name)
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
  t.init = init;
  t.last_error = last_error;
  // The host-memory entries also record their flags.
  if (g_target->host_alloc)
    t.host_alloc = [](gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out) {
      g_host_alloc_flags = flags;
      if (const gpuhal_status_t f = injected("host_alloc")) return f;
      return g_target->host_alloc(ctx, bytes, flags, out);
    };
  if (g_target->host_register)
    t.host_register = [](gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags) {
      g_host_register_flags = flags;
      if (const gpuhal_status_t f = injected("host_register")) return f;
      return g_target->host_register(ctx, ptr, bytes, flags);
    };
  return t;
}

}  // namespace

// The flags of the latest host_register (registered != 0) or host_alloc call;
// ~0u before the first.
extern "C" __attribute__((visibility("default"))) uint32_t gpuhal_faulting_last_host_flags(int registered) {
  return registered ? g_host_register_flags.load() : g_host_alloc_flags.load();
}

extern "C" __attribute__((visibility("default"))) gpuhal_status_t gpuhal_plugin_negotiate(
    uint32_t core_max_abi, const gpuhal_plugin_table_t **table) {
  static gpuhal_plugin_table_t wrapped;
  static bool made = false;
  if (!made) {
    const char *path = std::getenv("GPUHAL_FAULTING_TARGET");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;  // kept loaded: the wrapper's lifetime
    void *sym = h ? dlsym(h, GPUHAL_PLUGIN_ENTRY_NAME) : nullptr;
    if (!sym) {
      std::fprintf(stderr, "faulting plugin: GPUHAL_FAULTING_TARGET '%s' is not a loadable plugin\n", path ? path : "");
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
