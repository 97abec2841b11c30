// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_kernel_runner.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/context/detail/fcontext.hpp>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define GPUHAL_HOST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUHAL_HOST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define GPUHAL_HOST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUHAL_HOST_TSAN 1
#endif
#endif
#ifdef GPUHAL_HOST_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef GPUHAL_HOST_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace gpuhal::host {

namespace ctx = boost::context::detail;

// ---- ThreadPool -----------------------------------------------------------

struct ThreadPool::Job {
  const std::function<void(uint64_t)> *fn = nullptr;
  uint64_t count = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::mutex mu;
  std::condition_variable cv;

  void run() {
    uint64_t mine = 0;
    for (uint64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count; ++mine) (*fn)(i);
    if (mine && done.fetch_add(mine, std::memory_order_acq_rel) + mine == count) {
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    }
  }
};

ThreadPool::ThreadPool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto &t : workers_) t.join();
}

void ThreadPool::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    std::shared_ptr<Job> job = jobs_.front();
    if (job->next.load(std::memory_order_relaxed) >= job->count) {
      jobs_.pop_front();  // all handed out
      continue;
    }
    lock.unlock();
    job->run();
    lock.lock();
  }
}

void ThreadPool::parallel_for(uint64_t count, const std::function<void(uint64_t)> &fn) {
  if (count == 0) return;
  if (workers_.empty() || count == 1) {
    for (uint64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->count = count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
  }
  cv_.notify_all();
  job->run();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
      if (*it == job) {
        jobs_.erase(it);
        break;
      }
  }
  std::unique_lock<std::mutex> lock(job->mu);
  job->cv.wait(lock, [&] { return job->done.load(std::memory_order_acquire) == count; });
}

// ---- StackPool ------------------------------------------------------------

namespace {
size_t page_size() {
  static const size_t p = size_t(::sysconf(_SC_PAGESIZE));
  return p;
}
}  // namespace

StackPool::StackPool(size_t stack_bytes) {
  const size_t p = page_size();
  bytes_ = (stack_bytes + p - 1) / p * p;
}

StackPool::~StackPool() {
  for (const Stack &s : free_) {
#ifdef GPUHAL_HOST_ASAN
    // Frames of instrumented code that never returned (a fiber's entry
    // jumps away) left poisoned shadow behind: clear it, or the next
    // mapping at these addresses would be reported as stack overflow.
    ASAN_UNPOISON_MEMORY_REGION(s.base, bytes_);
#endif
    ::munmap(static_cast<char *>(s.base) - page_size(), bytes_ + page_size());
#ifdef GPUHAL_HOST_TSAN
    __tsan_destroy_fiber(s.tsan);
#endif
  }
}

StackPool::Stack StackPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      Stack s = free_.back();
      free_.pop_back();
      return s;
    }
  }
  const size_t p = page_size();
  void *m = ::mmap(nullptr, bytes_ + p, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return Stack{};
  // The guard page: a stack overflow faults instead of corrupting memory.
  ::mprotect(m, p, PROT_NONE);
  Stack s;
  s.base = static_cast<char *>(m) + p;
#ifdef GPUHAL_HOST_TSAN
  s.tsan = __tsan_create_fiber(0);
#endif
  return s;
}

bool StackPool::acquire(size_t n, Stack *out) {
  size_t got = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (got < n && !free_.empty()) {
      out[got++] = free_.back();
      free_.pop_back();
    }
  }
  for (; got < n; ++got) {
    out[got] = acquire();
    if (!out[got].base) {
      release(got, out);
      return false;
    }
  }
  return true;
}

void StackPool::release(size_t n, const Stack *stacks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i)
    if (stacks[i].base) free_.push_back(stacks[i]);
}

void StackPool::release(const Stack &stack) {
  if (!stack.base) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(stack);
}

// ---- Running groups -------------------------------------------------------

