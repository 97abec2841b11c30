// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The conformance suite: what every gpuhal backend must do, written once
// against the public C++ API and run over any plugin (gpuhal-conform runs
// it; ctest runs gpuhal-conform over every plugin of the build).
//
// A check is a function of an Env (the plugin's runtime and the primary
// context of its device 0) that returns normally when the plugin keeps the
// contract, throws Failure saying what was wrong, or throws Unsupported when
// the plugin does not claim the optional feature the check needs. Any other
// gpuhal::Error escaping a check is a failure too. Each check states its
// contract in one line (`--list` prints them).
//
// Checks run in a process of their own (see runner.hpp): a check may crash
// or hang the plugin without hiding the others, and each starts from a
// freshly loaded plugin. Files are cut by object; each registers its own
// checks (RegisterChecks below).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"

namespace gpuhal {
namespace conformance {

// Thrown by a check that found the plugin breaking its contract.
struct Failure {
  std::string message;
};
// Thrown by a check whose optional feature the plugin does not claim.
// `needs` names that feature's capability (to_string(Capability)); it is
// empty when the reason is the machine's or the device's, not the plugin's
// (one device, too little memory, no kernel compiler installed). A run's
// expectations are checked against it (tests/check_conform_run.py): an
// unsupported check must need a capability the plugin does not claim, or
// be named as unsupported there.
struct Unsupported {
  std::string message;
  std::string needs = "";
};

struct Env {
  Runtime runtime;
  Context ctx;
  // This program (gpuhal-conform), started again as the second process of
  // the IPC checks: `self --ipc-peer BACKEND MODE HANDLE_TEXT`.
  std::string self_exe;
};

struct Check {
  const char *name;      // object.what, e.g. "transfers.zero_size"
  const char *contract;  // one line: what the plugin must do
  void (*run)(Env &);
  // The check's time limit, in multiples of the run's --timeout: a check
  // that moves gigabytes declares more, so that a slow machine (or a
  // loaded one) reports it slow, not hung. Finishing past --timeout but
  // within the budget passes, noted as slow.
  double budget = 1;
};

// Fails the check with `message` unless `condition` holds.
void expect(bool condition, const std::string &message);
// Fails the check unless `fn` throws gpuhal::Error with `status` (and, when
// `text` is not empty, a message containing it). `what` names the call.
void expect_error(const std::function<void()> &fn, Status status, const std::string &text, const std::string &what);
// Unsupported unless the plugin claims `capability`.
void require(const Env &env, Capability capability, const char *what);

// Compiles a kernel source; Unsupported when the plugin has no device code,
// or when its compiler (NVRTC, amd_comgr) is not installed here.
Module compile_kernels(Env &env, const char *source, const ModuleOptions &options = {});
// A byte pattern that differs from its shifted and reversed selves.
std::vector<uint8_t> pattern(size_t bytes, uint8_t seed);
// The index of the first byte where `got` differs from `want`, as text
// ("" when equal).
std::string first_difference(const std::vector<uint8_t> &got, const std::vector<uint8_t> &want);
// Sleeps `ms` milliseconds (work that takes a while inside callbacks).
void sleep_ms(int ms);
// Reads `array` back (contiguous bytes in C order).
std::vector<uint8_t> bytes_of(const DeviceArray &array);

// Checks register themselves: each file of checks defines, at namespace
// scope,
//   const RegisterChecks registered{{"object.what", "contract", fn}, ...};
// (as the test registrars of Unified Runtime and liboffload do). Files
// register as the linker orders their static initialisers (the build's
// source list, tests/conformance/CMakeLists.txt), checks within a file in
// their order there. A name registered twice is a build error of the suite:
// all_checks() aborts saying so.
struct RegisterChecks {
  RegisterChecks(std::initializer_list<Check> checks);
};

// Every registered check, in the order they run.
const std::vector<Check> &all_checks();

// The second process of the IPC checks (gpuhal-conform --ipc-peer ...).
// Returns the process's exit status: 0 when the peer saw and wrote what it
// was asked to, 1 with a message on stderr otherwise.
int ipc_peer_main(const std::string &backend, const std::string &mode, const std::string &handle_text);

}  // namespace conformance
}  // namespace gpuhal
