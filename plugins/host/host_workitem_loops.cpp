#include "host_workitem_loops.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

namespace gpuhal::host {
namespace {

struct Tok {
  std::string s;
  size_t b = 0, e = 0;  // byte range in the source
  bool pp = false;      // part of a preprocessor line
};

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

struct Unsupported {
  std::string why;
};

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

struct Stmt {
  enum Kind { Simple, Block, If, For, While, Do, Switch, Barrier } kind = Simple;
  size_t b = 0, e = 0;     // tokens [b, e)
  bool barrier = false;    // contains gpuhal_barrier
  size_t h0 = 0, h1 = 0;   // inside the parentheses of if / for / while / do / switch
  std::vector<Stmt> kids;  // Block: its statements; If: then [, else]; loops: body
};

// One declared name of a declaration statement.
struct Declarator {
  std::string name;
  size_t name_at = 0;             // its token (0 for GPUHAL_LOCAL_ARRAY, never rematerialised)
  std::string type;               // base type and this declarator's stars
  std::string dims;               // "[4][2]" or ""
  size_t init_b = 0, init_e = 0;  // initialiser tokens, empty range when none
  bool reference = false;
};

struct Decl {
  enum Kind { None, Plain, Shared, Unknown } kind = None;
  std::vector<Declarator> ds;
};

// A name visible at some point of the rewritten body.
struct Entry {
  enum Kind { Uniform, Remat, Stored } kind = Uniform;
  std::string name;
  std::string text;               // Remat: the declaration to repeat; Stored: the storage's name
  std::vector<std::string> deps;  // Remat: names its initialiser reads
};

class Rewriter {
 public:
  Rewriter(const std::string &src, const std::vector<Tok> &t, const std::set<std::string> &const_macros, bool tls_items)
      : src_(src), t_(t), const_macros_(const_macros), tls_items_(tls_items) {}

  // Tokens [pb, pe) are the parameter list, [bb, be) the body (braces excluded).
  std::string rewrite(const std::string &name, size_t pb, size_t pe, size_t bb, size_t be) {
    name_ = name;
    bb_ = bb;
    be_ = be;
    match_brackets(bb, be);
    for (size_t i = bb; i < be; ++i) {
      if (t_[i].pp) throw Unsupported{"a preprocessor line inside the kernel body"};
      if (t_[i].s == "goto") throw Unsupported{"goto"};
      if (t_[i].s == "return") {
        has_return_ = true;
        if (i + 1 >= be || t_[i + 1].s != ";") throw Unsupported{"return with a value (or inside a lambda)"};
      }
      if (t_[i].s == "__gpuhal_wi" || t_[i].s.rfind("__gpuhal_", 0) == 0)
        throw Unsupported{"the body uses gpuhal's internal names"};
    }
    // Parameters: uniform, and no work-item may write one (each has its own
    // copy on a GPU; here they are shared).
    scopes_.emplace_back();
    std::vector<std::string> params = param_names(pb, pe);
    for (const auto &p : params) {
      for (size_t i = bb; i < be; ++i)
        if (t_[i].s == p && written(i, bb)) throw Unsupported{"a work-item writes its parameter '" + p + "'"};
      scopes_.back().push_back({Entry::Uniform, p, "", {}});
      uniform_names_.insert(p);
    }
    std::vector<Stmt> body;
    for (size_t i = bb; i < be;) body.push_back(parse(i, be, 0));
    std::string out;
    emit_items(body, be, out);

    std::string f;
    f += "static void " + name + "__gpuhal_loops(const gpuhal_host_group *__gpuhal_g";
    if (!params.empty() || pe > pb) {
      const std::string ptext = text(pb, pe);
      if (!(pe - pb == 1 && t_[pb].s == "void")) f += ", " + ptext;
    }
    f += ") {\n";
    f += "  const uint32_t __gpuhal_gid[3] = {__gpuhal_g->group_id[0], __gpuhal_g->group_id[1], "
         "__gpuhal_g->group_id[2]};\n";
    f += "  const uint32_t __gpuhal_lsz[3] = {__gpuhal_g->local_size[0], __gpuhal_g->local_size[1], "
         "__gpuhal_g->local_size[2]};\n";
    f += "  const uint32_t __gpuhal_ng[3] = {__gpuhal_g->num_groups[0], __gpuhal_g->num_groups[1], "
         "__gpuhal_g->num_groups[2]};\n";
    f += "  const uint32_t __gpuhal_n = __gpuhal_lsz[0] * __gpuhal_lsz[1] * __gpuhal_lsz[2];\n";
    f += "  const uint32_t __gpuhal_x = 0, __gpuhal_y = 0, __gpuhal_z = 0;\n";
    f += "  (void)__gpuhal_gid, (void)__gpuhal_ng, (void)__gpuhal_x, (void)__gpuhal_y, (void)__gpuhal_z;\n";
    f += "  gpuhal_host_item __gpuhal_item;\n";
    f += "  __gpuhal_item.local_id[0] = __gpuhal_item.local_id[1] = __gpuhal_item.local_id[2] = 0;\n";
    f += "  __gpuhal_item.group = __gpuhal_g;\n";
    f += "  __gpuhal_wi = &__gpuhal_item;\n";
    // Scratch: one array per stored variable, each 64-byte aligned, n slots.
    f += "  uintptr_t __gpuhal_at = ((uintptr_t)__gpuhal_g->scratch + 63) & ~(uintptr_t)63;\n";
    std::string scratch = "0";
    if (has_return_) {
      f += "  unsigned char *__gpuhal_done = (unsigned char *)__gpuhal_at;\n";
      f += "  memset(__gpuhal_done, 0, __gpuhal_n);\n";
      f += "  __gpuhal_at = (__gpuhal_at + __gpuhal_n + 63) & ~(uintptr_t)63;\n";
      scratch += " + 1 + 64";
    }
    std::string types;
    for (size_t k = 0; k < stored_types_.size(); ++k) {
      const std::string T = name + "__gpuhal_t" + std::to_string(k);
      types += "typedef std::remove_const_t<" + stored_types_[k].first + "> " + T + stored_types_[k].second + ";\n";
      f += "  " + T + " *__gpuhal_s" + std::to_string(k) + " = (" + T + " *)__gpuhal_at;\n";
      f += "  __gpuhal_at = (__gpuhal_at + sizeof(" + T + ") * __gpuhal_n + 63) & ~(uintptr_t)63;\n";
      scratch += " + sizeof(" + T + ") + 64";
    }
    f += "{\n" + out + "}\n";
    if (has_return_) f += "__gpuhal_end:;\n";
    f += "  __gpuhal_wi = nullptr;\n}\n";
    f += "static constexpr uint32_t " + name + "__gpuhal_loops_scratch = " + scratch + ";\n";
    return types + f;
  }

