// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What every backend's module_compile shares: the argument checks, the
// user's compile options, and handing the compiled image to the core (in
// malloc'd memory, which the backend's image_free releases with free()).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpuhal/plugin.h"
#include "plugin_support.hpp"

namespace gpuhal::plugin {

// ERROR_INVALID_VALUE (naming module_compile) for a null or short argument.
gpuhal_status_t check_compile_args(const gpuhal_compile_args_t *args, void **image, uint64_t *bytes, uint32_t *format);
// The shape of every module_compile: the arguments checked, then compile()
// under guard() (an exception becomes a status naming module_compile).
template <class Compile>
gpuhal_status_t compile_checked(const gpuhal_compile_args_t *args, void **image, uint64_t *bytes, uint32_t *format,
                                Compile &&compile) {
  return guard("module_compile", [&]() -> gpuhal_status_t {
    const gpuhal_status_t st = check_compile_args(args, image, bytes, format);
    return st == GPUHAL_SUCCESS ? compile() : st;
  });
}
// The words of args->options (split at white space), after `first`.
std::vector<std::string> compile_options(const gpuhal_compile_args_t *args, std::vector<std::string> first = {});
// Copies `size` bytes of image into memory the core frees with image_free.
gpuhal_status_t hand_out_image(const void *data, std::size_t size, uint32_t kind, void **image, uint64_t *bytes,
                               uint32_t *format);

}  // namespace gpuhal::plugin
