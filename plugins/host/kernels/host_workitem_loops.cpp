// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_workitem_loops.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "array_dims.hpp"
#include "host_workitem_rewriter.hpp"

namespace gpuhal::host {

using namespace workitem;

namespace workitem {

namespace {
// The struct of a kernel's work-item loops: __gpuhal_any for any group shape
// (body: the function's text after its __gpuhal_lsz line) and, when
// `tile16`, __gpuhal_tile16 for 16 x 16 x any groups, whose row loops carry
// __GPUHAL_ROW_LOOP_HINT; then the scratch bytes each work-item needs.
std::string loops_struct(const std::string &name, const std::string &ptext, const std::string &f,
                         const std::string &scratch, bool tile16_wanted) {
  std::string tile16 = f;
  const std::string hint = "__GPUHAL_ROW_LOOP_HINT\n";
  for (size_t at = 0; (at = tile16.find(Rewriter::kRowLoop, at)) != std::string::npos; at += hint.size() + 1)
    tile16.insert(at, hint);
  const std::string any_shape = "__gpuhal_g->local_size[0], __gpuhal_g->local_size[1], __gpuhal_g->local_size[2]";
  std::string loops = "namespace {\nstruct " + name + "__gpuhal_loops {\n";
  loops += "static void __gpuhal_any(const gpuhal_host_group *__gpuhal_g" + ptext + ") {\n";
  loops += "  const uint32_t __gpuhal_lsz[3] = {" + any_shape + "};\n" + f;
  // The 16 x 16 copy only where the source indexes a second dimension: a
  // kernel that only asks for dimension 0 runs as 1-D groups, and its
  // second copy would double its compile (a block reduction's module
  // 240 -> 150 ms) for nothing. A group of that shape still runs, through
  // __gpuhal_any.
  loops += std::string("static constexpr bool __gpuhal_has_tile16 = ") + (tile16_wanted ? "true" : "false") + ";\n";
  if (tile16_wanted) {
    loops += "static void __gpuhal_tile16(const gpuhal_host_group *__gpuhal_g" + ptext + ") {\n";
    loops += "  const uint32_t __gpuhal_lsz[3] = {16u, 16u, __gpuhal_g->local_size[2]};\n" + tile16;
  }
  loops += "};\n}  // namespace\n";
  loops += "static constexpr uint32_t " + name + "__gpuhal_loops_scratch = " + scratch + ";\n";
  return loops;
}
}  // namespace

// Tokens [pb, pe) are the parameter list, [bb, be) the body (braces excluded).
std::string Rewriter::rewrite(const std::string &name, size_t pb, size_t pe, size_t bb, size_t be) {
  name_ = name;
  bb_ = bb;
  be_ = be;
  match_brackets(bb, be);
  for (size_t i = bb; i < be; ++i) {
    if (t_[i].preprocessor) throw Unsupported{"a preprocessor line inside the kernel body"};
    if (t_[i].text == "goto") throw Unsupported{"goto"};
    if (t_[i].text == "return") {
      has_return_ = true;
      if (i + 1 >= be || t_[i + 1].text != ";") throw Unsupported{"return with a value (or inside a lambda)"};
    }
    if (t_[i].text == "__gpuhal_wi" || t_[i].text.rfind("__gpuhal_", 0) == 0)
      throw Unsupported{"the body uses gpuhal's internal names"};
  }
  // Parameters: uniform, and no work-item may write one (each has its own
  // copy on a GPU; here they are shared).
  scopes_.emplace_back();
  std::vector<std::string> params = param_names(pb, pe);
  for (const auto &p : params) {
    for (size_t i = bb; i < be; ++i)
      if (t_[i].text == p && written(i, bb)) throw Unsupported{"a work-item writes its parameter '" + p + "'"};
    scopes_.back().push_back({Entry::Uniform, p, "", {}, ""});
    uniform_names_.insert(p);
  }
  std::vector<Stmt> body;
  for (size_t i = bb; i < be;) body.push_back(parse(i, be, 0));
  std::string out;
  emit_items(body, be, out);

  // The loops, twice (the entry points' run_loops picks): __gpuhal_any for
  // any group shape, __gpuhal_tile16 for 16 x 16 x any groups, whose row
  // loops have a trip count the compiler knows. Those it would unroll
  // completely before the vectoriser sees them, leaving a row of
  // conditional loads (a tile's `row < N ? A[...] : 0`) as 16 scalar loads
  // and branches: __GPUHAL_ROW_LOOP_HINT keeps them loops, each then one
  // vector. In an unnamed namespace: with external (inline) linkage, clang
  // gave the block reduction's loops scalar code (1.2 -> 5.3 ms).
  std::string ptext;  // ", <the kernel's parameters>", or nothing
  if (pe > pb && !(pe - pb == 1 && t_[pb].text == "void")) ptext = ", " + text(pb, pe);
  std::string f;  // a copy's body after its __gpuhal_lsz, the one line in which the two differ
  f += "  const uint32_t __gpuhal_gid[3] = {__gpuhal_g->group_id[0], __gpuhal_g->group_id[1], "
       "__gpuhal_g->group_id[2]};\n";
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
  int on_stack = 0;
  for (size_t k = 0; k < stored_types_.size(); ++k) {
    const std::string T = name + "__gpuhal_t" + std::to_string(k);
    const std::string S = "__gpuhal_s" + std::to_string(k);
    types += "typedef std::remove_const_t<" + stored_types_[k].first + "> " + T + stored_types_[k].second + ";\n";
    // The first few scalars live in arrays of the function's own frame:
    // the compiler then knows that no pointer of the kernel reaches them
    // (it cannot know that of the scratch buffer), so it reorders and
    // vectorises the regions' loads and stores around them freely.
    if (stored_types_[k].second.empty() && scalar_type(stored_types_[k].first) && on_stack < kStackScalars) {
      ++on_stack;
      f += "  alignas(64) " + T + " " + S + "[gpuhal_host_max_items];\n";
      continue;
    }
    f += "  " + T + " *" + S + " = (" + T + " *)__gpuhal_at;\n";
    f += "  __gpuhal_at = (__gpuhal_at + sizeof(" + T + ") * __gpuhal_n + 63) & ~(uintptr_t)63;\n";
    scratch += " + sizeof(" + T + ") + 64";
  }
  f += "{\n" + out + "}\n";
  if (has_return_) f += "__gpuhal_end:;\n";
  f += "  __gpuhal_wi = nullptr;\n}\n";
  return types + loops_struct(name, ptext, f, scratch, tile16_);
}

}  // namespace workitem


namespace {
// True when the user's source (from byte `user` on, its macros included)
// asks a work-item or group builtin for anything but dimension 0: a literal
// 1 or 2, or a dimension only known when it runs.
bool indexes_past_dimension0(const std::vector<Tok> &t, size_t user) {
  static const std::set<std::string> kPerDimension = {"gpuhal_local_id",   "gpuhal_global_id",  "gpuhal_group_id",
                                                      "gpuhal_local_size", "gpuhal_num_groups", "gpuhal_global_size"};
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].begin < user || !kPerDimension.count(t[i].text)) continue;
    const bool dimension0 = i + 3 < t.size() && t[i + 1].text == "(" && t[i + 2].text == "0" && t[i + 3].text == ")";
    if (!dimension0) return true;
  }
  return false;
}

