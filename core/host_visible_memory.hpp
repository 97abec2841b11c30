// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// HostVisibleMemory: the backend's own allocations that host code addresses
// directly, kept valid host memory through Context::reset().
//
// Managed memory, write-combined pinned memory (the driver's cuMemHostAlloc)
// and, where device memory is host memory (the host backend), device memory
// exported through DLPack are read and written by host code that gpuhal
// never sees: a NumPy array, a DLPack consumer, a HostView. The driver frees
// all of it with its context ("Destroy all allocations and reset all state
// on the primary context", cuDevicePrimaryCtxReset), so after a reset such a
// reader would touch unmapped pages and the process would die.
//
// So the context tracks each such range while it is live. reset() calls
// save() once the context's work is done and before the plugin destroys the
// context: the pages of every live range are copied aside into anonymous
// memory. After the destroy, restore() moves each copy to the range's old
// addresses, only where nothing is mapped there any more (a placeholder
// mapping with MAP_FIXED_NOREPLACE first; never over a mapping the backend
// or anyone else still has). The ranges are then plain host memory with
// their last contents, unmapped when the allocation's last handle goes
// (release_rescued). gpuhal's own handles to them still refuse every use
// (ERROR_CONTEXT_DESTROYED): only raw host pointers keep working.
//
// Where the backend keeps the addresses mapped after its context went (a
// reservation, a cache: ROCr serves small blocks from chunks it keeps and
// hands a freed block to the next allocation), the copy cannot go back, and
// the backend's next allocation would share the live array's bytes. Such a
// backend keeps the memory itself instead (plugin ABI 1.17 mem_keep): save()
// offers it each live range first; a range it keeps stays the backend's
// allocation, at its address, with its contents, and is freed through
// mem_free_kept when its last handle goes (release_rescued says so). Only
// where neither works does restore() log an error naming the range; the
// memory then stays whatever the backend left there.
//
// Thread safety: every member locks; save() and restore() run inside
// reset(), which must not run concurrently with other use of the context.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "log.hpp"

namespace gpuhal::detail {

class HostVisibleMemory {
 public:
  HostVisibleMemory() = default;
  HostVisibleMemory(const HostVisibleMemory &) = delete;
  HostVisibleMemory &operator=(const HostVisibleMemory &) = delete;
  ~HostVisibleMemory();

  // A live allocation of the current context generation at [base, base + bytes).
  void track(uintptr_t base, uint64_t bytes);
  // Its release while the context still owns it (no effect when not tracked).
  void untrack(uintptr_t base);
  // Copies the pages of every live range aside (reset, before context_destroy).
  // With `keep` (the backend's mem_keep, true when it kept the allocation at
  // that base), each live range is offered to the backend first; a kept
  // range needs no copy. `keep` runs under this object's lock.
  void save(const Logger &logger, const std::function<bool(uintptr_t base)> &keep = {});
  // Puts the copies back at their addresses (reset, after context_destroy).
  void restore(const Logger &logger);
  // An allocation of an earlier generation is released. True when the
  // backend kept it (save's `keep`): the caller frees it (mem_free_kept).
  // Else unmaps its rescued pages once no other rescued allocation shares
  // them, and returns false.
  bool release_rescued(uintptr_t base);

 private:
  // Whole pages holding one or more ranges: copied aside, then rescued.
  struct Pages {
    uint64_t length = 0;
    void *copy = nullptr;          // the saved bytes (anonymous mapping) until restore()
    std::vector<uintptr_t> users;  // allocation bases inside
  };
  std::mutex mu_;
  std::map<uintptr_t, uint64_t> live_;       // base -> bytes
  std::map<uintptr_t, Pages> saved_;         // page start -> pages, between save() and restore()
  std::map<uintptr_t, Pages> rescued_;       // page start -> pages mapped at their old addresses
  std::map<uintptr_t, uintptr_t> rescued_by_base_;  // allocation base -> page start
  std::set<uintptr_t> kept_;                        // allocation bases the backend kept (mem_keep)
};

}  // namespace gpuhal::detail
