// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's device-code entries: the dialect lowered to CUDA C++,
// compiled by NVRTC (loaded at run time) to PTX, loaded with
// cuModuleLoadDataEx, launched with cuLaunchKernel.
#pragma once

#include <string>

#include "gpuhal/plugin.h"

namespace gpuhal::cuda {

gpuhal_status_t lower_builtin(const char *builtin, const char **text);
gpuhal_status_t module_compile(gpuhal_context_t ctx, const gpuhal_compile_args_t *args, void **image, uint64_t *bytes,
                               uint32_t *format);
void image_free(void *image);
gpuhal_status_t module_load(gpuhal_context_t ctx, const void *image, uint64_t bytes, uint32_t format,
                            gpuhal_module_t *out);
gpuhal_status_t module_unload(gpuhal_context_t ctx, gpuhal_module_t module);
gpuhal_status_t module_get_kernel(gpuhal_context_t ctx, gpuhal_module_t module, const char *name,
                                  gpuhal_kernel_t *out);
gpuhal_status_t launch(gpuhal_context_t ctx, gpuhal_kernel_t kernel, const gpuhal_launch_config_t *config,
                       void *const *args, uint32_t arg_count, gpuhal_stream_t stream);

}  // namespace gpuhal::cuda
