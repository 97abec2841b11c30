#include "host_faults.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "plugin_support.hpp"

namespace gpuhal::host {
namespace {

struct Fault {
  std::string entry;
  long k = 0;
  long calls = 0;
};

std::atomic<bool> g_any{false};
std::mutex g_mu;
std::vector<Fault> g_faults;

bool allocating(const char *entry) {
  return std::strstr(entry, "alloc") != nullptr || std::strcmp(entry, "stream_create") == 0 ||
         std::strcmp(entry, "event_create") == 0 || std::strcmp(entry, "context_create") == 0;
}

}  // namespace

bool set_faults(const std::string &spec, std::string *error) {
  std::vector<Fault> parsed;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    const size_t colon = item.find(':');
    const std::string count = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (colon == 0 || colon == std::string::npos || count.empty() || count.size() > 9 ||
        count.find_first_not_of("0123456789") != std::string::npos || std::stol(count) == 0) {
      *error = "GPUHAL_HOST_FAULT='" + spec + "': expected <entry>:<k>[,...] with k >= 1";
      return false;
    }
    parsed.push_back({item.substr(0, colon), std::stol(count), 0});
    start = end + 1;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_faults = std::move(parsed);
  g_any.store(!g_faults.empty(), std::memory_order_release);
  return true;
}

gpuhal_status_t injected_fault(const char *entry) {
  if (!g_any.load(std::memory_order_acquire)) return GPUHAL_SUCCESS;
  std::lock_guard<std::mutex> lock(g_mu);
  bool hit = false;
  for (auto &f : g_faults)
    if (f.entry == entry && ++f.calls == f.k) hit = true;
  if (!hit) return GPUHAL_SUCCESS;
  return plugin::fail(allocating(entry) ? GPUHAL_ERROR_OUT_OF_MEMORY : GPUHAL_ERROR_UNKNOWN,
                      std::string(entry) + ": fault injected by GPUHAL_HOST_FAULT");
}

}  // namespace gpuhal::host