 private:
  const std::string &src_;
  const std::vector<Tok> &t_;
  const std::set<std::string> &const_macros_;
  bool tls_items_;
  std::string name_;
  size_t bb_ = 0, be_ = 0;
  std::vector<size_t> match_;  // bracket partner, indexed by token - bb_
  bool has_return_ = false;
  int regions_ = 0;
  std::vector<std::vector<Entry>> scopes_;
  std::set<std::string> uniform_names_;
  std::vector<std::pair<std::string, std::string>> stored_types_;  // type, dims
  const std::vector<Entry> *pending_ = nullptr;                    // the current region's declarations so far

  std::string text(size_t b, size_t e) const { return b < e ? src_.substr(t_[b].b, t_[e - 1].e - t_[b].b) : ""; }

  void match_brackets(size_t b, size_t e) {
    match_.assign(e - b, 0);
    std::vector<size_t> stack;
    for (size_t i = b; i < e; ++i) {
      const std::string &s = t_[i].s;
      if (s == "(" || s == "[" || s == "{") {
        stack.push_back(i);
      } else if (s == ")" || s == "]" || s == "}") {
        if (stack.empty()) throw Unsupported{"unbalanced brackets"};
        const size_t o = stack.back();
        stack.pop_back();
        const char want = s == ")" ? '(' : s == "]" ? '[' : '{';
        if (t_[o].s[0] != want) throw Unsupported{"unbalanced brackets"};
        match_[o - b] = i;
        match_[i - b] = o;
      }
    }
    if (!stack.empty()) throw Unsupported{"unbalanced brackets"};
  }
  size_t partner(size_t i) const {
    if (i < bb_ || i >= be_ || !std::strchr("([{)]}", t_[i].s[0]) || t_[i].s.size() != 1)
      throw Unsupported{"a bracket was expected"};
    return match_[i - bb_];
  }

  // Statements nest at most this deep (the parse is recursive).
  static constexpr int kMaxDepth = 200;
  struct Deeper {
    explicit Deeper(int *d) : d_(d) {
      if (++*d_ > kMaxDepth) throw Unsupported{"statements nested too deeply"};
    }
    ~Deeper() { --*d_; }
    int *d_;
  };
  mutable int depth_ = 0;

  bool has_barrier(size_t b, size_t e) const {
    for (size_t i = b; i < e; ++i)
      if (t_[i].s == "gpuhal_barrier") return true;
    return false;
  }

