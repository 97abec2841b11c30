// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The layers gpuhal can put between the core and a plugin (docs/layers.md),
// enabled by GPUHAL_LAYERS or Config::layers: validation, trace, leak,
// fault.
#pragma once

#include "gpuhal/cxx_standard.hpp"

#include <string>
#include <vector>

namespace gpuhal {

struct LayerDescription {
  std::string name;         // as GPUHAL_LAYERS names it
  std::string description;  // one line: what it does, and its settings
};

// Every layer, in the order docs/layers.md lists them. Thread-safe.
std::vector<LayerDescription> available_layers();

}  // namespace gpuhal
