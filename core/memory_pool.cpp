// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MemoryPool (gpuhal/memory_pool.hpp): the handle, and the caching pool
// (MemoryPoolKind::Caching): idle blocks per stream and rounded size;
// blocks handed out through the memory-manager machinery
// (Allocation::releaser), so the last handle's release returns them here.
#include "gpuhal/memory_pool.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"
#include "memory_pool_impl.hpp"
#include "stream_impl.hpp"

namespace gpuhal {
namespace detail {
namespace {

constexpr uint64_t kMinBlock = 256, kSmallLimit = uint64_t(1) << 20, kLargeStep = uint64_t(2) << 20;

uint64_t rounded(uint64_t bytes) {
  if (bytes <= kSmallLimit) {
    uint64_t r = kMinBlock;
    while (r < bytes) r <<= 1;
    return r;
  }
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

}  // namespace

// The caching pool's state (memory_pool_impl.hpp says how it is held).
struct CachingMemoryPool final : MemoryPoolImpl {
  // A stream's idle blocks. Streams are told apart by the plugin's handle
  // (every default_stream() call makes a new handle object over the same
  // stream), the per-thread default stream also by the allocating thread.
  // The stream is held weakly: a strong handle would keep the context
  // alive from the pool, a cycle when the pool is the context's memory
  // manager.
  struct Bin {
    std::weak_ptr<StreamImpl> stream;
    gpuhal_stream_t handle = nullptr;
    std::thread::id thread;
    uint64_t id = 0;
    std::map<uint64_t, std::vector<DevicePointer>> idle;  // rounded size -> blocks
    uint64_t in_use = 0;                                  // blocks of the stream handed out
  };

  CachingMemoryPool(ContextImpl *ctx, MemoryPoolOptions o) : owner(ctx), options(o) {}
  ~CachingMemoryPool() override;
  void reset() override { forget_all(); }

  DeviceMemory allocate(uint64_t bytes, const Stream &stream) override;
  void free_on(const DeviceMemory &memory, const Stream &stream) override;
  void release_block(DevicePointer ptr, uint64_t bytes, uint64_t cookie) override;
  void set_release_threshold(uint64_t bytes) override;
  uint64_t release_threshold() override;
  uint64_t trim(uint64_t keep_bytes) override;
  MemoryPoolStats snapshot() override;
  void reset_peak() override;

  ContextImpl *const owner;  // outlives the pool: every holder of the pool holds the context
  std::mutex mu;
  MemoryPoolOptions options;
  MemoryPoolStats stats;
  uint64_t idle_bytes = 0;
  uint64_t generation = 0;  // the context generation the blocks belong to
  uint64_t next_stream_id = 1;
  std::vector<Bin> bins;
  std::unordered_map<DevicePointer, uint64_t> live;  // handed-out block -> its stream's bin id

