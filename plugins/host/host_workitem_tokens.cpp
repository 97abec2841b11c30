// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The tokenizer and word lists of the work-item-loop rewrite.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "host_workitem_rewriter.hpp"

namespace gpuhal::host::workitem {



bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident(const std::string &s) {
  return !s.empty() && ident_start(s[0]);
}
bool is_number(const std::string &s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.');
}

// C tokens with their byte ranges; comments skipped; string and character
// literals one token each; multi-character operators one token.
std::vector<Tok> tokenize(const std::string &src) {
  static const char *kOps[] = {"<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=",
                               "&&",  "||",  "+=",  "-=", "*=", "/=", "%=", "&=", "|=", "^=", "::", "##"};
  std::vector<Tok> out;
  bool line_start = true, in_pp = false;
  size_t i = 0;
  const size_t n = src.size();
  while (i < n) {
    const char c = src[i];
    if (c == '\n') {
      if (!(i > 0 && src[i - 1] == '\\')) in_pp = false;
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
      const size_t end = src.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
      continue;
    }
    if (c == '#' && line_start) in_pp = true;
    line_start = false;
    Tok t;
    t.b = i;
    t.pp = in_pp;
    if (c == '"' || c == '\'') {
      ++i;
      while (i < n && src[i] != c) i += src[i] == '\\' ? 2 : 1;
      i = std::min(n, i + 1);
    } else if (ident_start(c)) {
      while (i < n && ident_char(src[i])) ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
      // Numbers, with exponents and hex floats (1e-3f, 0x1p+4).
      while (i < n && (ident_char(src[i]) || src[i] == '.' ||
                       ((src[i] == '+' || src[i] == '-') && std::strchr("eEpP", src[i - 1]))))
        ++i;
    } else {
      size_t len = 1;
      for (const char *op : kOps)
        if (src.compare(i, std::strlen(op), op) == 0) {
          len = std::strlen(op);
          break;
        }
      i += len;
    }
    t.e = i;
    t.s = src.substr(t.b, t.e - t.b);
    out.push_back(std::move(t));
  }
  return out;
}


const std::set<std::string> &type_words() {
  static const std::set<std::string> s = {"const",    "volatile", "unsigned",  "signed",        "int",
                                          "float",    "double",   "char",      "short",         "long",
                                          "bool",     "size_t",   "ptrdiff_t", "uintptr_t",     "intptr_t",
                                          "int8_t",   "int16_t",  "int32_t",   "int64_t",       "uint8_t",
                                          "uint16_t", "uint32_t", "uint64_t",  "GPUHAL_GLOBAL", "GPUHAL_RESTRICT"};
  return s;
}

// Names that end a declaration's reading (statements, not types).
const std::set<std::string> &statement_words() {
  static const std::set<std::string> s = {
      "return",  "break", "continue", "if",     "else",   "for",      "while",        "do",      "switch", "case",
      "default", "goto",  "sizeof",   "delete", "new",    "throw",    "typedef",      "using",   "static", "auto",
      "struct",  "class", "union",    "enum",   "extern", "register", "thread_local", "template"};
  return s;
}

const std::set<std::string> &id_builtins() {
  static const std::set<std::string> s = {"gpuhal_local_id",   "gpuhal_group_id",  "gpuhal_local_size",
                                          "gpuhal_num_groups", "gpuhal_global_id", "gpuhal_global_size"};
  return s;
}

bool is_assign_op(const std::string &s) {
  return s == "=" || s == "+=" || s == "-=" || s == "*=" || s == "/=" || s == "%=" || s == "&=" || s == "|=" ||
         s == "^=" || s == "<<=" || s == ">>=";
}






// Object-like macros whose replacement is made of numbers, operators and
// other such macros: constants a rematerialised initialiser may read.
std::set<std::string> constant_macros(const std::string &src, const std::vector<Tok> &t, size_t from) {
  std::set<std::string> out;
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i].b < from || !t[i].pp || t[i].s != "#" || t[i + 1].s != "define" || !is_ident(t[i + 2].s)) continue;
    const Tok &name = t[i + 2];
    if (name.e < src.size() && src[name.e] == '(') continue;  // function-like
    bool constant = true;
    size_t j = i + 3;
    for (; j < t.size() && t[j].pp && t[j].s != "#"; ++j) {
      const std::string &s = t[j].s;
      if (is_number(s) || (!is_ident(s) && s != "[" && s != "]" && s != "." && s != "->" && !is_assign_op(s) &&
                           s != "++" && s != "--" && s[0] != '"' && s[0] != '\''))
        continue;
      if (is_ident(s) && (out.count(s) || type_words().count(s))) continue;
      constant = false;
    }
    if (constant) out.insert(name.s);
  }
  return out;
}

}  // namespace gpuhal::host::workitem
