// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fault layer: fails chosen calls without reaching the plugin, for
// testing how a program copes with a driver's failures.
//
//   GPUHAL_FAULT=<entry>:<k>[:<status>][,...]   (syntax: support/fault_spec.hpp)
//
// The k-th call (from 1, counted from the chain's creation) of a named
// entry fails with the given gpuhal status, or with one fitting the entry
// (ERROR_OUT_OF_MEMORY for the allocating entries, ERROR_UNKNOWN otherwise),
// and the message "<entry>: fault injected by GPUHAL_FAULT". Every other call
// goes on. Entries without a status (shutdown, last_error, image_free) are
// never failed. A malformed GPUHAL_FAULT, or one naming no entry of the
// table, is refused when the chain is made.
// Thread safety: FaultRules is; the layer has no other state.
#pragma once

#include <cstring>
#include <string>
#include <type_traits>

#include "fault_spec.hpp"
#include "layer_entries.hpp"

namespace gpuhal::detail::layers {

class FaultLayer {
 public:
  // Throws gpuhal::Error (ERROR_INVALID_CONFIG) for a malformed spec.
  explicit FaultLayer(const std::string &spec);

  template <EntryId Id, class R, class Chain, class... A>
  R call(Chain &chain, size_t depth, A... a) {
    if constexpr (std::is_same_v<R, gpuhal_status_t>) {
      long code = 0;
      const char *name = EntryTraits<Id>::name;
      if (rules_.fires(name, kFallback, &code)) {
        if (code == kFallback) code = fallback_status(name);  // worked out only for a fault
        return chain.refuse(gpuhal_status_t(code), std::string(name) + ": fault injected by GPUHAL_FAULT");
      }
    }
    return chain.template invoke<Id, R>(depth, a...);
  }

 private:
  static constexpr long kFallback = -1;  // "the entry's own failure": no status has this value
  static long fallback_status(const char *entry);
  support::FaultRules rules_;
};

}  // namespace gpuhal::detail::layers
