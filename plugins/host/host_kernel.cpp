// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_kernel.hpp"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "builtin_table.hpp"
#include "compiled_image.hpp"
#include "host_plugin.hpp"
#include "host_entries.hpp"
#include "host_lowering.hpp"
#include "host_workitem_loops.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

namespace {

// Launches of at most this many work-items may run on the calling thread.
constexpr uint64_t kInlineLaunchItems = 4096;

HostModule *find_module(HostContext *c, gpuhal_module_t handle) {
  std::lock_guard<std::mutex> lock(c->modules_mu);
  auto it = c->modules.find(reinterpret_cast<HostModule *>(handle));
  return it == c->modules.end() ? nullptr : it->second.get();
}

void write_all(int fd, const void *data, uint64_t bytes, bool *ok) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, size_t(std::min<uint64_t>(bytes, 1u << 30)));
    if (n <= 0) {
      *ok = false;
      return;
    }
    p += n;
    bytes -= uint64_t(n);
  }
}

// Launches of fewer work-items mostly work in the caches: no prefetching.
constexpr uint64_t kPrefetchMinItems = uint64_t(1) << 18;

}  // namespace

// Why the host backend prefetches for a kernel at all: a streaming kernel's
// bounds check (`if (i < n) y[i] = a * x[i] + y[i]`) makes the vectorized
// work-item loop's loads masked ones, and on AMD Zen 4 masked loads do not
// train the hardware prefetcher. saxpy over 16M floats on one thread took
// 5.9 ms, the same loop with plain loads 3.0 ms, and the masked loop with
// the next lines prefetched in software 3.2 ms (the 2-core EPYC of
// docs/performance.md). The generated run_groups prefetches only where
// the kernel would read if it indexed the pointer by its global id, and
// never past the allocation's end, so a kernel that reads otherwise (a
// histogram's bins, a lookup table) costs at most its own allocation's
// bytes more; 2-D and 3-D launches (tiles, whose rows are not the groups'
// order) and small launches get none.
void set_prefetch_limits(KernelLaunch &L) {
  L.prefetch_limits.clear();
  const gpuhal_host_kernel *k = L.kernel;
  if (k->uses_barrier || !k->run_groups) return;
  if (L.grid[1] != 1 || L.grid[2] != 1 || L.block[1] != 1 || L.block[2] != 1) return;
  if (uint64_t(L.grid[0]) * L.block[0] < kPrefetchMinItems) return;
  std::vector<uint64_t> limits(L.args.size(), 0);
  bool any = false;
  for (size_t i = 0; i < L.args.size(); ++i) {
    if (k->param_sizes[i] != 8) continue;  // pointers are 8 bytes (so are some scalars: then 0, or unused)
    uint64_t value = 0;
    std::memcpy(&value, L.args[i], 8);
    limits[i] = plugin_state().registry.bytes_to_end(uintptr_t(value));
    any = any || limits[i] != 0;
  }
  if (!any) return;
  if (plugin::log_enabled(GPUHAL_LOG_DEBUG)) {
    std::string which;
    for (size_t i = 0; i < limits.size(); ++i)
      if (limits[i]) which += (which.empty() ? "" : ", ") + std::to_string(i);
    plugin::log(GPUHAL_LOG_DEBUG, std::string("host: kernel '") + k->name + "', " +
                                      std::to_string(uint64_t(L.grid[0]) * L.block[0]) +
                                      " work-items: prefetch limits for the 8-byte arguments " + which +
                                      " (those of pointer type are prefetched)");
  }
  L.prefetch_limits = std::move(limits);
}

bool kernel_of_context(HostContext *c, const gpuhal_host_kernel *k, uint64_t *static_shared, uint64_t *stack_need,
                       gpuhal_host_assert_record **assert_state) {
  std::lock_guard<std::mutex> lock(c->modules_mu);
  for (const auto &kv : c->modules)
    for (size_t i = 0; i < kv.second->kernels.size(); ++i)
      if (kv.second->kernels[i] == k) {
        *static_shared = kv.second->static_shared[i];
        *stack_need = kv.second->stack_need[i];
        if (assert_state) *assert_state = kv.second->assert_state;
        return true;
      }
  return false;
}

