// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Errors for a misuse that NumPy or Numba refuse too: gpuhal's message keeps
// its call and detail, and carries the peer's sentence word for word as the
// error's peer message (include/gpuhal/error.hpp), which the Python package
// shows as the exception's text.
#pragma once

#include <string>

#include "gpuhal/error.hpp"

namespace gpuhal {
namespace detail {

// Throws `status` with the message "<call>: <sentence><detail>" ("<sentence>
// <detail>" when `call` is empty) and `sentence` as the peer message.
[[noreturn]] inline void refuse_like_peer(Status status, const std::string &call, const std::string &sentence,
                                          const std::string &detail = "") {
  throw Error(status, (call.empty() ? "" : call + ": ") + sentence + detail, sentence);
}

}  // namespace detail
}  // namespace gpuhal
