// Modules and kernels: lowering, compile + load through the plugin, kernel
// lookup, and launches with Numba's argument rules.
#include <climits>
#include <cmath>
#include <mutex>

#include "gpuhal/kernel.hpp"
#include "internal.hpp"
#include "kernel_source.hpp"

namespace gpuhal {
namespace detail {

struct KernelEntry {
  std::string name;
  gpuhal_kernel_t handle = nullptr;
  const KernelDecl *decl = nullptr;  // null for a prebuilt image
};

struct ModuleImpl {
  std::shared_ptr<ContextImpl> ctx;
  uint64_t generation = 0;
  gpuhal_module_t handle = nullptr;
  std::string lowered;
  std::string image;
  ImageFormat format = ImageFormat::HostSharedObject;
  std::vector<KernelDecl> decls;
  std::mutex mu;  // guards entries
  std::vector<std::unique_ptr<KernelEntry>> entries;

  // Unloaded through the deferred queue, whose flush waits for all work of
  // the context first: a launch of the module may still be queued on a
  // stream when its last handle goes (also from a stream callback, where
  // waiting for the streams could wait for itself). A reset unloads it
  // itself.
  ~ModuleImpl() {
    if (!handle || ctx->current_generation() != generation || ctx->inherited()) return;
    ContextImpl *c = ctx.get();
    gpuhal_module_t module = handle;
    ctx->defer_release(generation, 0, [c, module] { return c->t().module_unload(c->handle, module); },
                       "module_unload");
  }
};

namespace {

const gpuhal_plugin_table_t &kernel_table(const ContextImpl &c, const char *what) {
  if (!c.t().module_compile)
    throw Error(Status::ERROR_NOT_SUPPORTED,
                std::string(what) + ": backend '" + c.lib().name() + "' has no kernel support (Capability::Kernels)");
  return c.t();
}

std::string lowering_text(const PluginLibrary &lib) {
  std::string out = "/* gpuhal portable kernel dialect, lowered for the " + lib.name() + " backend */\n";
  const char *text = nullptr;
  lib.check(lib.table().lower_builtin("", &text), "lower_builtin(\"\")");
  out += text ? text : "";
  out += "\n";
  for (const auto &name : kernel_builtins()) {
    text = nullptr;
    lib.check(lib.table().lower_builtin(name.c_str(), &text), ("lower_builtin(" + name + ")").c_str());
    if (!text) throw Error(Status::ERROR_INVALID_PLUGIN, lib.name() + ": lower_builtin(" + name + ") gave no text");
    out += text;
    out += "\n";
  }
  return out;
}

bool is_integer(DType d) {
  return d.kind == DTypeKind::Int || d.kind == DTypeKind::UInt;
}
bool is_float(DType d) {
  return d.kind == DTypeKind::Float && (d.bits == 32 || d.bits == 64);
}

std::string describe(const KernelDecl &k, size_t i) {
  const KernelParam &p = k.params[i];
  return "argument " + std::to_string(i + 1) + (p.name.empty() ? "" : " (" + p.name + ")") + " of kernel '" + k.name +
         "'";
}

// Names an argument in error messages, built only when one is thrown (the
// launch path allocates nothing for it).
struct What {
  const KernelDecl *decl;
  const std::string *kernel;
  size_t index;
  const char *kind = nullptr;  // e.g. "mirrored argument ": then "<kind><n>"
  std::string str() const {
    if (kind) return "Kernel::launch: " + std::string(kind) + std::to_string(index + 1);
    return "Kernel::launch: " +
           (decl ? describe(*decl, index) : "argument " + std::to_string(index + 1) + " of kernel '" + *kernel + "'");
  }
};

// Converts a scalar argument to the parameter's type into `out` (8 bytes,
// value at the start). Integers must fit; floats never become integers.
void convert_scalar(const KernelArg &a, DType to, const What &what, unsigned char *out) {
  const DType from = a.scalar_dtype();
  const unsigned char *b = a.scalar_bytes();
  long double v = 0;  // exact for every 64-bit integer and double
  int64_t iv = 0;
  uint64_t uv = 0;
  if (from.kind == DTypeKind::Int) {
    switch (from.bits) {
      case 8:
        iv = int8_t(b[0]);
        break;
      case 16: {
        int16_t x;
        std::memcpy(&x, b, 2);
        iv = x;
        break;
      }
      case 32: {
        int32_t x;
        std::memcpy(&x, b, 4);
        iv = x;
        break;
      }
      default:
        std::memcpy(&iv, b, 8);
    }
    v = static_cast<long double>(iv);
  } else if (from.kind == DTypeKind::UInt) {
    std::memcpy(&uv, b, size_t(from.itemsize()));
    v = static_cast<long double>(uv);
  } else if (from == dtypes::float32) {
    float x;
    std::memcpy(&x, b, 4);
    v = x;
  } else {
    double x;
    std::memcpy(&x, b, 8);
    v = x;
  }
  if (is_float(to)) {
    if (to.bits == 32) {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
    } else {
      const double d = static_cast<double>(v);
      std::memcpy(out, &d, 8);
    }
    return;
  }
  if (!is_integer(to))
    throw Error(Status::ERROR_INVALID_VALUE,
                what.str() + ": gpuhal cannot pass a value of parameter type " + to.name());
  if (!is_integer(from))
    throw Error(Status::ERROR_INVALID_VALUE,
                what.str() + ": a " + from.name() + " value for an " + to.name() + " parameter (pass an integer)");
  const bool negative = from.kind == DTypeKind::Int && iv < 0;
  bool fits;
  if (to.kind == DTypeKind::UInt) {
    const uint64_t max = to.bits == 64 ? UINT64_MAX : ((uint64_t(1) << to.bits) - 1);
    const uint64_t u = from.kind == DTypeKind::Int ? uint64_t(iv) : uv;
    fits = !negative && u <= max;
  } else {
    const int64_t max = to.bits == 64 ? INT64_MAX : ((int64_t(1) << (to.bits - 1)) - 1);
    const int64_t min = -max - 1;
    fits = from.kind == DTypeKind::Int ? (iv >= min && iv <= max) : uv <= uint64_t(max);
  }
  if (!fits)
    throw Error(Status::ERROR_INVALID_VALUE,
                what.str() + ": the value " + (from.kind == DTypeKind::Int ? std::to_string(iv) : std::to_string(uv)) +
                    " does not fit the parameter's type " + to.name());
  const uint64_t bits = from.kind == DTypeKind::Int ? uint64_t(iv) : uv;
  std::memcpy(out, &bits, size_t(to.itemsize()));  // little-endian: the low bytes
}

void check_array(const DeviceArray &d, const KernelParam *p, const What &what) {
  if (d.size() > 1 && !d.is_c_contiguous() && !d.is_f_contiguous())
    throw Error(Status::ERROR_NOT_CONTIGUOUS,
                what.str() + ": a kernel gets a plain pointer, so the array must be contiguous (copy it first)");
  if (p && p->dtype && *p->dtype != d.dtype())
    throw Error(Status::ERROR_INVALID_DTYPE, what.str() + ": array of dtype " + d.dtype().name() +
                                                 " for a parameter of type " + p->type_text + " (" + p->dtype->name() +
                                                 ")");
}

}  // namespace
}  // namespace detail

using detail::KernelDecl;
using detail::KernelEntry;
using detail::ModuleImpl;

const char *to_string(ImageFormat f) {
  switch (f) {
    case ImageFormat::HostSharedObject:
      return "host shared object";
    case ImageFormat::Ptx:
      return "PTX";
    case ImageFormat::Cubin:
      return "cubin";
    case ImageFormat::Hsaco:
      return "AMDGPU code object";
  }
  return "unknown image format";
}

const std::vector<std::string> &kernel_builtins() {
  static const std::vector<std::string> names = {
#define GPUHAL_BUILTIN(name, usage, meaning) #name,
#include "gpuhal/kernel_builtins.def"
#undef GPUHAL_BUILTIN
  };
  return names;
}

std::vector<std::pair<std::string, std::string>> Runtime::kernel_lowering() const {
  const auto &lib = *impl_->library;
  if (!lib.table().lower_builtin)
    throw Error(Status::ERROR_NOT_SUPPORTED, "backend '" + lib.name() + "' has no kernel support");
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string &name : std::vector<std::string>{""}) {
    const char *text = nullptr;
    lib.check(lib.table().lower_builtin(name.c_str(), &text), "lower_builtin");
    out.emplace_back(name, text ? text : "");
  }
  for (const auto &name : kernel_builtins()) {
    const char *text = nullptr;
    lib.check(lib.table().lower_builtin(name.c_str(), &text), "lower_builtin");
    out.emplace_back(name, text ? text : "");
  }
  return out;
}