HostModule::~HostModule() {
  if (dl) dlclose(dl);
  if (fd >= 0) ::close(fd);
}

gpuhal_status_t lower_builtin(const char *builtin, const char **text) {
  return plugin::lower_builtin_entry(builtin, text, host_lowering(builtin));
}

gpuhal_status_t module_compile(gpuhal_context_t ctx, const gpuhal_compile_args_t *args, void **image, uint64_t *bytes,
                               uint32_t *format) {
  return plugin::compile_checked(args, image, bytes, format, [&] {
    return in_context(ctx, "module_compile", [&](HostContext *) -> gpuhal_status_t {
      const std::string options = args->options ? args->options : "";
      std::vector<std::string> barrier_kernels;
      for (uint32_t i = 0; i < args->kernel_count; ++i)
        if (args->kernel_uses_barrier && args->kernel_uses_barrier[i]) barrier_kernels.push_back(args->kernel_names[i]);
      WorkItemLoops loops;
      if (plugin_state().work_item_loops) loops = make_work_item_loops(args->source, barrier_kernels);
      for (const auto &k : loops.kernels)
        plugin::log(GPUHAL_LOG_DEBUG, "host: kernel '" + k + "' runs as work-item loops");
      for (const auto &k : loops.skipped)
        plugin::log(GPUHAL_LOG_DEBUG, "host: kernel '" + k.first + "' runs its work-items as fibers: " + k.second);
      std::vector<unsigned char> so;
      gpuhal_status_t st = GPUHAL_ERROR_COMPILATION_FAILED;
      // Every kernel runs as loops (no fibers): the vectorising compiler,
      // when there is one (see host_compiler.hpp); the stack-counting one
      // otherwise, and when it fails.
      const CompilerSettings &settings = plugin_state().compiler;
      if (loops.kernels.size() == barrier_kernels.size() && compiler_available(settings.vectorizing_cxx)) {
        CompilerSettings vectorizing = settings;
        vectorizing.cxx = settings.vectorizing_cxx;
        st = compile_host_module(
            vectorizing, std::string(args->source) + "\n" + loops.text + host_kernel_entry_points(*args, loops.kernels),
            options, &so);
        // Its messages are not shown: the module goes to the other compiler,
        // whose messages are the ones reported if that fails too.
        if (st != GPUHAL_SUCCESS)
          plugin::log(GPUHAL_LOG_DEBUG,
                      "host: " + settings.vectorizing_cxx + " refused the module; building it with " + settings.cxx);
      }
      if (st != GPUHAL_SUCCESS && !loops.kernels.empty()) {
        // The rewrite is checked by the compiler: should it not compile (a
        // construct the pass misread), the kernels keep their fibers and any
        // error shown is about the user's own source.
        st = compile_host_module(
            plugin_state().compiler,
            std::string(args->source) + "\n" + loops.text + host_kernel_entry_points(*args, loops.kernels), options,
            &so);
        if (st != GPUHAL_SUCCESS)
          plugin::log(GPUHAL_LOG_INFO,
                      "host: the work-item loops did not compile; the module's barrier kernels run as "
                      "fibers: " +
                          std::string(plugin::last_error()).substr(0, 2000));
      }
      if (st != GPUHAL_SUCCESS)
        st = compile_host_module(plugin_state().compiler,
                                 std::string(args->source) + "\n" + host_kernel_entry_points(*args, {}), options, &so);
      if (st != GPUHAL_SUCCESS) return st;
      if (const uint64_t constants = constant_bytes(so.data(), so.size(), constant_names(args->source));
          constants > kConstantMemory)
        return fail(GPUHAL_ERROR_COMPILATION_FAILED,
                    "module_compile: the module has " + std::to_string(constants) +
                        " bytes of constant arrays (GPUHAL_CONSTANT and ModuleOptions constants); a GPU has " +
                        std::to_string(kConstantMemory) + " bytes of constant memory");
      return plugin::hand_out_image(so.data(), so.size(), GPUHAL_IMAGE_HOST_SHARED_OBJECT, image, bytes, format);
    });
  });
}

