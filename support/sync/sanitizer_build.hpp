// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Which sanitizer this translation unit is built with, for GCC
// (__SANITIZE_ADDRESS__, __SANITIZE_THREAD__) and clang (__has_feature):
// GPUHAL_ADDRESS_SANITIZER, GPUHAL_THREAD_SANITIZER, GPUHAL_MEMORY_SANITIZER
// (defined to 1, or not at all), and the same as constants.
//
// Code that the sanitizers cannot see through (an asm statement, a barrier
// made by the kernel, a chunk kept past its free) takes its plain path in
// such builds.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define GPUHAL_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUHAL_ADDRESS_SANITIZER 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define GPUHAL_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUHAL_THREAD_SANITIZER 1
#endif
#endif

#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#define GPUHAL_MEMORY_SANITIZER 1
#endif
#endif

namespace gpuhal::detail {

#ifdef GPUHAL_ADDRESS_SANITIZER
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#ifdef GPUHAL_THREAD_SANITIZER
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

}  // namespace gpuhal::detail
