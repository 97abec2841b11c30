// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's device code: the portable dialect lowered to OpenCL C
// (hsa_lowering.cpp), compiled for the context's GPU by amd_comgr
// (hsa_comgr.cpp, loaded at the first compilation and kept: LLVM-based
// libraries are not safe to unload), code objects loaded into HSA
// executables, and launches as kernel dispatch packets.
//
// Launches: the kernel's argument layout comes from the code object's
// metadata (hsa_code_object.cpp); each launch fills a kernarg buffer from
// the kernarg pool (zeroed, so hidden arguments read 0) and writes one
// dispatch packet whose group segment size is the kernel's static LDS plus
// the launch's dynamic shared memory. The buffer is freed once the dispatch
// completed.
#include "hsa_kernel.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

#include "builtin_table.hpp"
#include "compiled_image.hpp"
#include "handle_registry.hpp"
#include "hsa_comgr.hpp"
#include "hsa_context.hpp"
#include "hsa_lowering.hpp"

namespace gpuhal::hsa {

namespace {
std::mutex g_comgr_mu;
std::string g_comgr_library;
Comgr *g_comgr = nullptr;  // never unloaded (see above)

const Comgr *comgr(std::string *why) {
  std::lock_guard<std::mutex> lock(g_comgr_mu);
  if (!g_comgr) g_comgr = new Comgr(g_comgr_library);
  if (!g_comgr->ok()) {
    *why = "amd_comgr could not be loaded (" + g_comgr->why() +
           "); install amd_comgr (ROCm, or Debian's libamd-comgr2) or set GPUHAL_AMD_COMGR to it";
    return nullptr;
  }
  return g_comgr;
}
}  // namespace

void set_comgr_library(const std::string &path) {
  std::lock_guard<std::mutex> lock(g_comgr_mu);
  if (!g_comgr) g_comgr_library = path;
}

gpuhal_status_t lower_builtin(const char *builtin, const char **text) {
  const gpuhal_status_t st = plugin::lower_builtin_entry(builtin, text, hsa_lowering(builtin));
  // Optional builtins this backend cannot provide: NOT_SUPPORTED, with a
  // text that still defines them (a use fails to compile, naming it).
  if (st == GPUHAL_SUCCESS && std::strcmp(builtin, "gpuhal_printf") == 0)
    return plugin::fail(GPUHAL_ERROR_NOT_SUPPORTED, "lower_builtin: the hsa backend has no device printf");
  return st;
}

namespace {

// Kernels that count predicates at barriers need LDS cells the launcher
// reserves (hsa_lowering.cpp). module_compile marks such a module's code
// object with this symbol, module_load looks for it, so that a prebuilt
// image keeps the reservation too.
constexpr char kCountCellsMarker[] = "__gpuhal_count_cells_v1";
constexpr uint32_t kCountCellsBytes = 16;

// The lowered source, and when the user's part (after the core's #line
// marker) uses a counting barrier, the cells' size and the marker first.
std::string with_count_cells(const char *lowered) {
  const std::string source(lowered);
  const size_t user = source.find("#line 1 \"kernel\"");
  const std::string tail = source.substr(user == std::string::npos ? 0 : user);
  bool counts = false;
  for (const char *name : {"gpuhal_barrier_count", "gpuhal_barrier_and", "gpuhal_barrier_or"})
    counts = counts || tail.find(name) != std::string::npos;
  if (!counts) return source;
  return "#define __GPUHAL_COUNT_CELLS " + std::to_string(kCountCellsBytes) + "u\n__constant int " +
         kCountCellsMarker + " __attribute__((used)) = 1;\n" + source;
}

bool has_count_cells_marker(const void *image, uint64_t bytes) {
  const auto *b = static_cast<const char *>(image);
  return std::search(b, b + bytes, kCountCellsMarker, kCountCellsMarker + sizeof kCountCellsMarker - 1) != b + bytes;
}

}  // namespace

gpuhal_status_t module_compile(gpuhal_context_t ctx, const gpuhal_compile_args_t *args, void **image, uint64_t *bytes,
                               uint32_t *format) {
  return plugin::compile_checked(args, image, bytes, format, [&] {
    return in_context(ctx, "module_compile", [&](HsaContext *c) -> gpuhal_status_t {
      std::string why;
      const Comgr *cg = comgr(&why);
      if (!cg) return fail(GPUHAL_ERROR_COMPILATION_FAILED, "module_compile: " + why);
      const std::vector<std::string> opts = plugin::compile_options(args, {"-O3"});
      std::vector<char> code;
      std::string log;
      const std::string isa = "amdgcn-amd-amdhsa--" + c->device->isa_name;
      if (!cg->compile(with_count_cells(args->source), isa, opts, &code, &log))
        return fail(GPUHAL_ERROR_COMPILATION_FAILED, "module_compile: amd_comgr failed for " + isa + ":\n" + log);
      return plugin::hand_out_image(code.data(), code.size(), GPUHAL_IMAGE_HSACO, image, bytes, format);
    });
  });
}

void image_free(void *image) {
  std::free(image);
}

gpuhal_status_t module_load(gpuhal_context_t ctx, const void *image, uint64_t bytes, uint32_t format,
                            gpuhal_module_t *out) {
  if (!image || !bytes || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "module_load: null or empty image");
  if (format != GPUHAL_IMAGE_HSACO)
    return fail(GPUHAL_ERROR_INVALID_IMAGE,
                "module_load: the hsa backend loads AMDGPU code objects (format " + std::to_string(format) + ")");
  return in_context(ctx, "module_load", [&](HsaContext *c) -> gpuhal_status_t {
    auto m = std::make_unique<HsaModule>();
    // The kernels' argument layouts: through amd_comgr's metadata API when
    // comgr loads, else the plugin's own reader (hsa_code_object.cpp). When
    // comgr refuses the image, the reader says more precisely why (comgr's
    // status is only INVALID_ARGUMENT); its message is used when it refuses
    // too, comgr's otherwise (comgr is the authority where it loads).
    std::string why, no_comgr;
    const Comgr *cg = comgr(&no_comgr);
    if (!cg || !cg->read_metadata(image, size_t(bytes), &m->md, &why)) {
      std::string reader_why;
      const bool read = read_code_object_metadata(image, bytes, &m->md, &reader_why);
      if (!cg && !read) why = reader_why;
      if (cg && !read) why = reader_why + " (" + why + ")";
      if (cg || !read) return fail(GPUHAL_ERROR_INVALID_IMAGE, "module_load: " + why);
    }
    m->count_cells = has_count_cells_marker(image, bytes) ? kCountCellsBytes : 0;
    if (const gpuhal_status_t call_st =
            hsa_call(rt().hsa_code_object_reader_create_from_memory, "hsa_code_object_reader_create_from_memory", image,
                     size_t(bytes), &m->reader);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    auto release = [&](hsa_status_t s, const char *call) {
      const gpuhal_status_t st = rt().error(s, call);
      if (m->executable.handle) rt().hsa_executable_destroy(m->executable);
      rt().hsa_code_object_reader_destroy(m->reader);
      return st;
    };
    hsa_status_t s =
        rt().hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, "", &m->executable);
    if (s != HSA_STATUS_SUCCESS) return release(s, "hsa_executable_create_alt");
    s = rt().hsa_executable_load_agent_code_object(m->executable, c->device->agent, m->reader, "", nullptr);
    if (s != HSA_STATUS_SUCCESS) return release(s, "hsa_executable_load_agent_code_object");
    s = rt().hsa_executable_freeze(m->executable, "");
    if (s != HSA_STATUS_SUCCESS) return release(s, "hsa_executable_freeze");
    std::lock_guard<std::mutex> lock(c->mu);
    plugin::hand_out_owned(c->modules, m, out);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t module_unload(gpuhal_context_t ctx, gpuhal_module_t module) {
  return in_context(ctx, "module_unload", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    auto it = c->modules.find(reinterpret_cast<HsaModule *>(module));
    if (it == c->modules.end()) return fail(GPUHAL_ERROR_INVALID_HANDLE, "module_unload: not a module of this context");
    // Forgotten only once destroyed: after a failure, context_destroy tries again.
    if (const gpuhal_status_t call_st =
            hsa_call(rt().hsa_executable_destroy, "hsa_executable_destroy", it->second->executable);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    rt().hsa_code_object_reader_destroy(it->second->reader);
    c->modules.erase(it);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t module_get_kernel(gpuhal_context_t ctx, gpuhal_module_t module, const char *name,
                                  gpuhal_kernel_t *out) {
  if (!name || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "module_get_kernel: null argument");
  return in_context(ctx, "module_get_kernel", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    auto it = c->modules.find(reinterpret_cast<HsaModule *>(module));
    if (it == c->modules.end())
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "module_get_kernel: not a module of this context");
    HsaModule *m = it->second.get();
    if (auto k = m->kernels.find(name); k != m->kernels.end()) {
      *out = reinterpret_cast<gpuhal_kernel_t>(k->second.get());
      return GPUHAL_SUCCESS;
    }
    const KernelMetadata *md = nullptr;
    for (const auto &k : m->md.kernels)
      if (k.name == name) md = &k;
    if (!md)
      return fail(GPUHAL_ERROR_NOT_FOUND, std::string("module_get_kernel: no kernel '") + name + "' in the module");
    auto k = std::make_unique<HsaKernel>();
    k->md = *md;
    k->count_cells = m->count_cells;
    hsa_executable_symbol_t sym{};
    hsa_agent_t agent = c->device->agent;
    if (const gpuhal_status_t call_st =
            hsa_call(rt().hsa_executable_get_symbol_by_name, "hsa_executable_get_symbol_by_name", m->executable,
                     md->symbol.c_str(), &agent, &sym);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    const std::pair<hsa_executable_symbol_info_t, void *> infos[] = {
        {HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k->object},
        {HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &k->kernarg_size},
        {HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &k->group_segment_size},
        {HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &k->private_segment_size},
    };
    for (const auto &info : infos) {
      if (const gpuhal_status_t call_st = hsa_call(rt().hsa_executable_symbol_get_info,
                                                   "hsa_executable_symbol_get_info", sym, info.first, info.second);
          call_st != GPUHAL_SUCCESS)
        return call_st;
    }
    if (k->kernarg_size < md->kernarg_size)
      return fail(GPUHAL_ERROR_INVALID_IMAGE, std::string("module_get_kernel: ") + name +
                                                  ": the runtime's kernarg segment is smaller than the metadata's");
    *out = reinterpret_cast<gpuhal_kernel_t>(k.get());
    m->kernels.emplace(name, std::move(k));
    return GPUHAL_SUCCESS;
  });
}

HsaKernel *find_kernel(HsaContext *c, gpuhal_kernel_t kernel) {
  for (auto &m : c->modules)
    for (auto &k : m.second->kernels)
      if (reinterpret_cast<gpuhal_kernel_t>(k.second.get()) == kernel) return k.second.get();
  return nullptr;
}

uint64_t kernel_max_threads(const Device &d, const HsaKernel &k) {
  return k.md.max_flat_workgroup_size ? std::min<uint64_t>(k.md.max_flat_workgroup_size, d.max_workgroup_size)
                                      : d.max_workgroup_size;
}

uint64_t group_segment_bytes(const HsaKernel &k, uint32_t dynamic_shared_bytes) {
  // The dynamic part starts 16-byte aligned after the static part and the
  // counting barrier's cells (the lowering's __gpuhal_dynamic_lds_base):
  // the padding is allocated too.
  return dynamic_shared_bytes || k.count_cells
             ? ((uint64_t(k.group_segment_size) + 15) & ~uint64_t(15)) + k.count_cells + dynamic_shared_bytes
             : uint64_t(k.group_segment_size);
}

namespace {

// The hidden kernel arguments the code object's metadata lists, which the
// launcher fills (code object v5, the ROCm 6 default: the kernel reads its
// work-group counts, sizes and remainders, the grid's dimensions and the
// dynamic LDS size from them instead of the dispatch packet). Global
// offsets stay 0; buffers for printf, hostcall, multi-grid sync and the
// device heap are services this backend does not provide (left 0).
void fill_hidden_arguments(const HsaKernel &k, const gpuhal_launch_config_t &config, uint64_t group_segment,
                           void *kernarg) {
  const int dims = config.grid[2] * config.block[2] > 1 ? 3 : config.grid[1] * config.block[1] > 1 ? 2 : 1;
  // What precedes the dynamic part: the static part, aligned, and the cells.
  const uint64_t static_lds = ((uint64_t(k.group_segment_size) + 15) & ~uint64_t(15)) + k.count_cells;
  for (const KernelArg &a : k.md.args) {
    const std::string &kind = a.value_kind;
    if (kind.compare(0, 7, "hidden_") != 0 || a.size == 0 || a.size > 8) continue;
    const int axis = kind.back() - 'x';
    uint64_t v = 0;
    if (kind.rfind("hidden_block_count_", 0) == 0 && axis >= 0 && axis < 3)
      v = config.grid[axis];  // in work-groups: the grid is a whole number of them
    else if (kind.rfind("hidden_group_size_", 0) == 0 && axis >= 0 && axis < 3)
      v = config.block[axis];
    else if (kind.rfind("hidden_remainder_", 0) == 0)
      v = 0;  // grid sizes are multiples of the group size
    else if (kind == "hidden_grid_dims")
      v = uint64_t(dims);
    else if (kind == "hidden_dynamic_lds_size")
      v = group_segment > static_lds ? group_segment - static_lds : 0;
    else
      continue;
    std::memcpy(static_cast<char *>(kernarg) + a.offset, &v, a.size);  // little-endian: the low bytes
  }
}

}  // namespace

gpuhal_status_t launch(gpuhal_context_t ctx, gpuhal_kernel_t kernel, const gpuhal_launch_config_t *config,
                       void *const *args, uint32_t arg_count, gpuhal_stream_t stream) {
  if (!config || config->struct_size < sizeof(gpuhal_launch_config_t))
    return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: null or short launch configuration");
  if (!kernel) return fail(GPUHAL_ERROR_INVALID_HANDLE, "launch: null kernel");
  if (arg_count && !args) return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: null argument array");
  return in_context(ctx, "launch", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("launch");
    HsaKernel *k = find_kernel(c, kernel);
    if (!k) return fail(GPUHAL_ERROR_INVALID_HANDLE, "launch: not a kernel of this context");
    const Device &d = *c->device;
    // What the device and this kernel can take, refused before anything is
    // queued.
    if (arg_count != k->md.explicit_count())
      return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: " + std::to_string(arg_count) + " arguments for " + k->md.name +
                                                  ", which takes " + std::to_string(k->md.explicit_count()));
    uint64_t threads = 1;
    for (int i = 0; i < 3; ++i) {
      if (config->grid[i] == 0 || config->block[i] == 0)
        return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: a zero grid or block dimension");
      if (config->block[i] > d.max_workgroup_dim[i])
        return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: block dimension " + std::to_string(i) + " is " +
                                                    std::to_string(config->block[i]) + ", the device allows " +
                                                    std::to_string(d.max_workgroup_dim[i]));
      if (uint64_t(config->grid[i]) * config->block[i] > UINT32_MAX)
        return fail(GPUHAL_ERROR_INVALID_VALUE,
                    "launch: more than 2^32 - 1 work-items in dimension " + std::to_string(i));
      threads *= config->block[i];
    }
    const uint64_t max_threads = kernel_max_threads(d, *k);
    if (threads > max_threads)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: a block of " + std::to_string(threads) +
                                                  " work-items, this kernel allows at most " +
                                                  std::to_string(max_threads));
    const uint64_t group = group_segment_bytes(*k, config->dynamic_shared_bytes);
    if (d.lds_size && group > d.lds_size)
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "launch: " + std::to_string(k->group_segment_size) + " bytes of static and " +
                      std::to_string(config->dynamic_shared_bytes) + " of dynamic shared memory, the device has " +
                      std::to_string(d.lds_size) + " per work-group");
    for (uint32_t i = 0; i < arg_count; ++i)
      if (!args[i]) return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: argument " + std::to_string(i) + " is a null pointer");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "launch"); st != GPUHAL_SUCCESS) return st;
    if (c->captures.any()) {  // hsa_graph.cpp: dispatched again at each launch of the graph
      HsaGraphNode node = kernel_node(k, *config, args);
      if (c->captures.record(s, std::move(node), true)) return GPUHAL_SUCCESS;
    }
    return dispatch(c, s, k, *config, args);
  });
}

gpuhal_status_t dispatch(HsaContext *c, HsaStream *s, HsaKernel *k, const gpuhal_launch_config_t &cfg,
                         void *const *args) {
  const gpuhal_launch_config_t *config = &cfg;  // c->mu held; checked by launch
  const Device &d = *c->device;
  const uint64_t group = group_segment_bytes(*k, config->dynamic_shared_bytes);
  // The kernel arguments, at the offsets the compiler chose: from the
  // stream's ring (hsa_kernargs.cpp), or their own allocation when large.
  SignalRef done;
  if (const gpuhal_status_t st = make_signal(1, &done); st != GPUHAL_SUCCESS) return st;
  const size_t kernarg_bytes = std::max<size_t>(16, (size_t(k->kernarg_size) + 15) & ~size_t(15));
  void *kernarg = nullptr;
  if (const gpuhal_status_t st = take_kernargs(s, kernarg_bytes, done, &kernarg); st != GPUHAL_SUCCESS) return st;
  std::function<void()> free_kernarg = [s] { give_back_kernargs(s); };  // until submitted
  std::function<void()> on_reap;  // the ring's bytes come back with the dispatch's completion
  if (!kernarg) {
    if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_memory_pool_allocate, "hsa_amd_memory_pool_allocate",
                                                 host_agent().kernarg_pool, kernarg_bytes, 0u, &kernarg);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    free_kernarg = [kernarg] { rt().hsa_amd_memory_pool_free(kernarg); };
    on_reap = free_kernarg;
    hsa_agent_t agent = d.agent;
    if (const hsa_status_t st = rt().hsa_amd_agents_allow_access(1, &agent, nullptr, kernarg);
        st != HSA_STATUS_SUCCESS) {
      free_kernarg();
      return rt().error(st, "hsa_amd_agents_allow_access");
    }
  }
  std::memset(kernarg, 0, kernarg_bytes);
  fill_hidden_arguments(*k, *config, group, kernarg);
  uint32_t i = 0;
  for (const KernelArg &a : k->md.args) {
    if (a.value_kind.compare(0, 7, "hidden_") == 0) continue;
    if (!args[i]) {
      free_kernarg();
      return fail(GPUHAL_ERROR_INVALID_VALUE, "launch: argument " + std::to_string(i) + " is a null pointer");
    }
    std::memcpy(static_cast<char *>(kernarg) + a.offset, args[i], a.size);
    ++i;
  }
  hsa_kernel_dispatch_packet_t p{};
  p.header = packet_header(HSA_PACKET_TYPE_KERNEL_DISPATCH);
  const uint16_t dims = config->grid[2] * config->block[2] > 1 ? 3 : config->grid[1] * config->block[1] > 1 ? 2 : 1;
  p.setup = uint16_t(dims << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
  p.workgroup_size_x = uint16_t(config->block[0]);
  p.workgroup_size_y = uint16_t(config->block[1]);
  p.workgroup_size_z = uint16_t(config->block[2]);
  p.grid_size_x = config->grid[0] * config->block[0];
  p.grid_size_y = config->grid[1] * config->block[1];
  p.grid_size_z = config->grid[2] * config->block[2];
  p.private_segment_size = k->private_segment_size;
  p.group_segment_size = uint32_t(group);
  p.kernel_object = k->object;
  p.kernarg_address = kernarg;
  p.completion_signal = done->handle;
  // A refused submission runs on_reap at once; the ring's bytes go back
  // only when nothing was queued (a failed context keeps them).
  const size_t queued = s->inflight.size();
  // Released at agent scope: the next kernel on this agent sees the
  // writes; make_visible releases them further when the host, a copy
  // engine or another agent looks.
  const gpuhal_status_t st = submit_packet(s, &p, done, {}, on_reap, "a kernel dispatch", HSA_FENCE_SCOPE_AGENT);
  if (st != GPUHAL_SUCCESS && s->inflight.size() == queued && !on_reap) give_back_kernargs(s);
  return st;
}

HsaGraphNode kernel_node(HsaKernel *k, const gpuhal_launch_config_t &config, void *const *args) {
  HsaGraphNode node;
  node.kernel = k;
  node.config = config;
  uint32_t i = 0;
  for (const KernelArg &a : k->md.args) {
    if (a.value_kind.compare(0, 7, "hidden_") == 0) continue;
    node.arg_offsets.push_back(uint32_t(node.args.size()));
    node.arg_sizes.push_back(uint32_t(a.size));
    const auto *bytes = static_cast<const uint8_t *>(args[i]);
    node.args.insert(node.args.end(), bytes, bytes + a.size);
    ++i;
  }
  return node;
}

}  // namespace gpuhal::hsa
