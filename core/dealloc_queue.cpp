// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "dealloc_queue.hpp"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <iterator>

namespace gpuhal::detail {

namespace {
// Spares are searched linearly for an exact size: a few dozen at most,
// whatever the count limit (releases past it are queued instead).
constexpr size_t kMaxBlocks = 32;
}  // namespace

DeallocQueue::DeallocQueue(uint64_t max_count, uint64_t max_bytes, Synchronize sync, ErrorHandler handler,
                           const std::atomic<uint64_t> *generation, FreeBlock free_block)
    : max_count_(max_count),
      max_bytes_(max_bytes),
      sync_(std::move(sync)),
      free_block_(std::move(free_block)),
      generation_(generation),
      handler_(std::move(handler)) {
  // Both reserved up front: keeping, taking and the swap of a flush over
  // the limits never allocate (also after set_limits raises a count of 0).
  if (free_block_) {
    blocks_.reserve(kMaxBlocks);
    spares_.reserve(kMaxBlocks);
    proving_.reserve(kMaxBlocks);
  }
}

namespace {
// Read by every take_block and keep_block: the initial-exec model makes it
// one %fs-relative load, where the default model for a shared object calls
// __tls_get_addr (ThreadBias does the same, sync/thread_bias.hpp; one byte of
// the static TLS space glibc keeps for libraries loaded later).
__thread bool t_in_callback __attribute__((tls_model("initial-exec"))) = false;
}  // namespace

DeallocQueue::CallbackScope::CallbackScope() : outer_(t_in_callback) {
  t_in_callback = true;
}
DeallocQueue::CallbackScope::~CallbackScope() {
  t_in_callback = outer_;
}
bool DeallocQueue::in_callback() {
  return t_in_callback;
}

void DeallocQueue::add(Item item) {
  bool flush_now;
  {
    std::lock_guard<BiasedLock> lock(mu_);
    bytes_ += item.bytes;
    items_.push_back(std::move(item));
    flush_now = !t_in_callback && flush_due_locked();
  }
  if (flush_now) flush_over_limits();
}

bool DeallocQueue::keep_block(uint64_t device_pointer, uint64_t bytes, uint64_t generation, bool busy) {
  if (!free_block_ || max_count() == 0 || t_in_callback) return false;
  bool flush_now;
  {
    std::lock_guard<BiasedLock> lock(mu_);
    if (blocks_.size() == kMaxBlocks || bytes > max_bytes()) return false;
    // Built in place: a temporary copied in would be stored as two 8-byte
    // halves and loaded back as one 16-byte move, which waits for the
    // stores (a failed store-to-load forward, 31% of keep_block's samples).
    blocks_.emplace_back(device_pointer, bytes, generation, busy);
    bytes_ += bytes;
    flush_now = flush_due_locked();
  }
  if (flush_now) flush_over_limits();
  return true;
}

uint64_t DeallocQueue::take_block(uint64_t bytes, uint64_t generation) {
  if (!free_block_ || t_in_callback) return 0;
  std::lock_guard<BiasedLock> lock(mu_);
  for (size_t i = spares_.size(); i-- > 0;) {
    const Block b = spares_[i];
    if (b.bytes != bytes || b.generation != generation) continue;
    spares_.erase(spares_.begin() + std::ptrdiff_t(i));
    return b.device_pointer;
  }
  return 0;
}

void DeallocQueue::queue_blocks_locked(std::vector<Block> &blocks, bool pending) {
  for (const Block &b : blocks) {
    FreeBlock *free_block = &free_block_;
    const uint64_t ptr = b.device_pointer;
    items_.push_back({[free_block, ptr] { (*free_block)(ptr); }, b.bytes, b.generation, pending});
    if (!pending) bytes_ += b.bytes;
  }
  blocks.clear();
}

void DeallocQueue::flush_over_limits() {
  if (flushing_.load(std::memory_order_relaxed) == std::this_thread::get_id()) return;  // as in run_flush
  {
    std::lock_guard<BiasedLock> lock(mu_);
    if (defer_depth_ > 0) return;
    // Spares nobody took for a whole round go back to the plugin with this
    // flush; the idle blocks (unused since they were kept) are the next
    // round's spares, no longer pending. The busy ones stay for run_flush,
    // which takes them with its first batch, before its synchronise.
    queue_blocks_locked(spares_, false);
    size_t busy = 0;
    for (const Block &b : blocks_) {
      if (b.busy) {
        blocks_[busy++] = b;
        continue;
      }
      bytes_ -= b.bytes;
      spares_.push_back(b);
    }
    blocks_.resize(busy, Block(0, 0, 0, true));
  }
  run_flush(false, false);
}

void DeallocQueue::report(const Error &e) {
  ErrorHandler h;
  {
    std::lock_guard<BiasedLock> lock(mu_);
    h = handler_;
  }
  if (!h) return;
  try {
    h(e);
  } catch (...) {
    // An error handler must not take the flush down with it.
  }
}

size_t DeallocQueue::flush(bool force) {
  return run_flush(force, true);
}

size_t DeallocQueue::run_flush(bool force, bool free_blocks) {
  // Called from a release this thread's flush is running: that flush runs
  // the queue to the end anyway.
  if (flushing_.load(std::memory_order_relaxed) == std::this_thread::get_id()) return 0;
  std::lock_guard<std::mutex> flushing(flush_mu_);
  // Only this thread reads back what it wrote here (the check above): no
  // ordering needed, so no locked exchange for either store.
  struct Owner {
    std::atomic<std::thread::id> &id;
    explicit Owner(std::atomic<std::thread::id> &i) : id(i) {
      id.store(std::this_thread::get_id(), std::memory_order_relaxed);
    }
    ~Owner() { id.store(std::thread::id(), std::memory_order_relaxed); }
  } owner(flushing_);
  // What is queued is taken in batches, one lock each, and each batch is
  // taken BEFORE the synchronise that precedes its releases: whatever work
  // used an item's memory was submitted before its last handle went, so
  // before the item was queued, so before the batch was taken; the
  // synchronise after it waits for that work. (Synchronising first would
  // let an item queued by another thread between the synchronise and the
  // take be freed under work submitted after the synchronise.) A release may
  // queue more (a module's unload frees its memory): the next batch takes it,
  // after a synchronise of its own. batch_ keeps its storage between
  // flushes: no allocation per flush.
  size_t done = 0;
  for (;;) {
    {
      std::lock_guard<BiasedLock> lock(mu_);
      if (defer_depth_ > 0 && !force) break;
      if (free_blocks) {
        queue_blocks_locked(blocks_, true);
        queue_blocks_locked(spares_, false);
      }
      const bool proving = !free_blocks && take_busy_blocks_locked();
      if (items_.empty() && !proving) break;
      batch_.swap(items_);
      for (const Item &item : batch_) bytes_ -= item.bytes;
    }
    try {
      sync_();
    } catch (const Error &e) {
      report(Error(e.status(), std::string("deferred deallocation: synchronising before the flush failed: ") + e.what()));
      settle_proving(false);
      if (!force) {
        requeue_batch();
        return done;
      }
    }
    settle_proving(true);
    while (!batch_.empty()) {
      bool failed = false;
      try {
        const Item &item = batch_.front();
        if (item.generation == 0 || !generation_ || item.generation == generation_->load(std::memory_order_acquire)) {
          item.release();
          if (item.pending) ++done;
        }
      } catch (const Error &e) {
        report(Error(e.status(), std::string("deferred deallocation failed: ") + e.what()));
        failed = true;
      } catch (const std::exception &e) {
        report(Error(Status::ERROR_UNKNOWN, std::string("deferred deallocation failed: ") + e.what()));
        failed = true;
      } catch (...) {
        report(Error(Status::ERROR_UNKNOWN, "deferred deallocation failed with an unknown exception"));
        failed = true;
      }
      batch_.pop_front();
      if (failed && !force) {
        requeue_batch();
        return done;
      }
    }
  }
  return done;
}

bool DeallocQueue::take_busy_blocks_locked() {
  size_t idle = 0;
  for (const Block &b : blocks_) {
    if (!b.busy) {
      blocks_[idle++] = b;
      continue;
    }
    bytes_ -= b.bytes;  // no longer pending: the flush has it
    proving_.push_back(b);
  }
  blocks_.resize(idle, Block(0, 0, 0, false));
  return !proving_.empty();
}

void DeallocQueue::settle_proving(bool synchronised) {
  if (proving_.empty()) return;
  std::lock_guard<BiasedLock> lock(mu_);
  const uint64_t current = generation_ ? generation_->load(std::memory_order_acquire) : 0;
  for (const Block &b : proving_) {
    if (generation_ && b.generation != current) continue;  // went with the reset that made it stale
    // Unused after the synchronise: all work that used it was queued before
    // its release, so before it was taken, so before the synchronise. Kept
    // as a spare while the spares stay few (take_block searches them).
    if (synchronised && spares_.size() < kMaxBlocks) {
      spares_.push_back(b);
      continue;
    }
    // Not proven unused (the synchronise failed), or no room: a pending
    // release again, freed by a later flush after its own synchronise.
    FreeBlock *free_block = &free_block_;
    const uint64_t ptr = b.device_pointer;
    items_.push_back({[free_block, ptr] { (*free_block)(ptr); }, b.bytes, b.generation, !synchronised});
    bytes_ += b.bytes;
  }
  proving_.clear();
}

void DeallocQueue::requeue_batch() {
  // The rest stay queued, ahead of what came meanwhile, as they were.
  std::lock_guard<BiasedLock> lock(mu_);
  for (const Item &item : batch_) bytes_ += item.bytes;
  items_.insert(items_.begin(), std::make_move_iterator(batch_.begin()), std::make_move_iterator(batch_.end()));
  batch_.clear();
}

void DeallocQueue::drop_all() {
  std::lock_guard<BiasedLock> lock(mu_);
  items_.clear();
  blocks_.clear();
  spares_.clear();
  bytes_ = 0;
}

void DeallocQueue::defer_begin() {
  std::lock_guard<BiasedLock> lock(mu_);
  ++defer_depth_;
}

void DeallocQueue::defer_end() {
  bool flush_now;
  {
    std::lock_guard<BiasedLock> lock(mu_);
    if (defer_depth_ > 0) --defer_depth_;
    flush_now = defer_depth_ == 0 && over_limits_locked();
  }
  if (flush_now) flush_over_limits();
}

bool DeallocQueue::deferred() const {
  std::lock_guard<BiasedLock> lock(mu_);
  return defer_depth_ > 0;
}

size_t DeallocQueue::count() const {
  std::lock_guard<BiasedLock> lock(mu_);
  return items_.size() + blocks_.size();
}

uint64_t DeallocQueue::bytes() const {
  std::lock_guard<BiasedLock> lock(mu_);
  return bytes_;
}

void DeallocQueue::set_limits(uint64_t max_count, uint64_t max_bytes) {
  std::lock_guard<BiasedLock> lock(mu_);
  max_count_.store(max_count, std::memory_order_relaxed);
  max_bytes_.store(max_bytes, std::memory_order_relaxed);
}

void DeallocQueue::set_error_handler(ErrorHandler handler) {
  std::lock_guard<BiasedLock> lock(mu_);
  handler_ = std::move(handler);
}

}  // namespace gpuhal::detail
