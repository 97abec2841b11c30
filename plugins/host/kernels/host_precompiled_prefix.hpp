// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's precompiled prefix: every module's source starts with
// the same text, the backend's lowering of the kernel dialect (its prologue
// with the C and C++ headers it includes, and the builtins' definitions),
// followed by the module's constant arrays, the core's `#line 1 "kernel"`
// and the user's source. Parsing that prefix is most of a small module's
// compile (about 90 of 180 ms for a one-kernel module with clang: math.h
// alone, which brings <cmath>'s overloads, 60 ms). Built once as a clang
// precompiled header, it is loaded instead (a saxpy module 180 -> 120 ms).
//
// The header lives in the kernel cache beside the modules, named by a
// 128-bit hash of the compiler's identity, its flags, the CPU (-march=native)
// and the prefix's text: pch-<hash>.h (the text; clang refers to it) and
// pch-<hash>.pch. It is built the first time a module with that prefix
// misses the cache, by a second compiler process running beside the
// module's own compile (on a machine with a free core that first compile
// takes no longer), and published atomically (rename), so concurrent
// processes share it. Only clang's precompiled headers are used (GCC's
// need a header file found by name), and only for modules compiled
// without options of their own (a -D or -O could make it unusable). A
// header the compiler refuses (a compiler upgraded in place) is removed and
// the module compiled from its whole source. Not thread-safe: one object
// per compile.
#pragma once

#include <string>
#include <vector>

#include "host_compiler_process.hpp"

namespace gpuhal::host {

// A module's source cut where the shared prefix ends: before its first
// constant array (a line starting "GPUHAL_CONSTANT ") or the core's
// `#line 1 "kernel"`. ok is false when the marker is missing.
struct SourceSplit {
  bool ok = false;
  std::string prefix, rest;
};
SourceSplit split_at_shared_prefix(const std::string &source);

class PrecompiledPrefix {
 public:
  // `flags`: the compiler's arguments for the module (argv[0] first, before
  // any -o and input); `identity`: what names the compiler and the CPU.
  PrecompiledPrefix(const std::string &dir, const std::string &identity, const std::vector<std::string> &flags,
                    const std::string &prefix);
  PrecompiledPrefix(const PrecompiledPrefix &) = delete;
  PrecompiledPrefix &operator=(const PrecompiledPrefix &) = delete;
  ~PrecompiledPrefix();

  // True when the header is built (its use renews its place in the cache).
  bool ready() const;
  // Its file name without the extension (pch-<hash>).
  const std::string &name() const { return name_; }
  // The arguments that make a compile load it.
  std::vector<std::string> use_arguments() const;
  // Starts building it beside the module's compile; finish_build waits for
  // that process and publishes the header when it succeeded.
  void start_build(const std::string &compiler);
  void finish_build();
  // Removes a header the compiler refused.
  void discard();
  // True when a failed compile's output blames the precompiled header.
  static bool blamed(const std::string &compiler_output);

 private:
  std::string dir_, name_, prefix_;
  std::vector<std::string> flags_;
  std::string tmp_h_, tmp_pch_, log_;
  CompilerProcess build_;
  bool building_ = false;
};

}  // namespace gpuhal::host
