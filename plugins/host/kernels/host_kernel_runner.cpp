// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_kernel_runner.hpp"

#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cstring>
#include <new>

#include "fork_thread_gate.hpp"
#include "sanitizer_build.hpp"

#ifdef GPUHAL_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef GPUHAL_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace gpuhal::host {

namespace ctx = boost::context;

// ---- Running groups -------------------------------------------------------

namespace {

// The stack allocator a fiber is made with: its stack comes from the
// StackPool (boost::context::preallocated) and goes back to it when the
// whole group is done, so the fiber's own deallocation has nothing to do.
struct PooledStack {
  void deallocate(boost::context::stack_context &) noexcept {}
};

struct Scheduler;

struct Fiber {
  ctx::fiber fiber;  // empty once the work-item has finished
  gpuhal_host_item item{};
  StackPool::Stack stack;
  Scheduler *sched = nullptr;
  void *asan_fake = nullptr;
  void *tsan = nullptr;  // the work-item's ThreadSanitizer fiber
};

struct Scheduler {
  ctx::fiber main;  // the scheduler, while a work-item runs
  Fiber *current = nullptr;
  // gpuhal_barrier_count: the predicates counted during a round (every
  // work-item resumed once), and the total of the last round, which the
  // work-items read when they go on.
  int count_round = 0;
  int count_result = 0;
  const gpuhal_host_kernel *kernel = nullptr;
  void *const *args = nullptr;
  // The thread's own stack, for the sanitizers.
  const void *main_bottom = nullptr;
  size_t main_size = 0;
  void *main_fake = nullptr;
  void *main_tsan = nullptr;
};

// The sanitizers are told of every switch between stacks (Boost.Context
// 1.74 tells them of none when built with its default fcontext switch).
// AddressSanitizer: __sanitizer_start_switch_fiber before leaving a stack
// (`save` null when the stack is never resumed), finish after arriving.
// ThreadSanitizer: __tsan_switch_to_fiber right before the jump, so that
// the function entries and exits it records pair up on each fiber.
inline void asan_leave(void **save, const void *to_bottom, size_t to_size) {
#ifdef GPUHAL_ADDRESS_SANITIZER
  __sanitizer_start_switch_fiber(save, to_bottom, to_size);
#else
  (void)save, (void)to_bottom, (void)to_size;
#endif
}

inline void asan_arrive(void *save, const void **from_bottom, size_t *from_size) {
#ifdef GPUHAL_ADDRESS_SANITIZER
  __sanitizer_finish_switch_fiber(save, from_bottom, from_size);
#else
  (void)save, (void)from_bottom, (void)from_size;
#endif
}

inline void tsan_switch(void *to) {
#ifdef GPUHAL_THREAD_SANITIZER
  __tsan_switch_to_fiber(to, 0);
#else
  (void)to;
#endif
}

// The body of a work-item's fiber. Its end returns to the scheduler: for
// ThreadSanitizer the switch back is made by the scheduler once it has
// arrived (the returns on the way out still belong to this fiber).
ctx::fiber work_item(Fiber *f, ctx::fiber &&main) {
  Scheduler *s = f->sched;
  s->main = std::move(main);
  asan_arrive(nullptr, &s->main_bottom, &s->main_size);
  s->kernel->run_item(&f->item, s->args);
  asan_leave(nullptr, s->main_bottom, s->main_size);
  return std::move(s->main);
}

// The barrier of a fiber: back to the scheduler until every work-item of the
// group has arrived.
void fiber_barrier(void *sched) {
  Scheduler *s = static_cast<Scheduler *>(sched);
  Fiber *f = s->current;
  asan_leave(&f->asan_fake, s->main_bottom, s->main_size);
  tsan_switch(s->main_tsan);
  s->main = std::move(s->main).resume();
  asan_arrive(f->asan_fake, &s->main_bottom, &s->main_size);
}

// The counting barrier of a fiber: the predicate joins the round's count,
// and every work-item goes on with the round's total.
int fiber_barrier_count(void *sched, int predicate) {
  Scheduler *s = static_cast<Scheduler *>(sched);
  s->count_round += predicate;
  fiber_barrier(sched);
  return s->count_result;
}

// Runs one group of a kernel with barriers: every work-item a fiber on a
// stack of the pool. False when there were not stacks enough.
bool run_group_fibers(StackPool &stacks, const gpuhal_host_kernel *kernel, void *const *args, gpuhal_host_group &g,
                      const uint32_t block[3]) {
  const uint32_t items = block[0] * block[1] * block[2];
  Scheduler s;
  s.kernel = kernel;
  s.args = args;
#ifdef GPUHAL_THREAD_SANITIZER
  s.main_tsan = __tsan_get_current_fiber();
#endif
  g.barrier = fiber_barrier;
  g.barrier_count = fiber_barrier_count;
  g.scheduler = &s;
  std::vector<Fiber> f(items);
  std::vector<StackPool::Stack> st(items);
  if (!stacks.acquire(items, st.data())) return false;
  for (uint32_t i = 0; i < items; ++i) {
    Fiber &w = f[i];
    w.stack = st[i];
    w.sched = &s;
    w.item.local_id[0] = i % block[0];
    w.item.local_id[1] = (i / block[0]) % block[1];
    w.item.local_id[2] = i / (block[0] * block[1]);
    w.item.group = &g;
#ifdef GPUHAL_ADDRESS_SANITIZER
    // A stack's last user may have left poisoned frames where this fiber's
    // record will be written.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char *>(w.stack.sp) - w.stack.size, w.stack.size);
#endif
    // Staggered tops: stacks at the same page offset would all map to the
    // same cache sets and evict each other at every switch.
    void *top = static_cast<char *>(w.stack.sp) - (i % StackPool::kColorSteps) * StackPool::kColorStep;
    const size_t size = w.stack.size - (i % StackPool::kColorSteps) * StackPool::kColorStep;
    // Making a fiber enters its stack and comes straight back: under
    // ThreadSanitizer that round trip is recorded on the work-item's fiber.
#ifdef GPUHAL_THREAD_SANITIZER
    w.tsan = __tsan_create_fiber(0);
#endif
    tsan_switch(w.tsan);
    Fiber *wp = &w;
    w.fiber = ctx::fiber(std::allocator_arg, ctx::preallocated(top, size, w.stack), PooledStack{},
                         [wp](ctx::fiber &&main) { return work_item(wp, std::move(main)); });
    tsan_switch(s.main_tsan);
  }
  for (uint32_t remaining = items; remaining;) {
    for (uint32_t i = 0; i < items; ++i) {
      Fiber &w = f[i];
      if (!w.fiber) continue;
      s.current = &w;
      asan_leave(&s.main_fake, static_cast<char *>(w.stack.sp) - w.stack.size, w.stack.size);
      tsan_switch(w.tsan);
      w.fiber = std::move(w.fiber).resume();
      asan_arrive(s.main_fake, nullptr, nullptr);
      if (!w.fiber) {
        --remaining;
        tsan_switch(s.main_tsan);
#ifdef GPUHAL_THREAD_SANITIZER
        __tsan_destroy_fiber(w.tsan);
#endif
        w.tsan = nullptr;
      }
    }
    // A round ended: its count is what the work-items read when they go on.
    s.count_result = s.count_round;
    s.count_round = 0;
  }
  stacks.release(items, st.data());
  return true;
}

// A barrier reached in a group run as a loop: the kernel was not seen to
// use barriers (e.g. hidden behind a macro of another file). Recorded; the
// launch reports it.
void loop_barrier(void *flag) {
  static_cast<std::atomic<bool> *>(flag)->store(true, std::memory_order_relaxed);
}
int loop_barrier_count(void *flag, int predicate) {
  loop_barrier(flag);
  return predicate;
}

}  // namespace