ModuleOptions &ModuleOptions::constant(const std::string &name, const HostView &data) {
  for (const auto &c : constants)
    if (c.name == name) throw Error(Status::ERROR_INVALID_VALUE, "constant array '" + name + "' is given twice");
  // Validates the name and dtype now, where the mistake is made.
  detail::ConstantArray probe{name, data.dtype(), nullptr, 0};
  (void)detail::constant_array_text(probe);
  Constant c;
  c.name = name;
  c.dtype = data.dtype();
  const size_t item = size_t(data.dtype().itemsize());
  c.bytes.resize(size_t(data.size()) * item);
  // C order whatever the view's strides are (NC's ascontiguousarray rule).
  std::vector<int64_t> index(size_t(data.ndim()), 0);
  for (int64_t k = 0; k < data.size(); ++k) {
    std::memcpy(c.bytes.data() + size_t(k) * item, data.element(index), item);
    for (int d = data.ndim() - 1; d >= 0; --d) {
      if (++index[size_t(d)] < data.shape()[size_t(d)]) break;
      index[size_t(d)] = 0;
    }
  }
  constants.push_back(std::move(c));
  return *this;
}

Module Module::compile(const Context &ctx, const std::string &source, const ModuleOptions &options) {
  if (!ctx.impl()) throw Error(Status::ERROR_INVALID_HANDLE, "Module::compile: null context");
  auto &c = *ctx.impl();
  const uint64_t gen = c.current_generation();
  c.check_alive(gen, "Module::compile");
  const auto &t = detail::kernel_table(c, "Module::compile");
  auto m = std::make_shared<ModuleImpl>();
  m->ctx = ctx.impl();
  m->generation = gen;
  m->decls = detail::scan_kernel_source(source).kernels;
  m->lowered = detail::lowering_text(c.lib());
  for (const auto &k : options.constants) {
    const uint64_t count = k.bytes.size() / uint64_t(k.dtype.itemsize());
    m->lowered += detail::constant_array_text({k.name, k.dtype, k.bytes.data(), count});
  }
  m->lowered += "#line 1 \"kernel\"\n";
  m->lowered += source;
  m->lowered += "\n";

  std::vector<const char *> names;
  std::vector<uint32_t> barriers;
  for (const auto &k : m->decls) {
    names.push_back(k.name.c_str());
    barriers.push_back(k.uses_barrier ? 1u : 0u);
  }
  gpuhal_compile_args_t args{};
  args.abi_version = GPUHAL_ABI_VERSION;
  args.struct_size = sizeof args;
  args.source = m->lowered.c_str();
  args.kernel_names = names.data();
  args.kernel_uses_barrier = barriers.data();
  args.kernel_count = uint32_t(names.size());
  args.options = options.compiler_options.c_str();
  void *image = nullptr;
  uint64_t bytes = 0;
  uint32_t format = 0;
  c.check(t.module_compile(c.handle, &args, &image, &bytes, &format), "module_compile");
  try {
    m->image.assign(static_cast<const char *>(image), size_t(bytes));
  } catch (...) {
    t.image_free(image);
    throw;
  }
  t.image_free(image);
  m->format = static_cast<ImageFormat>(format);
  c.check(t.module_load(c.handle, m->image.data(), m->image.size(), format, &m->handle), "module_load");
  Module out;
  out.impl_ = std::move(m);
  return out;
}

