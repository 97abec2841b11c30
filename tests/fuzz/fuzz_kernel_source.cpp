// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The core's scanner of kernel sources (core/kernel_source.cpp), which reads
// every user's source before any backend sees it: any text. It must neither
// crash nor hang; it finds kernels or refuses with ERROR_COMPILATION_FAILED.
#include <cstdint>
#include <set>
#include <string>

#include "gpuhal/error.hpp"
#include "kernel_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16384) return 0;
  const std::string source(reinterpret_cast<const char *>(data), size);
  try {
    const auto scanned = gpuhal::detail::scan_kernel_source(source);
    if (scanned.kernels.empty()) __builtin_trap();  // "a source without kernels" is refused
    std::set<std::string> names;
    for (const auto &k : scanned.kernels) {
      if (k.name.empty() || !names.insert(k.name).second) __builtin_trap();  // unnamed or twice
      if (source.find(k.name) == std::string::npos) __builtin_trap();      // a name not in the text
    }
  } catch (const gpuhal::Error &e) {
    if (e.status() != gpuhal::Status::ERROR_COMPILATION_FAILED) __builtin_trap();
  }
  return 0;
}
