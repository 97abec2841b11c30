// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_exec.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "host_copy.hpp"
#include "host_plugin.hpp"

namespace gpuhal::host {

namespace {

void ensure_pools() {
  auto &st = plugin_state();
  std::lock_guard<std::mutex> lock(st.kernel_mu);
  if (!st.pool) {
    const unsigned n = st.threads ? st.threads : std::max(1u, std::thread::hardware_concurrency());
    st.pool = std::make_unique<ThreadPool>(n);
    st.stacks = std::make_unique<StackPool>(st.fiber_stack);
  }
}
}  // namespace

ThreadPool &shared_pool() {
  ensure_pools();
  return *plugin_state().pool;
}

StackPool &shared_stacks() {
  ensure_pools();
  return *plugin_state().stacks;
}

void copy_bytes_spread(void *dst, const void *src, size_t bytes) {
  constexpr size_t kChunk = size_t(2) << 20;
  shared_pool().parallel_for((bytes + kChunk - 1) / kChunk, [&](uint64_t i) {
    const size_t off = size_t(i) * kChunk;
    std::memcpy(static_cast<char *>(dst) + off, static_cast<const char *>(src) + off, std::min(kChunk, bytes - off));
  });
}

}  // namespace gpuhal::host
