// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The work-item-loop rewrite writing the loops: regions between barriers,
// control around them, the per-item bindings (Rewriter members).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "host_workitem_rewriter.hpp"

namespace gpuhal::host::workitem {

// The line of the user's source (after the core's `#line 1 "kernel"`) the
// token at byte `at` is on: the loops are emitted after the source, where
// __LINE__ would count on.
int Rewriter::source_line(size_t at) const {
  static const char kMarker[] = "#line 1 \"kernel\"\n";
  const size_t marker = src_.rfind(kMarker, at);
  const size_t from = marker == std::string::npos ? 0 : marker + sizeof kMarker - 1;
  return 1 + int(std::count(src_.begin() + std::ptrdiff_t(from), src_.begin() + std::ptrdiff_t(at), '\n'));
}

// Statement text with `return;` turned into "this work-item is done", and
// `gpuhal_assert(` into `__gpuhal_assert_at(<line>, "<kernel>", `: the
// assertion names the line and kernel of the source, not of the loops.
std::string Rewriter::body_text(size_t b, size_t e, const std::string &label) const {
  std::string out;
  size_t at = t_[b].begin;
  for (size_t i = b; i < e; ++i) {
    if (t_[i].text == "gpuhal_assert" && i + 1 < e && t_[i + 1].text == "(" && i + 1 >= bb_ &&
        match_[i + 1 - bb_] > i + 2 && match_[i + 1 - bb_] < e) {
      const size_t close = match_[i + 1 - bb_];
      const std::string condition = src_.substr(t_[i + 2].begin, t_[close - 1].end - t_[i + 2].begin);
      out += src_.substr(at, t_[i].begin - at);
      out += "__gpuhal_assert_at(" + std::to_string(source_line(t_[i].begin)) + ", \"" + name_ + "\", __GPUHAL_STR(" +
             condition + "), " + condition + ")";
      at = t_[close].end;
      i = close;
      continue;
    }
    if (t_[i].text == "return") {
      out += src_.substr(at, t_[i].begin - at);
      out += "{ __gpuhal_done[__gpuhal_i] = 1; goto " + label + "; }";
      at = t_[i + 1].end;  // the ';' goes too
      ++i;
    }
  }
  out += src_.substr(at, t_[e - 1].end - at);
  return out;
}

// The names a region or a group-level header may read: per work-item
// (index) or as work-item 0 sees them ("0").
std::string Rewriter::bindings(const std::string &index, size_t rb, size_t re, std::string *write_back) const {
  std::string out;
  std::set<std::string> seen;
  std::vector<const Entry *> order;
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
    for (auto e = s->rbegin(); e != s->rend(); ++e)
      if (seen.insert(e->name).second) order.push_back(&*e);
  std::reverse(order.begin(), order.end());
  for (const Entry *e : order) {
    if (e->kind == Entry::Remat) out += e->text + " (void)" + e->name + ";\n";
    if (e->kind != Entry::Stored) continue;
    if (e->local_type.empty() || !write_back) {
      out += "auto &" + e->name + " = " + e->text + "[" + index + "];\n";
    } else if (appears(e->name, rb, re)) {
      out += e->local_type + " " + e->name + " = " + e->text + "[" + index + "];\n";
      *write_back += e->text + "[" + index + "] = " + e->name + ";\n";
    }
  }
  return out;
}

// A stored variable a region may hold in a register: a scalar or a
// pointer (copied in and out whole), whose address the kernel never takes
// (a pointer to the copy would not outlive the region).
bool Rewriter::keeps_in_register(const Declarator &x) const {
  if (x.reference || !x.dims.empty() || !scalar_type(x.type)) return false;
  for (size_t i = bb_; i < be_; ++i)
    if (t_[i].text == x.name && address_taken(i, bb_)) return false;
  return true;
}

void Rewriter::push(const Entry &e) {
  // A remat variable's initialiser must keep meaning what it meant.
  for (const auto &s : scopes_)
    for (const auto &o : s)
      if (o.kind == Entry::Remat && std::find(o.deps.begin(), o.deps.end(), e.name) != o.deps.end())
        throw Unsupported{"'" + e.name + "' is declared again while an earlier variable's value depends on it"};
  scopes_.back().push_back(e);
}

// A shared array declared in a region [rb, ...) by statement s: once per
// group, before the region's loops, visible to every later region.
void Rewriter::hoist_shared(const Stmt &s, const std::string &name, size_t rb, std::string &hoisted,
                            std::vector<Entry> &declared) {
  if (appears(name, rb, s.b)) throw Unsupported{"'" + name + "' is used before its shared declaration"};
  // At the kernel's top level, an array of the loops function's own
  // frame: the compiler then knows that no pointer argument reaches it
  // and drops the run-time overlap checks it puts before every
  // vectorised work-item loop that stores to it (a tiled matmul: 52 ->
  // 43 ms). Inside a block (a loop around barriers may rely on what it
  // held in the previous iteration) it stays the lowering's array of
  // the thread.
  if (scopes_.size() == 1 && (t_[s.b].text == "GPUHAL_SHARED_ARRAY" || t_[s.b].text == "GPUHAL_SHARED_ARRAY_ALIGNED"))
    hoisted += "__" + t_[s.b].text + "_IN_FRAME" + text(s.b + 1, s.e) + "\n";
  else
    hoisted += text(s.b, s.e) + "\n";
  declared.push_back({Entry::Uniform, name, "", {}, ""});
  uniform_names_.insert(name);
  for (size_t i = bb_; i < be_; ++i)
    if (t_[i].text == name && i + 1 < be_ && is_assign_op(t_[i + 1].text))
      throw Unsupported{"a work-item writes the shared pointer '" + name + "'"};
}

// One declarator of a region ending at re: a plain local when nothing after
// the region uses it, a declaration repeated in later regions when its
// initialiser can be (rematerialisable), else per-work-item storage (kept
// in a register within the region where it can be, written back at its end).
void Rewriter::emit_declarator(const Declarator &x, size_t re, size_t block_end, std::string &body,
                               std::string &write_back, std::vector<Entry> &declared) {
  const std::string init = x.init_b < x.init_e ? text(x.init_b, x.init_e) : "";
  std::vector<std::string> deps;
  if (!appears(x.name, re, block_end)) {
    body += x.type + " " + x.name + x.dims + (init.empty() ? "" : " = " + init) + ";\n";
    return;
  }
  if (rematerialisable(x, &deps)) {
    const std::string decl = x.type + " " + x.name + " = (" + init + ");";
    body += decl + "\n";
    declared.push_back({Entry::Remat, x.name, decl, deps, ""});
    return;
  }
  if (x.reference) throw Unsupported{"the reference '" + x.name + "' is used across a barrier"};
  if (!x.dims.empty() && !init.empty())
    throw Unsupported{"the initialised array '" + x.name + "' is used across a barrier"};
  if (x.type.find("auto") != std::string::npos) throw Unsupported{"auto"};
  const std::string storage = "__gpuhal_s" + std::to_string(stored_types_.size());
  const std::string type = name_ + "__gpuhal_t" + std::to_string(stored_types_.size());
  stored_types_.push_back({x.type, x.dims});
  if (keeps_in_register(x)) {
    body += type + " " + x.name + (init.empty() ? "{}" : " = " + init) + ";\n";
    write_back += storage + "[__gpuhal_i] = " + x.name + ";\n";
    declared.push_back({Entry::Stored, x.name, storage, {}, type});
    return;
  }
  body += "auto &" + x.name + " = " + storage + "[__gpuhal_i];";
  if (!init.empty()) body += " " + x.name + " = " + init + ";";
  body += "\n";
  declared.push_back({Entry::Stored, x.name, storage, {}, ""});
}

// The loops over a group's work-items that every region runs in, opened
// (the region closes the row loop's brace).
void Rewriter::open_item_loops(std::string &out) const {
  out +=
      "for (uint32_t __gpuhal_z = 0; __gpuhal_z < __gpuhal_lsz[2]; ++__gpuhal_z)\n"
      "for (uint32_t __gpuhal_y = 0; __gpuhal_y < __gpuhal_lsz[1]; ++__gpuhal_y)\n" +
      std::string(kRowLoop) +
      "const uint32_t __gpuhal_i = (__gpuhal_z * __gpuhal_lsz[1] + __gpuhal_y) * __gpuhal_lsz[0] + "
      "__gpuhal_x;\n(void)__gpuhal_i;\n";
  if (has_return_) out += "if (__gpuhal_done[__gpuhal_i]) continue;\n";
  if (tls_items_)
    out +=
        "__gpuhal_item.local_id[0] = __gpuhal_x; __gpuhal_item.local_id[1] = __gpuhal_y; "
        "__gpuhal_item.local_id[2] = __gpuhal_z;\n";
}

void Rewriter::emit_region(const std::vector<const Stmt *> &r, size_t block_end, std::string &out) {
  const size_t rb = r.front()->b, re = r.back()->e;
  const std::string label = "__gpuhal_next" + std::to_string(regions_++);
  std::string hoisted, body, declared_write_back;
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
        if (is_ident(t_[i].text) && !type_words().count(t_[i].text) && !statement_words().count(t_[i].text) &&
            appears(t_[i].text, re, block_end))
          throw Unsupported{"a statement this pass cannot read declares or uses '" + t_[i].text + "' across a barrier"};
      body += body_text(s->b, s->e, label) + "\n";
      continue;
    }
    if (d.kind == Decl::None) {
      body += body_text(s->b, s->e, label) + "\n";
      continue;
    }
    if (d.kind == Decl::Shared) {
      hoist_shared(*s, d.ds[0].name, rb, hoisted, declared);
      continue;
    }
    bool any_live = false;
    for (const auto &x : d.ds) any_live = any_live || appears(x.name, re, block_end);
    if (!any_live) {
      body += body_text(s->b, s->e, label) + "\n";
      continue;
    }
    for (const auto &x : d.ds) emit_declarator(x, re, block_end, body, declared_write_back, declared);
  }
  pending_ = nullptr;
  out += hoisted;
  open_item_loops(out);
  std::string write_back;
  out += bindings("__gpuhal_i", rb, re, &write_back);
  out += "{\n" + body + declared_write_back + "}\n" + write_back;
  if (has_return_) out += label + ":;\n";
  out += "}\n";
  for (const auto &e : declared) push(e);
}

