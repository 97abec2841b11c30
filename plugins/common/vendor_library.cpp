// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "vendor_library.hpp"

#include <dlfcn.h>

namespace gpuhal::plugin {

std::string VendorLibrary::tried() const {
  std::string out;
  for (const auto &r : refused) out += "\n  " + r.first + ": " + r.second;
  return out;
}

std::string VendorLibrary::failure(const std::string &what) const {
  if (refused.size() == 1) return "cannot load " + what + " " + refused[0].first + ": " + refused[0].second;
  std::string list;
  for (const auto &r : refused) list += (list.empty() ? "" : "; ") + r.first + ": " + r.second;
  return "cannot load " + what + " (" + list + ")";
}

VendorLibrary open_vendor_library(const std::vector<std::string> &candidates, const VendorCheck &check) {
  VendorLibrary lib;
  for (const auto &name : candidates) {
    dlerror();
    void *h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      lib.refused.emplace_back(name, e ? e : "dlopen failed");
      continue;
    }
    if (check) {
      std::string reason = check(h, name);
      if (!reason.empty()) {
        dlclose(h);
        lib.refused.emplace_back(name, std::move(reason));
        continue;
      }
    }
    lib.handle = h;
    lib.path = name;
    break;
  }
  return lib;
}

std::string resolve_vendor_symbols(void *handle, const VendorSymbol *symbols, std::size_t count) {
  std::string missing;
  for (std::size_t i = 0; i < count; ++i) {
    const VendorSymbol &s = symbols[i];
    void *p = dlsym(handle, s.name);
    if (!p && s.fallback) p = dlsym(handle, s.fallback);
    *s.slot = p;
    if (!p && s.required) missing += std::string(missing.empty() ? "" : ", ") + s.name;
  }
  return missing;
}

VendorLibrary load_vendor_library(const std::vector<std::string> &candidates, const std::string &what,
                                  const VendorSymbol *symbols, std::size_t count, std::string *why) {
  VendorLibrary lib = open_vendor_library(candidates);
  if (!lib) {
    *why = lib.failure(what);
    return lib;
  }
  const std::string missing = resolve_vendor_symbols(lib.handle, symbols, count);
  if (!missing.empty()) {
    *why = what + " " + lib.path + " lacks required entry points: " + missing;
    dlclose(lib.handle);
    lib.refused.emplace_back(lib.path, "lacks required entry points: " + missing);
    lib.handle = nullptr;
    lib.path.clear();
  }
  return lib;
}

}  // namespace gpuhal::plugin