namespace {

struct Fiber {
  ctx::fcontext_t fc = nullptr;
  gpuhal_host_item item{};
  bool done = false;
  StackPool::Stack stack;
  struct Scheduler *sched = nullptr;
  void *asan_fake = nullptr;
};

struct Scheduler {
  ctx::fcontext_t main = nullptr;
  Fiber *current = nullptr;
  const gpuhal_host_kernel *kernel = nullptr;
  void *const *args = nullptr;
  size_t stack_bytes = 0;
  // The thread's own stack, for the sanitizers.
  const void *main_bottom = nullptr;
  size_t main_size = 0;
  void *main_fake = nullptr;
  void *main_tsan = nullptr;
};

// Before leaving the current stack for `to` (bottom, size); `save` is null
// when the current fiber will never be resumed.
inline void before_switch(void **save, const void *to_bottom, size_t to_size, void *to_tsan) {
#ifdef GPUHAL_HOST_ASAN
  __sanitizer_start_switch_fiber(save, to_bottom, to_size);
#else
  (void)save, (void)to_bottom, (void)to_size;
#endif
#ifdef GPUHAL_HOST_TSAN
  __tsan_switch_to_fiber(to_tsan, 0);
#else
  (void)to_tsan;
#endif
}

// Right after arriving on a stack.
inline void after_switch(void *save, const void **from_bottom, size_t *from_size) {
#ifdef GPUHAL_HOST_ASAN
  __sanitizer_finish_switch_fiber(save, from_bottom, from_size);
#else
  (void)save, (void)from_bottom, (void)from_size;
#endif
}

void fiber_entry(ctx::transfer_t t) {
  Fiber *f = static_cast<Fiber *>(t.data);
  Scheduler *s = f->sched;
  s->main = t.fctx;
  after_switch(nullptr, &s->main_bottom, &s->main_size);
  s->kernel->run_item(&f->item, s->args);
  f->done = true;
  before_switch(nullptr, s->main_bottom, s->main_size, s->main_tsan);
  ctx::jump_fcontext(s->main, nullptr);
  __builtin_unreachable();
}

// The barrier of a fiber: back to the scheduler until every work-item of the
// group has arrived.
void fiber_barrier(void *sched) {
  Scheduler *s = static_cast<Scheduler *>(sched);
  Fiber *f = s->current;
  before_switch(&f->asan_fake, s->main_bottom, s->main_size, s->main_tsan);
  ctx::transfer_t t = ctx::jump_fcontext(s->main, nullptr);
  s->main = t.fctx;
  after_switch(f->asan_fake, &s->main_bottom, &s->main_size);
}

// A barrier reached in a group run as a loop: the kernel was not seen to
// use barriers (e.g. hidden behind a macro of another file). Recorded; the
// launch reports it.
void loop_barrier(void *flag) {
  static_cast<std::atomic<bool> *>(flag)->store(true, std::memory_order_relaxed);
}

}  // namespace