// Emits statements of one block (or one statement standing for a block);
// names used up to block_end decide what must outlive a region.
void Rewriter::emit_items(const std::vector<Stmt> &items, size_t block_end, std::string &out) {
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

void Rewriter::emit_body(const Stmt &s, std::string &out) {
  scopes_.emplace_back();
  if (s.kind == Stmt::Block)
    emit_items(s.kids, s.e - 1, out);
  else
    emit_items({s}, s.e, out);
  scopes_.pop_back();
}

// A header read at group level: it may read per-work-item names (as
// work-item 0 sees them) but not write them.
void Rewriter::check_header(size_t b, size_t e, const std::set<std::string> &own) const {
  for (size_t i = b; i < e; ++i) {
    if (!is_ident(t_[i].text) || own.count(t_[i].text)) continue;
    const Entry *x = lookup(t_[i].text);
    if (x && x->kind != Entry::Uniform && written(i, b))
      throw Unsupported{"a loop or condition around a barrier writes the per-work-item '" + t_[i].text + "'"};
  }
}

// Group-level code (a condition, a loop header) sees the variables as the
// first work-item still running sees them (control flow around barriers
// is uniform across the group). When every work-item has returned, the
// group is over.
std::string Rewriter::representative() const {
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
std::string Rewriter::evaluate(const std::string &cond) const {
  return "{\n" + representative() + "__gpuhal_c = (" + cond + ");\n}\n";
}

void Rewriter::emit_control(const Stmt &s, std::string &out) {
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
        if (t_[i].text == "(" || t_[i].text == "[" || t_[i].text == "{") ++depth;
        if (t_[i].text == ")" || t_[i].text == "]" || t_[i].text == "}") --depth;
        if (depth == 0 && t_[i].text == ";") (semi1 == s.h1 ? semi1 : semi2) = i;
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
          if (t_[i].text == v && written(i, body.b))
            throw Unsupported{"a work-item writes the loop variable '" + v + "' of a loop around a barrier"};
      check_header(s.h0, s.h1, own);
      // The init runs once, as the representative work-item sees it; the
      // condition and the step again at every iteration.
      out += "{\n" + representative() + "for (" + text(s.h0, semi1) + "; ; ) {\n";
      scopes_.emplace_back();
      for (const auto &v : own) {
        push({Entry::Uniform, v, "", {}, ""});
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

}  // namespace gpuhal::host::workitem