namespace {

// Dynamic shared memory for a group (16-byte aligned, owned by `buffer`);
// false when there is no memory for it.
bool attach_dynamic_shared(gpuhal_host_group &g, std::unique_ptr<unsigned char[]> &buffer, uint32_t bytes) {
  g.dynamic_shared_bytes = bytes;
  if (!bytes) return true;
  buffer.reset(new (std::nothrow) unsigned char[bytes + 15]);
  if (!buffer) return false;
  g.dynamic_shared = reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(buffer.get()) + 15) & ~uintptr_t(15));
  return true;
}

// The ids of the group of linear index gi. Groups of a kernel with
// barriers run in bands of kBand columns, row by row within a band (and
// chunks of consecutive indices go to one thread): neighbouring groups of a
// tiled kernel then share their rows of one matrix and, band by band, their
// columns of the other, which stay in the core's cache (a tiled matmul at
// N=1000 walks B's columns once per band instead of once per group row).
// Any order is correct: groups cannot wait for one another.
void banded_group_id(uint64_t gi, uint64_t gx, uint64_t gy, uint32_t id[3]) {
  constexpr uint64_t kBand = 8;
  const uint64_t in_plane = gi % (gx * gy);
  const uint64_t band = in_plane / (kBand * gy), in_band = in_plane % (kBand * gy);
  const uint64_t width = std::min(kBand, gx - band * kBand);  // the last band may be narrower
  id[0] = uint32_t(band * kBand + in_band % width);
  id[1] = uint32_t(in_band / width);
  id[2] = uint32_t(gi / (gx * gy));
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
    banded_group_id(gi, gx, gy, g.group_id);
    for (int d = 0; d < 3; ++d) {
      g.local_size[d] = L.block[d];
      g.num_groups[d] = L.grid[d];
    }
    std::unique_ptr<unsigned char[]> dyn;
    if (!attach_dynamic_shared(g, dyn, L.dynamic_shared_bytes)) {
      no_memory = true;
      return;
    }
    if (loops) {
      g.barrier = loop_barrier;
      g.barrier_count = loop_barrier_count;
      g.scheduler = &misuse;
      g.scratch = scratch;
      L.kernel->run_group_loops(&g, L.args.data());
      return;
    }
    if (!fibers) {
      g.barrier = loop_barrier;
      g.barrier_count = loop_barrier_count;
      g.scheduler = &misuse;
      L.kernel->run_group(&g, L.args.data());
      return;
    }
    if (!run_group_fibers(stacks, L.kernel, L.args.data(), g, L.block)) no_memory = true;
  };
  // A kernel without barriers runs a whole chunk of groups in one call of
  // its module (the arguments read and the work-item set once per chunk).
  auto run_range = [&](uint64_t first, uint64_t last) {
    gpuhal_host_group g{};
    for (int d = 0; d < 3; ++d) {
      g.local_size[d] = L.block[d];
      g.num_groups[d] = L.grid[d];
    }
    std::unique_ptr<unsigned char[]> dyn;  // one buffer for the chunk: its groups run one after the other
    if (!attach_dynamic_shared(g, dyn, L.dynamic_shared_bytes)) {
      no_memory = true;
      return;
    }
    g.barrier = loop_barrier;
    g.barrier_count = loop_barrier_count;
    g.scheduler = &misuse;
    g.prefetch_limits = L.prefetch_limits.empty() ? nullptr : L.prefetch_limits.data();
    L.kernel->run_groups(&g, L.args.data(), first, last);
  };
  const bool ranges = !fibers && L.kernel->run_groups != nullptr;
  // Groups are handed out in chunks (about eight per participant), so that
  // small groups do not pay a hand-out each.
  const uint64_t chunk = std::max<uint64_t>(1, groups / (uint64_t(pool.size()) * 8));
  // A failed gpuhal_assert stops the launch between batches of groups.
  gpuhal_host_assert_record *const asserted = L.assert_state;
  auto assert_failed = [asserted] { return asserted && __atomic_load_n(&asserted->failed, __ATOMIC_ACQUIRE) != 0; };
  pool.parallel_for((groups + chunk - 1) / chunk, [&](uint64_t c) {
    if (assert_failed()) return;
    if (ranges) {
      run_range(c * chunk, std::min(groups, (c + 1) * chunk));
      return;
    }
    std::unique_ptr<unsigned char[]> scratch;
    if (scratch_bytes) {
      scratch.reset(new (std::nothrow) unsigned char[scratch_bytes]);
      if (!scratch) {
        no_memory = true;
        return;
      }
    }
    const uint64_t end = std::min(groups, (c + 1) * chunk);
    for (uint64_t gi = c * chunk; gi < end && !assert_failed(); ++gi) run_group(gi, scratch.get());
  });
  if (assert_failed()) {
    // Every work-item of the launch is done: the message is complete. Read
    // and cleared for the module's next launch.
    std::string message = std::string("kernel '") + L.kernel->name + "': " +
                          std::string(asserted->message, strnlen(asserted->message, sizeof asserted->message));
    std::memset(asserted->message, 0, sizeof asserted->message);
    __atomic_store_n(&asserted->failed, 0, __ATOMIC_RELEASE);
    return message;
  }
  if (no_memory) return "out of memory for work-group fiber stacks, work-item variables or dynamic shared memory";
  if (misuse)
    return std::string("kernel '") + L.kernel->name +
           "' reached gpuhal_barrier but was compiled as barrier-free (its barrier was not visible in the source)";
  return "";
}

}  // namespace gpuhal::host
