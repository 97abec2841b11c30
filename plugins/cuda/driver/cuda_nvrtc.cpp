// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "cuda_nvrtc.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

#include "cuda_driver.hpp"
#include "plugin_support.hpp"
#include "vendor_library.hpp"

namespace gpuhal::cuda {
namespace {

std::mutex g_nvrtc_mu;
Nvrtc g_nvrtc;
std::string g_nvrtc_library;

// The libraries tried, newest first, starting at the driver's major.
std::vector<std::string> nvrtc_candidates(int driver_version) {
  const int top = driver_version > 0 ? driver_version / 1000 : 13;
  std::vector<std::string> names;
  for (int major = top; major >= 11; --major) names.push_back("libnvrtc.so." + std::to_string(major));
  names.push_back("libnvrtc.so");
  for (int major = top; major >= 11; --major)
    names.push_back("/usr/local/cuda/lib64/libnvrtc.so." + std::to_string(major));
  return names;
}

// Refuses a candidate that is not an NVRTC, or (unless forced) one newer
// than the driver, whose PTX the driver would refuse.
std::string check_candidate(void *handle, bool forced, int driver_version, int *major, int *minor) {
  auto version = reinterpret_cast<nvrtcResult (*)(int *, int *)>(dlsym(handle, "nvrtcVersion"));
  if (!version || version(major, minor) != NVRTC_SUCCESS) return "not an NVRTC (no nvrtcVersion)";
  if (!forced && driver_version > 0 && *major > driver_version / 1000)
    return "NVRTC " + std::to_string(*major) + "." + std::to_string(*minor) + " is newer than the CUDA " +
           cuda_version_text(driver_version) +
           " driver, which would refuse its PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)";
  return "";
}

void load_locked() {
  const int driver_version = driver().version;
  const bool forced = !g_nvrtc_library.empty();
  int major = 0, minor = 0;
  const plugin::VendorLibrary lib = plugin::open_vendor_library(
      forced ? std::vector<std::string>{g_nvrtc_library} : nvrtc_candidates(driver_version),
      [&](void *h, const std::string &) { return check_candidate(h, forced, driver_version, &major, &minor); });
  if (!lib) {
    g_nvrtc.why = "no usable NVRTC (the CUDA runtime compiler) for the CUDA " +
                  (driver_version > 0 ? cuda_version_text(driver_version) : std::string("(unknown version)")) +
                  " driver could be loaded; install the NVRTC of the driver's CUDA version or older, or set "
                  "GPUHAL_NVRTC to one. Tried:" +
                  lib.tried();
    return;
  }
  g_nvrtc.handle = lib.handle;
  g_nvrtc.path = lib.path;
  g_nvrtc.major = major;
  g_nvrtc.minor = minor;
  const plugin::VendorSymbol symbols[] = {
#define GPUHAL_NVRTC_REQUIRED(name, ret, params) {plugin::slot_of(&g_nvrtc.name), true, #name, nullptr},
#define GPUHAL_NVRTC_OPTIONAL(name, ret, params) {plugin::slot_of(&g_nvrtc.name), false, #name, nullptr},
      GPUHAL_NVRTC_API(GPUHAL_NVRTC_REQUIRED) GPUHAL_NVRTC_OPTIONAL_API(GPUHAL_NVRTC_OPTIONAL)
#undef GPUHAL_NVRTC_REQUIRED
#undef GPUHAL_NVRTC_OPTIONAL
  };
  const std::string missing = plugin::resolve_vendor_symbols(g_nvrtc.handle, symbols);
  if (!missing.empty()) {
    g_nvrtc.why = g_nvrtc.path + " lacks required entry points: " + missing;
    return;
  }
  int count = 0;
  if (g_nvrtc.nvrtcGetNumSupportedArchs && g_nvrtc.nvrtcGetSupportedArchs &&
      g_nvrtc.nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    g_nvrtc.archs.resize(size_t(count));
    if (g_nvrtc.nvrtcGetSupportedArchs(g_nvrtc.archs.data()) != NVRTC_SUCCESS) g_nvrtc.archs.clear();
    std::sort(g_nvrtc.archs.begin(), g_nvrtc.archs.end());
  }
  plugin::log(GPUHAL_LOG_DEBUG, "cuda: NVRTC " + std::to_string(g_nvrtc.major) + "." + std::to_string(g_nvrtc.minor) +
                                    " from " + g_nvrtc.path);
}

}  // namespace

void set_nvrtc_library(const std::string &path) {
  std::lock_guard<std::mutex> lock(g_nvrtc_mu);
  if (g_nvrtc.tried) return;  // the first init's choice stays
  g_nvrtc_library = path;
}

const Nvrtc *nvrtc(std::string *why) {
  std::lock_guard<std::mutex> lock(g_nvrtc_mu);
  if (!g_nvrtc.tried) {
    g_nvrtc.tried = true;
    load_locked();
  }
  if (!g_nvrtc.why.empty()) {
    *why = g_nvrtc.why;
    return nullptr;
  }
  return &g_nvrtc;
}

std::string nvrtc_name(const Nvrtc *n) {
  return "NVRTC " + std::to_string(n->major) + "." + std::to_string(n->minor);
}

std::string nvrtc_provenance() {
  std::lock_guard<std::mutex> lock(g_nvrtc_mu);
  return g_nvrtc.handle ? ", made by " + nvrtc_name(&g_nvrtc) + " (" + g_nvrtc.path + ")" : std::string();
}

gpuhal_status_t choose_arch(const Nvrtc *n, int cc, std::string *arch) {
  int chosen = cc;
  if (!n->archs.empty()) {
    if (cc < n->archs.front())
      return plugin::fail(GPUHAL_ERROR_COMPILATION_FAILED,
                          "module_compile: the device has compute capability " + std::to_string(cc / 10) + "." +
                              std::to_string(cc % 10) + ", and " + nvrtc_name(n) + " (" + n->path +
                              ") supports compute_" + std::to_string(n->archs.front()) + " to compute_" +
                              std::to_string(n->archs.back()) +
                              "; install an older NVRTC that still supports the device and set GPUHAL_NVRTC to it");
    chosen = n->archs.front();
    for (int a : n->archs)
      if (a <= cc) chosen = a;
    if (chosen != cc)
      plugin::log(GPUHAL_LOG_DEBUG, "cuda: " + nvrtc_name(n) + " has no compute_" + std::to_string(cc) +
                                        "; compiling for compute_" + std::to_string(chosen) +
                                        " (the driver JIT-compiles it for the device)");
  }
  *arch = "compute_" + std::to_string(chosen);
  return GPUHAL_SUCCESS;
}

}  // namespace gpuhal::cuda
