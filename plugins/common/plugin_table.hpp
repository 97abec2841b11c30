// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin kit's table: how a backend declares its entries, fills its
// table and answers negotiation, all from the one list of entry points
// (gpuhal/plugin_entries.def).
//
// A backend:
//  1. declares every entry in its namespace, with the table's own signature
//     (a definition with another signature is then an overload the table
//     never sees, and the link fails naming the entry):
//        namespace gpuhal::mybackend {
//        #include "plugin_entries.inc"
//        // The entries this backend leaves NULL (reported unsupported).
//        constexpr plugin::EntryNames<1> kLeftOut{{"context_adopt"}};
//        }
//  2. defines the entries it implements, in any of its files, in that
//     namespace (not an anonymous one);
//  3. fills its table and emits gpuhal_plugin_negotiate, once, at global
//     scope (plugin_define.inc does both):
//        #define GPUHAL_PLUGIN_NAMESPACE gpuhal::mybackend
//        #define GPUHAL_PLUGIN_NAME "mybackend"
//        #include "plugin_define.inc"
//
// Adding an entry point: append it to the table in plugin.h and to
// plugin_entries.def; every backend then either defines it or lists it in
// kLeftOut (the build fails until one of the two holds).
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "entry_rules.hpp"
#include "gpuhal/plugin.h"
#include "plugin_support.hpp"

// The function type behind an entry of the table.
#define GPUHAL_PLUGIN_ENTRY_TYPE(name) std::remove_pointer_t<decltype(gpuhal_plugin_table_t::name)>

namespace gpuhal::plugin {

// A fixed list of entry names, searchable at compile time.
template <std::size_t N>
struct EntryNames {
  std::string_view names[N == 0 ? 1 : N];
  constexpr bool has(std::string_view name) const {
    for (std::size_t i = 0; i < N; ++i)
      if (names[i] == name) return true;
    return false;
  }
  // True when every name is an entry of the table (catches a misspelled
  // left-out entry, which would otherwise leave the real one unfilled).
  constexpr bool all_known() const;
};

// Every entry of the table, in table order.
inline constexpr EntryNames<0
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) +1
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
                            >
    kAllEntries{{
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) #name,
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
    }};

template <std::size_t N>
constexpr bool EntryNames<N>::all_known() const {
  for (std::size_t i = 0; i < N; ++i)
    if (!kAllEntries.has(names[i])) return false;
  return true;
}

// What the table holds for entry `Id` implemented by `Fn`: Fn behind the
// entry's argument rules that need only the arguments (support/
// entry_rules.hpp, from plugin_entries.def's GPUHAL_ENTRY_RULES lines). A
// broken rule fails the call with the rule's status and "<entry>:
// <param> = <value>: <rule>" as the last error, before Fn runs; so a backend
// does not check NULL outputs, unknown flags and kinds, zero sizes or
// dimensions itself. The rules that need the plugin's own objects (is this
// handle live, of which context) are the backend's to check.
template <support::EntryId Id, class F, F *Fn>
struct CheckedEntry;
template <support::EntryId Id, class R, class... A, R (*Fn)(A...)>
struct CheckedEntry<Id, R(A...), Fn> {
  static R call(A... a) {
    if constexpr (std::is_same_v<R, gpuhal_status_t>) {
      support::ArgumentCheck check(support::EntryTraits<Id>::name, support::entry_params<Id>);
      if (!support::EntryRules<Id>::check(check, std::forward_as_tuple(a...))) return fail(check.status(), check.report());
    }
    return Fn(a...);
  }
};

// A table of this core's ABI version and size, named, every entry NULL.
constexpr gpuhal_plugin_table_t empty_table(const char *name) {
  gpuhal_plugin_table_t t{};
  t.abi_version = GPUHAL_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = name;
  return t;
}

// The answer to the core's negotiation: this table when the core speaks the
// same major version, ABI_MISMATCH otherwise.
gpuhal_status_t negotiate(uint32_t core_max_abi, const gpuhal_plugin_table_t *mine, const gpuhal_plugin_table_t **out);

}  // namespace gpuhal::plugin

// The one symbol a plugin exports, answering with `table`.
#define GPUHAL_PLUGIN_DEFINE_NEGOTIATE(table)                                                                  \
  extern "C" GPUHAL_PLUGIN_EXPORT gpuhal_status_t gpuhal_plugin_negotiate(uint32_t core_max_abi,               \
                                                                          const gpuhal_plugin_table_t **out) { \
    return ::gpuhal::plugin::negotiate(core_max_abi, &(table), out);                                           \
  }
