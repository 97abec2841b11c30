// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The tests build with Catch2 3 (Debian 13 ships 3.7) as with Catch2 2
// (Debian 12's 2.13): one include, and the matchers whose names changed.
#pragma once

#include <string>

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

namespace test {

// Catch2 2's Catch::Matchers::Contains, Catch2 3's ContainsSubstring.
inline auto contains(const std::string &text) {
#if CATCH_VERSION_MAJOR >= 3
  return Catch::Matchers::ContainsSubstring(text);
#else
  return Catch::Matchers::Contains(text);
#endif
}

}  // namespace test
