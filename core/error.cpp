// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "gpuhal/error.hpp"

#include <utility>

#include "handle_access.hpp"

namespace gpuhal {

std::string to_string(Status status) {
  switch (status) {
#define GPUHAL_STATUS(name, value, text) \
  case Status::name:                     \
    return #name;
#include "gpuhal/status.def"
#undef GPUHAL_STATUS
  }
  return "UNKNOWN_STATUS(" + std::to_string(static_cast<int32_t>(status)) + ")";
}

const char *describe(Status status) {
  switch (status) {
#define GPUHAL_STATUS(name, value, text) \
  case Status::name:                     \
    return text;
#include "gpuhal/status.def"
#undef GPUHAL_STATUS
  }
  return "unknown status";
}

Error::Error(Status status, const std::string &message) : std::runtime_error(message), status_(status) {}

Error::Error(Status status, const std::string &message, std::string peer_message)
    : std::runtime_error(message), status_(status), peer_message_(std::move(peer_message)) {}

namespace detail {

void throw_empty_handle(const char *what) {
  throw Error(Status::ERROR_INVALID_HANDLE, std::string(what) + ": empty handle (moved from, or default-constructed)");
}

}  // namespace detail

}  // namespace gpuhal