Module Module::load(const Context &ctx, ImageFormat format, const void *image, size_t bytes) {
  if (!ctx.impl()) throw Error(Status::ERROR_INVALID_HANDLE, "Module::load: null context");
  if (!image || bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, "Module::load: empty image");
  auto &c = *ctx.impl();
  const uint64_t gen = c.current_generation();
  c.check_alive(gen, "Module::load");
  const auto &t = detail::kernel_table(c, "Module::load");
  auto m = std::make_shared<ModuleImpl>();
  m->ctx = ctx.impl();
  m->generation = gen;
  m->image.assign(static_cast<const char *>(image), bytes);
  m->format = format;
  c.check(t.module_load(c.handle, m->image.data(), m->image.size(), uint32_t(format), &m->handle), "module_load");
  Module out;
  out.impl_ = std::move(m);
  return out;
}

Kernel Module::kernel(const std::string &name) const {
  if (!impl_) throw Error(Status::ERROR_INVALID_HANDLE, "Module::kernel: empty module");
  auto &m = *impl_;
  m.ctx->check_alive(m.generation, "Module::kernel");
  const KernelDecl *decl = nullptr;
  if (!m.decls.empty()) {
    for (const auto &k : m.decls)
      if (k.name == name) decl = &k;
    if (!decl) {
      std::string known;
      for (const auto &k : m.decls) known += (known.empty() ? "" : ", ") + k.name;
      throw Error(Status::ERROR_NOT_FOUND,
                  "Module::kernel: no kernel '" + name + "' in the module (it has " + known + ")");
    }
    for (size_t i = 0; i < decl->params.size(); ++i) {
      const auto &p = decl->params[i];
      if (!p.pointer && !p.dtype)
        throw Error(Status::ERROR_NOT_SUPPORTED, "Module::kernel: parameter " + std::to_string(i + 1) + " of kernel '" +
                                                     name + "' has type '" + p.type_text +
                                                     "', which gpuhal cannot pass (pass a pointer to it instead)");
    }
  }
  std::lock_guard<std::mutex> lock(m.mu);
  for (const auto &e : m.entries)
    if (e->name == name) {
      Kernel k;
      k.module_ = impl_;
      k.entry_ = e.get();
      return k;
    }
  auto e = std::make_unique<KernelEntry>();
  e->name = name;
  e->decl = decl;
  m.ctx->check(m.ctx->t().module_get_kernel(m.ctx->handle, m.handle, name.c_str(), &e->handle), "module_get_kernel");
  Kernel k;
  k.module_ = impl_;
  k.entry_ = e.get();
  m.entries.push_back(std::move(e));
  return k;
}

