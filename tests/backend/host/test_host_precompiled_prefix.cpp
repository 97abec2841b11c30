// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's precompiled prefix (host_precompiled_prefix.hpp): built
// beside a fresh cache's first module, loaded by the next ones (with or
// without constant arrays), never for modules with compiler options, and a
// header the compiler refuses (here: one overwritten with garbage) is
// removed, the module compiled from its whole source, and the header built
// again by the next compile. Needs clang++ (the vectorizing compiler);
// sanitizer builds compile with GCC only and check that nothing is built.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "host_compiler.hpp"
#include "test_support.hpp"

using namespace gpuhal;

namespace {

bool clang_in_path() {
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t at = 0;
  while (at <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', at), dirs.size());
    const std::string dir = dirs.substr(at, end - at);
    if (!dir.empty() && ::access((dir + "/clang++").c_str(), X_OK) == 0) return true;
    at = end + 1;
  }
  return false;
}

// Whether this build's host plugin precompiles the prefix at all.
bool precompiles() {
  return std::string(host::kVectorizingCompiler) == "clang++" && clang_in_path();
}

std::vector<std::filesystem::path> with_extension(const std::string &dir, const std::string &ext) {
  std::vector<std::filesystem::path> out;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(e.path());
  return out;
}

// A module of one kernel writing `value` (distinct sources: each misses the cache).
int32_t run_writer(const Context &ctx, int value, const ModuleOptions &options = {}) {
  const std::string source = "GPUHAL_KERNEL void w(GPUHAL_GLOBAL int *x) { if (gpuhal_global_id(0) == 0) x[0] = " +
                             std::to_string(value) + "; }";
  Kernel k = Module::compile(ctx, source, options).kernel("w");
  DeviceArray x = device_array(ctx, {1}, dtypes::int32);
  k({1}, {32})(x);
  return x.copy_to_host().to_vector<int32_t>()[0];
}

}  // namespace

TEST_CASE("host precompiled prefix: built beside a fresh cache's first module and loaded by the next",
          "[host][kernel]") {
  const std::string dir = std::filesystem::temp_directory_path() / ("gpuhal-pch-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace);
  test::CapturedLog log("precompiled prefix");
  Context ctx = test::debug_host_context(dir);
  CHECK(run_writer(ctx, 1) == 1);
  if (!precompiles()) {
    CHECK(with_extension(dir, ".pch").empty());
    std::filesystem::remove_all(dir);
    return;
  }
  REQUIRE(with_extension(dir, ".pch").size() == 1);
  CHECK(with_extension(dir, ".h").size() == 1);
  CHECK(log.saw("built for later modules"));
  CHECK_FALSE(log.saw("compiling with the precompiled prefix"));
  log.clear();
  CHECK(run_writer(ctx, 2) == 2);
  CHECK(log.saw("compiling with the precompiled prefix"));

  SECTION("a module with constant arrays loads it too (they follow the prefix)") {
    log.clear();
    const std::vector<int32_t> table = {7, 8, 9};
    ModuleOptions options;
    options.constant("table", HostView::of(table));
    Kernel k = Module::compile(ctx,
                               "GPUHAL_KERNEL void c(GPUHAL_GLOBAL int *x) { x[gpuhal_global_id(0)] = "
                               "table[gpuhal_global_id(0)]; }",
                               options)
                   .kernel("c");
    DeviceArray x = device_array(ctx, {3}, dtypes::int32);
    k({1}, {3})(x);
    CHECK(x.copy_to_host().to_vector<int32_t>() == table);
    CHECK(log.saw("compiling with the precompiled prefix"));
  }
  SECTION("a module with compiler options compiles from its whole source") {
    log.clear();
    ModuleOptions options;
    options.compiler_options = "-DVALUE_UNUSED=1";
    CHECK(run_writer(ctx, 3, options) == 3);
    CHECK_FALSE(log.saw("compiling with the precompiled prefix"));
  }
  SECTION("a header the compiler refuses is removed, the module still builds, and the next compile rebuilds it") {
    const auto pch = with_extension(dir, ".pch").at(0);
    {
      std::ofstream f(pch, std::ios::binary | std::ios::trunc);
      f << "not a precompiled header";
    }
    log.clear();
    CHECK(run_writer(ctx, 4) == 4);
    CHECK(log.saw("refused the precompiled prefix"));
    CHECK(with_extension(dir, ".pch").empty());
    log.clear();
    CHECK(run_writer(ctx, 5) == 5);
    CHECK(log.saw("built for later modules"));
    REQUIRE(with_extension(dir, ".pch").size() == 1);
    log.clear();
    CHECK(run_writer(ctx, 6) == 6);
    CHECK(log.saw("compiling with the precompiled prefix"));
  }
  std::filesystem::remove_all(dir);
}
