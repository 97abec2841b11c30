// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The work-item-loop rewrite's internals (host_workitem_loops.hpp has its
// interface): the tokens, statements and declarations it reads, and the
// Rewriter, whose members are cut by concern: reading the kernel
// (host_workitem_parse.cpp), emitting the loops (host_workitem_emit.cpp),
// one kernel's rewrite (host_workitem_loops.cpp); the word lists are in
// host_workitem_tokens.cpp; the tokenizer is the dialect's own.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernel_tokens.hpp"

namespace gpuhal::host::workitem {

// The dialect's tokens (dialect/kernel_tokens.hpp, shared with the core).
using Tok = dialect::Token;
using dialect::ident_char;
using dialect::ident_start;
using dialect::tokenize;

struct Unsupported {
  std::string why;
};

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
  // Stored scalars whose address is never taken: inside a region each
  // work-item works on a local copy (its storage type named here), read
  // from the storage when the region starts and written back when it
  // ends, so that the compiler keeps it in a register. Empty: the region
  // binds a reference to the storage.
  std::string local_type;
};

bool is_ident(const std::string &s);
bool is_number(const std::string &s);
const std::set<std::string> &type_words();
const std::set<std::string> &statement_words();
const std::set<std::string> &id_builtins();
bool is_assign_op(const std::string &s);
// A type spelled with the words of type_words() only, or a pointer.
bool scalar_type(const std::string &type);
std::set<std::string> constant_macros(const std::string &src, const std::vector<Tok> &t, size_t from);

class Rewriter {
 public:
  // tile16: also emit the loops for 16 x 16 groups (the source indexes a
  // second dimension).
  Rewriter(const std::string &src, const std::vector<Tok> &t, const std::set<std::string> &const_macros, bool tls_items,
           bool tile16)
      : src_(src), t_(t), const_macros_(const_macros), tls_items_(tls_items), tile16_(tile16) {}

  std::string rewrite(const std::string &name, size_t pb, size_t pe, size_t bb, size_t be);

  // How many stored scalars a kernel's loops keep on their own stack, an
  // array of gpuhal_host_max_items each (at most 8 KiB for 8-byte types):
  // the rest go to the scratch buffer.
  static constexpr int kStackScalars = 4;

  // The header of every region's innermost loop, over a row of work-items.
  static constexpr const char *kRowLoop =
      "for (uint32_t __gpuhal_x = 0; __gpuhal_x < __gpuhal_lsz[0]; ++__gpuhal_x) {\n";

 private:
  const std::string &src_;
  const std::vector<Tok> &t_;
  const std::set<std::string> &const_macros_;
  bool tls_items_;
  bool tile16_;
  std::string name_;
  size_t bb_ = 0, be_ = 0;
  std::vector<size_t> match_;  // bracket partner, indexed by token - bb_
  bool has_return_ = false;
  int regions_ = 0;
  std::vector<std::vector<Entry>> scopes_;
  std::set<std::string> uniform_names_;
  std::vector<std::pair<std::string, std::string>> stored_types_;  // type, dims
  const std::vector<Entry> *pending_ = nullptr;                    // the current region's declarations so far

  std::string text(size_t b, size_t e) const { return b < e ? src_.substr(t_[b].begin, t_[e - 1].end - t_[b].begin) : ""; }

  void match_brackets(size_t b, size_t e);
  size_t partner(size_t i) const;

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

  bool has_barrier(size_t b, size_t e) const;

  // Token i (a name) is written: assigned, incremented, or its address
  // taken; lo is the first token that may precede it.
  bool written(size_t i, size_t lo) const;
  // Token i (a name) has its address taken: `&x`, not `a & x`.
  bool address_taken(size_t i, size_t lo) const;

  bool appears(const std::string &name, size_t b, size_t e) const;

  std::vector<std::string> param_names(size_t pb, size_t pe) const;

  // ---- parsing ------------------------------------------------------------------

  Stmt parse(size_t &i, size_t end, int loop_depth);

  bool stmt_has_barrier_ahead(size_t i, size_t end);

  size_t extent(size_t i, size_t end) const;

  // ---- declarations -------------------------------------------------------------

  Decl read_decl(size_t b, size_t e) const;
  // read_decl's parts: the shared and private array macros, and the
  // declarators after a plain declaration's base type.
  Decl read_shared_decl(size_t b, size_t end) const;
  Decl read_local_array_decl(size_t b, size_t end) const;
  void read_declarators(size_t i, size_t end, const std::string &base, const std::string &w, Decl &d) const;

  const Entry *lookup(const std::string &name) const;

  bool rematerialisable(const Declarator &x, std::vector<std::string> *deps) const;

  // ---- emission -----------------------------------------------------------------

  std::string body_text(size_t b, size_t e, const std::string &label) const;
  int source_line(size_t at) const;

  // The region [rb, re) (re == 0: group-level code) binds the visible
  // names; *write_back receives the copies' stores for its end.
  std::string bindings(const std::string &index, size_t rb = 0, size_t re = 0, std::string *write_back = nullptr) const;

  bool keeps_in_register(const Declarator &x) const;

  void push(const Entry &e);

  void emit_region(const std::vector<const Stmt *> &r, size_t block_end, std::string &out);
  // emit_region's parts: a shared array hoisted before the loops, one
  // declarator of the region, and the loops' headers.
  void hoist_shared(const Stmt &s, const std::string &name, size_t rb, std::string &hoisted,
                    std::vector<Entry> &declared);
  void emit_declarator(const Declarator &x, size_t re, size_t block_end, std::string &body, std::string &write_back,
                       std::vector<Entry> &declared);
  void open_item_loops(std::string &out) const;

  void emit_items(const std::vector<Stmt> &items, size_t block_end, std::string &out);

  void emit_body(const Stmt &s, std::string &out);

  void check_header(size_t b, size_t e, const std::set<std::string> &own) const;

  std::string representative() const;

  std::string evaluate(const std::string &cond) const;

  void emit_control(const Stmt &s, std::string &out);
};

}  // namespace gpuhal::host::workitem
