// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "hsa_runtime.hpp"


#include <cstdio>
#include <cstring>

#include "plugin_support.hpp"
#include "vendor_library.hpp"

namespace gpuhal::hsa {

Runtime &runtime() {
  static Runtime r;
  return r;
}

gpuhal_status_t Runtime::load(const std::string &library, std::string *why) {
  path = library;
  const plugin::VendorSymbol symbols[] = {
#define GPUHAL_HSA_REQUIRED(ret, name, params) {plugin::slot_of(&name), true, #name, nullptr},
#define GPUHAL_HSA_OPTIONAL(ret, name, params) {plugin::slot_of(&name), false, #name, nullptr},
      GPUHAL_HSA_API(GPUHAL_HSA_REQUIRED, GPUHAL_HSA_OPTIONAL)
#undef GPUHAL_HSA_REQUIRED
#undef GPUHAL_HSA_OPTIONAL
  };
  handle = plugin::load_vendor_library({library}, "the HSA runtime", symbols, why).handle;
  if (!handle) {
    unload();
    return GPUHAL_ERROR_DRIVER_NOT_LOADABLE;
  }
  return GPUHAL_SUCCESS;
}

gpuhal_status_t Runtime::start(std::string *why) {
  const hsa_status_t s = hsa_init();
  if (s != HSA_STATUS_SUCCESS) {
    *why = "hsa_init failed: " + describe(s);
    if (s == HSA_STATUS_ERROR_OUT_OF_RESOURCES) *why += " (no usable /dev/kfd: no AMD GPU or no access to it)";
    return status_of(s) == GPUHAL_ERROR_DRIVER ? GPUHAL_ERROR_INITIALIZATION_FAILED : status_of(s);
  }
  initialised = true;
  return GPUHAL_SUCCESS;
}

void Runtime::unload() {
  if (initialised && hsa_shut_down) hsa_shut_down();
  // ROCr is never dlclosed: its threads and the system event handler the
  // plugin registered with it may outlive the runtime object, and its
  // statics must outlive every late caller (as with the CUDA driver). A
  // later load() finds it loaded.
  *this = Runtime();
}

namespace {
const char *status_name(hsa_status_t s) {
  switch (s) {
#define NAME(x) \
  case x:       \
    return #x;
    NAME(HSA_STATUS_SUCCESS)
    NAME(HSA_STATUS_INFO_BREAK)
    NAME(HSA_STATUS_ERROR)
    NAME(HSA_STATUS_ERROR_INVALID_ARGUMENT)
    NAME(HSA_STATUS_ERROR_INVALID_QUEUE_CREATION)
    NAME(HSA_STATUS_ERROR_INVALID_ALLOCATION)
    NAME(HSA_STATUS_ERROR_INVALID_AGENT)
    NAME(HSA_STATUS_ERROR_INVALID_SIGNAL)
    NAME(HSA_STATUS_ERROR_INVALID_QUEUE)
    NAME(HSA_STATUS_ERROR_OUT_OF_RESOURCES)
    NAME(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT)
    NAME(HSA_STATUS_ERROR_NOT_INITIALIZED)
    NAME(HSA_STATUS_ERROR_INVALID_ISA)
    NAME(HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
    NAME(HSA_STATUS_ERROR_INVALID_EXECUTABLE)
    NAME(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
    NAME(HSA_STATUS_ERROR_EXCEPTION)
    NAME(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER)
    NAME(HSA_STATUS_ERROR_FATAL)
#undef NAME
    default:
      return nullptr;
  }
}
}  // namespace

std::string Runtime::describe(hsa_status_t s) const {
  const char *name = status_name(s);
  char code[16];
  std::snprintf(code, sizeof code, "0x%x", unsigned(s));
  std::string msg = name ? std::string(name) + " (" + code + ")" : std::string("hsa_status_t ") + code;
  const char *text = nullptr;
  if (hsa_status_string && hsa_status_string(s, &text) == HSA_STATUS_SUCCESS && text) {
    std::string t = text;
    // ROCr's texts repeat the name: "HSA_STATUS_ERROR_...: The runtime...".
    if (name && t.compare(0, std::strlen(name), name) == 0) t.erase(0, std::strlen(name));
    while (!t.empty() && (t[0] == ':' || t[0] == ' ')) t.erase(0, 1);
    if (!t.empty()) msg += ": " + t;
  }
  return msg;
}

gpuhal_status_t Runtime::status_of(hsa_status_t s) {
  switch (s) {
    case HSA_STATUS_SUCCESS:
      return GPUHAL_SUCCESS;
    case HSA_STATUS_ERROR_INVALID_ARGUMENT:
      return GPUHAL_ERROR_INVALID_VALUE;
    case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
    case HSA_STATUS_ERROR_INVALID_ALLOCATION:
      return GPUHAL_ERROR_OUT_OF_MEMORY;
    case HSA_STATUS_ERROR_INVALID_AGENT:
    case HSA_STATUS_ERROR_INVALID_SIGNAL:
    case HSA_STATUS_ERROR_INVALID_QUEUE:
      return GPUHAL_ERROR_INVALID_HANDLE;
    case HSA_STATUS_ERROR_NOT_INITIALIZED:
      return GPUHAL_ERROR_INITIALIZATION_FAILED;
    case HSA_STATUS_ERROR_INVALID_ISA:
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT:
    case HSA_STATUS_ERROR_INVALID_EXECUTABLE:
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER:
      return GPUHAL_ERROR_INVALID_IMAGE;
    case HSA_STATUS_ERROR_INVALID_SYMBOL_NAME:
      return GPUHAL_ERROR_NOT_FOUND;
    case HSA_STATUS_ERROR_EXCEPTION:
    case HSA_STATUS_ERROR_INVALID_PACKET_FORMAT:
      return GPUHAL_ERROR_LAUNCH_FAILED;
    default:
      return GPUHAL_ERROR_DRIVER;
  }
}

gpuhal_status_t Runtime::error(hsa_status_t s, const char *call) const {
  return plugin::fail(status_of(s), std::string(call) + " failed: " + describe(s));
}

}  // namespace gpuhal::hsa
