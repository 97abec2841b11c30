// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: modules from PTX text and kernel launches (validated
// and recorded, not executed).
#include "fake_cuda.hpp"

using namespace fake_cuda;

namespace fake_cuda {


// The newest PTX ISA a driver of CUDA version v (1000 * major + 10 * minor)
// JIT-compiles, times ten (PTX ISA release notes: CUDA 11.x -> 7.x,
// 12.0-12.5 -> 8.0-8.5, 12.6 -> 8.5, 12.7 -> 8.6, 12.8 -> 8.7, 12.9 -> 8.8,
// 13.0 -> 9.0).
int max_ptx_isa(int v) {
  const int major = v / 1000, minor = (v % 1000) / 10;
  if (major <= 11) return 70 + minor;
  if (major == 12) return minor <= 5 ? 80 + minor : minor == 6 ? 85 : 80 + minor - 1;
  return 90 + minor;
}
// ".version X.Y" as 10 * X + Y (0 when absent).
int ptx_version(const std::string &ptx) {
  const size_t p = ptx.find(".version ");
  if (p == std::string::npos) return 0;
  int x = 0, y = 0;
  std::sscanf(ptx.c_str() + p + 9, "%d.%d", &x, &y);
  return 10 * x + y;
}
// ".target sm_XY" / "compute_XY" as XY (0 when absent).
int ptx_target(const std::string &ptx) {
  const size_t p = ptx.find(".target ");
  if (p == std::string::npos) return 0;
  const size_t u = ptx.find('_', p);
  return u == std::string::npos ? 0 : std::atoi(ptx.c_str() + u + 1);
}

int ptx_type_size(const std::string &t) {
  if (t.size() < 3) return 0;
  return std::atoi(t.c_str() + 2) / 8;  // .u64 .f32 .b8 ...
}

// Reads the entries of PTX text: ".entry name(" then ".param .<type> x"
// lines up to ")", and every non-extern ".shared" array's bytes.
bool parse_ptx(const std::string &ptx, Module *m) {
  if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos) return false;
  size_t pos = 0;
  while ((pos = ptx.find(".entry ", pos)) != std::string::npos) {
    auto f = std::make_unique<Function>();
    size_t b = pos + 7, e = ptx.find_first_of("( \n", b);
    f->name = ptx.substr(b, e - b);
    const size_t close = ptx.find(')', e);
    const size_t body_end = ptx.find("\n}", close);
    for (size_t p = ptx.find(".param ", e); p != std::string::npos && p < close; p = ptx.find(".param ", p + 1)) {
      size_t tb = p + 7;
      if (ptx.compare(tb, 6, ".align") == 0) tb = ptx.find('.', tb + 6);
      const size_t te = ptx.find(' ', tb);
      f->param_sizes.push_back(ptx_type_size(ptx.substr(tb, te - tb)));
    }
    // Registers: ptxas allocates from the virtual registers the PTX declares
    // (".reg .b32 %r<12>;"); the fake takes their count, 64-bit ones twice,
    // predicates not at all, at most 255 (the hardware's limit per thread).
    for (size_t p = ptx.find(".reg ", close); p != std::string::npos && p < body_end; p = ptx.find(".reg ", p + 1)) {
      const size_t tb = p + 5, te = ptx.find(' ', tb), lb = ptx.find('<', te), line_end = ptx.find('\n', p);
      if (te == std::string::npos || lb == std::string::npos || lb > line_end) continue;
      const std::string type = ptx.substr(tb, te - tb);
      if (type == ".pred") continue;
      f->registers += std::atoi(ptx.c_str() + lb + 1) * (ptx_type_size(type) == 8 ? 2 : 1);
    }
    f->registers = std::min(f->registers, 255);
    for (size_t p = ptx.find(".local ", close); p != std::string::npos && p < body_end; p = ptx.find(".local ", p + 1)) {
      const size_t lb = ptx.find('[', p);
      if (lb != std::string::npos && lb < ptx.find('\n', p)) f->local_bytes += std::atoi(ptx.c_str() + lb + 1);
    }
    for (size_t p = ptx.find(".shared ", close); p != std::string::npos && p < body_end;
         p = ptx.find(".shared ", p + 1)) {
      const size_t line = ptx.rfind('\n', p);
      if (ptx.substr(line, p - line).find(".extern") != std::string::npos) continue;
      const size_t lb = ptx.find('[', p), le = ptx.find(']', lb);
      if (lb != std::string::npos && le != std::string::npos && lb < ptx.find('\n', p))
        f->static_shared += std::atoi(ptx.c_str() + lb + 1);
    }
    const size_t call = ptx.find("vprintf", close);
    f->prints = call != std::string::npos && call < body_end;
    m->functions.push_back(std::move(f));
    pos = e;
  }
  // Module-scope shared arrays (NVRTC puts them before the entries).
  const size_t first_entry = ptx.find(".entry ");
  for (size_t p = ptx.find(".shared "); p != std::string::npos && p < first_entry; p = ptx.find(".shared ", p + 1)) {
    const size_t line = ptx.rfind('\n', p);
    const std::string head = ptx.substr(line + 1, p - line - 1);
    if (head.find(".extern") != std::string::npos || head.find_first_not_of(" \t.visible") != std::string::npos)
      continue;
    const size_t lb = ptx.find('[', p), le = ptx.find(']', lb);
    if (lb != std::string::npos && le != std::string::npos && lb < ptx.find('\n', p))
      for (auto &f : m->functions) f->static_shared += std::atoi(ptx.c_str() + lb + 1);
  }
  return true;
}

