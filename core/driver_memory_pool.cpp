// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MemoryPoolKind::Driver (gpuhal/memory_pool.hpp): a MemoryPool whose
// allocations, frees, trims and statistics are the plugin's pool's
// (mem_pool_*, plugin ABI 1.16). The core keeps only which stream each live
// block is freed on, and the pool's handle for the context's generation: a
// reset destroys the plugin's pool with the context, and the next call
// makes a new one.
#include <algorithm>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "allocation.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"
#include "memory_pool_impl.hpp"
#include "stream_impl.hpp"

namespace gpuhal::detail {
namespace {

class DriverMemoryPool final : public MemoryPoolImpl {
 public:
  DriverMemoryPool(ContextImpl *owner, MemoryPoolOptions options) : owner_(owner), threshold_(options.release_threshold) {}
  ~DriverMemoryPool() override;

  DeviceMemory allocate(uint64_t bytes, const Stream &stream) override;
  void free_on(const DeviceMemory &memory, const Stream &stream) override;
  void release_block(DevicePointer ptr, uint64_t bytes, uint64_t cookie) override;
  void reset() override;
  void set_release_threshold(uint64_t bytes) override;
  uint64_t release_threshold() override;
  uint64_t trim(uint64_t keep_bytes) override;
  MemoryPoolStats snapshot() override;
  void reset_peak() override;

  // Makes the plugin's pool for the current generation (the constructor's
  // check that the backend has one, and its first pool).
  void open();

 private:
  // Where a live block is freed: its stream (held, so that its handle stays
  // valid) and, for a per-thread default stream, the thread whose stream it
  // is.
  struct FreeOn {
    std::shared_ptr<StreamImpl> stream;
    std::thread::id thread;
  };
  static FreeOn free_on_of(const Stream &stream);
  // The plugin's pool of the current generation, made when there is none
  // (under mu_).
  gpuhal_mem_pool_t pool_locked();
  uint64_t attribute(uint32_t which);

