// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_mapping_cache.hpp"

#include <iterator>
#include <utility>

namespace gpuhal::host {

void *MappingCache::take(uint64_t mapped) {
  auto it = free_.find(mapped);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void *base = it->second.back();
  it->second.pop_back();
  bytes_ -= mapped;
  return base;
}

bool MappingCache::keep(void *base, uint64_t mapped, Mappings *evicted) {
  if (mapped > limit_) return false;
  // Over the limit, older mappings make room (unmapped by the caller, after
  // the lock): a workload that moved on to other sizes is not left with a
  // cache full of sizes it no longer asks for.
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

MappingCache::Mappings MappingCache::take_all() {
  Mappings all;
  for (auto &kv : free_)
    for (void *base : kv.second) all.emplace_back(base, kv.first);
  free_.clear();
  bytes_ = 0;
  return all;
}

}  // namespace gpuhal::host
