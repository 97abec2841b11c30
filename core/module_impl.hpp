// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The core's side of a module: what Module and Kernel handles share
// (module.cpp makes it, kernel_launch.cpp launches from it).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpuhal/kernel.hpp"
#include "context_impl.hpp"
#include "kernel_source.hpp"

namespace gpuhal {
namespace detail {

struct KernelEntry {
  std::string name;
  gpuhal_kernel_t handle = nullptr;
  const KernelDecl *decl = nullptr;  // null for a prebuilt image
};

struct ModuleImpl {
  std::shared_ptr<ContextImpl> ctx;
  uint64_t generation = 0;
  gpuhal_module_t handle = nullptr;
  std::string lowered;
  std::string image;
  ImageFormat format = ImageFormat::HostSharedObject;
  std::vector<KernelDecl> decls;
  std::mutex mu;  // guards entries
  std::vector<std::unique_ptr<KernelEntry>> entries;

  // Unloaded through the deferred queue, whose flush waits for all work of
  // the context first: a launch of the module may still be queued on a
  // stream when its last handle goes (also from a stream callback, where
  // waiting for the streams could wait for itself). A reset unloads it
  // itself.
  ~ModuleImpl() {
    if (!handle || ctx->current_generation() != generation || ctx->inherited()) return;
    ContextImpl *c = ctx.get();
    gpuhal_module_t module = handle;
    ctx->defer_release(generation, 0, [c, module] { return c->backend().module_unload_status(c->handle, module); },
                       "module_unload");
  }
};

// The core's access to a Module's shared state (for modules it compiles for
// itself, see ContextImpl::builtin_module).
// The plugin's launch configuration.
inline gpuhal_launch_config_t launch_config(const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes) {
  gpuhal_launch_config_t cfg{};
  cfg.abi_version = GPUHAL_ABI_VERSION;
  cfg.struct_size = sizeof cfg;
  for (int d = 0; d < 3; ++d) {
    cfg.grid[d] = grid[d];
    cfg.block[d] = block[d];
  }
  cfg.dynamic_shared_bytes = shared_bytes;
  return cfg;
}

struct ModuleAccess {
  static const std::shared_ptr<ModuleImpl> &impl(const Module &m) { return m.impl_; }
  static Module wrap(std::shared_ptr<ModuleImpl> impl) {
    Module m;
    m.impl_ = std::move(impl);
    return m;
  }
};

}  // namespace detail
}  // namespace gpuhal
