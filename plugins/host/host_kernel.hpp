// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend: the device-code entries of the plugin table (lowering,
// compile, modules, launch).
//
// A module is a shared object (compiled here, or prebuilt) loaded from a
// memfd with dlopen, so no file of it needs to stay on disk. A kernel handle
// points into the module's gpuhal_host_kernels table; launch checks that it
// belongs to a module of the context.
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gpuhal/plugin.h"
#include "host_copy.hpp"
#include "host_kernel_abi.hpp"
#include "host_exec.hpp"
#include "host_kernel_runner.hpp"

namespace gpuhal::host {

struct HostModule {
  void *dl = nullptr;
  int fd = -1;  // the memfd it was loaded from: open while loaded, so its /proc path stays unique
  std::vector<const gpuhal_host_kernel *> kernels;
  std::vector<uint64_t> static_shared;  // per kernel: bytes of its GPUHAL_SHARED_ARRAYs
  std::vector<uint64_t> stack_need;     // per kernel: stack per work-item (0: not known)
  gpuhal_host_assert_record *assert_state = nullptr;  // the module's gpuhal_host_assert_state (null: none)
  ~HostModule();
};

// Fills L.prefetch_limits (host_kernel_abi.hpp) for a launch that streams
// memory: a 1-D launch of at least kPrefetchMinItems work-items of a
// barrier-free kernel, through each argument that points into device-usable
// memory; leaves it empty otherwise. The grid, block and arguments must be
// set. Called at launch and when a graph's kernel node gets new arguments.
void set_prefetch_limits(KernelLaunch &L);

class HostContext;
// True when k is a kernel of a module of c; *static_shared gets its bytes
// of static shared memory, *stack_need its stack per work-item (0: unknown).
// *assert_state, when asked for, gets the module's assert record (or null).
bool kernel_of_context(HostContext *c, const gpuhal_host_kernel *k, uint64_t *static_shared, uint64_t *stack_need,
                       gpuhal_host_assert_record **assert_state = nullptr);

// Shared memory per work-group, static and dynamic together: what
// device_properties reports and launches are held to.
constexpr uint64_t kSharedMemoryPerBlock = 64 * 1024;

// Bytes of static shared memory (GPUHAL_SHARED_ARRAY) per kernel name of a
// compiled module image (host_module_limits.cpp). Any bytes are safe.
std::map<std::string, uint64_t> static_shared_bytes(const void *image, uint64_t size);

// The names of the GPUHAL_CONSTANT arrays a (lowered) source declares, and
// the bytes those of them that are in a module image take (its symbols).
std::vector<std::string> constant_names(const std::string &source);
uint64_t constant_bytes(const void *image, uint64_t size, const std::vector<std::string> &names);
// Constant memory a module may use: a CUDA GPU's 64 KiB, so that a program
// that runs here runs there.
constexpr uint64_t kConstantMemory = 64 * 1024;

// Stack per work-item (host_stack_usage.cpp): "name bytes" lines of each
// kernel's deepest call chain from GCC's -fcallgraph-info=su output (kernels
// whose depth cannot be known are left out); carried as a trailer after the
// module's ELF bytes (append), read back with the ELF's own size (read).
std::string stack_usage_from_callgraph(const std::string &ci);
void append_stack_usage(std::vector<unsigned char> *image, const std::string &text);
std::map<std::string, uint64_t> read_stack_usage(const void *image, uint64_t size, uint64_t *elf_size);

}  // namespace gpuhal::host
