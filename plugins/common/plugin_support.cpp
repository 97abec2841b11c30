// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "plugin_support.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

namespace gpuhal::plugin {
namespace {

// The calling thread's message. A thread's thread_local objects are
// destroyed before the process's static objects, so on the main thread a
// plugin entry called from a static destructor (a context destroyed at
// exit) would write into a destroyed string: after its destruction the
// message is no longer kept (t_gone, trivially destructible, says so).
thread_local bool t_gone = false;
struct LastError {
  std::string text;
  ~LastError() { t_gone = true; }
};
thread_local LastError t_last_error;

gpuhal_log_fn g_log = nullptr;
void *g_log_user = nullptr;
int32_t g_log_level = GPUHAL_LOG_WARN;

}  // namespace

gpuhal_status_t fail(gpuhal_status_t status, const std::string &message) {
  if (!t_gone) t_last_error.text = message;
  return status;
}

const char *last_error() {
  return t_gone ? "(the message is lost: the thread is exiting)" : t_last_error.text.c_str();
}

Options::Options(const gpuhal_init_args_t *args) {
  if (!args || !args->options) return;
  for (uint32_t i = 0; i < args->option_count; ++i) {
    const gpuhal_option_t &o = args->options[i];
    if (o.name && o.value) values_.emplace_back(o.name, o.value);
  }
}

std::optional<std::string> Options::get(const std::string &name) const {
  for (const auto &kv : values_)
    if (kv.first == name) return kv.second;
  return std::nullopt;
}

bool Options::get_int(const std::string &name, int64_t min, int64_t max, int64_t *out, std::string *error) const {
  auto v = get(name);
  if (!v) return true;
  const std::string &s = *v;
  bool digits = !s.empty() && s.size() <= 18;
  for (char c : s) digits = digits && c >= '0' && c <= '9';
  const int64_t n = digits ? std::strtoll(s.c_str(), nullptr, 10) : -1;
  if (!digits || n < min || n > max) {
    *error = name + "='" + s + "': expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
    return false;
  }
  *out = n;
  return true;
}

bool Options::get_bytes(const std::string &name, uint64_t *out, std::string *error) const {
  auto v = get(name);
  if (!v) return true;
  const std::string &s = *v;
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  uint64_t mult = 1;
  bool ok = i > 0 && i <= 19;
  if (ok && i < s.size()) {
    const char suf = s[i];
    mult = suf == 'K' || suf == 'k'   ? 1ull << 10
           : suf == 'M' || suf == 'm' ? 1ull << 20
           : suf == 'G' || suf == 'g' ? 1ull << 30
           : suf == 'T' || suf == 't' ? 1ull << 40
                                      : 0;
    ok = mult != 0 && i + 1 == s.size();
  }
  uint64_t n = 0;
  if (ok) {
    errno = 0;
    n = std::strtoull(s.substr(0, i).c_str(), nullptr, 10);
    ok = errno == 0 && !__builtin_mul_overflow(n, mult, &n);
  }
  if (!ok) {
    *error = name + "='" + s + "': expected a byte count such as 1048576, 64M or 2G";
    return false;
  }
  *out = n;
  return true;
}

void set_logger(const gpuhal_init_args_t *args) {
  if (!args) return;
  g_log = args->log;
  g_log_user = args->log_user;
  g_log_level = args->log_level;
}

void log(int32_t level, const std::string &message) {
  if (g_log && level <= g_log_level) g_log(g_log_user, level, message.c_str());
}

bool log_enabled(int32_t level) {
  return g_log && level <= g_log_level;
}

gpuhal_status_t write_properties(gpuhal_device_properties_t p, gpuhal_device_properties_t *out) {
  const uint32_t n = std::min<uint32_t>(out->struct_size, sizeof p);
  p.abi_version = GPUHAL_ABI_VERSION;
  p.struct_size = n;
  std::memcpy(out, &p, n);
  return GPUHAL_SUCCESS;
}

namespace {

// msync(MS_ASYNC) walks the mappings of the whole-page range and fails with
// ENOMEM where a page is not mapped; it starts no write-back (a no-op for
// data since Linux 2.6.19), so the check costs no I/O.
bool range_is_mapped(const void *p, uint64_t bytes) {
  static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t start = uintptr_t(p) & ~(page - 1);
  const uintptr_t end = uintptr_t(p) + bytes;  // no wrap: checked by the caller
  return msync(reinterpret_cast<void *>(start), size_t(end - start), MS_ASYNC) == 0 || errno != ENOMEM;
}

std::string range_text(const void *p, uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%p, +%llu)", p, static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace

gpuhal_status_t check_host_memory_args(const char *entry, HostArg kind, const void *p, uint64_t bytes, uint32_t flags) {
  constexpr uint32_t kKnown = GPUHAL_HOST_ALLOC_PORTABLE | GPUHAL_HOST_ALLOC_MAPPED | GPUHAL_HOST_ALLOC_WRITE_COMBINED;
  if (!p) return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": null pointer");
  if (bytes == 0 || bytes > SIZE_MAX || (kind == HostArg::Range && uintptr_t(p) + bytes < uintptr_t(p)))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": bad size " + std::to_string(bytes) +
                                                " (zero, or past the end of the address space)");
  if (flags & ~kKnown)
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": unknown flags " + std::to_string(flags));
  if (kind == HostArg::Range && !range_is_mapped(p, bytes))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": " + range_text(p, bytes) + " is not all mapped host memory");
  return GPUHAL_SUCCESS;
}

}  // namespace gpuhal::plugin
