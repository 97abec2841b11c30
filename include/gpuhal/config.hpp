// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Configuration: every GPUHAL_* environment variable, parsed once.
//
// Config::from_environment() is the only place gpuhal reads the environment.
// The resulting value is passed down explicitly (to Runtime::load, and from
// there to the plugin's init as options). Path-bearing variables are read
// with secure_getenv semantics: in a setuid / elevated process they are
// ignored (and that is logged).
#pragma once

#include "gpuhal/capability.hpp"
#include "gpuhal/cxx_standard.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuhal {

enum class LogLevel : int32_t { Error = 0, Warn = 1, Info = 2, Debug = 3 };

struct Config {
  // GPUHAL_BACKEND: "host", "cuda", "hsa" or an absolute path to a plugin.
  // Empty: the first backend with at least one device, in the order cuda,
  // hsa, host.
  std::string backend;
  // GPUHAL_REQUIRE ("kernels,graphs": capability names, capability.hpp):
  // what the program needs. The default selection skips a backend that
  // lacks any of them (saying so at info level and in Runtime::attempts, so
  // gpuhal-info shows it); an explicit `backend` is used all the same, with a
  // warning naming what it lacks, and a call that needs a missing capability
  // then fails with ERROR_NOT_SUPPORTED. Empty: nothing required.
  std::vector<Capability> required;
  // GPUHAL_PLUGIN_PATH: extra absolute directories searched first.
  std::vector<std::string> plugin_path;
  // GPUHAL_VENDORS_PATH: directories of plugin manifests (the OpenCL ICD
  // loader's /etc/OpenCL/vendors convention): each <name>.plugin file holds
  // the absolute path of one installed plugin, which GPUHAL_BACKEND=<name>
  // then finds and the default selection tries after the GPU backends and
  // before the host backend. Default /etc/gpuhal/vendors; ignored (the
  // default kept) in setuid/elevated processes.
  std::vector<std::string> vendor_dirs{"/etc/gpuhal/vendors"};
  // GPUHAL_LOG: error | warn (default) | info | debug.
  LogLevel log_level = LogLevel::Warn;
  // GPUHAL_MAX_PENDING_DEALLOCS_COUNT: the deferred deallocation queue of a
  // context is flushed when it holds more items than this (default 10).
  uint64_t max_pending_deallocs_count = 10;
  // GPUHAL_MAX_PENDING_DEALLOCS_RATIO: ... or more bytes than this fraction
  // of the device's memory (default 0.2, in [0, 1]).
  double max_pending_deallocs_ratio = 0.2;
  // GPUHAL_MEMORY_MANAGER: "default" (also when empty), "pool", or an
  // absolute path to a memory-manager shared object (memory_manager.h).
  std::string memory_manager;
  // GPUHAL_LAYERS: the layers between the core and the plugin
  // (docs/layers.md), the first the one the core calls: any of
  // "validation", "trace", "leak", "fault", each once. Empty: none, and the
  // plugin's own table is called directly.
  std::vector<std::string> layers;
  // GPUHAL_TRACE_FILE: the trace layer writes a Chrome trace-event JSON file
  // here instead of log lines (a path: ignored in elevated processes).
  std::string trace_file;
  // GPUHAL_LEAK_CHECK=fail (default report): a process in which the leak
  // layer found leaks exits with status 1.
  bool leak_check_fail = false;
  // Every GPUHAL_* variable, handed to the plugin's init (the plugin
  // validates the ones it owns, e.g. GPUHAL_HOST_DEVICES).
  std::vector<std::pair<std::string, std::string>> plugin_options;
  // Messages about ignored variables, shown when the runtime loads.
  std::vector<std::string> notes;

  // Value of a plugin option, if set.
  std::optional<std::string> option(const std::string &name) const;
  // Sets (or replaces) the variable `name` as if the environment held
  // `value`: every one is handed to the plugin's init, and the core's own
  // (GPUHAL_BACKEND, _REQUIRE, _PLUGIN_PATH, _VENDORS_PATH, _LOG,
  // _MAX_PENDING_DEALLOCS_COUNT / _RATIO, _MEMORY_MANAGER, _LAYERS,
  // _TRACE_FILE, _LEAK_CHECK) set their field above too, replacing it.
  // Throws ERROR_INVALID_CONFIG naming the variable and a bad value, leaving
  // the Config as it was.
  Config &set_option(const std::string &name, const std::string &value);

  // Reads the process environment. `elevated` is true in setuid processes.
  // Throws ERROR_INVALID_CONFIG naming the variable and the bad value.
  static Config from_environment();
  // The same parse over any lookup (tests, fuzzers). `names` are the
  // variable names present (for collecting GPUHAL_* plugin options).
  using Lookup = std::function<std::optional<std::string>(const std::string &)>;
  static Config parse(const std::vector<std::string> &names, const Lookup &lookup, bool elevated);
};

// Variables whose values are paths; ignored in elevated processes.
bool is_path_variable(const std::string &name);

}  // namespace gpuhal