// A kernel of the user's source: its name, parameter tokens [pb, pe) and
// body tokens [bb, be) (braces excluded).
struct KernelBody {
  std::string name;
  size_t pb, pe, bb, be;
};

// Every `GPUHAL_KERNEL void name(...) { ... }` of the user's source (from
// byte `user` on); marks their bodies' tokens in *in_body.
std::vector<KernelBody> kernel_bodies(const std::vector<Tok> &t, size_t user, std::vector<bool> *in_body) {
  std::vector<KernelBody> kernels;
  for (size_t i = 0; i + 4 < t.size(); ++i) {
    if (t[i].begin < user || t[i].preprocessor || t[i].text != "GPUHAL_KERNEL") continue;
    if (t[i + 1].text != "void" || !is_ident(t[i + 2].text) || t[i + 3].text != "(") continue;
    size_t j = i + 3;
    int depth = 0;
    for (; j < t.size(); ++j) {
      if (t[j].text == "(") ++depth;
      if (t[j].text == ")" && --depth == 0) break;
    }
    if (j + 1 >= t.size() || t[j + 1].text != "{") continue;
    size_t k = j + 1;
    depth = 0;
    for (; k < t.size(); ++k) {
      if (t[k].text == "{") ++depth;
      if (t[k].text == "}" && --depth == 0) break;
    }
    if (k >= t.size()) continue;
    kernels.push_back({t[i + 2].text, i + 4, j, j + 2, k});
    for (size_t m = j + 1; m <= k; ++m) (*in_body)[m] = true;
    i = k;
  }
  return kernels;
}

// The builtins as the loops see them: ids from the loop counters, the
// group's values from locals (no thread-local read in the loops); pushed
// before the loops and popped after them.
const char *const kLoopMacros[] = {"gpuhal_local_id", "gpuhal_group_id", "gpuhal_local_size", "gpuhal_num_groups",
                                   "gpuhal_dynamic_shared_bytes"};

