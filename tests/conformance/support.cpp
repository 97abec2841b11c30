// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Helpers shared by the checks, and the list of every check.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {

void expect(bool condition, const std::string &message) {
  if (!condition) throw Failure{message};
}

void expect_error(const std::function<void()> &fn, Status status, const std::string &text, const std::string &what) {
  try {
    fn();
  } catch (const Error &e) {
    expect(e.status() == status,
           what + " failed with " + to_string(e.status()) + " (" + e.what() + "), expected " + to_string(status));
    expect(text.empty() || std::string(e.what()).find(text) != std::string::npos,
           what + ": the message '" + e.what() + "' does not say '" + text + "'");
    return;
  }
  throw Failure{what + " succeeded; expected " + to_string(status)};
}

void require(const Env &env, Capability capability, const char *what) {
  if (!env.runtime.supports(capability))
    throw Unsupported{std::string("the plugin does not claim ") + what, to_string(capability)};
}

Module compile_kernels(Env &env, const char *source, const ModuleOptions &options) {
  if (!env.runtime.supports(Capability::Kernels))
    throw Unsupported{"the plugin has no device-code entries", to_string(Capability::Kernels)};
  try {
    return Module::compile(env.ctx, source, options);
  } catch (const Error &e) {
    const std::string what = e.what();
    if (what.find("could not be loaded") != std::string::npos || what.find("cannot load") != std::string::npos)
      throw Unsupported{"no kernel compiler: " + what};
    throw;
  }
}

std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = uint8_t(seed + i * 131 + (i >> 8) + (i >> 16) * 7);
  return v;
}

std::string first_difference(const std::vector<uint8_t> &got, const std::vector<uint8_t> &want) {
  if (got.size() != want.size()) return std::to_string(got.size()) + " bytes instead of " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return "byte " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
  return "";
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::vector<uint8_t> bytes_of(const DeviceArray &array) {
  HostArray h = HostArray::empty(array.shape(), array.dtype());
  array.copy_to_host(h.view());
  std::vector<uint8_t> out(size_t(h.view().nbytes()));
  if (!out.empty()) std::memcpy(out.data(), h.view().data(), out.size());
  return out;
}

namespace {
// Function-local, so that it exists before any file's registrar runs.
std::vector<Check> &registry() {
  static std::vector<Check> checks;
  return checks;
}
}  // namespace

RegisterChecks::RegisterChecks(std::initializer_list<Check> checks) {
  registry().insert(registry().end(), checks.begin(), checks.end());
}

const std::vector<Check> &all_checks() {
  static const bool unique = [] {
    std::set<std::string> names;
    for (const Check &c : registry())
      if (!names.insert(c.name).second) {
        std::fprintf(stderr, "gpuhal-conform: the check '%s' is registered twice\n", c.name);
        std::abort();
      }
    return true;
  }();
  (void)unique;
  return registry();
}

}  // namespace conformance
}  // namespace gpuhal
