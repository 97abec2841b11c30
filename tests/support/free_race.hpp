// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Frees racing allocations of the same size on several threads, below the
// core: a vendor's allocator hands a freed address to the next allocation
// at once (ROCr's pools and the CUDA driver both do, and so do the fakes),
// so a plugin that forgets an allocation after the vendor's free, instead
// of before it, can forget the new allocation made at the same address in
// between; its mem_free then fails and the memory leaks.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "opened_plugin.hpp"

namespace test {

// Failed frees over `threads` threads of `rounds` alloc / free pairs each.
inline int lost_frees(OpenedPlugin &p, int threads, int rounds, std::string *first_error) {
  std::atomic<int> failed{0};
  std::vector<std::thread> pool;
  std::vector<std::string> errors(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      for (int r = 0; r < rounds; ++r) {
        gpuhal_deviceptr_t d = 0;
        if (p.t->mem_alloc(p.ctx, 6144, &d) != GPUHAL_SUCCESS) continue;
        if (p.t->mem_free(p.ctx, d) != GPUHAL_SUCCESS) {
          if (failed++ == 0) errors[size_t(i)] = p.last_error();
        }
      }
    });
  for (auto &t : pool) t.join();
  for (const auto &e : errors)
    if (!e.empty()) *first_error = e;
  return failed.load();
}

}  // namespace test