  ContextImpl *owner_;  // outlives the pool: every holder of the pool holds the context
  std::mutex mu_;
  gpuhal_mem_pool_t pool_ = nullptr;
  uint64_t generation_ = 0;
  uint64_t threshold_;
  uint64_t allocations_ = 0;
  uint64_t released_ = 0;
  std::unordered_map<DevicePointer, FreeOn> live_;
};

DriverMemoryPool::~DriverMemoryPool() {
  // A reset or the context's end destroyed the plugin's pool already; a
  // fork child's context is its parent's.
  if (!pool_ || generation_ != owner_->current_generation() || owner_->inherited()) return;
  const gpuhal_status_t st = owner_->backend().mem_pool_destroy_status(owner_->handle, pool_);
  if (st != GPUHAL_SUCCESS) owner_->report_release_failure(st, "mem_pool_destroy");
}

void DriverMemoryPool::open() {
  std::lock_guard<std::mutex> lock(mu_);
  (void)pool_locked();
}

gpuhal_mem_pool_t DriverMemoryPool::pool_locked() {
  const uint64_t current = owner_->current_generation();
  if (pool_ && generation_ == current) return pool_;
  // A reset freed every block and destroyed the pool with the old context.
  live_.clear();
  allocations_ = 0;
  pool_ = nullptr;
  gpuhal_mem_pool_t made = nullptr;
  owner_->backend().mem_pool_create(owner_->handle, 0, &made);
  if (threshold_ != 0) {
    const gpuhal_status_t st =
        owner_->backend().mem_pool_set_attribute_status(owner_->handle, made, GPUHAL_MEM_POOL_RELEASE_THRESHOLD, threshold_);
    if (st != GPUHAL_SUCCESS) {
      (void)owner_->backend().mem_pool_destroy_status(owner_->handle, made);
      owner_->check(st, "mem_pool_set_attribute");
    }
  }
  pool_ = made;
  generation_ = current;
  return pool_;
}

DriverMemoryPool::FreeOn DriverMemoryPool::free_on_of(const Stream &stream) {
  const auto &impl = impl_of(stream);
  return FreeOn{impl, impl->handle == GPUHAL_STREAM_PER_THREAD ? std::this_thread::get_id() : std::thread::id()};
}

DeviceMemory DriverMemoryPool::allocate(uint64_t bytes, const Stream &stream) {
  ContextImpl &c = *owner_;
  check_pool_request(c, bytes, stream, "MemoryPool::allocate");
  const gpuhal_stream_t s = impl_of(stream)->live("MemoryPool::allocate");
  std::lock_guard<std::mutex> lock(mu_);
  const gpuhal_mem_pool_t pool = pool_locked();
  DevicePointer p = 0;
  gpuhal_status_t st = c.backend().mem_pool_alloc_async_status(c.handle, pool, bytes, s, &p);
  // Out of memory: what the context's deferred queue holds goes back to the
  // device, and then once more.
  if (st == GPUHAL_ERROR_OUT_OF_MEMORY && c.deallocs->flush() > 0)
    st = c.backend().mem_pool_alloc_async_status(c.handle, pool, bytes, s, &p);
  c.check(st, "mem_pool_alloc_async");
  live_[p] = free_on_of(stream);
  ++allocations_;
  DeviceMemory m = wrap_block(p, bytes, 0);
  // The allocation keeps the pool (its releaser) alive until its release ran.
  impl_of(m)->keep_alive = self.lock();
  return m;
}

void DriverMemoryPool::free_on(const DeviceMemory &memory, const Stream &stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(memory.device_pointer());
  if (it != live_.end()) it->second = free_on_of(stream);  // absent: a reset since freed it
}

// The block's free, on the stream recorded for it. A per-thread default
// stream is only its own thread's to name: from another thread the legacy
// default stream stands in (it waits for every blocking stream's work, the
// per-thread ones included).
void DriverMemoryPool::release_block(DevicePointer ptr, uint64_t, uint64_t) {
  FreeOn on;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(ptr);
    if (it == live_.end() || generation_ != owner_->current_generation()) return;  // a reset freed it
    on = std::move(it->second);
    live_.erase(it);
    --allocations_;
  }
  gpuhal_stream_t s = on.stream->handle;
  if (s == GPUHAL_STREAM_PER_THREAD && on.thread != std::this_thread::get_id()) s = GPUHAL_STREAM_LEGACY;
  const gpuhal_status_t st = owner_->backend().mem_free_async_status(owner_->handle, ptr, s);
  // A failure leaves the memory to the context's destruction or reset.
  if (st != GPUHAL_SUCCESS) owner_->report_release_failure(st, "mem_free_async");
}

void DriverMemoryPool::reset() {
  // The context is about to be reset or destroyed, which frees the pool's
  // memory; the pool goes now, so that nothing of ours is left for the
  // context's end to find (the leak layer names what it finds). The driver
  // frees a destroyed pool once its last allocation is gone.
  std::lock_guard<std::mutex> lock(mu_);
  live_.clear();
  allocations_ = 0;
  if (pool_ && generation_ == owner_->current_generation() && !owner_->inherited()) {
    const gpuhal_status_t st = owner_->backend().mem_pool_destroy_status(owner_->handle, pool_);
    if (st != GPUHAL_SUCCESS) owner_->report_release_failure(st, "mem_pool_destroy");
  }
  pool_ = nullptr;
}

uint64_t DriverMemoryPool::attribute(uint32_t which) {
  uint64_t v = 0;
  owner_->backend().mem_pool_get_attribute(owner_->handle, pool_locked(), which, &v);
  return v;
}

void DriverMemoryPool::set_release_threshold(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  owner_->check_alive(owner_->current_generation(), "MemoryPool::set_release_threshold");
  owner_->backend().mem_pool_set_attribute(owner_->handle, pool_locked(), GPUHAL_MEM_POOL_RELEASE_THRESHOLD, bytes);
  threshold_ = bytes;
}

uint64_t DriverMemoryPool::release_threshold() {
  std::lock_guard<std::mutex> lock(mu_);
  return threshold_;
}

// The driver trims reserved bytes (used ones count): asked to keep the used
// bytes plus keep_bytes, it gives back idle memory down to keep_bytes.
uint64_t DriverMemoryPool::trim(uint64_t keep_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  owner_->check_alive(owner_->current_generation(), "MemoryPool::trim");
  const uint64_t used = attribute(GPUHAL_MEM_POOL_USED_CURRENT);
  const uint64_t before = attribute(GPUHAL_MEM_POOL_RESERVED_CURRENT);
  const uint64_t keep = keep_bytes > UINT64_MAX - used ? UINT64_MAX : used + keep_bytes;
  owner_->backend().mem_pool_trim(owner_->handle, pool_locked(), keep);
  const uint64_t after = attribute(GPUHAL_MEM_POOL_RESERVED_CURRENT);
  const uint64_t given = before > after ? before - after : 0;
  released_ += given;
  return given;
}

MemoryPoolStats DriverMemoryPool::snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  owner_->check_alive(owner_->current_generation(), "MemoryPool::stats");
  MemoryPoolStats s;
  s.used_bytes = attribute(GPUHAL_MEM_POOL_USED_CURRENT);
  s.reserved_bytes = attribute(GPUHAL_MEM_POOL_RESERVED_CURRENT);
  // A reset watermark is 0 until the next allocation; the bytes in use now
  // are the peak since (the caching pool's reset_peak rule).
  s.peak_used_bytes = std::max(attribute(GPUHAL_MEM_POOL_USED_HIGH), s.used_bytes);
  s.allocations = allocations_;
  s.released_bytes = released_;
  return s;
}

void DriverMemoryPool::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  owner_->check_alive(owner_->current_generation(), "MemoryPool::reset_peak");
  owner_->backend().mem_pool_set_attribute(owner_->handle, pool_locked(), GPUHAL_MEM_POOL_USED_HIGH, 0);
}

}  // namespace

std::shared_ptr<MemoryPoolImpl> make_driver_pool(const std::shared_ptr<ContextImpl> &ctx, MemoryPoolOptions options) {
  ctx->require_feature(ctx->backend().has_mem_pool_create() && ctx->backend().has_mem_free_async(), "MemoryPool",
                       kDriverMemoryPools);
  auto pool = std::make_shared<DriverMemoryPool>(ctx.get(), options);
  pool->open();  // the plugin's refusal (a driver without pools) here, not at the first allocation
  return pool;
}

}  // namespace gpuhal::detail
