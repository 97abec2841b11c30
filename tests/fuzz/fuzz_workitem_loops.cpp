// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's work-item-loop rewrite of barrier kernels
// (plugins/host/kernels/host_workitem_loops.cpp): any source text, any kernel
// names. It must neither crash nor hang, and a kernel is either rewritten or
// skipped with a reason, never both. The input is the source; the kernels
// asked for are "k" and every GPUHAL_KERNEL name the text has.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>
#include <string>

#include "host_workitem_loops.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return 0;
  const std::string source(reinterpret_cast<const char *>(data), size);
  std::vector<std::string> names = {"k"};
  for (size_t at = source.find("GPUHAL_KERNEL void "); at != std::string::npos && names.size() < 8;
       at = source.find("GPUHAL_KERNEL void ", at + 1)) {
    size_t b = at + 19, e = b;
    while (e < source.size() && (std::isalnum(static_cast<unsigned char>(source[e])) || source[e] == '_')) ++e;
    if (e > b) names.push_back(source.substr(b, e - b));
  }
  const auto r = gpuhal::host::make_work_item_loops(source, names);
  std::set<std::string> done(r.kernels.begin(), r.kernels.end());
  for (const auto &s : r.skipped) {
    if (s.second.empty()) __builtin_trap();  // a reason is always given
    if (done.count(s.first) && std::count(names.begin(), names.end(), s.first) == 1) __builtin_trap();
  }
  if (r.kernels.empty() != r.text.empty()) __builtin_trap();
  return 0;
}