std::string run_kernel(ThreadPool &pool, StackPool &stacks, const KernelLaunch &L) {
  const uint64_t gx = L.grid[0], gy = L.grid[1], gz = L.grid[2];
  const uint64_t groups = gx * gy * gz;
  const uint32_t items = L.block[0] * L.block[1] * L.block[2];
  std::atomic<bool> misuse{false}, no_memory{false};
  const bool fibers = L.kernel->uses_barrier != 0;

  const bool loops = L.kernel->run_group_loops != nullptr;
  // Work-item loops keep per-work-item variables in scratch memory: one
  // buffer per chunk of groups (a chunk runs on one thread).
  const uint64_t scratch_bytes = loops ? uint64_t(items) * L.kernel->loops_scratch_per_item + 64 : 0;

  auto run_group = [&](uint64_t gi, unsigned char *scratch) {
    gpuhal_host_group g{};
    g.group_id[0] = uint32_t(gi % gx);
    g.group_id[1] = uint32_t((gi / gx) % gy);
    g.group_id[2] = uint32_t(gi / (gx * gy));
    for (int d = 0; d < 3; ++d) {
      g.local_size[d] = L.block[d];
      g.num_groups[d] = L.grid[d];
    }
    g.dynamic_shared_bytes = L.dynamic_shared_bytes;
    std::unique_ptr<unsigned char[]> dyn;
    if (L.dynamic_shared_bytes) {
      dyn.reset(new (std::nothrow) unsigned char[L.dynamic_shared_bytes + 15]);
      if (!dyn) {
        no_memory = true;
        return;
      }
      g.dynamic_shared =
          reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(dyn.get()) + 15) & ~uintptr_t(15));
    }
    if (loops) {
      g.barrier = loop_barrier;
      g.scheduler = &misuse;
      g.scratch = scratch;
      L.kernel->run_group_loops(&g, L.args.data());
      return;
    }
    if (!fibers) {
      g.barrier = loop_barrier;
      g.scheduler = &misuse;
      L.kernel->run_group(&g, L.args.data());
      return;
    }
    Scheduler s;
    s.kernel = L.kernel;
    s.args = L.args.data();
    s.stack_bytes = stacks.stack_bytes();
#ifdef GPUHAL_HOST_TSAN
    s.main_tsan = __tsan_get_current_fiber();
#endif
    g.barrier = fiber_barrier;
    g.scheduler = &s;
    std::vector<Fiber> f(items);
    std::vector<StackPool::Stack> st(items);
    const bool ok = stacks.acquire(items, st.data());
    for (uint32_t i = 0; ok && i < items; ++i) {
      f[i].stack = st[i];
      f[i].sched = &s;
      f[i].item.local_id[0] = i % L.block[0];
      f[i].item.local_id[1] = (i / L.block[0]) % L.block[1];
      f[i].item.local_id[2] = i / (L.block[0] * L.block[1]);
      f[i].item.group = &g;
      // Staggered tops: stacks at the same page offset would all map to the
      // same cache sets and evict each other at every switch.
      const size_t color = (i % 61) * 64;
      f[i].fc = ctx::make_fcontext(static_cast<char *>(f[i].stack.base) + s.stack_bytes - color, s.stack_bytes - color,
                                   fiber_entry);
    }
    if (ok) {
      uint32_t remaining = items;
      while (remaining) {
        for (uint32_t i = 0; i < items; ++i) {
          if (f[i].done) continue;
          s.current = &f[i];
          before_switch(&s.main_fake, f[i].stack.base, s.stack_bytes, f[i].stack.tsan);
          ctx::transfer_t t = ctx::jump_fcontext(f[i].fc, &f[i]);
          after_switch(s.main_fake, nullptr, nullptr);
          f[i].fc = t.fctx;
          if (f[i].done) --remaining;
        }
      }
    } else {
      no_memory = true;
    }
    if (ok) stacks.release(items, st.data());
  };
  // Groups are handed out in chunks (about eight per participant), so that
  // small groups do not pay a hand-out each.
  const uint64_t chunk = std::max<uint64_t>(1, groups / (uint64_t(pool.size()) * 8));
  pool.parallel_for((groups + chunk - 1) / chunk, [&](uint64_t c) {
    std::unique_ptr<unsigned char[]> scratch;
    if (scratch_bytes) {
      scratch.reset(new (std::nothrow) unsigned char[scratch_bytes]);
      if (!scratch) {
        no_memory = true;
        return;
      }
    }
    const uint64_t end = std::min(groups, (c + 1) * chunk);
    for (uint64_t gi = c * chunk; gi < end; ++gi) run_group(gi, scratch.get());
  });
  if (no_memory) return "out of memory for work-group fiber stacks, work-item variables or dynamic shared memory";
  if (misuse)
    return std::string("kernel '") + L.kernel->name +
           "' reached gpuhal_barrier but was compiled as barrier-free (its barrier was not visible in the source)";
  return "";
}

}  // namespace gpuhal::host
