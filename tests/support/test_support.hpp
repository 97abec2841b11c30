// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Helpers shared by the unit tests.
#pragma once

#include "catch_compat.hpp"
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gpuhal/gpuhal.hpp"

namespace test {

// A host-backend runtime found through the build tree, with extra options.
inline gpuhal::Runtime host_runtime(std::vector<std::pair<std::string, std::string>> options = {}) {
  gpuhal::Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  // ctest runs the kernel tests once more with the host backend's work-item
  // loops off (fibers only), and once with debug logging to catch a rewrite
  // that did not compile.
  if (const char *v = std::getenv("GPUHAL_HOST_WORK_ITEM_LOOPS")) c.set_option("GPUHAL_HOST_WORK_ITEM_LOOPS", v);
  if (const char *v = std::getenv("GPUHAL_LOG"); v && std::string(v) == "debug") c.log_level = gpuhal::LogLevel::Debug;
  for (auto &kv : options) c.set_option(kv.first, kv.second);
  return gpuhal::Runtime::load(c);
}

// The log messages that contain `filter` ("" : all), with their levels,
// captured while the object lives: it installs the process's log handler
// and restores stderr when destroyed (one at a time). Which messages are
// produced is still each runtime's level.
class CapturedLog {
 public:
  explicit CapturedLog(std::string filter = "") {
    auto lines = lines_;
    gpuhal::set_log_handler([lines, filter](gpuhal::LogLevel level, const std::string &message) {
      if (message.find(filter) == std::string::npos) return;
      std::lock_guard<std::mutex> lock(lines->mu);
      lines->text.emplace_back(level, message);
    });
  }
  ~CapturedLog() { gpuhal::set_log_handler(nullptr); }
  CapturedLog(const CapturedLog &) = delete;
  CapturedLog &operator=(const CapturedLog &) = delete;
  // True when a message of `level` (or any level) so far contains `text`.
  bool saw(const std::string &text) const { return find(nullptr, text); }
  bool saw(gpuhal::LogLevel level, const std::string &text) const { return find(&level, text); }
  // The messages so far, forgotten here.
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(lines_->mu);
    std::vector<std::string> out;
    for (auto &l : lines_->text) out.push_back(std::move(l.second));
    lines_->text.clear();
    return out;
  }
  void clear() { take(); }

 private:
  struct Lines {
    std::mutex mu;
    std::vector<std::pair<gpuhal::LogLevel, std::string>> text;
  };
  std::shared_ptr<Lines> lines_ = std::make_shared<Lines>();
  bool find(const gpuhal::LogLevel *level, const std::string &text) const {
    std::lock_guard<std::mutex> lock(lines_->mu);
    for (const auto &l : lines_->text)
      if ((!level || l.first == *level) && l.second.find(text) != std::string::npos) return true;
    return false;
  }
};

// A host context logging at debug level (for a CapturedLog), its kernels
// compiled into `kernel_cache`.
inline gpuhal::Context debug_host_context(const std::string &kernel_cache) {
  gpuhal::Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.log_level = gpuhal::LogLevel::Debug;
  c.set_option("GPUHAL_KERNEL_CACHE", kernel_cache);
  return gpuhal::Runtime::load(c).device(0).primary_context();
}

inline gpuhal::Context host_context(std::vector<std::pair<std::string, std::string>> options = {}) {
  return host_runtime(std::move(options)).device(0).primary_context();
}

#ifdef GPUHAL_TEST_KERNEL_CACHE
// A host context whose kernels compile into the build's kernel cache (shared
// by every test: each source is compiled once per build).
inline gpuhal::Context kernel_context(std::vector<std::pair<std::string, std::string>> options = {}) {
  options.emplace_back("GPUHAL_KERNEL_CACHE", GPUHAL_TEST_KERNEL_CACHE);
  return host_context(std::move(options));
}
#endif

#ifdef GPUHAL_TEST_FAKE_CUDA
// A cuda-backend runtime over the fake CUDA driver, with extra options.
inline gpuhal::Runtime cuda_runtime(std::vector<std::pair<std::string, std::string>> options = {}) {
  gpuhal::Config c;
  c.backend = "cuda";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.set_option("GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA);
  for (auto &kv : options) c.set_option(kv.first, kv.second);
  return gpuhal::Runtime::load(c);
}
#endif

inline std::string fake_path(const char *file) {
  return std::string(GPUHAL_TEST_FAKES_DIR) + "/" + file;
}

inline std::string fake(const char *name) {
  return std::string(GPUHAL_TEST_FAKES_DIR) + "/libgpuhal-fake-" + name + ".so";
}

}  // namespace test

// Requires `expr` to throw gpuhal::Error with `status` and a message
// containing `text`.
#define REQUIRE_GPUHAL_ERROR(expr, st, text)                                      \
  do {                                                                            \
    try {                                                                         \
      (void)(expr);                                                               \
      FAIL("expected gpuhal::Error " << gpuhal::to_string(st) << " from " #expr); \
    } catch (const gpuhal::Error &e_) {                                           \
      INFO("message: " << e_.what());                                             \
      CHECK(e_.status() == (st));                                                 \
      CHECK_THAT(e_.what(), test::contains(text));                     \
    }                                                                             \
  } while (0)
