// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "kernel_tokens.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gpuhal::dialect {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::vector<Token> tokenize(const std::string &src) {
  static const char *kOps[] = {"<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=",
                               "&&",  "||",  "+=",  "-=", "*=", "/=", "%=", "&=", "|=", "^=", "::", "##"};
  std::vector<Token> out;
  int line = 1;
  bool line_start = true, in_directive = false;
  std::size_t i = 0;
  const std::size_t n = src.size();
  // Advances i to `to`, counting the newlines passed.
  auto skip_to = [&](std::size_t to) {
    for (; i < to; ++i)
      if (src[i] == '\n') ++line;
  };
  while (i < n) {
    const char c = src[i];
    if (c == '\n') {
      // A directive ends at a newline not escaped by a backslash.
      if (!(i > 0 && src[i - 1] == '\\')) in_directive = false;
      ++line;
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      const std::size_t close = src.find("*/", i + 2);
      skip_to(close == std::string::npos ? n : close + 2);
      continue;
    }
    if (c == '#' && line_start) in_directive = true;
    line_start = false;
    Token t;
    t.begin = i;
    t.line = line;
    t.preprocessor = in_directive;
    if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < n && src[j] != c) j += src[j] == '\\' ? 2 : 1;
      skip_to(std::min(n, j + 1));
    } else if (ident_start(c)) {
      while (i < n && ident_char(src[i])) ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
      while (i < n && (ident_char(src[i]) || src[i] == '.' ||
                       ((src[i] == '+' || src[i] == '-') && std::strchr("eEpP", src[i - 1]))))
        ++i;
    } else {
      std::size_t len = 1;
      for (const char *op : kOps)
        if (src.compare(i, std::strlen(op), op) == 0) {
          len = std::strlen(op);
          break;
        }
      i += len;
    }
    t.end = i;
    t.text = src.substr(t.begin, t.end - t.begin);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace gpuhal::dialect
