// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Helpers shared by the checks, and the list of every check.
#include <chrono>
#include <cstring>
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
    expect(e.status() == status, what + " failed with " + to_string(e.status()) + " (" + e.what() + "), expected " +
                                     to_string(status));
    expect(text.empty() || std::string(e.what()).find(text) != std::string::npos,
           what + ": the message '" + e.what() + "' does not say '" + text + "'");
    return;
  }
  throw Failure{what + " succeeded; expected " + to_string(status)};
}

void require(const Env &env, Capability capability, const char *what) {
  if (!env.runtime.supports(capability)) throw Unsupported{std::string("the plugin does not claim ") + what};
}

Module compile_kernels(Env &env, const char *source, const ModuleOptions &options) {
  if (!env.runtime.supports(Capability::Kernels)) throw Unsupported{"the plugin has no device-code entries"};
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
  if (got.size() != want.size())
    return std::to_string(got.size()) + " bytes instead of " + std::to_string(want.size());
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

const std::vector<Check> &all_checks() {
  static const std::vector<Check> checks = [] {
    std::vector<Check> c;
    add_abi_checks(c);
    add_device_checks(c);
    add_context_checks(c);
    add_memory_checks(c);
    add_transfer_checks(c);
    add_rect_copy_checks(c);
    add_managed_hint_checks(c);
    add_virtual_memory_checks(c);
    add_host_memory_checks(c);
    add_stream_checks(c);
    add_event_checks(c);
    add_callback_checks(c);
    add_barrier_checks(c);
    add_ipc_checks(c);
    add_stream_ordered_memory_checks(c);
    add_peer_access_checks(c);
    add_kernel_checks(c);
    add_graph_checks(c);
    add_feature_checks(c);
    add_kernel_dialect_checks(c);
    add_error_checks(c);
    return c;
  }();
  return checks;
}

}  // namespace conformance
}  // namespace gpuhal