 private:
  DevicePointer take_idle(const Stream &stream, uint64_t size);
  void hand_out_locked(const Stream &stream, DevicePointer p, uint64_t size);
  DevicePointer allocate_new(uint64_t size);
  Bin &bin_of(const Stream &stream);
  bool stream_idle(const Bin &b);
  void pick_releases(uint64_t keep, std::vector<std::pair<DevicePointer, uint64_t>> *out);
  void give_back(const std::vector<std::pair<DevicePointer, uint64_t>> &blocks);
  void forget_all();
  void drop_stale_locked(uint64_t current);
};

CachingMemoryPool::Bin &CachingMemoryPool::bin_of(const Stream &stream) {
  const auto &impl = impl_of(stream);
  const std::thread::id thread =
      impl->handle == GPUHAL_STREAM_PER_THREAD ? std::this_thread::get_id() : std::thread::id();
  for (Bin &b : bins)
    if (b.handle == impl->handle && b.thread == thread) {
      if (b.stream.expired()) b.stream = impl;
      return b;
    }
  bins.push_back(Bin{impl, impl->handle, thread, next_stream_id++, {}, 0});
  return bins.back();
}

// Whether no work of b's stream can still use its idle blocks: the stream
// has none pending. A per-thread default stream is only the thread's own to
// ask, and a stream whose handles are all gone cannot be asked: then the
// context must have no work at all. (A plugin reuses a stream handle only
// after destroying the stream, which the deferred queue does once the
// context's work is done.)
bool CachingMemoryPool::stream_idle(const Bin &b) {
  if (b.handle == GPUHAL_STREAM_PER_THREAD) return impl_of(context())->work_idle();
  if (auto s = b.stream.lock()) return Access::wrap<Stream>(std::move(s)).query();
  if (b.handle == nullptr) return context().default_stream().query();
  if (b.handle == GPUHAL_STREAM_LEGACY) return context().legacy_default_stream().query();
  return impl_of(context())->work_idle();
}

// Under mu. The stream's own idle block first, then one of a stream whose
// work is all done.
DevicePointer CachingMemoryPool::take_idle(const Stream &stream, uint64_t size) {
  Bin &own = bin_of(stream);
  auto pop = [&](Bin &b) -> DevicePointer {
    auto it = b.idle.find(size);
    if (it == b.idle.end() || it->second.empty()) return 0;
    const DevicePointer p = it->second.back();
    it->second.pop_back();
    if (it->second.empty()) b.idle.erase(it);
    return p;
  };
  if (const DevicePointer p = pop(own)) return p;
  for (Bin &b : bins) {
    if (b.id == own.id || b.idle.count(size) == 0) continue;
    if (!stream_idle(b)) continue;  // its work may still use the block
    return pop(b);
  }
  return 0;
}

void CachingMemoryPool::drop_stale_locked(uint64_t current) {
  if (generation == current) return;
  // A reset freed every block with the old context: nothing to give back.
  bins.clear();
  live.clear();
  idle_bytes = 0;
  stats.used_bytes = stats.reserved_bytes = stats.allocations = 0;
  generation = current;
}

// Under mu: the block is out, counted in `stream`'s bin.
void CachingMemoryPool::hand_out_locked(const Stream &stream, DevicePointer p, uint64_t size) {
  Bin &b = bin_of(stream);
  ++b.in_use;
  live[p] = b.id;
  stats.used_bytes += size;
  stats.peak_used_bytes = std::max(stats.peak_used_bytes, stats.used_bytes);
  ++stats.allocations;
}

// A new block from the backend; out of memory, the idle blocks go back
// and it is tried once more.
DevicePointer CachingMemoryPool::allocate_new(uint64_t size) {
  try {
    return backend_alloc(size);
  } catch (const Error &e) {
    if (e.status() != Status::ERROR_OUT_OF_MEMORY || trim(0) == 0) throw;
    context().flush_deallocations();  // the idle blocks' frees were queued
    return backend_alloc(size);
  }
}

// A hit takes the pool's lock once and makes no Context handle (each is a
// pair of atomic reference counts): the pool's context is `owner`, which
// every caller holds alive.
DeviceMemory CachingMemoryPool::allocate(uint64_t bytes, const Stream &stream) {
  ContextImpl &c = *owner;
  check_pool_request(c, bytes, stream, "MemoryPool::allocate");
  const uint64_t size = rounded(bytes);
  DevicePointer p = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    drop_stale_locked(c.current_generation());
    p = take_idle(stream, size);
    if (p) {
      idle_bytes -= size;
      ++stats.hits;
      hand_out_locked(stream, p, size);
    }
  }
  if (!p) {
    p = allocate_new(size);
    // The stream's bin is found again under the lock: another thread's
    // release may have dropped it meanwhile (a bin with blocks in use never goes).
    std::lock_guard<std::mutex> lock(mu);
    ++stats.misses;
    stats.reserved_bytes += size;
    hand_out_locked(stream, p, size);
  }
  DeviceMemory m = wrap_block(p, bytes, size);
  // The allocation keeps the pool (its releaser) alive until its release ran.
  impl_of(m)->keep_alive = self.lock();
  return m;
}

void CachingMemoryPool::release_block(DevicePointer ptr, uint64_t, uint64_t size) {
  std::vector<std::pair<DevicePointer, uint64_t>> release;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = live.find(ptr);
    if (it == live.end()) return;  // a reset since: the context freed it
    const uint64_t bin_id = it->second;
    live.erase(it);
    stats.used_bytes -= size;
    --stats.allocations;
    bool kept = false;
    for (Bin &b : bins)
      if (b.id == bin_id) {
        b.idle[size].push_back(ptr);
        --b.in_use;
        idle_bytes += size;
        kept = true;
        break;
      }
    if (!kept) {  // cannot happen (a bin with blocks in use stays); never lose the block
      release.emplace_back(ptr, size);
      stats.reserved_bytes -= size;
      stats.released_bytes += size;
    }
    if (idle_bytes > options.release_threshold) pick_releases(options.release_threshold, &release);
  }
  give_back(release);
}

// Under mu: idle blocks to give back until at most `keep` bytes are idle,
// largest first; bins left empty are dropped (their streams with them).
void CachingMemoryPool::pick_releases(uint64_t keep, std::vector<std::pair<DevicePointer, uint64_t>> *out) {
  while (idle_bytes > keep) {
    Bin *best = nullptr;
    uint64_t best_size = 0;
    for (Bin &b : bins)
      if (!b.idle.empty() && b.idle.rbegin()->first > best_size) {
        best = &b;
        best_size = b.idle.rbegin()->first;
      }
    if (!best) break;
    auto &list = best->idle.rbegin()->second;
    out->emplace_back(list.back(), best_size);
    list.pop_back();
    if (list.empty()) best->idle.erase(best_size);
    idle_bytes -= best_size;
    stats.reserved_bytes -= best_size;
    stats.released_bytes += best_size;
  }
  bins.erase(std::remove_if(bins.begin(), bins.end(), [](const Bin &b) { return b.idle.empty() && b.in_use == 0; }),
             bins.end());
}

// Through the context's deferred queue: its flush waits for the context's
// work, so a block still in use by queued work is never freed under it.
void CachingMemoryPool::give_back(const std::vector<std::pair<DevicePointer, uint64_t>> &blocks) {
  for (const auto &b : blocks) backend_free(b.first, b.second);
}

uint64_t CachingMemoryPool::trim(uint64_t keep_bytes) {
  std::vector<std::pair<DevicePointer, uint64_t>> release;
  {
    std::lock_guard<std::mutex> lock(mu);
    pick_releases(keep_bytes, &release);
  }
  give_back(release);
  uint64_t total = 0;
  for (const auto &b : release) total += b.second;
  return total;
}

void CachingMemoryPool::forget_all() {
  std::lock_guard<std::mutex> lock(mu);
  generation = ~uint64_t(0);  // stale: the next call starts afresh
  bins.clear();
  live.clear();
  idle_bytes = 0;
  stats.used_bytes = stats.reserved_bytes = stats.allocations = 0;
}

MemoryPoolStats CachingMemoryPool::snapshot() {
  const uint64_t current = impl_of(context())->current_generation();
  std::lock_guard<std::mutex> lock(mu);
  drop_stale_locked(current);
  return stats;
}

// The idle blocks go back with the pool, through the context's deferred
// queue (which waits for the context's work before it frees). Not after a
// reset (the blocks went with the old context; a pool that was its
// context's manager was emptied by the manager's reset()), and not in a
// fork child (the blocks are the parent's).
CachingMemoryPool::~CachingMemoryPool() {
  if (owner->inherited() || generation != owner->current_generation()) return;
  for (const Bin &b : bins)
    for (const auto &sized : b.idle)
      for (const DevicePointer p : sized.second) backend_free(p, sized.first);
}

// The block goes to `stream`'s bin: reused at once by that stream's later
// work, by another stream's only once `stream` has no work pending.
void CachingMemoryPool::free_on(const DeviceMemory &memory, const Stream &stream) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = live.find(memory.device_pointer());
  if (it == live.end()) return;  // a reset since: the context freed it
  Bin &to = bin_of(stream);
  if (to.id == it->second) return;
  for (Bin &b : bins)
    if (b.id == it->second) --b.in_use;
  ++to.in_use;
  it->second = to.id;
  // A bin left with nothing idle and nothing in use is dropped by the next
  // pick_releases, as any other.
}

