// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's kernel attributes and occupancy (plugin.h, ABI 1.7),
// from the code object's metadata and the agent's limits. ROCr has no
// occupancy query; the count is AMD's documented rule for a compute unit,
// the smallest of three limits:
//  - LDS: the agent's group segment (per CU) over one work-group's LDS
//    (static, the counting barrier's cells, dynamic: group_segment_bytes);
//  - waves: HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU over the work-group's waves
//    (its work-items over the wavefront size, rounded up);
//  - VGPRs: each SIMD has 512 VGPRs per lane on gfx90a and gfx94x (unified
//    with the AGPRs), 256 elsewhere, allocated in granules of 8; a SIMD
//    holds that over the kernel's .vgpr_count waves, a CU
//    HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU times that.
// A limit the runtime or the metadata does not state is left out. The
// wave limit then falls back to 32 (8 waves per SIMD, 4 SIMDs: gfx90a).
#include <algorithm>
#include <cstring>
#include <mutex>

#include "hsa_context.hpp"
#include "hsa_entries.hpp"
#include "hsa_kernel.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

using plugin::fail;

namespace {

uint32_t vgprs_per_lane(const std::string &isa) {
  return isa.rfind("gfx90a", 0) == 0 || isa.rfind("gfx94", 0) == 0 ? 512 : 256;
}

uint64_t resident_groups(const Device &d, const HsaKernel &k, uint32_t block_threads, uint32_t dynamic_shared_bytes) {
  if (block_threads > kernel_max_threads(d, k)) return 0;
  const uint64_t lds = group_segment_bytes(k, dynamic_shared_bytes);
  if (d.lds_size && lds > d.lds_size) return 0;
  const uint64_t wave = std::max<uint32_t>(d.wavefront_size, 1);
  const uint64_t waves = (block_threads + wave - 1) / wave;
  uint64_t groups = (d.max_waves_per_cu ? d.max_waves_per_cu : 32) / waves;
  if (d.lds_size && lds > 0) groups = std::min<uint64_t>(groups, d.lds_size / lds);
  if (k.md.vgpr_count > 0 && d.simds_per_cu > 0) {
    const uint64_t granule = (k.md.vgpr_count + 7) / 8 * 8;
    const uint64_t waves_per_simd = vgprs_per_lane(d.isa_name) / granule;
    groups = std::min<uint64_t>(groups, waves_per_simd * d.simds_per_cu / waves);
  }
  return groups;
}

}  // namespace

gpuhal_status_t kernel_attributes(gpuhal_context_t ctx, gpuhal_kernel_t kernel, gpuhal_kernel_attributes_t *out) {
  if (!out || out->struct_size < 2 * sizeof(uint32_t))
    return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_attributes: null or short output");
  return in_context(ctx, "kernel_attributes", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    const HsaKernel *k = find_kernel(c, kernel);
    if (!k) return fail(GPUHAL_ERROR_INVALID_HANDLE, "kernel_attributes: not a kernel of this context");
    const Device &d = *c->device;
    gpuhal_kernel_attributes_t a{};
    a.abi_version = GPUHAL_ABI_VERSION;
    a.struct_size = sizeof(a);
    a.max_threads_per_block = uint32_t(kernel_max_threads(d, *k));
    a.static_shared_bytes = k->group_segment_size;
    // With dynamic memory the static part is padded to 16 bytes (group_segment_bytes).
    const uint64_t fixed = group_segment_bytes(*k, 1) - 1;
    a.max_dynamic_shared_bytes = uint32_t(d.lds_size > fixed ? d.lds_size - fixed : 0);
    a.local_bytes_per_thread = k->private_segment_size;
    a.registers_per_thread = k->md.vgpr_count;
    a.preferred_block_multiple = std::max<uint32_t>(d.wavefront_size, 1);
    plugin::write_versioned(out, a);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t kernel_max_active_blocks(gpuhal_context_t ctx, gpuhal_kernel_t kernel, uint32_t block_threads,
                                         uint32_t dynamic_shared_bytes, uint32_t *out) {
  if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_max_active_blocks: null output");
  if (block_threads == 0)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_max_active_blocks: a block of 0 work-items");
  return in_context(ctx, "kernel_max_active_blocks", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    const HsaKernel *k = find_kernel(c, kernel);
    if (!k) return fail(GPUHAL_ERROR_INVALID_HANDLE, "kernel_max_active_blocks: not a kernel of this context");
    *out = uint32_t(std::min<uint64_t>(resident_groups(*c->device, *k, block_threads, dynamic_shared_bytes), UINT32_MAX));
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::hsa
