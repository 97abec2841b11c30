// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Helpers shared by the unit tests.
#pragma once

#include "catch_compat.hpp"
#include <cstdlib>
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
