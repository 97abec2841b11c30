// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin table's entries as compile-time values, for the layers'
// generated wrappers: support/entry_rules.hpp's, under the layers' names.
#pragma once

#include "entry_rules.hpp"

namespace gpuhal::detail::layers {

using support::arg_text;
using support::bits_of;
using support::entry_params;
using support::EntryId;
using support::EntryRules;
using support::EntryTraits;
using support::hex_text;
using support::kEntryCount;
using support::parameter_name;

}  // namespace gpuhal::detail::layers
