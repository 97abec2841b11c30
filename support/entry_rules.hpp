// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin table's entries as compile-time values, and their argument
// rules (the GPUHAL_ENTRY_RULES lines of gpuhal/plugin_entries.def) as code:
// one place for both the checks every in-tree plugin gets from its kit
// (plugins/common/plugin_table_fill.inc: the rules that need nothing but
// the arguments) and the validation layer's (core/layers/: the same, plus
// what needs to know the plugin's live objects).
//
//   EntryId::<name>            one value per entry, in table order
//   EntryTraits<Id>::member    the table member; ::name "<name>"
//   entry_params<Id>           the parameter names, space separated
//   EntryRules<Id>::check(c, args)  runs the entry's rules over a tuple of
//                              its arguments with the checker `c`; false at
//                              the first broken one (c.report() says which)
//   ArgumentCheck              the checker of the rules that need only the
//                              arguments; the others pass (a deriving
//                              checker hides them with its own)
//
// Thread safety: all of it is per call. Header-only, neutral ground: the
// core and the plugins may both include it.
#pragma once

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "gpuhal/plugin.h"

namespace gpuhal::support {

enum class EntryId {
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) name,
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
};

inline constexpr size_t kEntryCount = 0
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) +1
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
    ;

template <EntryId Id>
struct EntryTraits;
#define GPUHAL_PLUGIN_ENTRY(entry, group, minor)                  \
  template <>                                                     \
  struct EntryTraits<EntryId::entry> {                            \
    static constexpr auto member = &gpuhal_plugin_table_t::entry; \
    static constexpr const char *name = #entry;                   \
  };
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY

// The parameter names of each entry's rules line. Every entry has its line:
// the count below fails to compile otherwise.
template <EntryId Id>
inline constexpr const char *entry_params = nullptr;
#define GPUHAL_ENTRY_RULES(entry, names, rules) \
  template <>                                   \
  inline constexpr const char *entry_params<EntryId::entry> = names;
#define GPUHAL_PLUGIN_ENTRY(name, group, minor)
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
#undef GPUHAL_ENTRY_RULES

inline constexpr size_t kRulesCount = 0
#define GPUHAL_ENTRY_RULES(entry, names, rules) +1
#define GPUHAL_PLUGIN_ENTRY(name, group, minor)
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
#undef GPUHAL_ENTRY_RULES
    ;
static_assert(kRulesCount == kEntryCount, "every entry of plugin_entries.def needs its GPUHAL_ENTRY_RULES line");

// The i-th name of a space-separated parameter list ("?" past its end).
constexpr std::string_view parameter_name(std::string_view params, size_t i) {
  while (true) {
    const size_t space = params.find(' ');
    if (i == 0) return params.empty() ? std::string_view("?") : params.substr(0, space);
    if (space == std::string_view::npos) return "?";
    params.remove_prefix(space + 1);
    --i;
  }
}

template <class T>
uint64_t bits_of(T value) {
  if constexpr (std::is_pointer_v<T>)
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(value));
  else
    return static_cast<uint64_t>(value);
}