  // Token i (a name) is written: assigned, incremented, or its address taken.
  bool written(size_t i, size_t lo) const {
    if (i + 1 < t_.size() && (is_assign_op(t_[i + 1].s) || t_[i + 1].s == "++" || t_[i + 1].s == "--")) return true;
    if (i > lo && (t_[i - 1].s == "++" || t_[i - 1].s == "--")) return true;
    if (i > lo && t_[i - 1].s == "&") {
      if (i - 1 == lo) return true;
      const std::string &p = t_[i - 2].s;
      if (!(is_ident(p) || is_number(p) || p == ")" || p == "]")) return true;
    }
    return false;
  }

  bool appears(const std::string &name, size_t b, size_t e) const {
    for (size_t i = b; i < e; ++i)
      if (t_[i].s == name) return true;
    return false;
  }

  std::vector<std::string> param_names(size_t pb, size_t pe) const {
    std::vector<std::string> out;
    size_t start = pb;
    int depth = 0;
    for (size_t i = pb; i <= pe; ++i) {
      if (i < pe && (t_[i].s == "(" || t_[i].s == "[")) ++depth;
      if (i < pe && (t_[i].s == ")" || t_[i].s == "]")) --depth;
      if (i == pe || (depth == 0 && t_[i].s == ",")) {
        // The name: the last identifier before any array brackets.
        std::string last;
        for (size_t j = start; j < i && t_[j].s != "["; ++j)
          if (is_ident(t_[j].s)) last = t_[j].s;
        if (!last.empty() && !type_words().count(last) && last != "void") out.push_back(last);
        start = i + 1;
      }
    }
    return out;
  }

  // ---- parsing ------------------------------------------------------------------

