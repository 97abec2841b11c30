// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The contract between the host plugin and the shared objects it compiles
// from kernel sources (or loads prebuilt).
//
// GPUHAL_HOST_KERNEL_ABI_TEXT is both compiled into the plugin and pasted,
// as text, into every generated source (host_lowering.cpp), so the two sides
// cannot drift apart. A module exports:
//   const uint32_t gpuhal_host_kernel_abi;           == GPUHAL_HOST_KERNEL_ABI_VERSION
//   const struct gpuhal_host_kernel gpuhal_host_kernels[];  ended by a NULL name
// run_group runs every work-item of one work-group as a plain loop (kernels
// without barriers); run_item runs one work-item (a fiber, for kernels with
// barriers). Both read the arguments from args[i] (pointers to the values).
// barrier_count is the barrier that also counts the work-items whose
// predicate was nonzero (gpuhal_barrier_count / _and / _or).
// run_group_loops, when not NULL, runs a whole work-group of a kernel with
// barriers as work-item loops (host_workitem_loops.hpp); it needs
// group->scratch to hold local_items * loops_scratch_per_item + 64 bytes.
// Version 5 leaves out entries the plugin does not call: run_group is NULL
// (run_groups or the work-item loops run every group), and so is run_item
// for a kernel without barriers.
// run_groups (version 4) runs the groups of linear index [first, last) of a
// kernel without barriers one after the other, as run_group would, setting
// group->group_id for each (x fastest): the arguments are read and the
// work-item pointer set once per range instead of once per group.
// prefetch_limits (version 5), when not NULL, holds one value per kernel
// parameter: for a pointer, the bytes from it to the end of its allocation
// (0: do not prefetch through it). run_groups then prefetches, for each
// pointer parameter with a limit, the bytes a group `kPrefetchAhead` bytes
// further on would reach if the kernel indexed the pointer by its global
// id, within the limit: the one access pattern of a streaming 1-D kernel,
// whose bounds check makes the compiler's vector loads masked ones, which
// some CPUs' hardware prefetchers do not follow (see host_kernel.cpp).
// The plugin loads modules of version 4 too (they never read the field).
// A module may also export gpuhal_host_assert_state (a
// gpuhal_host_assert_record): its first failed gpuhal_assert sets `failed`
// and writes the message; the plugin reads and clears it after a launch.
// gpuhal_host_max_items bounds local_size[0] * [1] * [2]: the plugin never
// launches a larger group, and a module may size arrays by it.
#pragma once

#include <stdint.h>

#define GPUHAL_HOST_KERNEL_ABI_VERSION 5
// The oldest module version the plugin still loads.
#define GPUHAL_HOST_KERNEL_ABI_OLDEST 4

#define GPUHAL_HOST_KERNEL_ABI_TEXT                                                                              \
  struct gpuhal_host_group {                                                                                     \
    uint32_t group_id[3];                                                                                        \
    uint32_t local_size[3];                                                                                      \
    uint32_t num_groups[3];                                                                                      \
    uint32_t dynamic_shared_bytes;                                                                               \
    unsigned char *dynamic_shared;                                                                               \
    void (*barrier)(void *scheduler);                                                                            \
    void *scheduler;                                                                                             \
    unsigned char *scratch;                                                                                      \
    int (*barrier_count)(void *scheduler, int predicate);                                                        \
    const uint64_t *prefetch_limits;                                                                             \
  };                                                                                                             \
  struct gpuhal_host_item {                                                                                      \
    uint32_t local_id[3];                                                                                        \
    const struct gpuhal_host_group *group;                                                                       \
  };                                                                                                             \
  typedef void (*gpuhal_host_run_group_fn)(const struct gpuhal_host_group *group, void *const *args);            \
  typedef void (*gpuhal_host_run_item_fn)(const struct gpuhal_host_item *item, void *const *args);               \
  typedef void (*gpuhal_host_run_groups_fn)(struct gpuhal_host_group * group, void *const *args, uint64_t first, \
                                            uint64_t last);                                                      \
  struct gpuhal_host_kernel {                                                                                    \
    const char *name;                                                                                            \
    gpuhal_host_run_group_fn run_group;                                                                          \
    gpuhal_host_run_item_fn run_item;                                                                            \
    uint32_t param_count;                                                                                        \
    const uint32_t *param_sizes;                                                                                 \
    uint32_t uses_barrier;                                                                                       \
    gpuhal_host_run_group_fn run_group_loops;                                                                    \
    uint32_t loops_scratch_per_item;                                                                             \
    gpuhal_host_run_groups_fn run_groups;                                                                        \
  };                                                                                                             \
  struct gpuhal_host_assert_record {                                                                             \
    int failed;                                                                                                  \
    char message[508];                                                                                           \
  };                                                                                                             \
  enum { gpuhal_host_max_items = 1024 };

extern "C" {
GPUHAL_HOST_KERNEL_ABI_TEXT
}

#define GPUHAL_HOST_STRINGIFY_(...) #__VA_ARGS__
#define GPUHAL_HOST_STRINGIFY(...) GPUHAL_HOST_STRINGIFY_(__VA_ARGS__)