std::vector<std::string> Module::kernel_names() const {
  std::vector<std::string> out;
  if (impl_)
    for (const auto &k : impl_->decls) out.push_back(k.name);
  return out;
}

namespace {
const std::string kEmpty;
}
const std::string &Module::lowered_source() const {
  return impl_ ? impl_->lowered : kEmpty;
}
const std::string &Module::image() const {
  return impl_ ? impl_->image : kEmpty;
}
ImageFormat Module::image_format() const {
  if (!impl_) throw Error(Status::ERROR_INVALID_HANDLE, "Module::image_format: empty module");
  return impl_->format;
}
Context Module::context() const {
  if (!impl_) throw Error(Status::ERROR_INVALID_HANDLE, "Module::context: empty module");
  return Context(impl_->ctx);
}

const std::string &Kernel::name() const {
  return entry_ ? entry_->name : kEmpty;
}
int Kernel::parameter_count() const {
  return entry_ && entry_->decl ? int(entry_->decl->params.size()) : -1;
}
Module Kernel::module() const {
  Module m;
  m.impl_ = module_;
  return m;
}

ConfiguredKernel Kernel::operator()(Dim3 grid, Dim3 block, const Stream &stream, uint32_t shared_bytes) const {
  return ConfiguredKernel(*this, grid, block, stream, shared_bytes);
}
ConfiguredKernel Kernel::operator()(Dim3 grid, Dim3 block) const {
  if (!module_) throw Error(Status::ERROR_INVALID_HANDLE, "Kernel: empty kernel");
  return ConfiguredKernel(*this, grid, block, Context(module_->ctx).default_stream(), 0);
}

void Kernel::launch(Dim3 grid, Dim3 block, const std::vector<KernelArg> &args, uint32_t shared_bytes) const {
  if (!module_) throw Error(Status::ERROR_INVALID_HANDLE, "Kernel::launch: empty kernel");
  launch(grid, block, args, Context(module_->ctx).default_stream(), shared_bytes);
}

void Kernel::launch(Dim3 grid, Dim3 block, const std::vector<KernelArg> &args, const Stream &stream,
                    uint32_t shared_bytes) const {
  launch(grid, block, args.data(), args.size(), stream, shared_bytes);
}