  Stmt parse(size_t &i, size_t end, int loop_depth) {
    if (i >= end) throw Unsupported{"a statement is missing"};
    Deeper deeper(&depth_);
    Stmt s;
    s.b = i;
    const std::string &w = t_[i].s;
    auto paren = [&](size_t at) {
      if (at >= end || t_[at].s != "(") throw Unsupported{"'" + w + "' without '('"};
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
      if (i < end && t_[i].s == "else") {
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
      if (i >= end || t_[i].s != "while") throw Unsupported{"do without while"};
      const size_t close = paren(i + 1);
      s.h0 = i + 2;
      s.h1 = close;
      i = close + 1;
      if (i >= end || t_[i].s != ";") throw Unsupported{"do-while without ';'"};
      ++i;
    } else if (w == "gpuhal_barrier") {
      s.kind = Stmt::Barrier;
      const size_t close = paren(i + 1);
      i = close + 1;
      if (i >= end || t_[i].s != ";") throw Unsupported{"gpuhal_barrier(...) not used as a statement"};
      ++i;
    } else if (w == "else") {
      throw Unsupported{"'else' without 'if'"};
    } else {
      // A simple statement: to the ';' outside brackets.
      size_t j = i;
      while (j < end && t_[j].s != ";") {
        if (t_[j].s == "(" || t_[j].s == "[" || t_[j].s == "{") j = partner(j);
        ++j;
      }
      if (j >= end) throw Unsupported{"a statement without ';'"};
      if (loop_depth == 0)
        for (size_t k = i; k < j; ++k)
          if (t_[k].s == "break" || t_[k].s == "continue")
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
  bool stmt_has_barrier_ahead(size_t i, size_t end) {
    size_t j = i;
    if (j >= end) throw Unsupported{"a statement is missing"};
    // Find the statement's extent with a permissive parse.
    j = extent(i, end);
    return has_barrier(i, j);
  }

  size_t extent(size_t i, size_t end) const {
    if (i >= end) throw Unsupported{"a statement is missing"};
    Deeper deeper(&depth_);
    const std::string &w = t_[i].s;
    auto paren = [&](size_t at) {
      if (at >= end || t_[at].s != "(") throw Unsupported{"'" + w + "' without '('"};
      return partner(at);
    };
    if (w == "{") return partner(i) + 1;
    if (w == "if") {
      size_t j = extent(paren(i + 1) + 1, end);
      if (j < end && t_[j].s == "else") j = extent(j + 1, end);
      return j;
    }
    if (w == "for" || w == "while" || w == "switch") return extent(paren(i + 1) + 1, end);
    if (w == "do") {
      size_t j = extent(i + 1, end);  // body, then while ( ... ) ;
      if (j + 1 < end && t_[j + 1].s == "(") return std::min(end, partner(j + 1) + 2);
      return end;
    }
    size_t j = i;
    while (j < end && t_[j].s != ";") {
      if (t_[j].s == "(" || t_[j].s == "[" || t_[j].s == "{") j = partner(j);
      ++j;
    }
    return std::min(end, j + 1);
  }

  // ---- declarations -------------------------------------------------------------

  // Reads statement [b, e) (';' at e - 1) as a declaration.
  Decl read_decl(size_t b, size_t e) const {
    Decl d;
    const size_t end = e - 1;
    const std::string &w = t_[b].s;
    if (w == "GPUHAL_SHARED_ARRAY" || w == "GPUHAL_DYNAMIC_SHARED") {
      d.kind = Decl::Shared;
      // (T, name, n) or (T, name): the name is the second argument.
      size_t j = b + 2;
      int depth = 0;
      for (; j < end; ++j) {
        if (t_[j].s == "(" || t_[j].s == "[") ++depth;
        if (t_[j].s == ")" || t_[j].s == "]") --depth;
        if (depth == 0 && t_[j].s == ",") break;
      }
      if (j + 1 >= end || !is_ident(t_[j + 1].s)) {
        d.kind = Decl::Unknown;
        return d;
      }
      Declarator x;
      x.name = t_[j + 1].s;
      d.ds.push_back(x);
      return d;
    }
    if (w == "GPUHAL_LOCAL_ARRAY") {
      // (T, name, n): a private array.
      if (b + 1 >= end || t_[b + 1].s != "(" || partner(b + 1) != end - 1) {
        d.kind = Decl::Unknown;
        return d;
      }
      std::vector<size_t> commas;
      int depth = 0;
      for (size_t j = b + 2; j < end - 1; ++j) {
        if (t_[j].s == "(" || t_[j].s == "[") ++depth;
        if (t_[j].s == ")" || t_[j].s == "]") --depth;
        if (depth == 0 && t_[j].s == ",") commas.push_back(j);
      }
      if (commas.size() != 2 || commas[1] != commas[0] + 2 || !is_ident(t_[commas[0] + 1].s)) {
        d.kind = Decl::Unknown;
        return d;
      }
      d.kind = Decl::Plain;
      Declarator x;
      x.type = text(b + 2, commas[0]);
      x.name = t_[commas[0] + 1].s;
      x.dims = "[(" + text(commas[1] + 1, end - 1) + ")]";
      d.ds.push_back(x);
      return d;
    }
    if (statement_words().count(w)) {
      d.kind = w == "return" || w == "break" || w == "continue" || w == "case" || w == "default" || w == "sizeof" ||
                       w == "delete" || w == "throw"
                   ? Decl::None
                   : Decl::Unknown;
      return d;
    }
    size_t i = b;
    while (i < end && is_ident(t_[i].s) && !statement_words().count(t_[i].s)) ++i;
    const size_t idents = i - b;
    if (idents == 0) return d;  // an expression: (..., *p = ..., ++i
    const std::string next = i < end ? t_[i].s : ";";
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
    const std::string base = text(b, base_e);
    i = base_e;
    d.kind = Decl::Plain;
    while (i < end) {
      Declarator x;
      std::string stars;
      while (i < end && (t_[i].s == "*" || t_[i].s == "&" || t_[i].s == "const" || t_[i].s == "volatile" ||
                         t_[i].s == "__restrict__" || t_[i].s == "GPUHAL_RESTRICT")) {
        if (t_[i].s == "&") x.reference = true;
        stars += " " + t_[i].s;
        ++i;
      }
      if (i >= end || !is_ident(t_[i].s)) {
        // `a * b;` and the like: not a declaration after all.
        d.kind = type_words().count(w) ? Decl::Unknown : Decl::None;
        d.ds.clear();
        return d;
      }
      x.name = t_[i].s;
      x.name_at = i;
      x.type = base + stars;
      ++i;
      while (i < end && t_[i].s == "[") {
        x.dims += text(i, partner(i) + 1);
        i = partner(i) + 1;
      }
      if (i < end && t_[i].s == "=") {
        x.init_b = ++i;
        while (i < end && t_[i].s != ",") {
          if (t_[i].s == "(" || t_[i].s == "[" || t_[i].s == "{") i = partner(i);
          ++i;
        }
        x.init_e = i;
      }
      d.ds.push_back(x);
      if (i < end && t_[i].s == ",") {
        ++i;
        continue;
      }
      if (i < end) {
        d.kind = type_words().count(w) ? Decl::Unknown : Decl::None;
        d.ds.clear();
        return d;
      }
    }
    if (d.ds.empty()) d.kind = Decl::None;
    return d;
  }

  const Entry *lookup(const std::string &name) const {
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
  bool rematerialisable(const Declarator &x, std::vector<std::string> *deps) const {
    if (x.reference || !x.dims.empty() || x.init_b == x.init_e) return false;
    for (size_t i = x.init_b; i < x.init_e; ++i) {
      const std::string &s = t_[i].s;
      const bool call = i + 1 < x.init_e && t_[i + 1].s == "(";
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
          (i == x.init_b || !(is_ident(t_[i - 1].s) || is_number(t_[i - 1].s) || t_[i - 1].s == ")")))
        return false;  // a dereference or an address
    }
    // Never written anywhere in the body.
    for (size_t i = bb_; i < be_; ++i)
      if (i != x.name_at && t_[i].s == x.name && written(i, bb_)) return false;
    return true;
  }

  // ---- emission -----------------------------------------------------------------

  // Statement text with `return;` turned into "this work-item is done".
  std::string body_text(size_t b, size_t e, const std::string &label) const {
    std::string out;
    size_t at = t_[b].b;
    for (size_t i = b; i < e; ++i) {
      if (t_[i].s == "return") {
        out += src_.substr(at, t_[i].b - at);
        out += "{ __gpuhal_done[__gpuhal_i] = 1; goto " + label + "; }";
        at = t_[i + 1].e;  // the ';' goes too
        ++i;
      }
    }
    out += src_.substr(at, t_[e - 1].e - at);
    return out;
  }

  // The names a region or a group-level header may read: per work-item
  // (index) or as work-item 0 sees them ("0").
  std::string bindings(const std::string &index) const {
    std::string out;
    std::set<std::string> seen;
    std::vector<const Entry *> order;
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (auto e = s->rbegin(); e != s->rend(); ++e)
        if (seen.insert(e->name).second) order.push_back(&*e);
    std::reverse(order.begin(), order.end());
    for (const Entry *e : order) {
      if (e->kind == Entry::Remat) out += e->text + " (void)" + e->name + ";\n";
      if (e->kind == Entry::Stored) out += "auto &" + e->name + " = " + e->text + "[" + index + "];\n";
    }
    return out;
  }

  void push(const Entry &e) {
    // A remat variable's initialiser must keep meaning what it meant.
    for (const auto &s : scopes_)
      for (const auto &o : s)
        if (o.kind == Entry::Remat && std::find(o.deps.begin(), o.deps.end(), e.name) != o.deps.end())
          throw Unsupported{"'" + e.name + "' is declared again while an earlier variable's value depends on it"};
    scopes_.back().push_back(e);
  }

  void emit_region(const std::vector<const Stmt *> &r, size_t block_end, std::string &out) {
    const size_t rb = r.front()->b, re = r.back()->e;
    const std::string label = "__gpuhal_next" + std::to_string(regions_++);
    std::string hoisted, body;
    std::vector<Entry> declared;
    pending_ = &declared;
    for (const Stmt *s : r) {
      if (s->kind != Stmt::Simple) {
        body += body_text(s->b, s->e, label) + "\n";
        continue;
      }
      const Decl d = read_decl(s->b, s->e);
      if (d.kind == Decl::Unknown) {
        for (size_t i = s->b; i < s->e; ++i)
          if (is_ident(t_[i].s) && !type_words().count(t_[i].s) && !statement_words().count(t_[i].s) &&
              appears(t_[i].s, re, block_end))
            throw Unsupported{"a statement this pass cannot read declares or uses '" + t_[i].s + "' across a barrier"};
        body += body_text(s->b, s->e, label) + "\n";
        continue;
      }
      if (d.kind == Decl::None) {
        body += body_text(s->b, s->e, label) + "\n";
        continue;
      }
      if (d.kind == Decl::Shared) {
        // Once per group, visible to every later region.
        if (appears(d.ds[0].name, rb, s->b))
          throw Unsupported{"'" + d.ds[0].name + "' is used before its shared declaration"};
        hoisted += text(s->b, s->e) + "\n";
        declared.push_back({Entry::Uniform, d.ds[0].name, "", {}});
        uniform_names_.insert(d.ds[0].name);
        for (size_t i = bb_; i < be_; ++i)
          if (t_[i].s == d.ds[0].name && i + 1 < be_ && is_assign_op(t_[i + 1].s))
            throw Unsupported{"a work-item writes the shared pointer '" + d.ds[0].name + "'"};
        continue;
      }
      bool any_live = false;
      for (const auto &x : d.ds) any_live = any_live || appears(x.name, re, block_end);
      if (!any_live) {
        body += body_text(s->b, s->e, label) + "\n";
        continue;
      }
      for (const auto &x : d.ds) {
        const std::string init = x.init_b < x.init_e ? text(x.init_b, x.init_e) : "";
        std::vector<std::string> deps;
        if (!appears(x.name, re, block_end)) {
          body += x.type + " " + x.name + x.dims + (init.empty() ? "" : " = " + init) + ";\n";
        } else if (rematerialisable(x, &deps)) {
          const std::string decl = x.type + " " + x.name + " = (" + init + ");";
          body += decl + "\n";
          declared.push_back({Entry::Remat, x.name, decl, deps});
        } else {
          if (x.reference) throw Unsupported{"the reference '" + x.name + "' is used across a barrier"};
          if (!x.dims.empty() && !init.empty())
            throw Unsupported{"the initialised array '" + x.name + "' is used across a barrier"};
          if (x.type.find("auto") != std::string::npos) throw Unsupported{"auto"};
          const std::string storage = "__gpuhal_s" + std::to_string(stored_types_.size());
          stored_types_.push_back({x.type, x.dims});
          body += "auto &" + x.name + " = " + storage + "[__gpuhal_i];";
          if (!init.empty()) body += " " + x.name + " = " + init + ";";
          body += "\n";
          declared.push_back({Entry::Stored, x.name, storage, {}});
        }
      }
    }
    pending_ = nullptr;
    out += hoisted;
    out +=
        "for (uint32_t __gpuhal_z = 0; __gpuhal_z < __gpuhal_lsz[2]; ++__gpuhal_z)\n"
        "for (uint32_t __gpuhal_y = 0; __gpuhal_y < __gpuhal_lsz[1]; ++__gpuhal_y)\n"
        "for (uint32_t __gpuhal_x = 0; __gpuhal_x < __gpuhal_lsz[0]; ++__gpuhal_x) {\n"
        "const uint32_t __gpuhal_i = (__gpuhal_z * __gpuhal_lsz[1] + __gpuhal_y) * __gpuhal_lsz[0] + "
        "__gpuhal_x;\n(void)__gpuhal_i;\n";
    if (has_return_) out += "if (__gpuhal_done[__gpuhal_i]) continue;\n";
    if (tls_items_)
      out +=
          "__gpuhal_item.local_id[0] = __gpuhal_x; __gpuhal_item.local_id[1] = __gpuhal_y; "
          "__gpuhal_item.local_id[2] = __gpuhal_z;\n";
    out += bindings("__gpuhal_i");
    out += "{\n" + body + "}\n";
    if (has_return_) out += label + ":;\n";
    out += "}\n";
    for (const auto &e : declared) push(e);
  }

  // Emits statements of one block (or one statement standing for a block);
  // names used up to block_end decide what must outlive a region.
  void emit_items(const std::vector<Stmt> &items, size_t block_end, std::string &out) {
    std::vector<const Stmt *> region;
    auto flush = [&] {
      if (!region.empty()) emit_region(region, block_end, out);
      region.clear();
    };
    for (const Stmt &s : items) {
      if (!s.barrier) {
        region.push_back(&s);
        continue;
      }
      flush();
      emit_control(s, out);
    }
    flush();
  }

  void emit_body(const Stmt &s, std::string &out) {
    scopes_.emplace_back();
    if (s.kind == Stmt::Block)
      emit_items(s.kids, s.e - 1, out);
    else
      emit_items({s}, s.e, out);
    scopes_.pop_back();
  }

  // A header read at group level: it may read per-work-item names (as
  // work-item 0 sees them) but not write them.
  void check_header(size_t b, size_t e, const std::set<std::string> &own) const {
    for (size_t i = b; i < e; ++i) {
      if (!is_ident(t_[i].s) || own.count(t_[i].s)) continue;
      const Entry *x = lookup(t_[i].s);
      if (x && x->kind != Entry::Uniform && written(i, b))
        throw Unsupported{"a loop or condition around a barrier writes the per-work-item '" + t_[i].s + "'"};
    }
  }

  // Group-level code (a condition, a loop header) sees the variables as the
  // first work-item still running sees them (control flow around barriers
  // is uniform across the group). When every work-item has returned, the
  // group is over.
  std::string representative() const {
    std::string out;
    if (has_return_)
      out +=
          "uint32_t __gpuhal_r = 0;\nwhile (__gpuhal_r < __gpuhal_n && __gpuhal_done[__gpuhal_r]) ++__gpuhal_r;\n"
          "if (__gpuhal_r == __gpuhal_n) goto __gpuhal_end;\n";
    else
      out += "const uint32_t __gpuhal_r = 0;\n";
    out +=
        "const uint32_t __gpuhal_x = __gpuhal_r % __gpuhal_lsz[0], __gpuhal_y = (__gpuhal_r / __gpuhal_lsz[0]) % "
        "__gpuhal_lsz[1], __gpuhal_z = __gpuhal_r / (__gpuhal_lsz[0] * __gpuhal_lsz[1]);\n"
        "(void)__gpuhal_x, (void)__gpuhal_y, (void)__gpuhal_z;\n";
    if (tls_items_)
      out +=
          "__gpuhal_item.local_id[0] = __gpuhal_x; __gpuhal_item.local_id[1] = __gpuhal_y; "
          "__gpuhal_item.local_id[2] = __gpuhal_z;\n";
    return out + bindings("__gpuhal_r");
  }

  // Sets __gpuhal_c to `cond` as the representative work-item sees it.
  std::string evaluate(const std::string &cond) const {
    return "{\n" + representative() + "__gpuhal_c = (" + cond + ");\n}\n";
  }

  void emit_control(const Stmt &s, std::string &out) {
    switch (s.kind) {
      case Stmt::Barrier:
        // The group runs on one thread: the loops' order is the barrier.
        out += "/* barrier */\n";
        return;
      case Stmt::Block:
        out += "{\n";
        emit_body(s, out);
        out += "}\n";
        return;
      case Stmt::If:
        check_header(s.h0, s.h1, {});
        out += "{\nbool __gpuhal_c;\n" + evaluate(text(s.h0, s.h1)) + "if (__gpuhal_c) {\n";
        emit_body(s.kids[0], out);
        out += "}";
        if (s.kids.size() > 1) {
          out += " else {\n";
          emit_body(s.kids[1], out);
          out += "}";
        }
        out += "\n}\n";
        return;
      case Stmt::While:
        check_header(s.h0, s.h1, {});
        out += "for (;;) {\nbool __gpuhal_c;\n" + evaluate(text(s.h0, s.h1)) + "if (!__gpuhal_c) break;\n";
        emit_body(s.kids[0], out);
        out += "}\n";
        return;
      case Stmt::Do:
        check_header(s.h0, s.h1, {});
        out += "for (;;) {\n{\n";
        emit_body(s.kids[0], out);
        out += "}\nbool __gpuhal_c;\n" + evaluate(text(s.h0, s.h1)) + "if (!__gpuhal_c) break;\n}\n";
        return;
      case Stmt::For: {
        // for (init; cond; step): the init may declare uniform loop variables.
        size_t semi1 = s.h1, semi2 = s.h1;
        int depth = 0;
        for (size_t i = s.h0; i < s.h1; ++i) {
          if (t_[i].s == "(" || t_[i].s == "[" || t_[i].s == "{") ++depth;
          if (t_[i].s == ")" || t_[i].s == "]" || t_[i].s == "}") --depth;
          if (depth == 0 && t_[i].s == ";") (semi1 == s.h1 ? semi1 : semi2) = i;
        }
        if (semi2 == s.h1) throw Unsupported{"a for header this pass cannot read"};
        std::set<std::string> own;
        if (semi1 > s.h0) {
          const Decl d = read_decl(s.h0, semi1 + 1);
          if (d.kind == Decl::Unknown || d.kind == Decl::Shared)
            throw Unsupported{"a for header this pass cannot read"};
          for (const auto &x : d.ds) own.insert(x.name);
        }
        const Stmt &body = s.kids[0];
        for (const auto &v : own)
          for (size_t i = body.b; i < body.e; ++i)
            if (t_[i].s == v && written(i, body.b))
              throw Unsupported{"a work-item writes the loop variable '" + v + "' of a loop around a barrier"};
        check_header(s.h0, s.h1, own);
        // The init runs once, as the representative work-item sees it; the
        // condition and the step again at every iteration.
        out += "{\n" + representative() + "for (" + text(s.h0, semi1) + "; ; ) {\n";
        scopes_.emplace_back();
        for (const auto &v : own) {
          push({Entry::Uniform, v, "", {}});
          uniform_names_.insert(v);
        }
        const std::string cond = semi2 > semi1 + 1 ? text(semi1 + 1, semi2) : "true";
        out += "bool __gpuhal_c;\n" + evaluate(cond) + "if (!__gpuhal_c) break;\n{\n";
        emit_body(body, out);
        out += "}\n";
        if (s.h1 > semi2 + 1) out += "{\n" + representative() + text(semi2 + 1, s.h1) + ";\n}\n";
        scopes_.pop_back();
        out += "}\n}\n";
        return;
      }
      case Stmt::Simple:
      case Stmt::Switch:
        break;
    }
    throw Unsupported{"gpuhal_barrier inside an expression or a switch"};
  }
};

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

}  // namespace

WorkItemLoops make_work_item_loops(const std::string &source, const std::vector<std::string> &barrier_kernels) {
  WorkItemLoops r;
  if (barrier_kernels.empty()) return r;
  const std::vector<Tok> t = tokenize(source);
  static const char kMarker[] = "#line 1 \"kernel\"\n";
  const size_t marker = source.find(kMarker);
  const size_t user = marker == std::string::npos ? 0 : marker + sizeof kMarker - 1;

  // The kernels' bodies, and what the user source does outside them.
  struct Found {
    std::string name;
    size_t pb, pe, bb, be;
  };
  std::vector<Found> kernels;
  std::vector<bool> in_body(t.size(), false);
  for (size_t i = 0; i + 4 < t.size(); ++i) {
    if (t[i].b < user || t[i].pp || t[i].s != "GPUHAL_KERNEL") continue;
    if (t[i + 1].s != "void" || !is_ident(t[i + 2].s) || t[i + 3].s != "(") continue;
    size_t j = i + 3;
    int depth = 0;
    for (; j < t.size(); ++j) {
      if (t[j].s == "(") ++depth;
      if (t[j].s == ")" && --depth == 0) break;
    }
    if (j + 1 >= t.size() || t[j + 1].s != "{") continue;
    size_t k = j + 1;
    depth = 0;
    for (; k < t.size(); ++k) {
      if (t[k].s == "{") ++depth;
      if (t[k].s == "}" && --depth == 0) break;
    }
    if (k >= t.size()) continue;
    kernels.push_back({t[i + 2].s, i + 4, j, j + 2, k});
    for (size_t m = j + 1; m <= k; ++m) in_body[m] = true;
    i = k;
  }
  std::string all_skip;
  bool tls_items = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].b < user || in_body[i]) continue;
    if (t[i].s == "gpuhal_barrier")
      all_skip = "gpuhal_barrier is used outside kernel bodies (in a device function or a macro)";
    if (id_builtins().count(t[i].s) || t[i].s == "GPUHAL_DYNAMIC_SHARED" || t[i].s == "gpuhal_dynamic_shared_bytes")
      tls_items = true;
    if (t[i].pp && (t[i].s == "return" || t[i].s == "break" || t[i].s == "continue" || t[i].s == "goto"))
      all_skip = "a macro contains return, break, continue or goto";
  }
  const std::set<std::string> macros = constant_macros(source, t, user);

