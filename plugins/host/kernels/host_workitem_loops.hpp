// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend: kernels with barriers as work-item loops.
//
// A kernel with barriers can run each work-item as a fiber (always correct,
// host_kernel_runner.cpp), but a fiber switch per work-item per barrier
// costs far more than the code between barriers usually does. Like the CPU
// OpenCL implementations (PoCL's "work-item loops", MCUDA's "thread loops")
// this pass rewrites such a kernel, at source level, into a function that
// runs a whole work-group on one thread: the code between two barriers
// becomes a loop over the group's work-items, which the C++ compiler can
// optimise and vectorise, and the barrier is the gap between two loops.
//
// What it does, for every barrier kernel it can read:
//  - The body is split into statements; statements that contain a barrier
//    (the barrier itself, and `{}` / if / for / while / do around barriers)
//    stay at group level; runs of barrier-free statements between them
//    become "regions", each a loop over the work-items.
//  - Control flow around barriers is uniform across the group (OpenCL and
//    CUDA require it), so a condition or loop header is evaluated once, as
//    work-item 0 sees it.
//  - A variable declared in a region and used after it lives on per
//    work-item: re-evaluated where used when its initialiser depends only on
//    ids, sizes, parameters and constants (so `lid` stays the loop index and
//    the loops vectorise), else kept in an array of one slot per work-item
//    in scratch memory the plugin passes in (`__gpuhal_scratch_bytes` per
//    work-item).
//  - `return` marks the work-item done: it skips every later region (a
//    work-item that returned counts as arrived at every later barrier, as
//    with fibers).
//  - Shared arrays are declared once, at group level.
//
// Anything it cannot prove it handles (a barrier outside a kernel body or in
// a macro, goto, break/continue out of a region, a parameter or loop
// variable written by work-items, a declaration it cannot read, `auto`,
// preprocessor lines inside the body...) leaves the kernel to fibers, with
// the reason recorded. The original kernel is kept either way.
//
// Pure function, thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpuhal::host {

struct WorkItemLoops {
  // Text to append after the module's source: for each kernel K in
  // `kernels`, `K__gpuhal_loops` (run_group signature after the argument
  // unpacking: `(const gpuhal_host_group *, params...)`) and the constant
  // `K__gpuhal_loops_scratch` (scratch bytes per work-item).
  std::string text;
  std::vector<std::string> kernels;
  std::vector<std::pair<std::string, std::string>> skipped;  // kernel, why it keeps fibers
};

// `source` is the text the plugin compiles (lowering + user source; the user
// source starts after the core's `#line 1 "kernel"` marker when there is
// one); `barrier_kernels` the kernels the core marked as using barriers.
WorkItemLoops make_work_item_loops(const std::string &source, const std::vector<std::string> &barrier_kernels);

}  // namespace gpuhal::host
