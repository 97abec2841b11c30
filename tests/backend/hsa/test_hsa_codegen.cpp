// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's lowering compiled by the real amd_comgr (Debian's
// libamd-comgr2 works without a GPU) for gfx90a: every portable test kernel
// builds into a code object, and a barrier disassembles to s_barrier between
// work-group fences (s_waitcnt before, so the release is complete; and the
// acquire after). Its own executable: amd_comgr must not share a process
// with PoCL. Skipped (exit 77, with the reason) where amd_comgr is missing.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "hsa_comgr.hpp"
#include "hsa_lowering.hpp"
#include "kernel_sources.hpp"

namespace {

int failures = 0;
#define EXPECT(cond, what)                                  \
  do {                                                      \
    if (!(cond)) {                                          \
      std::printf("FAIL %s: %s\n", what, #cond);            \
      ++failures;                                           \
    }                                                       \
  } while (0)

const char *const kBuiltins[] = {
#define GPUHAL_BUILTIN(name, usage, meaning) #name,
#include "gpuhal/kernel_builtins.def"
#undef GPUHAL_BUILTIN
};

// What the core does: the prologue, every builtin's definition, the source.
std::string lowered(const std::string &source) {
  std::string s = gpuhal::hsa::hsa_lowering("");
  s += "\n";
  for (const char *b : kBuiltins) {
    const char *t = gpuhal::hsa::hsa_lowering(b);
    if (!t) {
      std::printf("FAIL lowering: no definition for %s\n", b);
      ++failures;
      continue;
    }
    s += t;
    s += "\n";
  }
  return s + "#line 1 \"kernel\"\n" + source;
}

}  // namespace

int main() {
  gpuhal::hsa::Comgr comgr;
  if (!comgr.ok()) {
    std::printf("SKIP: %s (Debian: libamd-comgr2)\n", comgr.why().c_str());
    return 77;
  }
  const std::string isa = "amdgcn-amd-amdhsa--gfx90a";
  struct Case {
    const char *name;
    const char *source;
    bool barrier;
  } cases[] = {{"saxpy", kSaxpy, false}, {"block_sum", kReduce, true}, {"matmul", kMatmul, true},
               {"dyn", kDynamic, true},     {"arrays", kArrays, true},  {"votes", kVotes, true},
               {"histogram", kAtomics, true}, {"every_op", kAtomicsExplicit, true},
               {"wave_facts", kWaves, true}};
  for (const auto &c : cases) {
    std::vector<char> code;
    std::string log;
    const bool built = comgr.compile(lowered(c.source), isa, {"-O3"}, &code, &log);
    EXPECT(built, c.name);
    if (!built) {
      std::printf("%s\n", log.c_str());
      continue;
    }
    // The metadata through comgr's API and through the hand-written reader
    // agree field by field, over real code objects.
    gpuhal::hsa::CodeObjectMetadata by_comgr, by_hand;
    std::string why;
    const bool read_comgr = comgr.read_metadata(code.data(), code.size(), &by_comgr, &why);
    EXPECT(read_comgr, c.name);
    if (!read_comgr) std::printf("comgr metadata: %s\n", why.c_str());
    EXPECT(gpuhal::hsa::read_code_object_metadata(code.data(), code.size(), &by_hand, &why), c.name);
    EXPECT(by_comgr.target == by_hand.target && by_comgr.target.find("gfx90a") != std::string::npos, c.name);
    EXPECT(by_comgr.kernels.size() == by_hand.kernels.size() && !by_hand.kernels.empty(), c.name);
    for (size_t k = 0; k < std::min(by_comgr.kernels.size(), by_hand.kernels.size()); ++k) {
      const auto &x = by_comgr.kernels[k], &y = by_hand.kernels[k];
      EXPECT(x.name == y.name && x.symbol == y.symbol, c.name);
      EXPECT(x.kernarg_size == y.kernarg_size && x.kernarg_align == y.kernarg_align, c.name);
      EXPECT(x.group_segment_fixed_size == y.group_segment_fixed_size, c.name);
      EXPECT(x.private_segment_fixed_size == y.private_segment_fixed_size, c.name);
      EXPECT(x.max_flat_workgroup_size == y.max_flat_workgroup_size, c.name);
      EXPECT(x.args.size() == y.args.size() && !x.args.empty(), c.name);
      for (size_t a = 0; a < std::min(x.args.size(), y.args.size()); ++a)
        EXPECT(x.args[a].offset == y.args[a].offset && x.args[a].size == y.args[a].size &&
                   x.args[a].value_kind == y.args[a].value_kind,
               c.name);
      std::printf("%s: kernel %s, %zu arguments, kernarg %u bytes, read by comgr and by the reader\n", c.name,
                  x.name.c_str(), x.args.size(), x.kernarg_size);
    }
    // Bytes that are no code object are refused, not crashed on.
    const std::vector<char> junk(256, 'x');
    EXPECT(!comgr.read_metadata(junk.data(), junk.size(), &by_comgr, &why), "junk");
    std::string text;
    EXPECT(comgr.disassemble(code, isa, &text, &log), c.name);
    EXPECT(text.find(std::string("\n") + c.name + ":") != std::string::npos, c.name);
    if (getenv("SHOW")) std::printf("%s\n", text.c_str());
    // The shuffles and reductions read other lanes through ds_bpermute.
    if (c.source == kWaves) EXPECT(text.find("ds_bpermute_b32") != std::string::npos, c.name);
    if (!c.barrier) continue;
    // Every s_barrier sits between the work-group fences: the release's
    // wait for the group's LDS operations right before it and the acquire's
    // after it, before any memory access (a bare s_barrier, numba.roc's
    // barrier(0), has neither). Back-to-back barriers, as a counting barrier
    // has, share the wait between them; ALU instructions may come first.
    std::vector<std::string> lines;
    {
      std::stringstream ss(text);
      for (std::string l; std::getline(ss, l);) {
        const size_t f = l.find_first_not_of(" \t");
        if (f != std::string::npos) lines.push_back(l.substr(f));
      }
    }
    auto starts = [](const std::string &l, const char *p) { return l.rfind(p, 0) == 0; };
    auto lds_wait = [&](const std::string &l) { return starts(l, "s_waitcnt") && l.find("lgkmcnt(0)") != std::string::npos; };
    auto memory = [&](const std::string &l) {
      for (const char *p : {"ds_", "global_", "flat_", "buffer_", "scratch_", "s_load", "s_barrier"})
        if (starts(l, p)) return true;
      return false;
    };
    size_t barriers = 0, fenced_count = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!starts(lines[i], "s_barrier")) continue;
      ++barriers;
      bool after = false;
      for (size_t j = i + 1; j < lines.size() && !after; ++j) {
        if (lds_wait(lines[j])) after = true;
        else if (memory(lines[j])) break;
      }
      if (i > 0 && lds_wait(lines[i - 1]) && after) ++fenced_count;
    }
    std::printf("%s: %zu bytes of gfx90a code, %zu s_barrier, %zu between release and acquire waits\n", c.name,
                code.size(),
                barriers, fenced_count);
    EXPECT(barriers > 0, c.name);
    EXPECT(fenced_count == barriers, c.name);
    if (fenced_count != barriers) std::printf("%s\n", text.c_str());
  }
  // A syntax error is reported with the compiler's message.
  std::vector<char> code;
  std::string log;
  EXPECT(!comgr.compile(lowered("GPUHAL_KERNEL void k(int n) {\n  int x = ;\n}\n"), isa, {}, &code, &log),
         "syntax error");
  EXPECT(log.find("kernel:2") != std::string::npos, "syntax error names the line");
  if (log.find("kernel:2") == std::string::npos) std::printf("%s\n", log.c_str());
  std::printf("%d passed, %d failed\n", failures ? 0 : 1, failures);
  return failures ? 1 : 0;
}
