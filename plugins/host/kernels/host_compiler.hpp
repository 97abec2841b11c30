// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend: compiles generated C++ into a shared object with the system
// compiler, through a cache on disk.
//
// The compiler is GPUHAL_HOST_CXX when set. Otherwise modules whose kernels
// all run as loops (barrier-free kernels and work-item loops) are compiled
// with clang++ when PATH has it: LLVM vectorises the work-item loops across
// work-items, checking at run time that a 32-bit global id does not wrap,
// where GCC leaves them scalar (the tiled matmul ran 5x faster). Modules
// with kernels that run their work-items as fibers need GCC's stack-usage
// output, and they -- and everything when clang++ is missing or fails --
// are compiled with "c++" from PATH. The compiler is run directly
// (posix_spawn, no shell) as
//   <cxx> -std=c++17 -O3 -fPIC -shared -w [-march=native on x86-64] <options...> -o <out> <src>
// Its stdout and stderr are kept and become the error message when it fails.
// The cache directory is GPUHAL_KERNEL_CACHE, else $XDG_CACHE_HOME/gpuhal/
// kernels, else $HOME/.cache/gpuhal/kernels; it must be owned by the user and
// not writable by others (a shared object from it is loaded into the
// process), else a private temporary directory is used for the process.
// Entries are keyed by a 128-bit hash of the source, the options, the
// compiler's path, size and modification time, and written atomically
// (rename), so concurrent processes can share a cache. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuhal/plugin.h"
#include "sanitizer_build.hpp"

namespace gpuhal::host {

// LLVM keeps vector registers live across the general-dynamic TLS call
// (__tls_get_addr), which glibc's implementation preserves but the
// sanitizers' interceptors of it do not: in a process built with ASan or
// TSan, clang-built kernels that touch their thread-local shared arrays
// would read clobbered registers (seen as wrong results of a barrier
// kernel's work-item loops under ASan). Such builds of the plugin compile
// every module with "c++" (GCC assumes the call clobbers them).
#if defined(GPUHAL_ADDRESS_SANITIZER) || defined(GPUHAL_THREAD_SANITIZER)
inline constexpr const char *kVectorizingCompiler = "";
#else
inline constexpr const char *kVectorizingCompiler = "clang++";
#endif

struct CompilerSettings {
  std::string cxx = "c++";
  // For modules without fiber kernels; "" when GPUHAL_HOST_CXX chose one
  // compiler for everything (and in sanitizer builds, see above).
  std::string vectorizing_cxx = kVectorizingCompiler;
  std::string cache_dir;  // "" = the default place; "off" = a private temporary one (nothing kept)
  uint64_t cache_max = 0;  // GPUHAL_KERNEL_CACHE_MAX: bytes kept, least recently used evicted (0: no limit)
};

// True when `cxx` names a compiler found in PATH (or an existing path).
bool compiler_available(const std::string &cxx);

// Compiles `source` (with `options`, space separated) and returns the shared
// object's bytes in *image. On failure returns the status (COMPILATION_FAILED
// with the compiler's output) and leaves the plugin's last error.
gpuhal_status_t compile_host_module(const CompilerSettings &settings, const std::string &source,
                                    const std::string &options, std::vector<unsigned char> *image);

// Removes a private temporary cache directory made by this process, if any
// (called at plugin shutdown).
void remove_private_cache();
// In a child of fork(): the private directory is the parent's (the child
// must not remove it at exit) and its lock may have been held by a thread
// the child does not have.
void forget_private_cache_after_fork();

}  // namespace gpuhal::host
