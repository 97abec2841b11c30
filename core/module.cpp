// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Modules and kernels: lowering, compile + load through the plugin, kernel
// lookup (launches: kernel_launch.cpp).
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "context_impl.hpp"
#include "handle_access.hpp"
#include "module_impl.hpp"

namespace gpuhal {
namespace detail {
namespace {

const Backend &kernel_backend(const ContextImpl &c, const char *what) {
  if (!c.backend().has_module_compile())
    throw Error(Status::ERROR_NOT_SUPPORTED,
                std::string(what) + ": backend '" + c.lib().name() + "' has no kernel support (Capability::Kernels)");
  return c.backend();
}

// A builtin's definition: NOT_SUPPORTED with a text is an optional builtin
// the backend lacks, defined so that a use fails to compile (plugin.h).
const char *builtin_text(const Backend &lib, const std::string &name) {
  const char *text = nullptr;
  const gpuhal_status_t st = lib.lower_builtin_status(name.c_str(), &text);
  if (!(st == GPUHAL_ERROR_NOT_SUPPORTED && text)) lib.check(st, ("lower_builtin(" + name + ")").c_str());
  if (!text) throw Error(Status::ERROR_INVALID_PLUGIN, lib.name() + ": lower_builtin(" + name + ") gave no text");
  return text;
}

std::string lowering_text(const Backend &lib) {
  std::string out = "/* gpuhal portable kernel dialect, lowered for the " + lib.name() + " backend */\n";
  const char *text = nullptr;
  lib.check(lib.lower_builtin_status("", &text), "lower_builtin(\"\")");
  out += text ? text : "";
  out += "\n";
  for (const auto &name : kernel_builtins()) {
    text = builtin_text(lib, name);
    out += text;
    out += "\n";
  }
  return out;
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
  const detail::Backend &lib = *impl_->backend;
  if (!lib.has_lower_builtin())
    throw Error(Status::ERROR_NOT_SUPPORTED, "backend '" + lib.name() + "' has no kernel support");
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string &name : std::vector<std::string>{""}) {
    const char *text = nullptr;
    lib.lower_builtin(name.c_str(), &text);
    out.emplace_back(name, text ? text : "");
  }
  for (const auto &name : kernel_builtins()) out.emplace_back(name, detail::builtin_text(lib, name));
  return out;
}

ModuleOptions &ModuleOptions::constant(const std::string &name, const HostView &data) {
  for (const auto &c : constants)
    if (c.name == name) throw Error(Status::ERROR_INVALID_VALUE, "constant array '" + name + "' is given twice");
  // Validates the name and dtype now, where the mistake is made.
  detail::ConstantArray probe{name, data.dtype(), nullptr, 0, {}};
  (void)detail::constant_array_text(probe);
  Constant c;
  c.name = name;
  c.dtype = data.dtype();
  c.shape = data.shape();
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
  if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, "Module::compile: null context");
  auto &c = *detail::impl_of(ctx);
  auto m = detail::new_child<ModuleImpl>(detail::impl_of(ctx), "Module::compile");
  const auto &t = detail::kernel_backend(c, "Module::compile");
  m->decls = detail::scan_kernel_source(source).kernels;
  m->lowered = detail::lowering_text(c.backend());
  for (const auto &k : options.constants) {
    const uint64_t count = k.bytes.size() / uint64_t(k.dtype.itemsize());
    m->lowered += detail::constant_array_text({k.name, k.dtype, k.bytes.data(), count, k.shape});
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
  const auto started = std::chrono::steady_clock::now();
  t.module_compile(c.handle, &args, &image, &bytes, &format);
  // A first compile can take a second or more (the host backend runs the
  // system compiler; NVRTC, amd_comgr): said at info level, with the time.
  if (c.logger().enabled(LogLevel::Info)) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    std::string list;
    for (const char *n : names) list += std::string(list.empty() ? "" : ", ") + n;
    char took[32];
    std::snprintf(took, sizeof took, "%.1f ms", ms);
    c.logger().write(LogLevel::Info, "Module::compile: " + std::to_string(names.size()) + " kernel(s) (" + list +
                                         ") compiled for the " + c.lib().name() + " backend in " + took);
  }
  try {
    m->image.assign(static_cast<const char *>(image), size_t(bytes));
  } catch (...) {
    t.image_free_status(image);
    throw;
  }
  t.image_free_status(image);
  m->format = static_cast<ImageFormat>(format);
  t.module_load(c.handle, m->image.data(), m->image.size(), format, &m->handle);
  Module out;
  out.impl_ = std::move(m);
  return out;
}

Module Module::load(const Context &ctx, ImageFormat format, const void *image, size_t bytes) {
  if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, "Module::load: null context");
  if (!image || bytes == 0) throw Error(Status::ERROR_INVALID_VALUE, "Module::load: empty image");
  auto &c = *detail::impl_of(ctx);
  auto m = detail::new_child<ModuleImpl>(detail::impl_of(ctx), "Module::load");
  const auto &t = detail::kernel_backend(c, "Module::load");
  m->image.assign(static_cast<const char *>(image), bytes);
  m->format = format;
  t.module_load(c.handle, m->image.data(), m->image.size(), uint32_t(format), &m->handle);
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
  m.ctx->check(m.ctx->backend().module_get_kernel_status(m.ctx->handle, m.handle, name.c_str(), &e->handle), "module_get_kernel");
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
  return detail::Access::wrap<Context>(impl_->ctx);
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
  return ConfiguredKernel(*this, grid, block, detail::Access::wrap<Context>(module_->ctx).default_stream(), 0);
}

void Kernel::launch(Dim3 grid, Dim3 block, const std::vector<KernelArg> &args, uint32_t shared_bytes) const {
  if (!module_) throw Error(Status::ERROR_INVALID_HANDLE, "Kernel::launch: empty kernel");
  launch(grid, block, args, detail::Access::wrap<Context>(module_->ctx).default_stream(), shared_bytes);
}

void Kernel::launch(Dim3 grid, Dim3 block, const std::vector<KernelArg> &args, const Stream &stream,
                    uint32_t shared_bytes) const {
  launch(grid, block, args.data(), args.size(), stream, shared_bytes);
}

}  // namespace gpuhal