// Lazy loading (CUDA programming guide, "Lazy Loading"): "loading a module
// (cuModuleLoad*() family of functions) will not be loading kernels
// immediately, instead it will delay loading of a kernel until
// cuModuleGetFunction() is called"; it is the default since CUDA 12.2 on
// Linux, and CUDA_MODULE_LOADING=EAGER turns it off. Among its hazards:
// "Loading kernels might require context synchronization" -- so a load
// here always waits for the work queued on the device's streams (a stream
// held by a host function holds the load, as a spinning kernel does on a
// GPU). The lookup, cuFuncLoad and anything that reads the loaded kernel
// (cuFuncGetAttribute) load it.
bool eager_loading() {
  const char *mode = std::getenv("CUDA_MODULE_LOADING");
  return mode && std::strcmp(mode, "EAGER") == 0;
}
void load_function(Function *f, int dev) {
  if (f->loaded.load(std::memory_order_acquire)) return;
  drain_device_streams(dev);
  f->loaded.store(true, std::memory_order_release);
}

Function *known_function(void *f) {
  std::lock_guard<std::mutex> lock(g_module_mu);
  for (Module *m : g_modules)
    for (auto &x : m->functions)
      if (x.get() == f) return x.get();
  return nullptr;
}


}  // namespace fake_cuda

