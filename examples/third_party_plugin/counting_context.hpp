// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The counting plugin's context: what it made (device memory, IPC
// mappings, pinned and registered host memory, events, streams), all
// released by context_destroy.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace counting {

struct Event {
  bool timing = true;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

// Device memory: a memfd mapped shared, so that IPC can hand it to another
// process. The token in the memfd's name tells an opener that the
// descriptor number still names this allocation.
struct Allocation {
  uint64_t bytes = 0;
  int fd = -1;
  uint64_t token = 0;
};
struct HostRange {
  uint64_t bytes = 0;
  bool mapped = false;      // has a device address (GPUHAL_HOST_ALLOC_MAPPED)
  bool allocated = false;   // host_alloc (else host_register)
};
struct Context {
  std::mutex mu;  // guards the maps
  std::map<uintptr_t, Allocation> allocations;
  std::map<uintptr_t, uint64_t> opened;  // IPC mappings of other processes' memory
  std::map<uintptr_t, HostRange> host;   // pinned and registered host memory
  std::set<Event *> events;              // destroyed with the context if not before
  // Streams hold nothing (work runs at once), but each is a handle of its
  // own: plugin.h wants every live handle distinct.
  std::set<std::unique_ptr<char>> streams;
};

inline uint64_t page_round(uint64_t bytes) {
  const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
inline std::string memfd_name(uint64_t token) {
  char name[64];
  std::snprintf(name, sizeof name, "gpuhal-counting-%016llx", static_cast<unsigned long long>(token));
  return name;
}
// The range of `m` that contains [p, p + n), or m.end().
template <class M>
typename M::iterator containing(M &m, uintptr_t p, uint64_t n, uint64_t (*size_of)(const typename M::mapped_type &)) {
  auto it = m.upper_bound(p);
  if (it == m.begin()) return m.end();
  --it;
  return p - it->first + n <= size_of(it->second) ? it : m.end();
}
inline uint64_t alloc_size(const Allocation &a) {
  return a.bytes;
}
inline uint64_t host_size(const HostRange &r) {
  return r.bytes;
}

}  // namespace counting
