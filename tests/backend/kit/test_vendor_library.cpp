// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin kit's vendor-library loader (plugins/common/vendor_library.*):
// the one loader behind the CUDA driver, NVRTC, ROCr and amd_comgr. Tested
// with a real shared object (the project's fake plugin, which exports one
// symbol: gpuhal_plugin_negotiate) and paths that do not exist. (Not with a
// system library the test binary already has loaded, such as libm: a second
// dlopen of one leaves glibc bookkeeping LeakSanitizer cannot see the root
// of.)
#include <dlfcn.h>

#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "gpuhal/plugin.h"
#include "vendor_library.hpp"

using gpuhal::plugin::open_vendor_library;
using gpuhal::plugin::resolve_vendor_symbols;
using gpuhal::plugin::slot_of;
using gpuhal::plugin::VendorLibrary;
using gpuhal::plugin::VendorSymbol;

namespace {
const std::string kLib = std::string(GPUHAL_TEST_FAKES_DIR) + "/libgpuhal-fake-good.so";
// What the tests open stays open only for the test's process (one per case);
// closing it keeps LeakSanitizer's view clean.
struct Closer {
  void *h;
  ~Closer() {
    if (h) dlclose(h);
  }
};
}  // namespace

TEST_CASE("vendor libraries: the first candidate that loads is taken, and each one passed over is named",
          "[plugin-kit]") {
  const VendorLibrary lib = open_vendor_library({"/nonexistent/libgpuhal-vendor.so.9", kLib, "libc.so.6"});
  Closer closer{lib.handle};
  REQUIRE(lib);
  CHECK(lib.path == kLib);
  REQUIRE(lib.refused.size() == 1);
  CHECK(lib.refused[0].first == "/nonexistent/libgpuhal-vendor.so.9");
  CHECK(lib.refused[0].second.find("cannot open shared object file") != std::string::npos);
  CHECK(lib.tried().find("\n  /nonexistent/libgpuhal-vendor.so.9: ") == 0);
}

TEST_CASE("vendor libraries: a failure names the library, every candidate and why", "[plugin-kit][errors]") {
  const VendorLibrary one = open_vendor_library({"/nonexistent/libcuda.so.1"});
  CHECK_FALSE(one);
  CHECK(one.handle == nullptr);
  CHECK(one.failure("the CUDA driver") ==
        "cannot load the CUDA driver /nonexistent/libcuda.so.1: " + one.refused[0].second);

  // A check refuses a candidate that opened; the reason is kept.
  std::vector<std::string> checked;
  const VendorLibrary refused = open_vendor_library({"/nonexistent/a.so", kLib}, [&](void *h, const std::string &name) {
    checked.push_back(name);
    CHECK(dlsym(h, GPUHAL_PLUGIN_ENTRY_NAME) != nullptr);
    return std::string("too new for the driver");
  });
  CHECK_FALSE(refused);
  CHECK(checked == std::vector<std::string>{kLib});
  const std::string why = refused.failure("the fake library");
  CHECK(why.find("cannot load the fake library (/nonexistent/a.so: ") == 0);
  CHECK(why.find("; " + kLib + ": too new for the driver)") != std::string::npos);

  const VendorLibrary none = open_vendor_library({});
  CHECK_FALSE(none);
  CHECK(none.refused.empty());
}

TEST_CASE("vendor symbols: required ones missing are all named, optional ones are left null, fallbacks are tried",
          "[plugin-kit][errors]") {
  const VendorLibrary lib = open_vendor_library({kLib});
  Closer closer{lib.handle};
  REQUIRE(lib);
  gpuhal_plugin_negotiate_fn negotiate = nullptr, versioned = nullptr;
  void (*absent_optional)() = reinterpret_cast<void (*)()>(&closer);  // must be overwritten with null
  void (*absent_a)() = nullptr;
  void (*absent_b)() = nullptr;
  const VendorSymbol all_there[] = {
      {slot_of(&negotiate), true, GPUHAL_PLUGIN_ENTRY_NAME, nullptr},
      {slot_of(&versioned), true, "gpuhal_plugin_negotiate_v2", GPUHAL_PLUGIN_ENTRY_NAME},  // like cuMemAlloc_v2
      {slot_of(&absent_optional), false, "gpuhal_no_such_symbol", nullptr},
  };
  CHECK(resolve_vendor_symbols(lib.handle, all_there) == "");
  REQUIRE(negotiate != nullptr);
  const gpuhal_plugin_table_t *table = nullptr;
  CHECK(negotiate(GPUHAL_ABI_VERSION, &table) == GPUHAL_SUCCESS);
  CHECK(table != nullptr);
  CHECK(versioned == negotiate);
  CHECK(absent_optional == nullptr);

  const VendorSymbol missing[] = {
      {slot_of(&absent_a), true, "gpuhal_missing_a", nullptr},
      {slot_of(&negotiate), true, GPUHAL_PLUGIN_ENTRY_NAME, nullptr},
      {slot_of(&absent_b), true, "gpuhal_missing_b", "gpuhal_missing_b_fallback"},
  };
  CHECK(resolve_vendor_symbols(lib.handle, missing) == "gpuhal_missing_a, gpuhal_missing_b");
  CHECK(absent_a == nullptr);
  CHECK(absent_b == nullptr);
  CHECK(negotiate != nullptr);
}

TEST_CASE("vendor libraries: loading opens and resolves in one step, refusing a library that lacks an entry point",
          "[plugin-kit][errors]") {
  gpuhal_plugin_negotiate_fn negotiate = nullptr;
  void (*absent)() = nullptr;
  std::string why;
  const VendorSymbol good[] = {{slot_of(&negotiate), true, GPUHAL_PLUGIN_ENTRY_NAME, nullptr},
                               {slot_of(&absent), false, "gpuhal_x", nullptr}};
  const VendorLibrary lib = gpuhal::plugin::load_vendor_library({kLib}, "the fake library", good, &why);
  Closer closer{lib.handle};
  REQUIRE(lib);
  CHECK(why.empty());
  CHECK(negotiate != nullptr);

  const VendorSymbol bad[] = {{slot_of(&negotiate), true, GPUHAL_PLUGIN_ENTRY_NAME, nullptr},
                              {slot_of(&absent), true, "gpuhal_x", nullptr}};
  const VendorLibrary refused = gpuhal::plugin::load_vendor_library({kLib}, "the fake library", bad, &why);
  CHECK_FALSE(refused);
  CHECK(refused.path.empty());
  CHECK(why == "the fake library " + kLib + " lacks required entry points: gpuhal_x");

  const VendorLibrary missing =
      gpuhal::plugin::load_vendor_library({"/nonexistent/libfake.so"}, "the fake library", good, &why);
  CHECK_FALSE(missing);
  CHECK(why.find("cannot load the fake library /nonexistent/libfake.so: ") == 0);
}