  std::string text;
  for (const auto &name : barrier_kernels) {
    auto k = std::find_if(kernels.begin(), kernels.end(), [&](const Found &f) { return f.name == name; });
    if (k == kernels.end()) {
      r.skipped.push_back({name, "its definition is not of the form GPUHAL_KERNEL void name(...) { ... }"});
      continue;
    }
    if (!all_skip.empty()) {
      r.skipped.push_back({name, all_skip});
      continue;
    }
    try {
      Rewriter w(source, t, macros, tls_items);
      text += w.rewrite(name, k->pb, k->pe, k->bb, k->be);
      r.kernels.push_back(name);
    } catch (const Unsupported &u) {
      r.skipped.push_back({name, u.why});
    }
  }
  if (r.kernels.empty()) return r;
  // The builtins as the loops see them: ids from the loop counters, the
  // group's values from locals (no thread-local read in the loops).
  static const char *kMacros[] = {"gpuhal_local_id", "gpuhal_group_id", "gpuhal_local_size", "gpuhal_num_groups",
                                  "gpuhal_dynamic_shared_bytes"};
  std::string head = "\n/* work-item loops for kernels with barriers */\n";
  for (const char *m : kMacros) head += std::string("#pragma push_macro(\"") + m + "\")\n#undef " + m + "\n";
  head +=
      "#define gpuhal_local_id(d) ((d) == 0 ? __gpuhal_x : (d) == 1 ? __gpuhal_y : __gpuhal_z)\n"
      "#define gpuhal_group_id(d) (__gpuhal_gid[(d)])\n"
      "#define gpuhal_local_size(d) (__gpuhal_lsz[(d)])\n"
      "#define gpuhal_num_groups(d) (__gpuhal_ng[(d)])\n"
      "#define gpuhal_dynamic_shared_bytes() (__gpuhal_g->dynamic_shared_bytes)\n";
  std::string tail;
  for (const char *m : kMacros) tail += std::string("#pragma pop_macro(\"") + m + "\")\n";
  r.text = head + text + tail;
  return r;
}

}  // namespace gpuhal::host
