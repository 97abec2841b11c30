// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_mapping_cache.hpp"

#include <utility>

namespace gpuhal::host {

void *MappingCache::take(uint64_t mapped) {
  auto it = free_.find(mapped);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void *base = it->second.back().base;
  it->second.pop_back();
  bytes_ -= mapped;
  return base;
}

bool MappingCache::keep(void *base, uint64_t mapped, Mappings *evicted) {
  if (mapped > limit_) return false;
  // Over the limit, the longest kept make room (unmapped by the caller,
  // after the lock), whatever their size: a workload that moved on to other
  // sizes is not left with a cache full of sizes it no longer asks for, nor
  // does a size in use give up its own mappings while an old one stays (a
  // 4 MiB allocation loop then missed the cache two times in three beside
  // a 46 MiB mapping left by an earlier workload, 5.5 us per allocation).
  // The sizes in the cache are few: finding the oldest is a short scan.
  try {
    while (bytes_ > limit_ - mapped) {
      auto oldest = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (!it->second.empty() &&
            (oldest == free_.end() || it->second.front().order < oldest->second.front().order))
          oldest = it;
      if (oldest == free_.end()) break;  // nothing left to give up (cannot happen: bytes_ > 0)
      evicted->emplace_back(oldest->second.front().base, oldest->first);
      oldest->second.pop_front();
      bytes_ -= oldest->first;
      if (oldest->second.empty()) free_.erase(oldest);
    }
    free_[mapped].push_back(Kept{base, next_order_++});
    bytes_ += mapped;
  } catch (...) {
    return false;  // out of memory for the lists: the caller unmaps it
  }
  return true;
}

MappingCache::Mappings MappingCache::take_all() {
  Mappings all;
  for (auto &kv : free_)
    for (const Kept &k : kv.second) all.emplace_back(k.base, kv.first);
  free_.clear();
  bytes_ = 0;
  return all;
}

}  // namespace gpuhal::host
