// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A program that runs the host plugin under the leak layer with
// GPUHAL_LEAK_CHECK=fail and leaks one allocation ("leak") or none ("tidy"),
// then returns 0 from main: its exit status is the leak layer's verdict
// (layers.leak_check_fail_* in tests/CMakeLists.txt check 1 and 0).
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "layers/layer_chain.hpp"

int main(int argc, char **argv) {
  if (argc != 3 || (std::strcmp(argv[2], "leak") != 0 && std::strcmp(argv[2], "tidy") != 0)) {
    std::fprintf(stderr, "usage: layer_leak_program HOST_PLUGIN leak|tidy\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void *sym = lib ? dlsym(lib, GPUHAL_PLUGIN_ENTRY_NAME) : nullptr;
  if (!sym) return 3;
  gpuhal_plugin_negotiate_fn negotiate;
  std::memcpy(&negotiate, &sym, sizeof sym);
  const gpuhal_plugin_table_t *plugin = nullptr;
  if (negotiate(GPUHAL_ABI_VERSION, &plugin) != GPUHAL_SUCCESS) return 3;
  gpuhal::Config config;
  config.layers = {"leak"};
  config.leak_check_fail = true;
  auto chain = gpuhal::detail::layers::LayerChain::create(*plugin, "host", config,
                                                          gpuhal::detail::Logger(gpuhal::LogLevel::Warn));
  const gpuhal_plugin_table_t &t = chain->table();
  gpuhal_init_args_t args{GPUHAL_ABI_VERSION, sizeof args, nullptr, 0, GPUHAL_LOG_WARN, nullptr, nullptr};
  gpuhal_context_t ctx = nullptr;
  gpuhal_deviceptr_t d = 0;
  if (t.init(&args) != GPUHAL_SUCCESS || t.context_create(0, &ctx) != GPUHAL_SUCCESS ||
      t.mem_alloc(ctx, 64, &d) != GPUHAL_SUCCESS)
    return 3;
  if (std::strcmp(argv[2], "tidy") == 0) t.mem_free(ctx, d);
  t.context_destroy(ctx);
  t.shutdown();
  chain.reset();
  std::printf("layer_leak_program: returning 0 from main\n");
  return 0;
}
