// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernel::attributes, max_active_blocks_per_unit, suggest_block_size: the
// plugin's kernel_attributes and kernel_max_active_blocks entries (ABI 1.7),
// and one block-size rule for every backend on top of them.
#include <algorithm>
#include <string>

#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "gpuhal/kernel.hpp"
#include "module_impl.hpp"

namespace gpuhal {

namespace {

// The module's context, alive, with the capability; throws otherwise.
detail::ContextImpl &usable_context(const std::shared_ptr<detail::ModuleImpl> &module,
                                    const detail::KernelEntry *entry, const char *what) {
  if (!module || !entry) throw Error(Status::ERROR_INVALID_HANDLE, std::string(what) + ": empty kernel");
  detail::ContextImpl &c = *module->ctx;
  c.check_alive(module->generation, what);
  if (!c.backend().has_kernel_attributes() || !c.backend().has_kernel_max_active_blocks())
    throw Error(Status::ERROR_NOT_SUPPORTED, std::string(what) + ": backend '" + c.lib().name() +
                                                 "' has no kernel attributes (Capability::KernelAttributes)");
  return c;
}

}  // namespace

KernelAttributes Kernel::attributes() const {
  detail::ContextImpl &c = usable_context(module_, entry_, "Kernel::attributes");
  gpuhal_kernel_attributes_t a{};
  a.abi_version = GPUHAL_ABI_VERSION;
  a.struct_size = sizeof(a);
  c.check(c.backend().kernel_attributes_status(c.handle, entry_->handle, &a), "kernel_attributes");
  KernelAttributes out;
  out.max_threads_per_block = a.max_threads_per_block;
  out.static_shared_bytes = a.static_shared_bytes;
  out.max_dynamic_shared_bytes = a.max_dynamic_shared_bytes;
  out.local_bytes_per_thread = a.local_bytes_per_thread;
  out.registers_per_thread = a.registers_per_thread;
  out.preferred_block_multiple = std::max<uint32_t>(a.preferred_block_multiple, 1);
  return out;
}

uint32_t Kernel::max_active_blocks_per_unit(uint32_t block_threads, uint32_t dynamic_shared_bytes) const {
  detail::ContextImpl &c = usable_context(module_, entry_, "Kernel::max_active_blocks_per_unit");
  if (block_threads == 0)
    throw Error(Status::ERROR_INVALID_VALUE, "Kernel::max_active_blocks_per_unit: a block of 0 work-items");
  uint32_t blocks = 0;
  c.check(c.backend().kernel_max_active_blocks_status(c.handle, entry_->handle, block_threads, dynamic_shared_bytes,
                                                      &blocks),
          "kernel_max_active_blocks");
  return blocks;
}

BlockSizeSuggestion Kernel::suggest_block_size(uint32_t dynamic_shared_bytes) const {
  const KernelAttributes a = attributes();
  const uint32_t step = a.preferred_block_multiple;
  // At most 64 candidates: a backend whose multiple is 1 (host) is tried in
  // larger steps.
  const uint32_t stride = std::max(step, (a.max_threads_per_block / 64 + step - 1) / step * step);
  BlockSizeSuggestion best;
  uint64_t best_resident = 0;
  uint32_t best_blocks = 0;
  for (uint32_t block = a.max_threads_per_block / stride * stride; block >= stride; block -= stride) {
    const uint32_t blocks = max_active_blocks_per_unit(block, dynamic_shared_bytes);
    if (uint64_t(blocks) * block > best_resident) {  // strictly more: the larger block wins a tie
      best_resident = uint64_t(blocks) * block;
      best.block = block;
      best_blocks = blocks;
    }
  }
  if (best.block == 0)
    throw Error(Status::ERROR_INVALID_VALUE, "Kernel::suggest_block_size: kernel '" + name() + "' fits no block with " +
                                                 std::to_string(dynamic_shared_bytes) +
                                                 " bytes of dynamic shared memory");
  const int units = std::max(module().context().device().properties().multiprocessor_count, 1);
  best.min_grid = best_blocks * uint32_t(units);
  return best;
}

}  // namespace gpuhal
