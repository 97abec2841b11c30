// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Loading a vendor library at run time: the one loader behind the CUDA
// driver, NVRTC, ROCr and amd_comgr.
//
// A plugin names the candidates in the order it prefers them (SONAMEs, or
// the one path a user forced), optionally a check that can refuse a
// candidate that opened (wrong version, not the library it claims to be),
// and the entry points it needs as a table of VendorSymbol built from its own
// X-macro list. Required entry points missing fail the load, naming every
// one; optional ones are left NULL (the feature is then reported as
// unsupported, never faked).
//
// Ownership: the caller owns an accepted library's handle and decides if it
// is ever dlclosed (the CUDA driver, NVRTC and ROCr never are: they keep
// threads and handlers that may outlive the plugin); a refused candidate is
// closed at once.
//
// Thread safety: none of its own; callers load under their own once-guard.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gpuhal::plugin {

// One entry point: where its address goes, whether the plugin needs it, and
// the exported names to try in order (`fallback` after `name`; nullptr for
// none).
struct VendorSymbol {
  void **slot;
  bool required;
  const char *name;
  const char *fallback;
};

// The slot of a function pointer, for VendorSymbol tables.
template <class F>
void **slot_of(F **fn) {
  return reinterpret_cast<void **>(fn);
}

// Why a candidate that opened is refused ("" accepts it).
using VendorCheck = std::function<std::string(void *handle, const std::string &name)>;

struct VendorLibrary {
  void *handle = nullptr;
  std::string path;  // the candidate that was accepted
  // Each candidate passed over, with dlerror's text or the check's reason.
  std::vector<std::pair<std::string, std::string>> refused;

  explicit operator bool() const { return handle != nullptr; }
  // "\n  <name>: <reason>" for each refused candidate.
  std::string tried() const;
  // The failure in one sentence: "cannot load <what> <name>: <reason>" when
  // one candidate was tried, "cannot load <what> (<name>: <reason>; ...)"
  // when several were.
  std::string failure(const std::string &what) const;
};

// Opens the first of `candidates` that dlopen loads (RTLD_NOW | RTLD_LOCAL)
// and `check` accepts.
VendorLibrary open_vendor_library(const std::vector<std::string> &candidates, const VendorCheck &check = {});

// Resolves every symbol into its slot with dlsym. Returns the names of the
// required ones that are missing, joined by ", " ("" when all are there).
std::string resolve_vendor_symbols(void *handle, const VendorSymbol *symbols, std::size_t count);

template <std::size_t N>
std::string resolve_vendor_symbols(void *handle, const VendorSymbol (&symbols)[N]) {
  return resolve_vendor_symbols(handle, symbols, N);
}

// open_vendor_library, then resolve_vendor_symbols. On failure returns an
// empty library (a candidate that lacks required symbols is closed) and sets
// `why` to failure(what), or to "<what> <path> lacks required entry points:
// <names>".
VendorLibrary load_vendor_library(const std::vector<std::string> &candidates, const std::string &what,
                                  const VendorSymbol *symbols, std::size_t count, std::string *why);

template <std::size_t N>
VendorLibrary load_vendor_library(const std::vector<std::string> &candidates, const std::string &what,
                                  const VendorSymbol (&symbols)[N], std::string *why) {
  return load_vendor_library(candidates, what, symbols, N, why);
}

}  // namespace gpuhal::plugin
