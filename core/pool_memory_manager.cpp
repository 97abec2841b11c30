// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// PoolMemoryManager: power-of-two size classes with per-class free lists.
//
// Blocks come from backend_alloc and are handed out wrapped (wrap()); when a
// wrapped block's last handle goes it returns to its list at once. Over the
// cache limit, blocks are released to the backend through the deferred queue
// (not while a DeferCleanup scope is active).
#include <atomic>
#include <mutex>
#include <vector>

#include "allocation.hpp"
#include "biased_lock.hpp"
#include "gpuhal/memory_manager.hpp"

namespace gpuhal {

namespace {
constexpr int kMinClass = 8;  // 256 bytes
int class_of(uint64_t bytes) {
  int c = kMinClass;
  while ((uint64_t(1) << c) < bytes) ++c;
  return c;
}
}  // namespace

struct PoolMemoryManager::State {
  PoolOptions options;
  uint64_t max_cached = 0;
  // Guards the lists and the statistics: held for a few loads and stores
  // (no backend call under it; a list may grow), taken twice per
  // allocation + release, in most programs by one thread: biased to it
  // (biased_lock.hpp), a pthread mutex's four locked instructions were
  // half of a pool hit's cost (docs/performance.md, A1).
  mutable detail::BiasedLock mu;
  std::vector<std::vector<DevicePointer>> free_lists;  // by class
  PoolStats stats;
  std::atomic<int> defer_depth{0};
};

PoolMemoryManager::PoolMemoryManager(PoolOptions options) : state_(std::make_shared<State>()) {
  if (options.max_block_bytes == 0 || options.max_block_bytes > (uint64_t(1) << 40))
    throw Error(Status::ERROR_INVALID_VALUE, "PoolMemoryManager: max_block_bytes must be in (0, 1 TiB]");
  state_->options = options;
  state_->free_lists.resize(size_t(class_of(options.max_block_bytes)) + 1);
}

PoolMemoryManager::~PoolMemoryManager() = default;

void PoolMemoryManager::initialize() {
  // The device's properties are read before the lock: nothing slow under it.
  const uint64_t limit = state_->options.max_cached_bytes
                             ? state_->options.max_cached_bytes
                             : std::max<uint64_t>(context().device().properties().total_memory / 8, uint64_t(1) << 20);
  std::lock_guard<detail::BiasedLock> lock(state_->mu);
  if (!state_->max_cached) state_->max_cached = limit;
}

DeviceMemory PoolMemoryManager::memalloc(uint64_t bytes) {
  State &st = *state_;
  // Backend allocation; on out of memory, give back the cache and retry once.
  auto fresh = [this](uint64_t size) {
    try {
      return backend_alloc(size);
    } catch (const Error &e) {
      if (e.status() != Status::ERROR_OUT_OF_MEMORY || trim() == 0) throw;
      context().flush_deallocations();
      return backend_alloc(size);
    }
  };
  if (bytes > st.options.max_block_bytes) {
    const DevicePointer p = fresh(bytes);
    {
      std::lock_guard<detail::BiasedLock> lock(st.mu);
      ++st.stats.misses;
    }
    return wrap_block(p, bytes, 0);
  }
  const int cls = class_of(bytes);
  const uint64_t size = uint64_t(1) << cls;
  DevicePointer p = 0;
  {
    std::lock_guard<detail::BiasedLock> lock(st.mu);
    auto &list = st.free_lists[size_t(cls)];
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
      ++st.stats.hits;
      st.stats.cached_bytes -= size;
      st.stats.in_use_bytes += size;
    }
  }
  if (!p) {
    p = fresh(size);
    std::lock_guard<detail::BiasedLock> lock(st.mu);
    ++st.stats.misses;
    st.stats.in_use_bytes += size;
  }
  return wrap_block(p, bytes, uint64_t(cls));
}

void PoolMemoryManager::release_block(DevicePointer p, uint64_t bytes, uint64_t cookie) {
  State &s = *state_;
  const int cls = int(cookie);
  if (bytes > s.options.max_block_bytes) {  // a direct allocation: not cached
    backend_free(p, bytes);
    return;
  }
  const uint64_t size = uint64_t(1) << cls;
  std::vector<std::pair<DevicePointer, uint64_t>> release;
  {
    std::lock_guard<detail::BiasedLock> lock(s.mu);
    s.stats.in_use_bytes -= size;
    s.free_lists[size_t(cls)].push_back(p);
    s.stats.cached_bytes += size;
    // Over the limit: give back the largest cached blocks first.
    if (s.stats.cached_bytes > s.max_cached && s.defer_depth.load() == 0) {
      for (size_t c = s.free_lists.size(); c-- > 0 && s.stats.cached_bytes > s.max_cached;) {
        auto &list = s.free_lists[c];
        while (!list.empty() && s.stats.cached_bytes > s.max_cached) {
          release.emplace_back(list.back(), uint64_t(1) << c);
          list.pop_back();
          s.stats.cached_bytes -= uint64_t(1) << c;
          ++s.stats.released;
        }
      }
    }
  }
  for (const auto &r : release) backend_free(r.first, r.second);
}

size_t PoolMemoryManager::trim() {
  std::vector<std::pair<DevicePointer, uint64_t>> release;
  {
    std::lock_guard<detail::BiasedLock> lock(state_->mu);
    for (size_t c = 0; c < state_->free_lists.size(); ++c) {
      for (DevicePointer p : state_->free_lists[c]) release.emplace_back(p, uint64_t(1) << c);
      state_->free_lists[c].clear();
    }
    state_->stats.cached_bytes = 0;
    state_->stats.released += release.size();
  }
  for (const auto &r : release) backend_free(r.first, r.second);
  return release.size();
}

void PoolMemoryManager::reset() {
  trim();
  std::lock_guard<detail::BiasedLock> lock(state_->mu);
  state_->stats.in_use_bytes = 0;  // freed by the backend with the context
}

void PoolMemoryManager::defer_cleanup_begin() {
  state_->defer_depth.fetch_add(1);
}

void PoolMemoryManager::defer_cleanup_end() {
  state_->defer_depth.fetch_sub(1);
}

PoolStats PoolMemoryManager::stats() const {
  std::lock_guard<detail::BiasedLock> lock(state_->mu);
  return state_->stats;
}

}  // namespace gpuhal
