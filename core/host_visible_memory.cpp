// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_visible_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000  // Linux 4.17; older kernels ignore it (checked below)
#endif

namespace gpuhal::detail {
namespace {

uintptr_t page_size() {
  static const uintptr_t size = uintptr_t(sysconf(_SC_PAGESIZE));
  return size;
}

std::string range_text(uintptr_t start, uint64_t length) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[0x%llx, +%llu)", static_cast<unsigned long long>(start),
                static_cast<unsigned long long>(length));
  return buf;
}

// Places the `length` bytes at `copy` (an anonymous mapping) at `start`,
// where nothing may be mapped now. True on success; `copy` is consumed either way.
bool place_at(uintptr_t start, uint64_t length, void *copy, std::string *why) {
  void *target = reinterpret_cast<void *>(start);
  void *placeholder = mmap(target, size_t(length), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (placeholder != target) {
    *why = placeholder == MAP_FAILED ? std::strerror(errno) : "the kernel placed the mapping elsewhere";
    if (placeholder != MAP_FAILED) munmap(placeholder, size_t(length));
    munmap(copy, size_t(length));
    return false;
  }
  // The placeholder reserves the addresses: moving the copy over it cannot
  // replace anyone else's mapping.
  if (mremap(copy, size_t(length), size_t(length), MREMAP_MAYMOVE | MREMAP_FIXED, target) == target) return true;
  if (mprotect(target, size_t(length), PROT_READ | PROT_WRITE) == 0) {
    std::memcpy(target, copy, size_t(length));
    munmap(copy, size_t(length));
    return true;
  }
  *why = std::strerror(errno);
  munmap(target, size_t(length));
  munmap(copy, size_t(length));
  return false;
}

}  // namespace

HostVisibleMemory::~HostVisibleMemory() {
  for (auto &kv : saved_)
    if (kv.second.copy) munmap(kv.second.copy, size_t(kv.second.length));
  for (auto &kv : rescued_) munmap(reinterpret_cast<void *>(kv.first), size_t(kv.second.length));
}

void HostVisibleMemory::track(uintptr_t base, uint64_t bytes) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  live_[base] = bytes;
}

void HostVisibleMemory::untrack(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(base);
}

void HostVisibleMemory::save(const Logger &logger, const std::function<bool(uintptr_t base)> &keep) {
  std::lock_guard<std::mutex> lock(mu_);
  if (keep) {
    for (auto it = live_.begin(); it != live_.end();) {
      if (keep(it->first)) {
        kept_.insert(it->first);
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }
  const uintptr_t page = page_size();
  // Ranges in address order, widened to whole pages; overlapping pages merged.
  for (const auto &kv : live_) {
    const uintptr_t start = kv.first & ~(page - 1);
    const uintptr_t end = (kv.first + kv.second + page - 1) & ~(page - 1);
    if (!saved_.empty()) {
      auto last = std::prev(saved_.end());
      if (last->first + last->second.length > start) {
        last->second.length = std::max<uint64_t>(last->second.length, end - last->first);
        last->second.users.push_back(kv.first);
        continue;
      }
    }
    Pages p;
    p.length = end - start;
    p.users.push_back(kv.first);
    saved_.emplace(start, std::move(p));
  }
  live_.clear();
  for (auto it = saved_.begin(); it != saved_.end();) {
    void *copy = mmap(nullptr, size_t(it->second.length), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) {
      logger.write(LogLevel::Error, "reset: no memory to keep " + range_text(it->first, it->second.length) +
                                        ", which a live host array still addresses (" + std::strerror(errno) +
                                        "); it goes with the context");
      it = saved_.erase(it);
      continue;
    }
    std::memcpy(copy, reinterpret_cast<const void *>(it->first), size_t(it->second.length));
    it->second.copy = copy;
    ++it;
  }
}

void HostVisibleMemory::restore(const Logger &logger) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &kv : saved_) {
    std::string why;
    Pages pages = std::move(kv.second);
    void *copy = pages.copy;
    pages.copy = nullptr;
    if (!place_at(kv.first, pages.length, copy, &why)) {
      logger.write(LogLevel::Error, "reset: could not keep " + range_text(kv.first, pages.length) +
                                        " as host memory for the host arrays that still address it (" + why +
                                        "): the backend keeps the addresses mapped");
      continue;
    }
    for (uintptr_t base : pages.users) rescued_by_base_[base] = kv.first;
    rescued_.emplace(kv.first, std::move(pages));
  }
  saved_.clear();
}

bool HostVisibleMemory::release_rescued(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.erase(base)) return true;
  auto by_base = rescued_by_base_.find(base);
  if (by_base == rescued_by_base_.end()) return false;
  auto pages = rescued_.find(by_base->second);
  rescued_by_base_.erase(by_base);
  if (pages == rescued_.end()) return false;
  auto &users = pages->second.users;
  users.erase(std::remove(users.begin(), users.end(), base), users.end());
  if (!users.empty()) return false;
  munmap(reinterpret_cast<void *>(pages->first), size_t(pages->second.length));
  rescued_.erase(pages);
  return false;
}

}  // namespace gpuhal::detail
