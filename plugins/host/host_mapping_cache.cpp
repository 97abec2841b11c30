// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_mapping_cache.hpp"

#include <sys/mman.h>

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

bool MappingCache::keep(void *base, uint64_t mapped) {
  std::lock_guard<std::mutex> lock(mu_);
  if (mapped > limit_ || bytes_ > limit_ - mapped) return false;
  try {
    free_[mapped].push_back(base);
  } catch (...) {
    return false;  // out of memory for the list: the caller unmaps it
  }
  bytes_ += mapped;
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