void image_free(void *image) {
  std::free(image);
}

gpuhal_status_t module_load(gpuhal_context_t ctx, const void *image, uint64_t bytes, uint32_t format,
                            gpuhal_module_t *out) {
  return in_context(ctx, "module_load", [&](HostContext *c) -> gpuhal_status_t {
    if (!image || !bytes || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "module_load: null or empty image");
    if (format != GPUHAL_IMAGE_HOST_SHARED_OBJECT)
      return fail(GPUHAL_ERROR_INVALID_IMAGE, "module_load: the host backend loads host shared objects only (format " +
                                                  std::to_string(format) + ")");
    const auto *b = static_cast<const unsigned char *>(image);
    if (bytes < 4 || b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F')
      return fail(GPUHAL_ERROR_INVALID_IMAGE, "module_load: the image is not an ELF shared object");
    // The stack each kernel needs, when module_compile measured it (a
    // trailer after the ELF bytes).
    const std::map<std::string, uint64_t> stack = read_stack_usage(image, bytes, &bytes);
    int fd = ::memfd_create("gpuhal-host-module", MFD_CLOEXEC);
    if (fd < 0) return fail(GPUHAL_ERROR_UNKNOWN, std::string("module_load: memfd_create: ") + std::strerror(errno));
    bool ok = true;
    write_all(fd, image, bytes, &ok);
    if (!ok) {
      ::close(fd);
      return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "module_load: cannot write the image to a memfd");
    }
    auto m = std::make_unique<HostModule>();
    // dlopen finds libraries by name first: a /proc/self/fd/<n> path that a
    // loaded library already has would hand back that library. Move to
    // another descriptor number until the name is new.
    std::vector<int> spare;
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    for (int tries = 0; tries < 256; ++tries) {
      void *old = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
      if (!old) break;
      dlclose(old);
      const int other = ::dup(fd);
      if (other < 0) break;
      spare.push_back(fd);
      fd = other;
      path = "/proc/self/fd/" + std::to_string(fd);
    }
    for (int s : spare) ::close(s);
    m->fd = fd;
    dlerror();
    m->dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!m->dl) {
      const char *e = dlerror();
      return fail(GPUHAL_ERROR_INVALID_IMAGE, std::string("module_load: dlopen: ") + (e ? e : "failed"));
    }
    const auto *abi = static_cast<const uint32_t *>(dlsym(m->dl, "gpuhal_host_kernel_abi"));
    const auto *table = static_cast<const gpuhal_host_kernel *>(dlsym(m->dl, "gpuhal_host_kernels"));
    if (!abi || !table)
      return fail(GPUHAL_ERROR_INVALID_IMAGE,
                  "module_load: not a gpuhal host module (no gpuhal_host_kernel_abi / gpuhal_host_kernels)");
    if (*abi < GPUHAL_HOST_KERNEL_ABI_OLDEST || *abi > GPUHAL_HOST_KERNEL_ABI_VERSION)
      return fail(GPUHAL_ERROR_INVALID_IMAGE, "module_load: host module ABI " + std::to_string(*abi) +
                                                  ", this plugin speaks " +
                                                  std::to_string(GPUHAL_HOST_KERNEL_ABI_OLDEST) + " to " +
                                                  std::to_string(GPUHAL_HOST_KERNEL_ABI_VERSION));
    m->assert_state = static_cast<gpuhal_host_assert_record *>(dlsym(m->dl, "gpuhal_host_assert_state"));
    const std::map<std::string, uint64_t> shared = static_shared_bytes(image, bytes);
    for (const gpuhal_host_kernel *k = table; k->name; ++k) {
      // What the runner calls must be there: run_groups (version 4 on) or
      // run_group for a kernel without barriers; work-item loops or
      // run_item (fibers) for one with them.
      const bool runnable = k->uses_barrier ? (k->run_group_loops || k->run_item) : (k->run_groups || k->run_group);
      if (!runnable || (k->param_count && !k->param_sizes))
        return fail(GPUHAL_ERROR_INVALID_IMAGE,
                    std::string("module_load: kernel '") + k->name + "' has a broken entry");
      m->kernels.push_back(k);
      const auto it = shared.find(k->name);
      m->static_shared.push_back(it == shared.end() ? 0 : it->second);
      const auto st = stack.find(k->name);
      m->stack_need.push_back(st == stack.end() ? 0 : st->second);
    }
    std::lock_guard<std::mutex> lock(c->modules_mu);
    plugin::hand_out_owned(c->modules, m, out);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t module_unload(gpuhal_context_t ctx, gpuhal_module_t module) {
  return in_context(ctx, "module_unload", [&](HostContext *c) -> gpuhal_status_t {
    std::unique_ptr<HostModule> m;
    {
      std::lock_guard<std::mutex> lock(c->modules_mu);
      m = plugin::take_owned(c->modules, reinterpret_cast<HostModule *>(module));
    }
    if (!m) return fail(GPUHAL_ERROR_INVALID_HANDLE, "module_unload: not a module of this context");
    return GPUHAL_SUCCESS;  // m's destructor dlcloses
  });
}

gpuhal_status_t module_get_kernel(gpuhal_context_t ctx, gpuhal_module_t module, const char *name,
                                  gpuhal_kernel_t *out) {
  return in_context(ctx, "module_get_kernel", [&](HostContext *c) -> gpuhal_status_t {
    if (!name || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "module_get_kernel: null argument");
    HostModule *m = find_module(c, module);
    if (!m) return fail(GPUHAL_ERROR_INVALID_HANDLE, "module_get_kernel: not a module of this context");
    for (const auto *k : m->kernels)
      if (std::strcmp(k->name, name) == 0) {
        *out = reinterpret_cast<gpuhal_kernel_t>(const_cast<gpuhal_host_kernel *>(k));
        return GPUHAL_SUCCESS;
      }
    return fail(GPUHAL_ERROR_NOT_FOUND, std::string("module_get_kernel: no kernel '") + name + "' in the module");
  });
}

namespace {

// launch's phases: the shape and the kernel's memory against the host
// device's limits, then the arguments copied into the launch.

// The grid, block, shared memory and fiber stack of a launch of k: "" when
// they fit, else what does not. *threads gets the block's work-items.
std::string launch_shape_refusal(const gpuhal_host_kernel *k, const gpuhal_launch_config_t &config,
                                 uint64_t static_shared, uint64_t stack_need, uint64_t *threads) {
  static const uint32_t max_block[3] = {1024, 1024, 64};
  *threads = 1;
  for (int d = 0; d < 3; ++d) {
    if (!config.grid[d] || !config.block[d]) return "launch: grid and block sizes must be >= 1";
    if (config.block[d] > max_block[d])
      return "launch: block dimension " + std::to_string(d) + " is " + std::to_string(config.block[d]) +
             ", at most " + std::to_string(max_block[d]);
    *threads *= config.block[d];
  }
  if (*threads > gpuhal_host_max_items)
    return "launch: a block of " + std::to_string(*threads) + " work-items, at most " +
           std::to_string(gpuhal_host_max_items);
  // What a GPU reserves per work-group, static and dynamic together, within
  // the 64 KiB device_properties reports: a program that runs here runs
  // there.
  if (static_shared + config.dynamic_shared_bytes > kSharedMemoryPerBlock)
    return std::string("launch: kernel '") + k->name + "' uses " + std::to_string(static_shared) +
           " bytes of static shared memory" +
           (config.dynamic_shared_bytes
                ? " and " + std::to_string(config.dynamic_shared_bytes) + " bytes of dynamic shared memory"
                : std::string()) +
           "; a work-group has at most " + std::to_string(kSharedMemoryPerBlock);
  // A kernel with barriers that is not run as work-item loops runs each
  // work-item on a fiber stack: a deeper call chain would overflow it
  // (a crash). The fiber's own entry and the barrier switch need about
  // 2 KiB more.
  if (k->uses_barrier && !k->run_group_loops && stack_need + 2048 > plugin_state().fiber_stack)
    return std::string("launch: kernel '") + k->name + "' needs about " + std::to_string(stack_need + 2048) +
           " bytes of stack per work-item (its deepest call chain, as the compiler counted it), more than the " +
           std::to_string(plugin_state().fiber_stack) +
           " bytes of the fiber stacks its work-items run on; set GPUHAL_HOST_FIBER_STACK higher";
  return "";
}

// The arguments copied into L (8 bytes a slot): "" or what is wrong with them.
std::string copy_launch_args(const gpuhal_host_kernel *k, void *const *args, uint32_t arg_count, KernelLaunch &L) {
  if (arg_count != k->param_count)
    return std::string("launch: kernel '") + k->name + "' takes " + std::to_string(k->param_count) +
           " argument(s), " + std::to_string(arg_count) + " given";
  for (uint32_t i = 0; i < arg_count; ++i) {
    if (!args || !args[i]) return "launch: argument " + std::to_string(i) + " is null";
    if (k->param_sizes[i] > 8)
      return "launch: parameter " + std::to_string(i) + " of kernel '" + k->name + "' is " +
             std::to_string(k->param_sizes[i]) + " bytes; arguments are at most 8 bytes";
  }
  L.storage.resize(size_t(8) * arg_count);
  L.args.resize(arg_count);
  for (uint32_t i = 0; i < arg_count; ++i) {
    std::memcpy(L.storage.data() + 8 * i, args[i], k->param_sizes[i]);
    L.args[i] = L.storage.data() + 8 * i;
  }
  return "";
}

}  // namespace

gpuhal_status_t launch(gpuhal_context_t ctx, gpuhal_kernel_t kernel, const gpuhal_launch_config_t *config,
                       void *const *args, uint32_t arg_count, gpuhal_stream_t stream) {
  return in_context(ctx, "launch", [&](HostContext *c) -> gpuhal_status_t {
    if (!config || config->struct_size < sizeof(gpuhal_launch_config_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: null or short launch configuration");
    const auto *k = reinterpret_cast<const gpuhal_host_kernel *>(kernel);
    uint64_t static_shared = 0, stack_need = 0;
    gpuhal_host_assert_record *assert_state = nullptr;
    if (!k || !kernel_of_context(c, k, &static_shared, &stack_need, &assert_state))
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "launch: not a kernel of a module of this context");
    auto s = c->stream(stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "launch: invalid stream handle");
    if (gpuhal_status_t st = c->captures.refusal(s.get(), s->is_default, "launch")) return st;
    uint64_t threads = 1;
    if (std::string why = launch_shape_refusal(k, *config, static_shared, stack_need, &threads); !why.empty())
      return fail(GPUHAL_ERROR_INVALID_VALUE, why);
    auto L = std::make_shared<KernelLaunch>();
    L->kernel = k;
    L->assert_state = assert_state;
    if (std::string why = copy_launch_args(k, args, arg_count, *L); !why.empty())
      return fail(GPUHAL_ERROR_INVALID_VALUE, why);
    for (int d = 0; d < 3; ++d) {
      L->grid[d] = config->grid[d];
      L->block[d] = config->block[d];
    }
    L->dynamic_shared_bytes = config->dynamic_shared_bytes;
    set_prefetch_limits(*L);
    if (c->captures.any()) {  // host_graph.hpp: replayed by graph_exec_launch
      HostGraphNode node;
      node.launch = L;
      if (c->captures.record(s.get(), std::move(node), true)) return GPUHAL_SUCCESS;
    }
    ThreadPool *pool = &shared_pool();
    StackPool *stacks = &shared_stacks();
    // Small launches on an idle stream run here and now: the hand-off to the
    // stream's worker and back would cost more than the kernel.
    const uint64_t items = uint64_t(L->grid[0]) * L->grid[1] * L->grid[2] * threads;
    if (items <= kInlineLaunchItems && !on_worker_thread()) {
      std::string err;
      if (c->run_inline_if_stream_idle(s, [&] { err = run_kernel(*pool, *stacks, *L); })) {
        if (!err.empty()) c->set_kernel_error(err);
        return GPUHAL_SUCCESS;
      }
    }
    c->submit(s, [c, L, pool, stacks](bool ok) {
      if (!ok) return;
      const std::string err = run_kernel(*pool, *stacks, *L);
      if (!err.empty()) c->set_kernel_error(err);
    });
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::host