void Kernel::launch(Dim3 grid, Dim3 block, const KernelArg *arg_list, size_t arg_count, const Stream &stream,
                    uint32_t shared_bytes) const {
  if (!module_) throw Error(Status::ERROR_INVALID_HANDLE, "Kernel::launch: empty kernel");
  if (arg_count && !arg_list) throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: null argument list");
  struct Args {
    const KernelArg *p;
    size_t n;
    size_t size() const { return n; }
    const KernelArg &operator[](size_t i) const { return p[i]; }
  } const args{arg_list, arg_count};
  auto &m = *module_;
  auto &c = *m.ctx;
  c.check_alive(m.generation, "Kernel::launch");
  if (!stream.impl()) throw Error(Status::ERROR_INVALID_HANDLE, "Kernel::launch: null stream");
  if (stream.impl()->ctx != m.ctx)
    throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: the stream belongs to another context than the kernel");
  const gpuhal_stream_t sh = stream.impl()->live("Kernel::launch");
  // Built only for error messages.
  const auto kname = [&] { return "kernel '" + entry_->name + "'"; };

  // The launch shape, against the device's limits.
  const DeviceProperties &props = c.device->properties;
  const uint32_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  uint64_t threads = 1;
  for (int d = 0; d < 3; ++d) {
    if (g[d] == 0 || b[d] == 0)
      throw Error(Status::ERROR_INVALID_VALUE,
                  "Kernel::launch: " + kname() + ": grid and block sizes must be >= 1 (grid " + std::to_string(grid.x) +
                      "x" + std::to_string(grid.y) + "x" + std::to_string(grid.z) + ", block " +
                      std::to_string(block.x) + "x" + std::to_string(block.y) + "x" + std::to_string(block.z) + ")");
    if (props.max_block_dim[d] > 0 && b[d] > uint32_t(props.max_block_dim[d]))
      throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: " + kname() + ": block dimension " + std::to_string(d) +
                                                   " is " + std::to_string(b[d]) + ", the device allows at most " +
                                                   std::to_string(props.max_block_dim[d]));
    if (props.max_grid_dim[d] > 0 && g[d] > uint32_t(props.max_grid_dim[d]))
      throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: " + kname() + ": grid dimension " + std::to_string(d) +
                                                   " is " + std::to_string(g[d]) + ", the device allows at most " +
                                                   std::to_string(props.max_grid_dim[d]));
    // Global ids are 32-bit in the dialect.
    if (uint64_t(g[d]) * b[d] > UINT32_MAX)
      throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: " + kname() + ": grid * block in dimension " +
                                                   std::to_string(d) + " exceeds 2^32 - 1 work-items");
    threads *= b[d];
  }
  if (props.max_threads_per_block > 0 && threads > uint64_t(props.max_threads_per_block))
    throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: " + kname() + ": a block of " + std::to_string(threads) +
                                                 " work-items, the device allows at most " +
                                                 std::to_string(props.max_threads_per_block));
  // Shared memory is checked by the plugin: only it knows the kernel's
  // static shared memory and the device's opt-in limit.

  // Arguments: check them all before anything is queued.
  const KernelDecl *decl = entry_->decl;
  if (decl && args.size() != decl->params.size()) {
    std::string list;
    for (const auto &p : decl->params) list += (list.empty() ? "" : ", ") + p.type_text;
    throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: " + kname() + " takes " +
                                                 std::to_string(decl->params.size()) + " argument(s) (" + list + "), " +
                                                 std::to_string(args.size()) + " given");
  }
  // Argument values and the pointers to them: inline for up to 16
  // arguments (no allocation on the launch path).
  constexpr size_t kInline = 16;
  uint64_t inline_values[kInline] = {};
  void *inline_ptrs[kInline];
  std::vector<uint64_t> heap_values;
  std::vector<void *> heap_ptrs;
  if (args.size() > kInline) {
    heap_values.assign(args.size(), 0);
    heap_ptrs.resize(args.size());
  }
  uint64_t *values = args.size() > kInline ? heap_values.data() : inline_values;
  void **ptrs = args.size() > kInline ? heap_ptrs.data() : inline_ptrs;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg &a = args[i];
    const detail::KernelParam *p = decl ? &decl->params[i] : nullptr;
    const detail::What what{decl, &entry_->name, i};
    if (a.kind() == KernelArg::Kind::Scalar) {
      if (p && p->pointer)
        throw Error(Status::ERROR_INVALID_VALUE,
                    what.str() + ": a scalar for the pointer parameter '" + p->type_text + "'");
      if (p)
        detail::convert_scalar(a, *p->dtype, what, reinterpret_cast<unsigned char *>(&values[i]));
      else
        std::memcpy(&values[i], a.scalar_bytes(), size_t(a.scalar_dtype().itemsize()));
      continue;
    }
    if (p && !p->pointer)
      throw Error(Status::ERROR_INVALID_VALUE,
                  what.str() + ": an array for the scalar parameter '" + p->type_text + "'");
    switch (a.kind()) {
      case KernelArg::Kind::Device: {
        const DeviceArray &d = a.device();
        if (!d.memory().impl() && d.size() != 0)
          throw Error(Status::ERROR_INVALID_HANDLE, what.str() + ": an empty DeviceArray handle");
        if (d.size() != 0 && d.context() != Context(m.ctx))
          throw Error(Status::ERROR_INVALID_VALUE,
                      what.str() + ": the array belongs to another context than the kernel");
        // An array from before a reset points at memory that is gone or
        // reused by now: refused, as copies refuse it.
        if (d.memory().impl() && d.memory().impl()->generation != m.ctx->current_generation())
          throw Error(Status::ERROR_CONTEXT_DESTROYED,
                      what.str() + ": the array was made before the context was reset; its memory is gone");
        detail::check_array(d, p, what);
        break;
      }
      case KernelArg::Kind::Mirrored: {
        const MirroredArray &mi = a.mirrored();
        if (mi.context() != Context(m.ctx))
          throw Error(Status::ERROR_INVALID_VALUE,
                      what.str() + ": the mirrored array belongs to another context than the kernel");
        if (p && p->dtype && *p->dtype != mi.dtype())
          throw Error(Status::ERROR_INVALID_DTYPE, what.str() + ": mirrored array of dtype " + mi.dtype().name() +
                                                       " for a parameter of type " + p->type_text);
        break;
      }
      case KernelArg::Kind::Host: {
        const HostView &h = a.host();
        if (!h.data() && h.size() != 0)
          throw Error(Status::ERROR_INVALID_VALUE, what.str() + ": a host view without data");
        if (h.size() > 1 && !h.is_c_contiguous() && !h.is_f_contiguous())
          throw Error(Status::ERROR_NOT_CONTIGUOUS,
                      what.str() + ": a kernel gets a plain pointer, so the host array must be contiguous");
        if (p && p->dtype && *p->dtype != h.dtype())
          throw Error(Status::ERROR_INVALID_DTYPE, what.str() + ": host array of dtype " + h.dtype().name() +
                                                       " for a parameter of type " + p->type_text);
        break;
      }
      case KernelArg::Kind::Scalar:
        break;
    }
  }

  // Materialise: mirrored arrays brought up to date, host arrays copied in.
  Context ctx(m.ctx);
  std::vector<std::pair<DeviceArray, HostView>> copy_back;
  std::vector<DeviceArray> temporaries;
  bool host_args = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg &a = args[i];
    const detail::KernelParam *p = decl ? &decl->params[i] : nullptr;
    switch (a.kind()) {
      case KernelArg::Kind::Device:
        values[i] = a.device().size() ? a.device().device_pointer() : 0;
        break;
      case KernelArg::Kind::Mirrored: {
        const DeviceArray &d = a.mirrored().get_device();
        detail::check_array(d, p, detail::What{decl, &entry_->name, i, "mirrored argument "});
        values[i] = d.size() ? d.device_pointer() : 0;
        break;
      }
      case KernelArg::Kind::Host: {
        host_args = true;
        if (a.host().size() == 0) break;
        DeviceArray tmp = to_device(ctx, a.host(), stream);
        values[i] = tmp.device_pointer();
        if (a.host().writeable() && !(p && p->is_const)) copy_back.emplace_back(tmp, a.host());
        temporaries.push_back(std::move(tmp));
        break;
      }
      case KernelArg::Kind::Scalar:
        break;
    }
  }
  for (size_t i = 0; i < args.size(); ++i) ptrs[i] = &values[i];
  gpuhal_launch_config_t cfg{};
  cfg.abi_version = GPUHAL_ABI_VERSION;
  cfg.struct_size = sizeof cfg;
  for (int d = 0; d < 3; ++d) {
    cfg.grid[d] = g[d];
    cfg.block[d] = b[d];
  }
  cfg.dynamic_shared_bytes = shared_bytes;
  c.check(c.t().launch(c.handle, entry_->handle, &cfg, ptrs, uint32_t(args.size()), sh), "launch");
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].kind() == KernelArg::Kind::Mirrored && !(decl && decl->params[i].is_const))
      args[i].mirrored().mark_changed(Where::device);
  for (auto &cb : copy_back) cb.first.copy_to_host(cb.second, stream);
  // The temporaries must outlive the kernel and the copies back.
  if (host_args) stream.synchronize();
}

}  // namespace gpuhal
