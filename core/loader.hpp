// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The loader: turns Config's backend selection into one PluginLibrary.
//
// Rules (design §3): GPUHAL_BACKEND names a backend ("host") or gives an
// absolute path; unset means the first backend with at least one device in
// the order cuda, hsa, host. A backend name N is looked up as
// libgpuhal-N.so in every GPUHAL_PLUGIN_PATH directory, then the core
// library's own directory, then the system loader path. Every candidate
// tried is recorded in `attempts` (and logged at debug level).
#pragma once

#include <memory>
#include <vector>

#include "plugin_library.hpp"

namespace gpuhal::detail {

struct Selection {
  std::unique_ptr<PluginLibrary> library;
  std::vector<LoadAttempt> attempts;
};

// Throws gpuhal::Error when nothing usable is found; its message names what
// was asked for and lists every attempt with its reason.
Selection select_backend(const Config &config, const Logger &logger);

// Tries every known backend (cuda, hsa, host, and a name or path given in
// config.backend) independently and unloads each again; one summary attempt
// per backend: the one that loaded, or the most telling failure.
std::vector<LoadAttempt> probe_backends(const Config &config, const Logger &logger);

// The directory holding libgpuhal itself (found with dladdr).
std::string core_library_directory();

}  // namespace gpuhal::detail
