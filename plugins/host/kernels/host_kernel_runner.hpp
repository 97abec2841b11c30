// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend: running a kernel launch.
//
// Work-groups are spread over a plugin-wide thread pool (the stream's worker
// takes part). A group of a kernel without barriers runs all its work-items
// as a plain loop inside the module (run_group). A group of a kernel with
// barriers runs each work-item as a fiber (Boost.Context, a stack each with
// a guard page below it): the scheduler resumes the fibers in turn, each
// runs until its next barrier or its end, and a barrier round ends when all
// have come back, so every work-item reaches a barrier before any passes
// it. A work-item that returns early counts as arrived at every later
// barrier (what OpenCL implementations do; on a GPU it is undefined).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host_kernel_abi.hpp"
#include "host_stack_pool.hpp"
#include "host_thread_pool.hpp"

namespace gpuhal::host {

struct KernelLaunch {
  const gpuhal_host_kernel *kernel = nullptr;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  std::vector<unsigned char> storage;  // the argument values, copied at launch
  std::vector<void *> args;            // args[i] points into storage
  gpuhal_host_assert_record *assert_state = nullptr;  // the module's (null: none)
  // gpuhal_host_group::prefetch_limits for the launch (empty: none; one per
  // argument otherwise).
  std::vector<uint64_t> prefetch_limits;
};

// Runs every group of `launch`; returns "" or what went wrong (a barrier
// reached in a kernel compiled as barrier-free, no memory for stacks, a
// failed gpuhal_assert: then no further group starts, and the module's
// assert record is cleared for the next launch).
std::string run_kernel(ThreadPool &pool, StackPool &stacks, const KernelLaunch &launch);

}  // namespace gpuhal::host
