// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal's C++ API needs C++17: said at once, before an older standard trips
// over std::optional deep inside a header. (The plugin ABI, plugin.h, is C.)
#pragma once

#if defined(_MSVC_LANG) && !defined(__clang__)
#define GPUHAL_CXX_STANDARD _MSVC_LANG
#else
#define GPUHAL_CXX_STANDARD __cplusplus
#endif
#if GPUHAL_CXX_STANDARD < 201703L
#error "gpuhal needs C++17 or later: compile with -std=c++17 (CMake: link gpuhal::gpuhal, which asks for it)"
#endif
