// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the host plugin's entry files share (host_plugin.cpp puts every
// entry in the table): the errors every entry reports the same way, and the
// entries kept in files of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gpuhal/plugin.h"
#include "host_plugin.hpp"
#include "plugin_support.hpp"
#include "plugin_table.hpp"

namespace gpuhal::host {

std::string hex(uint64_t v);
gpuhal_status_t bad_context(const char *entry);
gpuhal_status_t bad_stream(const char *entry);
// Blocking entries refuse to run on a stream worker (inside a callback).
gpuhal_status_t would_deadlock(const char *entry);
// The kernel failure since the last synchronising call, reported once.
gpuhal_status_t kernel_failure(HostContext *c);
// The stream position an event's last record stands for; false if never recorded.
bool event_dep(const std::shared_ptr<HostEvent> &e, Dep *out);

// The shape of every entry that works in a context: resolves the handle
// (ERROR_INVALID_HANDLE naming `entry`) and runs body(c) under guard() (an
// exception becomes a status naming `entry`). c stays valid for the call:
// the core destroys a context only when its last handle goes, and a call
// holds one.
template <class Body>
gpuhal_status_t in_context(gpuhal_context_t ctx, const char *entry, Body &&body) {
  HostContext *c = find_context(ctx);
  if (!c) return bad_context(entry);
  return plugin::guard(entry, [&]() -> gpuhal_status_t { return body(c); });
}

// The shape of every entry that works on a stream: in_context, then the
// stream handle resolved in that context (ERROR_INVALID_HANDLE naming
// `entry`; nullptr and the two default-stream handles name default streams),
// then body(c, s).
template <class Body>
gpuhal_status_t in_stream(gpuhal_context_t ctx, gpuhal_stream_t stream, const char *entry, Body &&body) {
  return in_context(ctx, entry, [&](HostContext *c) -> gpuhal_status_t {
    const std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream(entry);
    if (gpuhal_status_t st = c->captures.refusal(s.get(), s->is_default, entry)) return st;
    return body(c, s);
  });
}

// Every entry of the plugin table, with the table's own signature, defined
// in the file of its object, one file per object, named as in every backend (docs/architecture.md,
// "Backend layout"): host_plugin.cpp (lifecycle; it fills the table),
// host_device.cpp, host_context.cpp, host_memory.cpp (device and managed
// memory), host_pinned_memory.cpp (pinned, mapped and registered host
// memory), host_transfer.cpp, host_stream.cpp, host_event.cpp, host_graph.cpp,
// host_kernel.cpp and host_kernel_attributes.cpp (device code),
// host_ipc.cpp, host_virtual_memory.cpp, host_kept_memory.cpp.
#include "plugin_entries.inc"
// What the host backend leaves NULL: it has no native objects to hand out
// or adopt, and no context limits (gpuhal_printf writes straight to stdout,
// with no buffer to size; a work-item's stack is its fiber's or the worker
// thread's, fixed by the plugin). Memory pools as objects are left out:
// the core's caching MemoryPool over this backend's allocator is its pool
// (MemoryPoolKind::Caching); a second pool of the same malloc'd pages would
// add nothing.
constexpr plugin::EntryNames<10> kLeftOut{{"native_handle", "context_adopt", "context_set_limit", "context_get_limit",
                                           "mem_pool_create", "mem_pool_destroy", "mem_pool_alloc_async",
                                           "mem_pool_trim", "mem_pool_get_attribute", "mem_pool_set_attribute"}};

}  // namespace gpuhal::host
