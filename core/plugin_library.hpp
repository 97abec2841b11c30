// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// PluginLibrary: one opened, negotiated and initialised plugin.
//
// Owns the dlopen handle and a private copy of the plugin's table, widened to
// the core's table size (entries beyond the plugin's struct_size are NULL).
// With layers configured (Config::layers) the copy is the layers' table
// (core/layers/layer_chain.hpp), which calls the plugin's.
// Every call into the plugin that fails is turned into a gpuhal::Error here,
// in one place, with the plugin's per-thread message. The destructor calls
// shutdown() and dlclose(). Thread-safe after construction.
#pragma once

#include <memory>
#include <string>

#include "gpuhal/error.hpp"
#include "gpuhal/plugin.h"
#include "gpuhal/runtime.hpp"
#include "log.hpp"

namespace gpuhal::detail {
namespace layers {
class LayerChain;
}

class PluginLibrary {
 public:
  // Opens `path` (an absolute path, or a bare file name for the system
  // loader path). On failure returns nullptr and fills attempt->status and
  // attempt->message with why. Never throws for plugin problems.
  static std::unique_ptr<PluginLibrary> open(const std::string &path, const Config &config, const Logger &logger,
                                             LoadAttempt *attempt);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary &) = delete;
  PluginLibrary &operator=(const PluginLibrary &) = delete;

  const gpuhal_plugin_table_t &table() const { return table_; }
  const std::string &path() const { return path_; }
  const std::string &name() const { return name_; }
  uint32_t abi_version() const { return abi_version_; }
  const Logger &logger() const { return logger_; }
  int device_count() const { return device_count_; }
  // Why a plugin reports no devices, when it said ("" otherwise).
  const std::string &no_device_reason() const { return no_device_reason_; }

  // Throws gpuhal::Error when `status` is a failure: "<backend>: <call>: <the
  // plugin's message>" with the plugin's status code.
  void check(gpuhal_status_t status, const char *call) const {
    if (status != GPUHAL_SUCCESS) fail(status, call);
  }
  [[noreturn]] void fail(gpuhal_status_t status, const char *call) const;
  // The plugin's last_error(), or a note when it returned NULL.
  std::string last_message() const;
  // The most devices a plugin may report (an absurd count is refused
  // instead of iterated).
  static constexpr int32_t kMaxDevices = 4096;

 private:
  PluginLibrary() = default;
  // open()'s phases; each returns why the plugin is refused ("" when it is
  // not), with the status in *status.
  // The library loaded, its entry point asked for a table of the core's
  // major version, the table copied and its required entries and groups
  // checked.
  std::string bind(const std::string &path, Status *status);
  // The layers wrapped around the table, init with the configuration's
  // options, and the device count read.
  std::string start(const Config &config, const Logger &logger, Status *status);
  void *handle_ = nullptr;
  gpuhal_plugin_table_t table_{};
  std::string path_;
  std::string name_;
  std::string no_device_reason_;
  uint32_t abi_version_ = 0;
  int device_count_ = 0;
  bool initialised_ = false;
  uint32_t forks_ = 0;  // fork_count() when opened: a child of fork() neither shuts it down nor closes it
  Logger logger_;
  std::unique_ptr<layers::LayerChain> layers_;  // null without layers
};

// Formats a version as "1.0".
std::string version_string(uint32_t version);

}  // namespace gpuhal::detail
