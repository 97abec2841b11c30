// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin table's entries as compile-time values, from the one list
// (gpuhal/plugin_entries.def): what the layers' generated wrappers are
// written against.
//
//   EntryId::<name>          one value per entry, in table order
//   EntryTraits<Id>::member  the table member (a pointer to it)
//   EntryTraits<Id>::name    "<name>"
//   entry_params<Id>         the parameter names, space separated (the
//                            entry's GPUHAL_ENTRY_RULES line)
//   parameter_name(params, i) the i-th of them
#pragma once

#include <cstddef>
#include <string_view>

#include "gpuhal/plugin.h"

namespace gpuhal::detail::layers {

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

#define GPUHAL_PLUGIN_ENTRY(entry, group, minor)                         \
  template <>                                                            \
  struct EntryTraits<EntryId::entry> {                                   \
    static constexpr auto member = &gpuhal_plugin_table_t::entry;        \
    static constexpr const char *name = #entry;                          \
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

}  // namespace gpuhal::detail::layers
