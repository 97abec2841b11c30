// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "backend.hpp"

#include <string>

#include "gpuhal/error.hpp"

namespace gpuhal::detail {

void Backend::unsupported(const char *entry, const char *group) const {
  const std::string kind =
      std::string(group) == "optional" ? "an optional entry" : std::string("a ") + group + " entry";
  throw Error(Status::ERROR_NOT_SUPPORTED,
              "backend '" + name() + "' does not provide " + entry + " (" + kind + " of the plugin ABI)");
}

}  // namespace gpuhal::detail