// An argument as text, for reports and traces: pointers and handles in hex
// ("NULL" for 0), device addresses (parameters named dst, src, ptr, at,
// base) in hex, strings quoted (cut at 64 bytes), other numbers in decimal.
inline bool is_address_parameter(std::string_view name) {
  return name == "dst" || name == "src" || name == "ptr" || name == "at" || name == "base";
}
inline std::string hex_text(uint64_t v) {
  if (v == 0) return "NULL";
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}
template <class T>
std::string arg_text(std::string_view name, T value) {
  if constexpr (std::is_same_v<T, const char *>) {
    if (!value) return "NULL";
    std::string s(value);
    if (s.size() > 64) s = s.substr(0, 64) + "...";
    return "\"" + s + "\"";
  } else if constexpr (std::is_pointer_v<T>) {
    return hex_text(bits_of(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(value));
    return buf;
  } else if constexpr (std::is_integral_v<T>) {
    if (is_address_parameter(name)) return hex_text(static_cast<uint64_t>(value));
    return std::to_string(value);
  } else {
    return "?";
  }
}

// The handles the rules name by kind (EVENT(i), MODULE(i), ...).
enum class HandleKind { event, module, kernel, graph, graph_exec, mem_pool };
inline const char *article(HandleKind k) {
  switch (k) {
    case HandleKind::event: return "an event";
    case HandleKind::module: return "a module";
    case HandleKind::kernel: return "a kernel";
    case HandleKind::graph: return "a graph";
    case HandleKind::graph_exec: return "a graph exec";
    case HandleKind::mem_pool: return "a memory pool";
  }
  return "a handle";
}

// The rules that need only the arguments. Each returns true when the rule
// holds; otherwise false, with status() and report() ("<entry>: <param> =
// <value>: <rule>") set.
class ArgumentCheck {
 public:
  ArgumentCheck(const char *entry, const char *params) : entry_(entry), params_(params) {}

  template <class T>
  bool context(T h, size_t i) {
    return h || fail(GPUHAL_ERROR_INVALID_HANDLE, i, h, "a context must not be NULL");
  }
  template <class T>
  bool stream(T, size_t) {
    return true;  // NULL is the default stream; the rest needs the plugin's streams
  }
  template <class T>
  bool own_stream(T h, size_t i) {
    return bits_of(h) > 2 ||
           fail(GPUHAL_ERROR_INVALID_HANDLE, i, h, "a default stream is not made by stream_create and is never destroyed");
  }
  template <class T>
  bool handle(HandleKind kind, T h, size_t i) {
    return h || fail(GPUHAL_ERROR_INVALID_HANDLE, i, h, std::string(article(kind)) + " must not be NULL");
  }
  bool events(const gpuhal_event_t *list, uint32_t count, size_t i) {
    if (count == 0) return true;
    if (!list) return fail(GPUHAL_ERROR_INVALID_VALUE, i, list, "must not be NULL when count > 0");
    for (uint32_t k = 0; k < count; ++k)
      if (!list[k]) return fail(GPUHAL_ERROR_INVALID_HANDLE, i, list, "event " + std::to_string(k) + " is NULL");
    return true;
  }
  bool ordinal(int32_t v, size_t i) {
    return v >= 0 || fail(GPUHAL_ERROR_INVALID_VALUE, i, v, "a device ordinal must not be negative");
  }
  template <class T>
  bool not_null(T p, size_t i, const char *rule) {
    return bits_of(p) != 0 || fail(GPUHAL_ERROR_INVALID_VALUE, i, p, rule);
  }
  template <class T>
  bool struct_out(T *p, size_t i) {
    if (!p) return fail(GPUHAL_ERROR_INVALID_VALUE, i, p, "an output struct must not be NULL");
    return p->struct_size >= 8 ||
           fail(GPUHAL_ERROR_INVALID_VALUE, i, p, "struct_size must be set (at least {abi_version, struct_size})");
  }
  template <class T>
  bool nonzero(T v, size_t i) {
    return bits_of(v) != 0 || fail(GPUHAL_ERROR_INVALID_VALUE, i, v, "must not be 0");
  }
  bool flags(uint32_t v, size_t i, uint32_t known) {
    if ((v & ~known) == 0) return true;
    char buf[64];
    std::snprintf(buf, sizeof buf, "unknown flag bits 0x%x (known: 0x%x)", v & ~known, known);
    return fail(GPUHAL_ERROR_INVALID_VALUE, i, v, buf);
  }
  bool in_range(uint32_t v, size_t i, uint32_t lo, uint32_t hi) {
    return (v >= lo && v <= hi) ||
           fail(GPUHAL_ERROR_INVALID_VALUE, i, v, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  bool pow2_or_zero(uint64_t v, size_t i) {
    return (v & (v - 1)) == 0 || fail(GPUHAL_ERROR_INVALID_VALUE, i, v, "must be 0 or a power of two");
  }
  bool allocation(gpuhal_deviceptr_t, size_t) { return true; }
  bool ipc_mapping(gpuhal_deviceptr_t, size_t) { return true; }
  bool device_range(gpuhal_deviceptr_t, uint64_t, size_t, size_t) { return true; }
  bool copy_kind(uint32_t kind, size_t i) {
    return (kind >= GPUHAL_COPY_HOST_TO_DEVICE && kind <= GPUHAL_COPY_DEVICE_TO_DEVICE) ||
           fail(GPUHAL_ERROR_INVALID_VALUE, i, kind, "not a GPUHAL_COPY_* kind (1, 2 or 3)");
  }
  bool copy(uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src, uint64_t bytes, size_t k, size_t d,
            size_t s, size_t) {
    if (!copy_kind(kind, k)) return false;
    if (bytes && !dst) return fail(GPUHAL_ERROR_INVALID_VALUE, d, dst, "must not be NULL");
    if (bytes && !src) return fail(GPUHAL_ERROR_INVALID_VALUE, s, src, "must not be NULL");
    return true;
  }
  bool rect(const gpuhal_copy_rect_t *r, size_t i) {
    if (!r) return fail(GPUHAL_ERROR_INVALID_VALUE, i, r, "must not be NULL");
    if (r->struct_size < sizeof(gpuhal_copy_rect_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, i, r,
                  "struct_size " + std::to_string(r->struct_size) + " is shorter than gpuhal_copy_rect_t (" +
                      std::to_string(sizeof(gpuhal_copy_rect_t)) + ")");
    return true;
  }
  bool launch(const gpuhal_launch_config_t *c, size_t i) {
    if (!c) return fail(GPUHAL_ERROR_INVALID_VALUE, i, c, "must not be NULL");
    if (c->struct_size < sizeof(gpuhal_launch_config_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, i, c, "struct_size shorter than gpuhal_launch_config_t");
    const char axis[] = "xyz";
    for (int k = 0; k < 3; ++k)
      if (c->grid[k] == 0 || c->block[k] == 0)
        return fail(GPUHAL_ERROR_INVALID_VALUE, i, c,
                    std::string(c->grid[k] == 0 ? "grid." : "block.") + axis[k] +
                        " is 0 (every dimension is at least 1)");
    return true;
  }
  bool args(void *const *list, uint32_t count, size_t i) {
    if (count == 0) return true;
    if (!list) return fail(GPUHAL_ERROR_INVALID_VALUE, i, list, "must not be NULL when arg_count > 0");
    for (uint32_t k = 0; k < count; ++k)
      if (!list[k]) return fail(GPUHAL_ERROR_INVALID_VALUE, i, list, "argument " + std::to_string(k) + " points nowhere");
    return true;
  }
  bool location(int32_t v, size_t i) {
    return v >= GPUHAL_LOCATION_HOST ||
           fail(GPUHAL_ERROR_INVALID_VALUE, i, v, "a device ordinal or GPUHAL_LOCATION_HOST (-1)");
  }
  bool vm_access(uint32_t v, size_t i) {
    return v == GPUHAL_VM_ACCESS_NONE || v == GPUHAL_VM_ACCESS_READ || v == GPUHAL_VM_ACCESS_READ_WRITE ||
           fail(GPUHAL_ERROR_INVALID_VALUE, i, v, "not a GPUHAL_VM_ACCESS_* value (0, 1 or 3)");
  }
  bool not_in_callback() { return true; }

  gpuhal_status_t status() const { return status_; }
  const std::string &report() const { return report_; }

 protected:
  template <class T>
  bool fail(gpuhal_status_t status, size_t i, T value, const std::string &rule) {
    const std::string_view name = parameter_name(params_, i);
    return fail_text(status, std::string(name) + " = " + arg_text(name, value) + ": " + rule);
  }
  bool fail_text(gpuhal_status_t status, const std::string &what) {
    status_ = status;
    report_ = std::string(entry_) + ": " + what;
    return false;
  }
  const char *entry_;
  const char *params_;

 private:
  gpuhal_status_t status_ = GPUHAL_SUCCESS;
  std::string report_;
};

// EntryRules<Id>::check(checker, tuple of the arguments): the entry's rules,
// in the order its line gives them.
template <EntryId Id>
struct EntryRules;
#define CONTEXT(i) &&c.context(std::get<i>(a), i)
#define STREAM(i) &&c.stream(std::get<i>(a), i)
#define OWN_STREAM(i) &&c.own_stream(std::get<i>(a), i)
#define EVENT(i) &&c.handle(HandleKind::event, std::get<i>(a), i)
#define MODULE(i) &&c.handle(HandleKind::module, std::get<i>(a), i)
#define KERNEL(i) &&c.handle(HandleKind::kernel, std::get<i>(a), i)
#define GRAPH(i) &&c.handle(HandleKind::graph, std::get<i>(a), i)
#define GRAPH_EXEC(i) &&c.handle(HandleKind::graph_exec, std::get<i>(a), i)
#define MEM_POOL(i) &&c.handle(HandleKind::mem_pool, std::get<i>(a), i)
#define EVENTS(p, n) &&c.events(std::get<p>(a), std::get<n>(a), p)
#define ORDINAL(i) &&c.ordinal(std::get<i>(a), i)
#define OUT(i) &&c.not_null(std::get<i>(a), i, "an output pointer must not be NULL")
#define NONNULL(i) &&c.not_null(std::get<i>(a), i, "must not be NULL")
#define STRUCT_OUT(i) &&c.struct_out(std::get<i>(a), i)
#define NONZERO(i) &&c.nonzero(std::get<i>(a), i)
#define FLAGS(i, known) &&c.flags(std::get<i>(a), i, known)
#define IN_RANGE(i, lo, hi) &&c.in_range(std::get<i>(a), i, lo, hi)
#define POW2_OR_ZERO(i) &&c.pow2_or_zero(std::get<i>(a), i)
#define ALLOCATION(i) &&c.allocation(std::get<i>(a), i)
#define IPC_MAPPING(i) &&c.ipc_mapping(std::get<i>(a), i)
#define DEVICE_RANGE(p, n) &&c.device_range(std::get<p>(a), std::get<n>(a), p, n)
#define COPY(k, d, s, n) &&c.copy(std::get<k>(a), std::get<d>(a), std::get<s>(a), std::get<n>(a), k, d, s, n)
#define COPY_KIND(i) &&c.copy_kind(std::get<i>(a), i)
#define RECT(i) &&c.rect(std::get<i>(a), i)
#define LAUNCH(i) &&c.launch(std::get<i>(a), i)
#define ARGS(p, n) &&c.args(std::get<p>(a), std::get<n>(a), p)
#define LOCATION(i) &&c.location(std::get<i>(a), i)
#define VM_ACCESS(i) &&c.vm_access(std::get<i>(a), i)
#define NOT_IN_CALLBACK &&c.not_in_callback()
#define GPUHAL_PLUGIN_ENTRY(name, group, minor)
#define GPUHAL_ENTRY_RULES(entry, names, rules)                                         \
  template <>                                                                           \
  struct EntryRules<EntryId::entry> {                                                   \
    template <class Checker, class Tuple>                                               \
    static bool check([[maybe_unused]] Checker &c, [[maybe_unused]] const Tuple &a) {   \
      return true rules;                                                                \
    }                                                                                   \
  };
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_ENTRY_RULES
#undef GPUHAL_PLUGIN_ENTRY
#undef CONTEXT
#undef STREAM
#undef OWN_STREAM
#undef EVENT
#undef MODULE
#undef KERNEL
#undef GRAPH
#undef GRAPH_EXEC
#undef MEM_POOL
#undef EVENTS
#undef ORDINAL
#undef OUT
#undef NONNULL
#undef STRUCT_OUT
#undef NONZERO
#undef FLAGS
#undef IN_RANGE
#undef POW2_OR_ZERO
#undef ALLOCATION
#undef IPC_MAPPING
#undef DEVICE_RANGE
#undef COPY
#undef COPY_KIND
#undef RECT
#undef LAUNCH
#undef ARGS
#undef LOCATION
#undef VM_ACCESS
#undef NOT_IN_CALLBACK

}  // namespace gpuhal::support