void CachingMemoryPool::set_release_threshold(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu);
    options.release_threshold = bytes;
  }
  trim(bytes);
}

uint64_t CachingMemoryPool::release_threshold() {
  std::lock_guard<std::mutex> lock(mu);
  return options.release_threshold;
}

void CachingMemoryPool::reset_peak() {
  std::lock_guard<std::mutex> lock(mu);
  stats.peak_used_bytes = stats.used_bytes;
}

// Installed as a context's manager: the pool's allocations on the default
// stream. Holds the pool (which holds the context weakly), never the
// context.
class PoolMemoryManagerAdapter final : public MemoryManager {
 public:
  explicit PoolMemoryManagerAdapter(std::shared_ptr<MemoryPoolImpl> pool) : pool_(std::move(pool)) {}
  std::string name() const override { return "memory pool"; }
  void initialize() override {}
  DeviceMemory memalloc(uint64_t bytes) override {
    return pool_->allocate(bytes, pool_->context().default_stream());
  }
  void reset() override { pool_->reset(); }

 private:
  std::shared_ptr<MemoryPoolImpl> pool_;
};

void check_pool_request(ContextImpl &c, uint64_t bytes, const Stream &stream, const char *what) {
  if (bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, std::string(what) + ": size must be positive");
  if (bytes > uint64_t(INT64_MAX))
    throw Error(Status::ERROR_SIZE_OVERFLOW, std::string(what) + ": " + std::to_string(bytes) + " bytes is too many");
  if (require_handle(impl_of(stream), "Stream::context")->ctx.get() != &c)
    throw Error(Status::ERROR_INVALID_VALUE, std::string(what) + ": the stream belongs to another context");
  c.check_alive(c.current_generation(), what);
}

