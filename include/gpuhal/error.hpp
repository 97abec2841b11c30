// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal errors: one exception type carrying a status code and a message.
//
// Every failure in the C++ API is reported as gpuhal::Error. The message names
// the failing call and, for backend failures, the plugin's own message (which
// names the vendor call and the vendor's error text). Destructors never throw.
#pragma once

#include "gpuhal/cxx_standard.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gpuhal {

// The same codes as the plugin ABI (status.def), as a C++ enum.
enum class Status : int32_t {
#define GPUHAL_STATUS(name, value, text) name = value,
#include "gpuhal/status.def"
#undef GPUHAL_STATUS
};

// "ERROR_OUT_OF_MEMORY" etc; "UNKNOWN_STATUS(n)" for values not in the list.
std::string to_string(Status status);
// The human description from status.def.
const char *describe(Status status);

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string &message);
  // A misuse NumPy or Numba also refuse: `peer_message` is their sentence
  // for it, word for word, and `message` (what()) is gpuhal's own, which
  // contains it. The Python package shows the peer's sentence as the
  // exception's text, so code that compares NumPy's or Numba's messages
  // keeps working, and attaches gpuhal's message as a note.
  Error(Status status, const std::string &message, std::string peer_message);
  Status status() const noexcept { return status_; }
  // Empty where NumPy and Numba have no such sentence.
  const std::string &peer_message() const noexcept { return peer_message_; }

 private:
  Status status_;
  std::string peer_message_;
};

}  // namespace gpuhal
