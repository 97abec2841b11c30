// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Small helpers every gpuhal plugin shares (static library, linked into
// each plugin; nothing here is exported).
//
//  - A per-thread last-error message, set together with the status returned.
//  - guard(): runs an entry's body and turns any C++ exception into a status
//    (nothing may unwind across the C ABI).
//  - Options copied from the init arguments, with strict number parsing.
//  - The core's log callback.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuhal/plugin.h"

namespace gpuhal::plugin {

// Fills a caller's versioned output struct (`{abi_version, struct_size}`
// first) from `full`, the plugin's own complete one: every member after the
// header, but no byte past the caller's struct_size (an older core's struct
// is shorter). The caller's header is left as it set it.
template <class T>
void write_versioned(T *out, const T &full) {
  constexpr size_t header = 2 * sizeof(uint32_t);
  const size_t size = out->struct_size < sizeof(T) ? out->struct_size : sizeof(T);
  if (size > header)
    std::memcpy(reinterpret_cast<char *>(out) + header, reinterpret_cast<const char *>(&full) + header, size - header);
}

// Records `message` for the calling thread and returns `status`.
gpuhal_status_t fail(gpuhal_status_t status, const std::string &message);
// The calling thread's last message ("" if none).
const char *last_error();

// Runs `body` (returning gpuhal_status_t); exceptions become statuses with a
// message naming `entry`.
template <class F>
gpuhal_status_t guard(const char *entry, F &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(GPUHAL_ERROR_OUT_OF_MEMORY, std::string(entry) + ": out of host memory");
  } catch (const std::exception &e) {
    return fail(GPUHAL_ERROR_UNKNOWN, std::string(entry) + ": " + e.what());
  } catch (...) {
    return fail(GPUHAL_ERROR_UNKNOWN, std::string(entry) + ": unknown exception");
  }
}

// Writes `p` into the core's struct, as much of it as the core's struct_size
// holds (the ABI's rule for structs that grow by appending), with this
// plugin's abi_version and the size written.
gpuhal_status_t write_properties(gpuhal_device_properties_t p, gpuhal_device_properties_t *out);

// The argument checks host_alloc and host_register share: `p` (host_alloc's
// output pointer, or the start of host_register's range) not null, `bytes`
// positive (and, for a range, not wrapping around the address space),
// `flags` only GPUHAL_HOST_ALLOC_* bits, and every byte of a range mapped
// in this process (a vendor driver page-locks the range, which fails on an
// unmapped page; the host backend must refuse it as they do, not register
// memory a later copy would fault on). Failures are ERROR_INVALID_VALUE
// naming `entry`.
enum class HostArg { Output, Range };
gpuhal_status_t check_host_memory_args(const char *entry, HostArg kind, const void *p, uint64_t bytes, uint32_t flags);

class Options {
 public:
  Options() = default;
  explicit Options(const gpuhal_init_args_t *args);
  std::optional<std::string> get(const std::string &name) const;
  // Parses a non-negative integer in [min, max]; returns false and sets
  // `error` (naming the variable and value) when it is not one.
  bool get_int(const std::string &name, int64_t min, int64_t max, int64_t *out, std::string *error) const;
  // Parses a byte count: digits with an optional K, M, G or T suffix
  // (powers of 1024). Same error rules.
  bool get_bytes(const std::string &name, uint64_t *out, std::string *error) const;

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// The core's logger, captured at init. Safe to call before init (no-op).
void set_logger(const gpuhal_init_args_t *args);
void log(int32_t level, const std::string &message);
// Whether a message of `level` would be logged (to skip building one).
bool log_enabled(int32_t level);

}  // namespace gpuhal::plugin