std::string loops_prologue() {
  std::string head = "\n/* work-item loops for kernels with barriers */\n";
  for (const char *m : kLoopMacros) head += std::string("#pragma push_macro(\"") + m + "\")\n#undef " + m + "\n";
  head +=
      "#define gpuhal_local_id(d) ((d) == 0 ? __gpuhal_x : (d) == 1 ? __gpuhal_y : __gpuhal_z)\n"
      "#define gpuhal_group_id(d) (__gpuhal_gid[(d)])\n"
      "#define gpuhal_local_size(d) (__gpuhal_lsz[(d)])\n"
      "#define gpuhal_num_groups(d) (__gpuhal_ng[(d)])\n"
      "#define gpuhal_dynamic_shared_bytes() (__gpuhal_g->dynamic_shared_bytes)\n"
      // Before a row loop whose trip count is a constant (see rewrite()).
      "#if defined(__clang__)\n"
      "#define __GPUHAL_ROW_LOOP_HINT _Pragma(\"clang loop unroll(disable)\")\n"
      "#else\n"
      "#define __GPUHAL_ROW_LOOP_HINT\n"
      "#endif\n"
      GPUHAL_PLUGIN_ALIGNMENT_CHECK_CXX
      // Shared arrays declared at a kernel's top level live in the loops
      // function's frame (at most 64 KiB: the lowering's own check),
      // on whole cache lines: a 16-float row of a tile is then one line, and
      // a 512-bit load of it never splits.
      "#define __GPUHAL_SHARED_ARRAY_IN_FRAME(T, name, ...) __GPUHAL_SHARED_ARRAY_ALIGNED_IN_FRAME(T, name, 16, "
      "__VA_ARGS__)\n"
      "#define __GPUHAL_SHARED_ARRAY_ALIGNED_IN_FRAME(T, name, align, ...) __GPUHAL_ALIGNMENT_OK(align, name); "
      "__GPUHAL_SHARED_FITS(T, name, __VA_ARGS__); alignas(align) alignas(T) alignas(64) T name "
      "__GPUHAL_DIMS(__VA_ARGS__)\n";
  return head;
}

std::string loops_epilogue() {
  std::string tail;
  for (const char *m : kLoopMacros) tail += std::string("#pragma pop_macro(\"") + m + "\")\n";
  return tail;
}

bool is_counting_barrier(const std::string &s) {
  return s == "gpuhal_barrier_count" || s == "gpuhal_barrier_and" || s == "gpuhal_barrier_or";
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
  std::vector<bool> in_body(t.size(), false);
  const std::vector<KernelBody> kernels = kernel_bodies(t, user, &in_body);
  std::string all_skip;
  bool tls_items = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].begin < user || in_body[i]) continue;
    if (t[i].text == "gpuhal_barrier" || is_counting_barrier(t[i].text))
      all_skip = "gpuhal_barrier is used outside kernel bodies (in a device function or a macro)";
    if (id_builtins().count(t[i].text) || t[i].text == "GPUHAL_DYNAMIC_SHARED" || t[i].text == "gpuhal_dynamic_shared_bytes")
      tls_items = true;
    if (t[i].preprocessor && (t[i].text == "return" || t[i].text == "break" || t[i].text == "continue" || t[i].text == "goto"))
      all_skip = "a macro contains return, break, continue or goto";
  }
  const std::set<std::string> macros = constant_macros(source, t, user);
  const bool tile16 = indexes_past_dimension0(t, user);

  std::string text;
  for (const auto &name : barrier_kernels) {
    auto k = std::find_if(kernels.begin(), kernels.end(), [&](const KernelBody &f) { return f.name == name; });
    if (k == kernels.end()) {
      r.skipped.push_back({name, "its definition is not of the form GPUHAL_KERNEL void name(...) { ... }"});
      continue;
    }
    if (!all_skip.empty()) {
      r.skipped.push_back({name, all_skip});
      continue;
    }
    // A barrier that counts a predicate sits inside an expression, where
    // the loops cannot split: such kernels keep their fibers.
    if (std::any_of(t.begin() + std::ptrdiff_t(k->bb), t.begin() + std::ptrdiff_t(k->be),
                    [](const Tok &x) { return is_counting_barrier(x.text); })) {
      r.skipped.push_back({name, "gpuhal_barrier_count / _and / _or reduce across the group (fibers keep them)"});
      continue;
    }
    try {
      Rewriter w(source, t, macros, tls_items, tile16);
      text += w.rewrite(name, k->pb, k->pe, k->bb, k->be);
      r.kernels.push_back(name);
    } catch (const Unsupported &u) {
      r.skipped.push_back({name, u.why});
    }
  }
  if (r.kernels.empty()) return r;
  r.text = loops_prologue() + text + loops_epilogue();
  return r;
}

}  // namespace gpuhal::host
