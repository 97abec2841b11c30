// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "compiled_image.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "plugin_support.hpp"

namespace gpuhal::plugin {

gpuhal_status_t check_compile_args(const gpuhal_compile_args_t *args, void **image, uint64_t *bytes, uint32_t *format) {
  if (!args || args->struct_size < sizeof(gpuhal_compile_args_t) || !args->source || !image || !bytes || !format ||
      (args->kernel_count && !args->kernel_names))
    return fail(GPUHAL_ERROR_INVALID_VALUE, "module_compile: null or short argument");
  return GPUHAL_SUCCESS;
}

std::vector<std::string> compile_options(const gpuhal_compile_args_t *args, std::vector<std::string> first) {
  std::stringstream ss(args->options ? args->options : "");
  std::string o;
  while (ss >> o) first.push_back(o);
  return first;
}

gpuhal_status_t hand_out_image(const void *data, std::size_t size, uint32_t kind, void **image, uint64_t *bytes,
                               uint32_t *format) {
  void *out = std::malloc(size);
  if (!out) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "module_compile: out of host memory for the image");
  std::memcpy(out, data, size);
  *image = out;
  *bytes = size;
  *format = kind;
  return GPUHAL_SUCCESS;
}

}  // namespace gpuhal::plugin
