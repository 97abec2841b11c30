// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Runs conformance checks, each in a process of its own with a time limit.
//
// The parent never loads the plugin: for every check it forks a child that
// loads the plugin (Runtime::load with the given config), runs the check,
// destroys everything (so a hang or crash in teardown counts against the
// check) and reports through a pipe. A child that does not report within the
// limit is killed and the check fails as a hang; one that dies of a signal,
// or exits non-zero after reporting (a sanitizer's report at exit), fails
// too. Not thread-safe: call from one thread of a process that has not
// loaded the plugin itself.
#pragma once

#include <string>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {

enum class Outcome { Pass, Fail, Unsupported, Skipped };
const char *to_string(Outcome outcome);

struct Result {
  std::string name;
  Outcome outcome = Outcome::Fail;
  std::string detail;
  std::string needs;  // Unsupported: the capability it needs ("" when the reason is not the plugin's)
  double seconds = 0;
};

struct RunOptions {
  Config config;           // the backend to load and its settings
  double timeout_s = 120;  // per check; 0 for none
  bool isolate = true;     // false: run in this process (for debuggers), no time limit
  std::string self_exe;    // for the IPC checks' second process
};

// The "load" step: the plugin loads and has a device. Its detail names the
// backend, ABI and device count.
Result run_load(const RunOptions &options);
Result run_check(const Check &check, const RunOptions &options);

}  // namespace conformance
}  // namespace gpuhal
