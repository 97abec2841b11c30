// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The kernel dialect's one tokenizer, shared by the core (which reads the
// kernels' signatures and barrier use) and the host backend (which rewrites
// kernels into work-item loops). A static library linked into both; nothing
// here is exported.
//
// Tokens are C's: identifiers, numbers (with exponents and hex floats,
// 1e-3f, 0x1p+4), string and character literals (one token each, with
// their quotes), multi-character operators as one token, other punctuation
// one character each. Comments, white space and line-continuation
// backslashes are skipped. An unterminated comment or literal ends at the
// end of the source. Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpuhal::dialect {

struct Token {
  std::string text;       // as written in the source
  std::size_t begin = 0;  // byte range in the source
  std::size_t end = 0;
  int line = 1;               // of the first byte, from 1
  bool preprocessor = false;  // part of a # directive line
};

bool ident_start(char c);
bool ident_char(char c);

std::vector<Token> tokenize(const std::string &source);

}  // namespace gpuhal::dialect
