// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A plugin opened by hand (dlopen, negotiate, init with options) for the
// backend tests that drive its table directly, below the core: the table,
// one context of device 0, and shutdown and dlclose when it goes.
#pragma once

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "catch_compat.hpp"
#include "gpuhal/plugin.h"

namespace test {

// dlopen(path) into *library and the table its entry point negotiates for
// the core's ABI version.
inline const gpuhal_plugin_table_t *negotiated_table(const std::string &path, void **library) {
  *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(*library);
  void *sym = dlsym(*library, GPUHAL_PLUGIN_ENTRY_NAME);
  REQUIRE(sym);
  gpuhal_plugin_negotiate_fn negotiate;
  std::memcpy(&negotiate, &sym, sizeof sym);
  const gpuhal_plugin_table_t *table = nullptr;
  REQUIRE(negotiate(GPUHAL_ABI_VERSION, &table) == GPUHAL_SUCCESS);
  return table;
}

struct OpenedPlugin {
  void *library = nullptr;
  const gpuhal_plugin_table_t *t = nullptr;
  gpuhal_context_t ctx = nullptr;

  OpenedPlugin(const std::string &path, const std::vector<std::pair<std::string, std::string>> &options) {
    t = negotiated_table(path, &library);
    std::vector<gpuhal_option_t> opts;
    for (const auto &kv : options) opts.push_back({kv.first.c_str(), kv.second.c_str()});
    gpuhal_init_args_t args{};
    args.abi_version = GPUHAL_ABI_VERSION;
    args.struct_size = sizeof args;
    args.options = opts.data();
    args.option_count = uint32_t(opts.size());
    args.log_level = GPUHAL_LOG_ERROR;
    REQUIRE(t->init(&args) == GPUHAL_SUCCESS);
    REQUIRE(t->context_create(0, &ctx) == GPUHAL_SUCCESS);
  }
  ~OpenedPlugin() {
    if (ctx) t->context_destroy(ctx);
    t->shutdown();
    dlclose(library);
  }
  OpenedPlugin(const OpenedPlugin &) = delete;
  OpenedPlugin &operator=(const OpenedPlugin &) = delete;
  std::string last_error() const { return t->last_error() ? t->last_error() : ""; }
};

}  // namespace test