extern "C" {


API CUresult cuModuleLoadDataEx(void **out, const void *image, unsigned n, int *keys, void **values) {
  int dev = -1;
  if (const CUresult r = context_entry("cuModuleLoadDataEx", &dev); r != OK) return r;
  if (!out || !image || (n && (!keys || !values))) return INVALID_VALUE;
  auto m = std::make_unique<Module>();
  m->dev = dev;
  const char *text = static_cast<const char *>(image);
  auto jit_log = [&](const std::string &line) {
    for (unsigned i = 0; i < n; ++i)
      if (keys[i] == 5)  // CU_JIT_ERROR_LOG_BUFFER
        std::snprintf(static_cast<char *>(values[i]), 256, "%s", line.c_str());
  };
  if (!parse_ptx(text, m.get())) {
    jit_log("fake ptxas: not PTX text");
    return INVALID_PTX;
  }
  const int isa = ptx_version(text), target = ptx_target(text);
  if (isa > max_ptx_isa(g_driver_version)) {
    jit_log("ptxas application ptx input, line 1; fatal   : Unsupported .version " + std::to_string(isa / 10) + "." +
            std::to_string(isa % 10) + "; current version is '" + std::to_string(max_ptx_isa(g_driver_version) / 10) +
            "." + std::to_string(max_ptx_isa(g_driver_version) % 10) + "'");
    return UNSUPPORTED_PTX_VERSION;
  }
  if (target > g_cc) {
    jit_log("ptxas fatal   : SM version specified by .target is higher than default SM version assumed");
    return INVALID_PTX;
  }
  if (eager_loading())
    for (auto &f : m->functions) load_function(f.get(), dev);
  std::lock_guard<std::mutex> lock(g_module_mu);
  g_modules.insert(m.get());
  *out = m.release();
  return OK;
}
// CUmoduleLoadingMode: CU_MODULE_EAGER_LOADING 0x1, CU_MODULE_LAZY_LOADING 0x2.
API CUresult cuModuleGetLoadingMode(int *mode) {
  if (const CUresult r = initialized_entry("cuModuleGetLoadingMode"); r != OK) return r;
  if (!mode) return INVALID_VALUE;
  *mode = eager_loading() ? 1 : 2;
  return OK;
}
// cuFuncLoad (CUDA 12.4): "Finalizes function loading for function. Calling
// this API with a fully loaded function has no effect."
API CUresult cuFuncLoad(void *fn) {
  int dev = -1;
  if (const CUresult r = context_entry("cuFuncLoad", &dev); r != OK) return r;
  Function *f = known_function(fn);
  if (!f) return INVALID_HANDLE;
  load_function(f, dev);
  return OK;
}
API CUresult cuModuleUnload(void *mod) {
  int dev = -1;
  if (const CUresult r = context_entry("cuModuleUnload", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_module_mu);
  auto *m = static_cast<Module *>(mod);
  if (!g_modules.erase(m)) return INVALID_HANDLE;
  delete m;
  return OK;
}
API CUresult cuModuleGetFunction(void **out, void *mod, const char *name) {
  int dev = -1;
  if (const CUresult r = context_entry("cuModuleGetFunction", &dev); r != OK) return r;
  if (!out || !name) return INVALID_VALUE;
  Function *found = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_module_mu);
    auto *m = static_cast<Module *>(mod);
    if (!g_modules.count(m)) return INVALID_HANDLE;
    for (auto &f : m->functions)
      if (f->name == name) found = f.get();
  }
  if (!found) return 500;  // CUDA_ERROR_NOT_FOUND
  load_function(found, dev);  // not under the lock: the wait may be long
  *out = found;
  return OK;
}
API CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
  int dev = -1;
  if (const CUresult r = context_entry("cuFuncGetAttribute", &dev); r != OK) return r;
  Function *f = known_function(fn);
  if (!v) return INVALID_VALUE;
  if (!f) return INVALID_HANDLE;
  load_function(f, dev);
  switch (attr) {
    case 0:  // MAX_THREADS_PER_BLOCK
      *v = 1024;
      return OK;
    case 1:  // SHARED_SIZE_BYTES
      *v = f->static_shared;
      return OK;
    case 3:  // LOCAL_SIZE_BYTES
      *v = f->local_bytes;
      return OK;
    case 4:  // NUM_REGS
      *v = f->registers;
      return OK;
    case 8:
      *v = f->max_dynamic_shared;
      return OK;
    default:
      return INVALID_VALUE;
  }
}
API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, void *fn, int block_size, size_t dynamic) {
  int dev = -1;
  if (const CUresult r = context_entry("cuOccupancyMaxActiveBlocksPerMultiprocessor", &dev); r != OK) return r;
  Function *f = known_function(fn);
  if (!blocks) return INVALID_VALUE;
  if (!f) return INVALID_HANDLE;
  if (block_size <= 0) return INVALID_VALUE;
  // cuda_occupancy.h's cudaOccMaxBlocksPerSMBlockBarrierLimit / ...SmemLimit:
  // "if (blockSize > properties->maxThreadsPerBlock) maxBlocks = 0"; the
  // block's shared memory is static + reservedSharedMemPerBlock + dynamic,
  // rounded up to the allocation granularity (128 bytes on 9.0), against
  // sharedMemPerBlock (48 KiB) + the reserved part -- the opt-in limit
  // (227 KiB) once the function's MAX_DYNAMIC_SHARED_SIZE_BYTES was set,
  // and then dynamic may not pass that attribute ("the current launch
  // dynamic shared memory must not exceed the set limit").
  const bool opted_in = f->dynamic_opted_in.load();
  const size_t reserved = 1024, fixed = size_t(f->static_shared);
  const size_t limit = (opted_in ? 227 * 1024 : 48 * 1024) + reserved;
  const size_t per_block = (fixed + reserved + dynamic + 127) / 128 * 128;
  if (block_size > 1024 || per_block > limit || (opted_in && dynamic > size_t(f->max_dynamic_shared.load()))) {
    *blocks = 0;
    return OK;
  }
  const int warps = (block_size + 31) / 32;
  int n = std::min(2048 / (warps * 32), 32);
  if (f->registers > 0) {
    const int per_warp = (f->registers * 32 + 255) / 256 * 256;
    n = std::min(n, 65536 / (per_warp * warps));
  }
  n = std::min(n, int(228 * 1024 / per_block));
  *blocks = n;
  return OK;
}
API CUresult cuFuncSetAttribute(void *fn, int attr, int value) {
  int dev = -1;
  if (const CUresult r = context_entry("cuFuncSetAttribute", &dev); r != OK) return r;
  Function *f = known_function(fn);
  if (!f) return INVALID_HANDLE;
  if (attr != 8 || value < 0 || value + f->static_shared > 227 * 1024) return INVALID_VALUE;
  int expected = value;
  if (g_slow_set_value.compare_exchange_strong(expected, -1))
    std::this_thread::sleep_for(std::chrono::milliseconds(g_slow_set_ms.load()));
  f->max_dynamic_shared = value;  // one value per function: the last write wins
  f->dynamic_opted_in = true;     // the occupancy calculator's FUNC_SHMEM_LIMIT_OPTIN
  return OK;
}
// FAKE_CUDA_FAULTING_KERNELS: kernels whose launches fault.
static bool faulting_kernel(const std::string &name) {
  static const std::string list = [] {
    const char *v = std::getenv("FAKE_CUDA_FAULTING_KERNELS");
    return std::string(",") + (v ? v : "") + ",";
  }();
  return list.find("," + name + ",") != std::string::npos;
}
}  // extern "C"

