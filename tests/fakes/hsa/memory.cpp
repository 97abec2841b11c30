// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake runtime: pool allocations, locked and registered host memory,
// fills.
#include <deque>

#include "fake_hsa.hpp"

using namespace fake_hsa;

namespace {
// hsa_ext_amd.h promises nothing about a freed block's address: after
// hsa_amd_memory_pool_free the pool may hand it to the next allocation of
// any thread at once (ROCr serves small blocks from chunks it keeps, so in
// practice it does). A plugin that forgets an allocation after the free,
// not before, then loses the new allocation another thread got at that
// address. The fake takes the unpleasant side of that freedom: the last kRecentBlocks freed blocks (g_mu held),
// handed out again for an allocation of the same pool and size, newest
// first.
constexpr size_t kRecentBlocks = 64;
struct RecentBlock {
  uint64_t pool;
  size_t size;
  void *ptr;
};
std::deque<RecentBlock> &g_recent = *new std::deque<RecentBlock>;

void *take_recent_block(uint64_t pool, size_t size) {
  for (auto it = g_recent.rbegin(); it != g_recent.rend(); ++it)
    if (it->pool == pool && it->size == size) {
      void *p = it->ptr;
      g_recent.erase(std::next(it).base());
      return p;
    }
  return nullptr;
}

void keep_recent_block(uint64_t pool, size_t size, void *ptr) {
  g_recent.push_back({pool, size, ptr});
  if (g_recent.size() > kRecentBlocks) {
    std::free(g_recent.front().ptr);
    g_recent.pop_front();
  }
}
}  // namespace

EXPORT hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t flags, void **ptr) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_memory_pool_allocate"); f != HSA_STATUS_SUCCESS) return f;
  const bool system = pool.handle == kSystemPool;
  const bool device = pool.handle >= kDevicePoolBase && pool.handle < kDevicePoolBase + g_gpus;
  if ((!system && !device) || !ptr || size == 0 || flags != 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(g_mu);
  if (device && g_pool_used[pool.handle] + size > g_device_memory) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  // Fine-grained system memory is pinned: there is only so much of it.
  if (system && g_pool_used[pool.handle] + size > g_system_memory) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (system) ++g_system_allocations;
  void *p = take_recent_block(pool.handle, size);
  if (!p && posix_memalign(&p, 4096, size) != 0) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  std::memset(p, 0xCD, size);  // not zeroed, as on a GPU
  g_allocations[reinterpret_cast<uintptr_t>(p)] = {size, pool.handle};
  g_pool_used[pool.handle] += size;
  *ptr = p;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_pool_free(void *ptr) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_memory_pool_free"); f != HSA_STATUS_SUCCESS) return f;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_allocations.end()) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  g_pool_used[it->second.pool] -= it->second.size;
  const Allocation freed = it->second;
  g_allocations.erase(it);
  keep_recent_block(freed.pool, freed.size, ptr);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_agents_allow_access(uint32_t n, const hsa_agent_t *agents, const uint32_t *flags,
                                                const void *ptr) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_agents_allow_access"); f != HSA_STATUS_SUCCESS) return f;
  if (n == 0 || !agents || flags) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < n; ++i)
    if (!is_agent(agents[i])) return HSA_STATUS_ERROR_INVALID_AGENT;
  std::lock_guard<std::mutex> lock(g_mu);
  return g_allocations.count(reinterpret_cast<uintptr_t>(ptr)) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT hsa_status_t hsa_amd_memory_lock(void *host, size_t size, hsa_agent_t *agents, int n, void **agent_ptr) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_memory_lock"); f != HSA_STATUS_SUCCESS) return f;
  if (!host || size == 0 || !agent_ptr || (n > 0 && !agents)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < n; ++i)
    if (!is_gpu(agents[i])) return HSA_STATUS_ERROR_INVALID_AGENT;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_locked.emplace(reinterpret_cast<uintptr_t>(host), size).second) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *agent_ptr = host;  // host memory is directly addressable in the fake
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_unlock(void *host) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_memory_unlock"); f != HSA_STATUS_SUCCESS) return f;
  std::lock_guard<std::mutex> lock(g_mu);
  return g_locked.erase(reinterpret_cast<uintptr_t>(host)) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT hsa_status_t hsa_memory_register(void *p, size_t size) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_memory_register"); f != HSA_STATUS_SUCCESS) return f;
  if (!p || size == 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(g_mu);
  g_registered[reinterpret_cast<uintptr_t>(p)] = size;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_memory_deregister(void *p, size_t) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_memory_deregister"); f != HSA_STATUS_SUCCESS) return f;
  std::lock_guard<std::mutex> lock(g_mu);
  return g_registered.erase(reinterpret_cast<uintptr_t>(p)) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT hsa_status_t hsa_amd_memory_fill(void *ptr, uint32_t value, size_t count) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_memory_fill"); f != HSA_STATUS_SUCCESS) return f;
  if (!ptr || (reinterpret_cast<uintptr_t>(ptr) & 3)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!in_allocation(reinterpret_cast<uintptr_t>(ptr), uint64_t(count) * 4)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  auto *w = static_cast<uint32_t *>(ptr);
  for (size_t i = 0; i < count; ++i) w[i] = value;
  return HSA_STATUS_SUCCESS;
}