std::shared_ptr<MemoryPoolImpl> make_caching_pool(const std::shared_ptr<ContextImpl> &ctx, MemoryPoolOptions options) {
  auto impl = std::make_shared<CachingMemoryPool>(ctx.get(), options);
  const uint64_t generation = ctx->current_generation();
  impl->generation = generation;
  return impl;
}

}  // namespace detail

MemoryPool::MemoryPool(const Context &context, MemoryPoolOptions options) {
  const auto &c = detail::require_handle(detail::impl_of(context), "MemoryPool");
  c->check_alive(c->current_generation(), "MemoryPool");
  std::shared_ptr<detail::MemoryPoolImpl> impl;
  switch (options.kind) {
    case MemoryPoolKind::Caching: impl = detail::make_caching_pool(c, options); break;
    case MemoryPoolKind::Driver: impl = detail::make_driver_pool(c, options); break;
    default:
      throw Error(Status::ERROR_INVALID_VALUE,
                  "MemoryPool: unknown kind " + std::to_string(static_cast<int>(options.kind)));
  }
  impl->self = impl;
  detail::attach_memory_manager(*impl, c);
  context_ = context;
  kind_ = options.kind;
  impl_ = std::move(impl);
}

DeviceMemory MemoryPool::allocate(uint64_t bytes, const Stream &stream) const {
  return detail::require_handle(impl_, "MemoryPool::allocate")->allocate(bytes, stream);
}

DeviceMemory MemoryPool::allocate(uint64_t bytes) const {
  detail::require_handle(impl_, "MemoryPool::allocate");
  return impl_->allocate(bytes, context_.default_stream());
}

void MemoryPool::free(DeviceMemory &memory, const Stream &stream) const {
  detail::require_handle(impl_, "MemoryPool::free");
  if (!memory) throw Error(Status::ERROR_INVALID_HANDLE, "MemoryPool::free: empty memory handle");
  if (!detail::impl_of(stream) || stream.context() != context_)
    throw Error(Status::ERROR_INVALID_VALUE, "MemoryPool::free: the stream is empty or belongs to another context");
  const auto &allocation = detail::impl_of(memory);
  if (allocation->releaser != impl_.get())
    throw Error(Status::ERROR_INVALID_VALUE, "MemoryPool::free: the memory was not allocated from this pool");
  // Memory of a context reset since was freed by the reset: its address may
  // be a new block's now, whose free stream this must not change.
  allocation->ctx->check_alive(allocation->generation, "MemoryPool::free");
  (void)detail::impl_of(stream)->live("MemoryPool::free");
  impl_->free_on(memory, stream);
  memory = DeviceMemory();
}

void MemoryPool::set_release_threshold(uint64_t bytes) const {
  detail::require_handle(impl_, "MemoryPool::set_release_threshold")->set_release_threshold(bytes);
}

uint64_t MemoryPool::release_threshold() const {
  return detail::require_handle(impl_, "MemoryPool::release_threshold")->release_threshold();
}

uint64_t MemoryPool::trim(uint64_t keep_bytes) const {
  return detail::require_handle(impl_, "MemoryPool::trim")->trim(keep_bytes);
}

MemoryPoolStats MemoryPool::stats() const {
  return detail::require_handle(impl_, "MemoryPool::stats")->snapshot();
}

void MemoryPool::reset_peak() const {
  detail::require_handle(impl_, "MemoryPool::reset_peak")->reset_peak();
}

std::unique_ptr<MemoryManager> MemoryPool::memory_manager() const {
  return std::make_unique<detail::PoolMemoryManagerAdapter>(detail::require_handle(impl_, "MemoryPool::memory_manager"));
}

Context MemoryPool::context() const {
  detail::require_handle(impl_, "MemoryPool::context");
  return context_;
}

MemoryPoolKind MemoryPool::kind() const {
  detail::require_handle(impl_, "MemoryPool::kind");
  return kind_;
}

}  // namespace gpuhal
