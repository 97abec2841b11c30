// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The work-item-loop rewrite reading a kernel: brackets, statements and
// declarations (Rewriter members).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "host_workitem_rewriter.hpp"

namespace gpuhal::host::workitem {

void Rewriter::match_brackets(size_t b, size_t e) {
  match_.assign(e - b, 0);
  std::vector<size_t> stack;
  for (size_t i = b; i < e; ++i) {
    const std::string &s = t_[i].text;
    if (s == "(" || s == "[" || s == "{") {
      stack.push_back(i);
    } else if (s == ")" || s == "]" || s == "}") {
      if (stack.empty()) throw Unsupported{"unbalanced brackets"};
      const size_t o = stack.back();
      stack.pop_back();
      const char want = s == ")" ? '(' : s == "]" ? '[' : '{';
      if (t_[o].text[0] != want) throw Unsupported{"unbalanced brackets"};
      match_[o - b] = i;
      match_[i - b] = o;
    }
  }
  if (!stack.empty()) throw Unsupported{"unbalanced brackets"};
}

size_t Rewriter::partner(size_t i) const {
  if (i < bb_ || i >= be_ || !std::strchr("([{)]}", t_[i].text[0]) || t_[i].text.size() != 1)
    throw Unsupported{"a bracket was expected"};
  return match_[i - bb_];
}

bool Rewriter::has_barrier(size_t b, size_t e) const {
  for (size_t i = b; i < e; ++i)
    if (t_[i].text == "gpuhal_barrier") return true;
  return false;
}

// Token i (a name) follows a unary `&` (`&x`, `= &x`), not a binary one
// (`a & x`): what precedes the `&` decides.
bool Rewriter::address_taken(size_t i, size_t lo) const {
  if (i <= lo || t_[i - 1].text != "&") return false;
  if (i - 1 == lo) return true;
  const std::string &p = t_[i - 2].text;  // `a & x` is a bitwise and, `= &x` an address
  return !(is_ident(p) || is_number(p) || p == ")" || p == "]");
}

// Token i (a name) is written: assigned, incremented, or its address taken.
bool Rewriter::written(size_t i, size_t lo) const {
  if (i + 1 < t_.size() && (is_assign_op(t_[i + 1].text) || t_[i + 1].text == "++" || t_[i + 1].text == "--")) return true;
  if (i > lo && (t_[i - 1].text == "++" || t_[i - 1].text == "--")) return true;
  return address_taken(i, lo);
}

bool Rewriter::appears(const std::string &name, size_t b, size_t e) const {
  for (size_t i = b; i < e; ++i)
    if (t_[i].text == name) return true;
  return false;
}

std::vector<std::string> Rewriter::param_names(size_t pb, size_t pe) const {
  std::vector<std::string> out;
  size_t start = pb;
  int depth = 0;
  for (size_t i = pb; i <= pe; ++i) {
    if (i < pe && (t_[i].text == "(" || t_[i].text == "[")) ++depth;
    if (i < pe && (t_[i].text == ")" || t_[i].text == "]")) --depth;
    if (i == pe || (depth == 0 && t_[i].text == ",")) {
      // The name: the last identifier before any array brackets.
      std::string last;
      for (size_t j = start; j < i && t_[j].text != "["; ++j)
        if (is_ident(t_[j].text)) last = t_[j].text;
      if (!last.empty() && !type_words().count(last) && last != "void") out.push_back(last);
      start = i + 1;
    }
  }
  return out;
}

Stmt Rewriter::parse(size_t &i, size_t end, int loop_depth) {
  if (i >= end) throw Unsupported{"a statement is missing"};
  Deeper deeper(&depth_);
  Stmt s;
  s.b = i;
  const std::string &w = t_[i].text;
  auto paren = [&](size_t at) {
    if (at >= end || t_[at].text != "(") throw Unsupported{"'" + w + "' without '('"};
    return partner(at);
  };
  if (w == "{") {
    s.kind = Stmt::Block;
    const size_t close = partner(i);
    for (size_t j = i + 1; j < close;) s.kids.push_back(parse(j, close, loop_depth));
    i = close + 1;
  } else if (w == "if") {
    s.kind = Stmt::If;
    const size_t close = paren(i + 1);
    s.h0 = i + 2;
    s.h1 = close;
    i = close + 1;
    s.kids.push_back(parse(i, end, loop_depth));
    if (i < end && t_[i].text == "else") {
      ++i;
      s.kids.push_back(parse(i, end, loop_depth));
    }
  } else if (w == "for" || w == "while" || w == "switch") {
    s.kind = w == "for" ? Stmt::For : w == "while" ? Stmt::While : Stmt::Switch;
    const size_t close = paren(i + 1);
    s.h0 = i + 2;
    s.h1 = close;
    i = close + 1;
    // A barrier loop is transformed (its body's statements are regions);
    // a barrier-free one is a jump target for break / continue inside it.
    const bool barrier = has_barrier(s.b, close + 1) || stmt_has_barrier_ahead(i, end);
    s.kids.push_back(parse(i, end, barrier ? loop_depth : loop_depth + 1));
  } else if (w == "do") {
    s.kind = Stmt::Do;
    ++i;
    const size_t body_at = i;
    const bool barrier = stmt_has_barrier_ahead(body_at, end);
    s.kids.push_back(parse(i, end, barrier ? loop_depth : loop_depth + 1));
    if (i >= end || t_[i].text != "while") throw Unsupported{"do without while"};
    const size_t close = paren(i + 1);
    s.h0 = i + 2;
    s.h1 = close;
    i = close + 1;
    if (i >= end || t_[i].text != ";") throw Unsupported{"do-while without ';'"};
    ++i;
  } else if (w == "gpuhal_barrier") {
    s.kind = Stmt::Barrier;
    const size_t close = paren(i + 1);
    i = close + 1;
    if (i >= end || t_[i].text != ";") throw Unsupported{"gpuhal_barrier(...) not used as a statement"};
    ++i;
  } else if (w == "else") {
    throw Unsupported{"'else' without 'if'"};
  } else {
    // A simple statement: to the ';' outside brackets.
    size_t j = i;
    while (j < end && t_[j].text != ";") {
      if (t_[j].text == "(" || t_[j].text == "[" || t_[j].text == "{") j = partner(j);
      ++j;
    }
    if (j >= end) throw Unsupported{"a statement without ';'"};
    if (loop_depth == 0)
      for (size_t k = i; k < j; ++k)
        if (t_[k].text == "break" || t_[k].text == "continue")
          throw Unsupported{"break / continue out of a loop that contains a barrier"};
    i = j + 1;
  }
  s.e = i;
  s.barrier = has_barrier(s.b, s.e);
  if (s.barrier && (s.kind == Stmt::Simple || s.kind == Stmt::Switch))
    throw Unsupported{"gpuhal_barrier inside an expression or a switch"};
  return s;
}

// Whether the statement starting at token i contains a barrier (parses a
// copy, without side effects on break checks).
bool Rewriter::stmt_has_barrier_ahead(size_t i, size_t end) {
  size_t j = i;
  if (j >= end) throw Unsupported{"a statement is missing"};
  // Find the statement's extent with a permissive parse.
  j = extent(i, end);
  return has_barrier(i, j);
}

size_t Rewriter::extent(size_t i, size_t end) const {
  if (i >= end) throw Unsupported{"a statement is missing"};
  Deeper deeper(&depth_);
  const std::string &w = t_[i].text;
  auto paren = [&](size_t at) {
    if (at >= end || t_[at].text != "(") throw Unsupported{"'" + w + "' without '('"};
    return partner(at);
  };
  if (w == "{") return partner(i) + 1;
  if (w == "if") {
    size_t j = extent(paren(i + 1) + 1, end);
    if (j < end && t_[j].text == "else") j = extent(j + 1, end);
    return j;
  }
  if (w == "for" || w == "while" || w == "switch") return extent(paren(i + 1) + 1, end);
  if (w == "do") {
    size_t j = extent(i + 1, end);  // body, then while ( ... ) ;
    if (j + 1 < end && t_[j + 1].text == "(") return std::min(end, partner(j + 1) + 2);
    return end;
  }
  size_t j = i;
  while (j < end && t_[j].text != ";") {
    if (t_[j].text == "(" || t_[j].text == "[" || t_[j].text == "{") j = partner(j);
    ++j;
  }
  return std::min(end, j + 1);
}

// GPUHAL_SHARED_ARRAY[_ALIGNED] / GPUHAL_DYNAMIC_SHARED (T, name, ...) in
// [b, end): (T, name, extents...), (T, name, alignment, extents...) or
// (T, name); the name is the second argument.
Decl Rewriter::read_shared_decl(size_t b, size_t end) const {
  Decl d;
  d.kind = Decl::Shared;
  size_t j = b + 2;
  int depth = 0;
  for (; j < end; ++j) {
    if (t_[j].text == "(" || t_[j].text == "[") ++depth;
    if (t_[j].text == ")" || t_[j].text == "]") --depth;
    if (depth == 0 && t_[j].text == ",") break;
  }
  if (j + 1 >= end || !is_ident(t_[j + 1].text)) {
    d.kind = Decl::Unknown;
    return d;
  }
  Declarator x;
  x.name = t_[j + 1].text;
  d.ds.push_back(x);
  return d;
}

// GPUHAL_LOCAL_ARRAY (T, name, n0 [, n1 ...]) in [b, end): a private array.
Decl Rewriter::read_local_array_decl(size_t b, size_t end) const {
  Decl d;
  d.kind = Decl::Unknown;
  if (b + 1 >= end || t_[b + 1].text != "(" || partner(b + 1) != end - 1) return d;
  std::vector<size_t> commas;
  int depth = 0;
  for (size_t j = b + 2; j < end - 1; ++j) {
    if (t_[j].text == "(" || t_[j].text == "[") ++depth;
    if (t_[j].text == ")" || t_[j].text == "]") --depth;
    if (depth == 0 && t_[j].text == ",") commas.push_back(j);
  }
  if (commas.size() < 2 || commas.size() > 5 || commas[1] != commas[0] + 2 || !is_ident(t_[commas[0] + 1].text))
    return d;
  d.kind = Decl::Plain;
  Declarator x;
  x.type = text(b + 2, commas[0]);
  x.name = t_[commas[0] + 1].text;
  commas.push_back(end - 1);
  for (size_t k = 1; k + 1 < commas.size(); ++k) x.dims += "[(" + text(commas[k] + 1, commas[k + 1]) + ")]";
  d.ds.push_back(x);
  return d;
}

// The declarators of `base d1, *d2 = init, d3[n]` from `i` (just after the
// base type) to `end`, into d (kind Plain). A declarator that does not read
// as one makes the statement an expression (Decl::None), or Unknown when it
// starts with a type word `w`.
void Rewriter::read_declarators(size_t i, size_t end, const std::string &base, const std::string &w, Decl &d) const {
  d.kind = Decl::Plain;
  auto not_a_declaration = [&] {
    d.kind = type_words().count(w) ? Decl::Unknown : Decl::None;
    d.ds.clear();
  };
  while (i < end) {
    Declarator x;
    std::string stars;
    while (i < end && (t_[i].text == "*" || t_[i].text == "&" || t_[i].text == "const" || t_[i].text == "volatile" ||
                       t_[i].text == "__restrict__" || t_[i].text == "GPUHAL_RESTRICT")) {
      if (t_[i].text == "&") x.reference = true;
      stars += " " + t_[i].text;
      ++i;
    }
    if (i >= end || !is_ident(t_[i].text)) return not_a_declaration();  // `a * b;` and the like
    x.name = t_[i].text;
    x.name_at = i;
    x.type = base + stars;
    ++i;
    while (i < end && t_[i].text == "[") {
      x.dims += text(i, partner(i) + 1);
      i = partner(i) + 1;
    }
    if (i < end && t_[i].text == "=") {
      x.init_b = ++i;
      while (i < end && t_[i].text != ",") {
        if (t_[i].text == "(" || t_[i].text == "[" || t_[i].text == "{") i = partner(i);
        ++i;
      }
      x.init_e = i;
    }
    d.ds.push_back(x);
    if (i < end && t_[i].text == ",") {
      ++i;
      continue;
    }
    if (i < end) return not_a_declaration();
  }
  if (d.ds.empty()) d.kind = Decl::None;
}

// Reads statement [b, e) (';' at e - 1) as a declaration.
Decl Rewriter::read_decl(size_t b, size_t e) const {
  Decl d;
  const size_t end = e - 1;
  const std::string &w = t_[b].text;
  if (w == "GPUHAL_SHARED_ARRAY" || w == "GPUHAL_SHARED_ARRAY_ALIGNED" || w == "GPUHAL_DYNAMIC_SHARED")
    return read_shared_decl(b, end);
  if (w == "GPUHAL_LOCAL_ARRAY_ALIGNED") {
    // Its alignment would have to hold in the per-work-item slots too: such
    // kernels keep their fibers.
    d.kind = Decl::Unknown;
    return d;
  }
  if (w == "GPUHAL_LOCAL_ARRAY") return read_local_array_decl(b, end);
  if (statement_words().count(w)) {
    d.kind = w == "return" || w == "break" || w == "continue" || w == "case" || w == "default" || w == "sizeof" ||
                     w == "delete" || w == "throw"
                 ? Decl::None
                 : Decl::Unknown;
    return d;
  }
  size_t i = b;
  while (i < end && is_ident(t_[i].text) && !statement_words().count(t_[i].text)) ++i;
  const size_t idents = i - b;
  if (idents == 0) return d;  // an expression: (..., *p = ..., ++i
  const std::string next = i < end ? t_[i].text : ";";
  if (next == "<" || next == "::") {
    // A template or qualified name: a declaration this pass cannot read,
    // or an expression it need not (both rare in kernels).
    d.kind = Decl::Unknown;
    return d;
  }
  size_t base_e;
  if (next == "*" || next == "&") {
    base_e = i;
  } else if (idents >= 2 && (next == "=" || next == ";" || next == "," || next == "[")) {
    base_e = i - 1;
  } else {
    // An expression statement, unless it starts with a type word.
    if (type_words().count(w)) d.kind = Decl::Unknown;
    return d;
  }
  read_declarators(base_e, end, text(b, base_e), w, d);
  return d;
}

const Entry *Rewriter::lookup(const std::string &name) const {
  if (pending_)
    for (auto e = pending_->rbegin(); e != pending_->rend(); ++e)
      if (e->name == name) return &*e;
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
    for (auto e = s->rbegin(); e != s->rend(); ++e)
      if (e->name == name) return &*e;
  return nullptr;
}

// An initialiser that can be evaluated again in a later region with the
// same result: ids, sizes, uniform names, constants, other such variables.
bool Rewriter::rematerialisable(const Declarator &x, std::vector<std::string> *deps) const {
  if (x.reference || !x.dims.empty() || x.init_b == x.init_e) return false;
  for (size_t i = x.init_b; i < x.init_e; ++i) {
    const std::string &s = t_[i].text;
    const bool call = i + 1 < x.init_e && t_[i + 1].text == "(";
    if (is_number(s)) continue;
    if (is_ident(s)) {
      if (id_builtins().count(s) && call) continue;
      if (type_words().count(s)) continue;
      if (const_macros_.count(s) && !call) continue;
      const Entry *e = lookup(s);
      if (e && !call && (e->kind == Entry::Remat || (e->kind == Entry::Uniform && uniform_names_.count(s)))) {
        deps->push_back(s);
        continue;
      }
      return false;
    }
    if (s == "[" || s == "]" || s == "." || s == "->" || s == "\"" || s[0] == '"' || s[0] == '\'' ||
        is_assign_op(s) || s == "++" || s == "--" || s == "{" || s == "}")
      return false;
    if ((s == "*" || s == "&") &&
        (i == x.init_b || !(is_ident(t_[i - 1].text) || is_number(t_[i - 1].text) || t_[i - 1].text == ")")))
      return false;  // a dereference or an address
  }
  // Never written anywhere in the body.
  for (size_t i = bb_; i < be_; ++i)
    if (i != x.name_at && t_[i].text == x.name && written(i, bb_)) return false;
  return true;
}

}  // namespace gpuhal::host::workitem
