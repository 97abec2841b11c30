// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The plugin kit's vendor-library loader (plugins/common/vendor_library.*):
// the one loader behind the CUDA driver, NVRTC, ROCr and amd_comgr. Tested
// against real libraries of the system (libm) and paths that do not exist.
#include <dlfcn.h>

#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "vendor_library.hpp"

using gpuhal::plugin::open_vendor_library;
using gpuhal::plugin::resolve_vendor_symbols;
using gpuhal::plugin::slot_of;
using gpuhal::plugin::VendorLibrary;
using gpuhal::plugin::VendorSymbol;

TEST_CASE("vendor libraries: the first candidate that loads is taken, and each one passed over is named",
          "[plugin-kit]") {
  const VendorLibrary lib = open_vendor_library({"/nonexistent/libgpuhal-vendor.so.9", "libm.so.6", "libc.so.6"});
  REQUIRE(lib);
  CHECK(lib.path == "libm.so.6");
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
  const VendorLibrary refused =
      open_vendor_library({"/nonexistent/a.so", "libm.so.6"}, [&](void *h, const std::string &name) {
        checked.push_back(name);
        CHECK(dlsym(h, "cos") != nullptr);
        return std::string("too new for the driver");
      });
  CHECK_FALSE(refused);
  CHECK(checked == std::vector<std::string>{"libm.so.6"});
  const std::string why = refused.failure("the math library");
  CHECK(why.find("cannot load the math library (/nonexistent/a.so: ") == 0);
  CHECK(why.find("; libm.so.6: too new for the driver)") != std::string::npos);

  const VendorLibrary none = open_vendor_library({});
  CHECK_FALSE(none);
  CHECK(none.refused.empty());
}

TEST_CASE("vendor symbols: required ones missing are all named, optional ones are left null, fallbacks are tried",
          "[plugin-kit][errors]") {
  const VendorLibrary lib = open_vendor_library({"libm.so.6"});
  REQUIRE(lib);
  double (*cos_fn)(double) = nullptr;
  double (*versioned)(double) = nullptr;
  void (*absent_optional)() = reinterpret_cast<void (*)()>(&lib);  // must be overwritten with null
  void (*absent_a)() = nullptr;
  void (*absent_b)() = nullptr;
  const VendorSymbol all_there[] = {
      {slot_of(&cos_fn), true, "cos", nullptr},
      {slot_of(&versioned), true, "cos_v2_gpuhal_test", "cos"},  // like cuMemAlloc_v2 -> cuMemAlloc
      {slot_of(&absent_optional), false, "gpuhal_no_such_symbol", nullptr},
  };
  CHECK(resolve_vendor_symbols(lib.handle, all_there) == "");
  REQUIRE(cos_fn != nullptr);
  CHECK(cos_fn(0.0) == 1.0);
  CHECK(versioned == cos_fn);
  CHECK(absent_optional == nullptr);

  const VendorSymbol missing[] = {
      {slot_of(&absent_a), true, "gpuhal_missing_a", nullptr},
      {slot_of(&cos_fn), true, "cos", nullptr},
      {slot_of(&absent_b), true, "gpuhal_missing_b", "gpuhal_missing_b_fallback"},
  };
  CHECK(resolve_vendor_symbols(lib.handle, missing) == "gpuhal_missing_a, gpuhal_missing_b");
  CHECK(absent_a == nullptr);
  CHECK(absent_b == nullptr);
  CHECK(cos_fn != nullptr);
}

TEST_CASE("vendor libraries: loading opens and resolves in one step, refusing a library that lacks an entry point",
          "[plugin-kit][errors]") {
  double (*cos_fn)(double) = nullptr;
  void (*absent)() = nullptr;
  std::string why;
  const VendorSymbol good[] = {{slot_of(&cos_fn), true, "cos", nullptr},
                               {slot_of(&absent), false, "gpuhal_x", nullptr}};
  const VendorLibrary lib = gpuhal::plugin::load_vendor_library({"libm.so.6"}, "the math library", good, &why);
  REQUIRE(lib);
  CHECK(why.empty());
  CHECK(cos_fn != nullptr);

  const VendorSymbol bad[] = {{slot_of(&cos_fn), true, "cos", nullptr}, {slot_of(&absent), true, "gpuhal_x", nullptr}};
  const VendorLibrary refused = gpuhal::plugin::load_vendor_library({"libm.so.6"}, "the math library", bad, &why);
  CHECK_FALSE(refused);
  CHECK(refused.path.empty());
  CHECK(why == "the math library libm.so.6 lacks required entry points: gpuhal_x");

  const VendorLibrary missing =
      gpuhal::plugin::load_vendor_library({"/nonexistent/libm.so.6"}, "the math library", good, &why);
  CHECK_FALSE(missing);
  CHECK(why.find("cannot load the math library /nonexistent/libm.so.6: ") == 0);
}
