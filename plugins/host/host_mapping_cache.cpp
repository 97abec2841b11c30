// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_mapping_cache.hpp"

#include <sys/mman.h>

#include <iterator>
#include <utility>

namespace gpuhal::host {

void *MappingCache::take(uint64_t mapped) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = free_.find(mapped);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void *base = it->second.back();
  it->second.pop_back();
  bytes_ -= mapped;
  return base;
}

bool MappingCache::keep(void *base, uint64_t mapped, std::vector<std::pair<void *, uint64_t>> *evicted) {
  if (mapped > limit_) return false;
  // Over the limit, older mappings make room (unmapped by the caller, after
  // the lock): a workload that moved on to other sizes is not left with a
  // cache full of sizes it no longer asks for.
  std::lock_guard<std::mutex> lock(mu_);
  try {
    for (auto it = free_.begin(); bytes_ > limit_ - mapped && it != free_.end();) {
      while (bytes_ > limit_ - mapped && !it->second.empty()) {
        evicted->emplace_back(it->second.front(), it->first);
        it->second.erase(it->second.begin());
        bytes_ -= it->first;
      }
      it = it->second.empty() ? free_.erase(it) : std::next(it);
    }
    free_[mapped].push_back(base);
    bytes_ += mapped;
  } catch (...) {
    return false;  // out of memory for the lists: the caller unmaps it
  }
  return true;
}

void MappingCache::drain() {
  std::unordered_map<uint64_t, std::vector<void *>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(free_);
    bytes_ = 0;
  }
  for (auto &kv : all)
    for (void *base : kv.second) munmap(base, size_t(kv.first));
}

uint64_t MappingCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace gpuhal::host