namespace fake_cuda {

std::function<void()> PreparedLaunch::node() const {
  return [d = description, run = on_stream] {
    if (!d.empty()) record_launch(d);
    run();
  };
}

void record_launch(const std::string &description) {
  std::lock_guard<std::mutex> lock(g_module_mu);
  g_last_launch = description;
  ++g_launches;
}

CUresult prepare_launch(void *fn, const unsigned grid[3], const unsigned block[3], unsigned shared, void **params,
                        void **extra, int dev, PreparedLaunch *out) {
  Function *f = known_function(fn);
  if (!f) return INVALID_HANDLE;
  if (extra) return INVALID_VALUE;  // not used by the plugin
  const unsigned gx = grid[0], gy = grid[1], gz = grid[2], bx = block[0], by = block[1], bz = block[2];
  if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bz > 64) return INVALID_VALUE;
  if (uint64_t(bx) * by * bz > 1024) return INVALID_VALUE;
  if (shared > unsigned(f->max_dynamic_shared)) return INVALID_VALUE;
  if (!f->param_sizes.empty() && !params) return INVALID_VALUE;
  // This fake runs no device code: a launch is recorded, its kernel never
  // runs. FAKE_CUDA_REFUSE_LAUNCHES set when the driver is loaded makes it
  // say so (CUDA_ERROR_NOT_SUPPORTED) instead, for suites that check
  // results (numba-cuda's tests through gpuhal's adapter), so that a
  // kernel's missing work is never read as a wrong result.
  static const bool refuse_launches = std::getenv("FAKE_CUDA_REFUSE_LAUNCHES") != nullptr;
  if (refuse_launches) return NOT_SUPPORTED;
  if (f->prints) note_printing_launch(dev);
  out->description.clear();
  out->on_stream = [] {};  // ordered on the stream like the real work would be
  if (faulting_kernel(f->name)) {  // CUDA_ERROR_ILLEGAL_ADDRESS (700): the process's for good (fake_cuda.hpp)
    out->on_stream = [dev] { kernel_fault(dev, 700); };
    return OK;
  }
  if (int fault = g_fault_next_launch.exchange(0)) {
    // The kernel faults when it runs: the launch itself succeeds, later
    // calls report the error (the context's, or the process's: fake_cuda.hpp).
    out->on_stream = [dev, fault] { kernel_fault(dev, fault); };
    return OK;
  }
  // The record: every parameter's bytes as the kernel would read them.
  std::string d = f->name + " grid=" + std::to_string(gx) + "," + std::to_string(gy) + "," + std::to_string(gz) +
                  " block=" + std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) +
                  " shared=" + std::to_string(shared) + " params=";
  for (size_t i = 0; i < f->param_sizes.size(); ++i) {
    uint64_t v = 0;
    if (!params[i]) return INVALID_VALUE;
    std::memcpy(&v, params[i], size_t(f->param_sizes[i]));
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%d:0x%llx", i ? "," : "", f->param_sizes[i], static_cast<unsigned long long>(v));
    d += buf;
  }
  out->description = std::move(d);
  return OK;
}

}  // namespace fake_cuda

extern "C" {

API CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream s, void **params, void **extra) {
  int dev = -1;
  if (const CUresult r = context_entry("cuLaunchKernel", &dev); r != OK) return r;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  PreparedLaunch p;
  if (const CUresult r = prepare_launch(fn, grid, block, shared, params, extra, dev, &p); r != OK) return r;
  // In a capture the launch is a kernel node: recorded each time it runs.
  std::function<void()> node = p.node();
  bool recorded = false;
  if (const CUresult r = capture_submit(lookup(s), node, kKernelNode, &recorded, fn); r != OK || recorded) return r;
  if (!p.description.empty()) record_launch(p.description);
  return submit(s, p.on_stream);
}
// Writes the latest launch's description into buf; returns the number of launches so far.
API long fake_cuda_last_launch(char *buf, size_t len) {
  std::lock_guard<std::mutex> lock(g_module_mu);
  if (buf && len) std::snprintf(buf, len, "%s", g_last_launch.c_str());
  return g_launches;
}

}  // extern "C"
