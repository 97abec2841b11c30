// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The word lists of the work-item-loop rewrite.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "host_workitem_rewriter.hpp"

namespace gpuhal::host::workitem {

bool is_ident(const std::string &s) {
  return !s.empty() && ident_start(s[0]);
}
bool is_number(const std::string &s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.');
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

bool scalar_type(const std::string &type) {
  const size_t star = type.find('*');
  if (star != std::string::npos) return true;  // a pointer, to whatever
  const std::vector<Tok> t = tokenize(type);
  return !t.empty() && std::all_of(t.begin(), t.end(), [](const Tok &w) { return type_words().count(w.text) != 0; });
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
    if (t[i].begin < from || !t[i].preprocessor || t[i].text != "#" || t[i + 1].text != "define" || !is_ident(t[i + 2].text)) continue;
    const Tok &name = t[i + 2];
    if (name.end < src.size() && src[name.end] == '(') continue;  // function-like
    bool constant = true;
    size_t j = i + 3;
    for (; j < t.size() && t[j].preprocessor && t[j].text != "#"; ++j) {
      const std::string &s = t[j].text;
      if (is_number(s) || (!is_ident(s) && s != "[" && s != "]" && s != "." && s != "->" && !is_assign_op(s) &&
                           s != "++" && s != "--" && s[0] != '"' && s[0] != '\''))
        continue;
      if (is_ident(s) && (out.count(s) || type_words().count(s))) continue;
      constant = false;
    }
    if (constant) out.insert(name.text);
  }
  return out;
}

}  // namespace gpuhal::host::workitem
