// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin's C table, read directly: what the core cannot check for
// every call (writes within the caller's struct_size, messages of failed
// calls).
#include <dlfcn.h>

#include <cstddef>
#include <cstring>

#include "conformance.hpp"
#include "gpuhal/plugin.h"

namespace gpuhal {
namespace conformance {
namespace {

// The plugin's table through a second dlopen of the same file (the
// runtime's handle keeps it loaded: the table is the live one).
struct RawTable {
  void *handle = nullptr;
  const gpuhal_plugin_table_t *table = nullptr;
  explicit RawTable(const std::string &path) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    expect(handle != nullptr, "dlopen of the plugin " + path + " failed");
    void *sym = dlsym(handle, GPUHAL_PLUGIN_ENTRY_NAME);
    expect(sym != nullptr, "the plugin has no " GPUHAL_PLUGIN_ENTRY_NAME);
    gpuhal_plugin_negotiate_fn negotiate;
    std::memcpy(&negotiate, &sym, sizeof sym);
    expect(negotiate(GPUHAL_ABI_VERSION, &table) == GPUHAL_SUCCESS && table, "negotiation failed the second time");
  }
  ~RawTable() {
    if (handle) dlclose(handle);
  }
  RawTable(const RawTable &) = delete;
  RawTable &operator=(const RawTable &) = delete;
};

void properties_respect_struct_size(Env &env) {
  RawTable raw(env.runtime.plugin_path());
  struct {
    gpuhal_device_properties_t props;
    unsigned char canary[64];
  } buf;
  std::memset(&buf, 0xA5, sizeof buf);
  const uint32_t small = uint32_t(offsetof(gpuhal_device_properties_t, total_memory));
  buf.props.abi_version = GPUHAL_ABI_VERSION;
  buf.props.struct_size = small;
  const gpuhal_status_t st = raw.table->device_properties(0, &buf.props);
  const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&buf);
  bool intact = true;
  for (size_t i = small; i < sizeof buf; ++i) intact &= bytes[i] == 0xA5;
  expect(st == GPUHAL_SUCCESS, "device_properties failed with a shorter struct_size");
  expect(intact, "device_properties wrote past the caller's struct_size (" + std::to_string(small) + " bytes)");
}

void failed_call_leaves_message(Env &env) {
  RawTable raw(env.runtime.plugin_path());
  gpuhal_device_properties_t p{};
  p.abi_version = GPUHAL_ABI_VERSION;
  p.struct_size = sizeof p;
  const gpuhal_status_t st = raw.table->device_properties(env.runtime.device_count(), &p);
  const char *msg = raw.table->last_error();
  expect(st != GPUHAL_SUCCESS, "device_properties of an ordinal out of range succeeded");
  expect(msg != nullptr && *msg != '\0', "a failed call left no last_error() message");
}

void optional_groups_all_or_none(Env &env) {
  RawTable raw(env.runtime.plugin_path());
  const gpuhal_plugin_table_t *t = raw.table;
  // The core refuses half-filled groups at load; this says which group a
  // plugin author got wrong when it does. Groups from the one list of
  // entries (gpuhal/plugin_entries.def).
  struct Entry {
    const char *name, *group;
    bool present;
  };
  const Entry entries[] = {
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) {#name, #group, t->name != nullptr},
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
  };
  auto group_present = [&](const std::string &group) {
    int present = 0, members = 0;
    for (const auto &e : entries)
      if (group == e.group) {
        ++members;
        present += e.present;
      }
    expect(present == 0 || present == members, "the " + group + " entries are neither all set nor all NULL (" +
                                                   std::to_string(present) + " of " + std::to_string(members) + ")");
    return present != 0;
  };
  const struct {
    const char *group;
    Capability capability;
  } claims[] = {{"host_memory", Capability::HostMemory},
                {"ipc", Capability::Ipc},
                {"stream_ordered", Capability::StreamOrderedMemory},
                {"peer_access", Capability::PeerAccess},
                {"kernels", Capability::Kernels},
                {"graphs", Capability::Graphs},
                {"stream_priorities", Capability::StreamPriorities},
                {"rect_copies", Capability::RectCopies},
                {"managed_hints", Capability::ManagedHints},
                {"virtual_memory", Capability::VirtualMemory},
                {"context_limits", Capability::ContextLimits},
                {"memory_pools", Capability::DriverMemoryPools}};
  for (const auto &c : claims)
    expect(group_present(c.group) == env.runtime.supports(c.capability),
           std::string("the capability of the ") + c.group + " entries disagrees with the table");
  for (const auto &e : entries)
    expect(std::string(e.group) != "required" || e.present, std::string("required entry ") + e.name + " is NULL");
}

// plugin.h's rules for memcpy_rect_sync / memcpy_rect_async, called on the
// table directly (the core never submits a region that breaks them, so only
// this shows whether a plugin checks them): each broken rule is
// GPUHAL_ERROR_INVALID_VALUE with a message and writes nothing; an empty
// region succeeds; a region at odd addresses and pitches writes exactly
// its bytes, synchronously and on the default stream.
void copy_rect_rules(Env &env) {
  require(env, Capability::RectCopies, "rectangular copies");
  RawTable raw(env.runtime.plugin_path());
  const gpuhal_plugin_table_t *t = raw.table;
  gpuhal_context_t ctx = nullptr;
  expect(t->context_create(0, &ctx) == GPUHAL_SUCCESS && ctx, "context_create failed");
  constexpr uint64_t kBytes = 256;
  gpuhal_deviceptr_t src = 0, dst = 0;
  expect(t->mem_alloc(ctx, kBytes, &src) == GPUHAL_SUCCESS && t->mem_alloc(ctx, kBytes, &dst) == GPUHAL_SUCCESS,
         "mem_alloc failed");
  std::vector<uint8_t> pat(kBytes);
  for (size_t i = 0; i < pat.size(); ++i) pat[i] = uint8_t(i * 13 + 1);
  auto host = [](void *p) { return gpuhal_deviceptr_t(reinterpret_cast<uintptr_t>(p)); };
  expect(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, src, host(pat.data()), kBytes) == GPUHAL_SUCCESS &&
             t->memset_sync(ctx, dst, 0xEE, kBytes) == GPUHAL_SUCCESS,
         "filling the two allocations failed");
  auto read_dst = [&] {
    std::vector<uint8_t> out(kBytes);
    expect(t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, host(out.data()), dst, kBytes) == GPUHAL_SUCCESS,
           "reading back failed");
    return out;
  };
  auto region = [&](uint64_t width, uint64_t height, uint64_t depth, uint64_t pitch, uint64_t slice) {
    gpuhal_copy_rect_t r{};
    r.abi_version = GPUHAL_ABI_VERSION;
    r.struct_size = sizeof r;
    r.dst = dst + 1;
    r.src = src + 3;
    r.dst_pitch = r.src_pitch = pitch;
    r.dst_slice_pitch = r.src_slice_pitch = slice;
    r.width_bytes = width;
    r.height = height;
    r.depth = depth;
    return r;
  };
  struct Bad {
    const char *what;
    gpuhal_copy_rect_t rect;
    uint32_t kind;
  };
  gpuhal_copy_rect_t short_struct = region(5, 3, 1, 9, 0);
  short_struct.struct_size = uint32_t(sizeof(gpuhal_copy_rect_t) - 8);
  const Bad bad[] = {
      {"a struct_size shorter than gpuhal_copy_rect_t", short_struct, GPUHAL_COPY_DEVICE_TO_DEVICE},
      {"an unknown copy kind", region(5, 3, 1, 9, 0), 99},
      {"rows that overlap (pitch below the width)", region(16, 2, 1, 8, 0), GPUHAL_COPY_DEVICE_TO_DEVICE},
      {"slices that overlap (slice pitch below a slice's extent)", region(5, 3, 2, 9, 20),
       GPUHAL_COPY_DEVICE_TO_DEVICE},
      {"an extent past 2^64 bytes", region(5, uint64_t(1) << 62, 1, 16, 0), GPUHAL_COPY_DEVICE_TO_DEVICE},
  };
  for (const Bad &b : bad)
    for (int async = 0; async < 2; ++async) {
      const gpuhal_status_t st =
          async ? t->memcpy_rect_async(ctx, b.kind, &b.rect, nullptr) : t->memcpy_rect_sync(ctx, b.kind, &b.rect);
      expect(st == GPUHAL_ERROR_INVALID_VALUE, std::string(async ? "memcpy_rect_async" : "memcpy_rect_sync") +
                                                   " with " + b.what + " returned " + std::to_string(st) +
                                                   ", expected GPUHAL_ERROR_INVALID_VALUE");
      const char *msg = t->last_error();
      expect(msg && *msg, std::string("a refused rectangle (") + b.what + ") left no message");
    }
  expect(t->memcpy_rect_sync(ctx, GPUHAL_COPY_DEVICE_TO_DEVICE, nullptr) == GPUHAL_ERROR_INVALID_VALUE,
         "memcpy_rect_sync with a NULL rect did not return GPUHAL_ERROR_INVALID_VALUE");
  const gpuhal_copy_rect_t empty = region(5, 3, 0, 9, 27);
  expect(t->memcpy_rect_sync(ctx, GPUHAL_COPY_DEVICE_TO_DEVICE, &empty) == GPUHAL_SUCCESS,
         "an empty region (depth 0) was refused");
  expect(t->context_synchronize(ctx) == GPUHAL_SUCCESS, "context_synchronize failed");
  expect(read_dst() == std::vector<uint8_t>(kBytes, 0xEE), "a refused or empty rectangle wrote to its destination");
  // 2 slices of 3 rows of 5 bytes, pitch 9 and slice pitch 31 on both
  // sides, from src + 3 to dst + 1: once synchronously, once on the
  // default stream.
  for (int async = 0; async < 2; ++async) {
    expect(t->memset_sync(ctx, dst, 0xEE, kBytes) == GPUHAL_SUCCESS, "memset_sync failed");
    const gpuhal_copy_rect_t good = region(5, 3, 2, 9, 31);
    const gpuhal_status_t st = async ? t->memcpy_rect_async(ctx, GPUHAL_COPY_DEVICE_TO_DEVICE, &good, nullptr)
                                     : t->memcpy_rect_sync(ctx, GPUHAL_COPY_DEVICE_TO_DEVICE, &good);
    expect(st == GPUHAL_SUCCESS, std::string("a valid rectangle failed: ") + t->last_error());
    expect(t->context_synchronize(ctx) == GPUHAL_SUCCESS, "context_synchronize failed");
    std::vector<uint8_t> want(kBytes, 0xEE);
    for (uint64_t z = 0; z < 2; ++z)
      for (uint64_t y = 0; y < 3; ++y)
        for (uint64_t x = 0; x < 5; ++x) want[1 + z * 31 + y * 9 + x] = pat[3 + z * 31 + y * 9 + x];
    expect(read_dst() == want, std::string(async ? "memcpy_rect_async" : "memcpy_rect_sync") +
                                   " wrote other bytes than the region's, or wrong ones");
  }
  expect(t->mem_free(ctx, src) == GPUHAL_SUCCESS && t->mem_free(ctx, dst) == GPUHAL_SUCCESS, "mem_free failed");
  expect(t->context_destroy(ctx) == GPUHAL_SUCCESS, "context_destroy failed");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"abi.properties_respect_struct_size", "device_properties writes no more than the caller's struct_size bytes",
     properties_respect_struct_size},
    {"abi.failed_call_leaves_message", "a failed entry leaves a non-empty last_error() message",
     failed_call_leaves_message},
    {"abi.copy_rect_rules",
     "memcpy_rect_sync / _async refuse a short struct, an unknown kind, overlapping rows or slices and "
     "an overflowing extent (GPUHAL_ERROR_INVALID_VALUE, a message, nothing written), accept an empty "
     "region, and write exactly a region's bytes at odd addresses and pitches",
     copy_rect_rules},
    {"abi.optional_groups_all_or_none",
     "required entries are set; each optional group is set in full or not at all, as the capabilities "
     "say",
     optional_groups_all_or_none},
};

}  // namespace conformance
}  // namespace gpuhal
