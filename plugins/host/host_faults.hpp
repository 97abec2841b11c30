// The host plugin's fault mode, for testing how everything above a plugin
// copes with failures: GPUHAL_HOST_FAULT=<entry>:<k>[,<entry>:<k>...] makes
// the k-th call (counted from 1, from the init that read the setting) of the
// named plugin entry fail with a status fitting it (ERROR_OUT_OF_MEMORY for
// allocating entries, ERROR_UNKNOWN otherwise) and the message
// "<entry>: fault injected by GPUHAL_HOST_FAULT". Re-read at every init, so
// a new runtime can aim at another call site. Without the setting the check
// is one relaxed atomic load.
#pragma once

#include <string>

#include "gpuhal/plugin.h"

namespace gpuhal::host {

// Parses and installs `spec` ("" clears). Returns false with `error` set on
// a malformed spec.
bool set_faults(const std::string &spec, std::string *error);
// GPUHAL_SUCCESS, or the injected failure for this call of `entry`.
gpuhal_status_t injected_fault(const char *entry);

}  // namespace gpuhal::host

#define HOST_FAULT_POINT(entry) \
  if (const gpuhal_status_t fault_ = ::gpuhal::host::injected_fault(entry)) return fault_
