// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake CUDA driver's symbols (tests/fakes/cuda/: its API and its test
// hooks), read from the copy a runtime of the test has loaded.
#pragma once

#include <dlfcn.h>

#include <cstdint>

#include "catch_compat.hpp"

namespace test {

#ifdef GPUHAL_TEST_FAKE_CUDA
// The symbol `name` of the loaded fake driver, as a function of type F.
template <class F>
F fake_symbol(const char *name) {
  void *fake = dlopen(GPUHAL_TEST_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(fake);  // loaded by a runtime of the test by now
  void *p = dlsym(fake, name);
  dlclose(fake);  // the runtime keeps it loaded
  REQUIRE(p);
  return reinterpret_cast<F>(p);
}

// The bytes the fake driver copied through its own pageable path (not the
// plugin's staging) so far.
inline uint64_t fake_pageable_h2d_bytes() {
  return fake_symbol<uint64_t (*)()>("fake_cuda_pageable_h2d_bytes")();
}

// How many host ranges the fake driver holds registered.
inline int fake_registered_ranges() {
  return fake_symbol<int (*)()>("fake_cuda_registered_ranges")();
}
#endif

}  // namespace test
