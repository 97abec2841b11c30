// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// How much stack each kernel of a host module needs per work-item, from the
// compiler's call graph (GCC's -fcallgraph-info=su: every function's frame
// and its calls), carried with the module image to module_load.
//
// A work-item of a kernel with barriers runs on a fiber stack of
// GPUHAL_HOST_FIBER_STACK bytes; a deeper call chain would overflow it and
// crash the process. The launch compares instead (host_kernel.cpp).
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "host_kernel.hpp"

namespace gpuhal::host {
namespace {

constexpr char kMagic[8] = {'G', 'H', 'S', 'T', 'A', 'C', 'K', '1'};

// The text between the first `"` after `key` and the next `"`.
bool quoted_after(const std::string &line, const std::string &key, std::string *out) {
  const size_t k = line.find(key);
  if (k == std::string::npos) return false;
  const size_t a = line.find('"', k + key.size());
  const size_t b = a == std::string::npos ? a : line.find('"', a + 1);
  if (b == std::string::npos) return false;
  *out = line.substr(a + 1, b - a - 1);
  return true;
}

}  // namespace

std::string stack_usage_from_callgraph(const std::string &ci) {
  struct Node {
    uint64_t bytes = 0;
    bool dynamic = false;
    std::vector<std::string> calls;
  };
  std::map<std::string, Node> nodes;
  std::istringstream in(ci);
  for (std::string line; std::getline(in, line);) {
    std::string title, label, from, to;
    if (line.compare(0, 5, "node:") == 0 && quoted_after(line, "title:", &title) &&
        quoted_after(line, "label:", &label)) {
      // label: "<signature>\n<file:line:col>\n<N> bytes (static|dynamic[,bounded])"
      const size_t b = label.rfind(" bytes (");
      const size_t start = label.rfind("\\n", b);
      if (b == std::string::npos || start == std::string::npos) continue;
      Node &n = nodes[title];
      n.bytes = std::strtoull(label.c_str() + start + 2, nullptr, 10);
      n.dynamic = label.compare(b + 8, 7, "dynamic") == 0;
    } else if (line.compare(0, 5, "edge:") == 0 && quoted_after(line, "sourcename:", &from) &&
               quoted_after(line, "targetname:", &to)) {
      nodes[from].calls.push_back(to);
    }
  }
  // The deepest call chain from each function; 0 where it cannot be known
  // (recursion, alloca or variable-length arrays).
  std::map<std::string, uint64_t> depth;
  std::set<std::string> open;
  std::function<uint64_t(const std::string &)> deepest = [&](const std::string &f) -> uint64_t {
    if (auto it = depth.find(f); it != depth.end()) return it->second;
    auto n = nodes.find(f);
    if (n == nodes.end()) return 0;  // outside the module (libc, libm): not counted
    if (!open.insert(f).second || n->second.dynamic) return depth[f] = UINT64_MAX;
    uint64_t most = 0;
    for (const auto &c : n->second.calls) {
      const uint64_t d = deepest(c);
      if (d == UINT64_MAX) {
        most = UINT64_MAX;
        break;
      }
      most = std::max(most, d);
    }
    open.erase(f);
    return depth[f] = most == UINT64_MAX ? UINT64_MAX : n->second.bytes + most;
  };
  // A work-item runs __gpuhal_host::run_item<&name> (host_lowering.cpp),
  // which calls (or inlines) the kernel `static void name(...)`: its
  // mangled name holds "run_itemIXadL_ZL<length><name>".
  std::map<std::string, uint64_t> need;
  static const std::string kRoot = "run_itemIXadL_ZL";
  for (const auto &kv : nodes) {
    const size_t at = kv.first.find(kRoot);
    if (at == std::string::npos) continue;
    size_t p = at + kRoot.size(), len = 0;
    while (p < kv.first.size() && kv.first[p] >= '0' && kv.first[p] <= '9' && len < 100000)
      len = len * 10 + size_t(kv.first[p++] - '0');
    if (len == 0 || p + len > kv.first.size()) continue;
    const uint64_t d = deepest(kv.first);
    if (d != UINT64_MAX) need[kv.first.substr(p, len)] = d;
  }
  std::string out;
  for (const auto &kv : need) out += kv.first + " " + std::to_string(kv.second) + "\n";
  return out;
}

void append_stack_usage(std::vector<unsigned char> *image, const std::string &text) {
  if (text.empty()) return;
  image->insert(image->end(), text.begin(), text.end());
  uint64_t n = text.size();
  unsigned char len[8];
  std::memcpy(len, &n, 8);
  image->insert(image->end(), len, len + 8);
  image->insert(image->end(), kMagic, kMagic + 8);
}

std::map<std::string, uint64_t> read_stack_usage(const void *image, uint64_t size, uint64_t *elf_size) {
  std::map<std::string, uint64_t> out;
  *elf_size = size;
  const auto *b = static_cast<const unsigned char *>(image);
  if (size < 16 || std::memcmp(b + size - 8, kMagic, 8) != 0) return out;
  uint64_t n = 0;
  std::memcpy(&n, b + size - 16, 8);
  if (n > size - 16) return out;
  *elf_size = size - 16 - n;
  std::istringstream in(std::string(reinterpret_cast<const char *>(b + *elf_size), size_t(n)));
  std::string name;
  uint64_t bytes = 0;
  while (in >> name >> bytes) out[name] = std::max(out[name], bytes);
  return out;
}

}  // namespace gpuhal::host
