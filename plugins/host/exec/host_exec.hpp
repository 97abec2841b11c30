// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Where the host backend's work runs besides stream workers: the plugin's
// thread pool (kernel launches' work-groups, copy_bytes_spread's large
// copies) and its fiber stacks (kernels with barriers). Both are made on
// first use with the settings of the first init (GPUHAL_HOST_THREADS,
// GPUHAL_HOST_FIBER_STACK), and go with the plugin's state.
//
// Thread safety: any thread, any time between init and shutdown.
#pragma once

#include "host_stack_pool.hpp"
#include "host_thread_pool.hpp"

namespace gpuhal::host {

ThreadPool &shared_pool();
StackPool &shared_stacks();

}  // namespace gpuhal::host
