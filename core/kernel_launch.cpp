// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernel launches: arguments checked and converted by Numba's rules (see
// kernel.hpp), mirrored and host arrays brought to the device, then the
// plugin's launch.
#include <climits>
#include <cmath>

#include "allocation.hpp"
#include "context_impl.hpp"
#include "graph_impl.hpp"
#include "handle_access.hpp"
#include "module_impl.hpp"
#include "scalar_value.hpp"

namespace gpuhal {
namespace detail {
namespace {

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
  ScalarValue s;
  if (!read_scalar(from, a.scalar_bytes(), &s))
    throw Error(Status::ERROR_INVALID_VALUE, what.str() + ": a " + from.name() + " value is not supported");
  if (is_float(to)) {
    store_float(s, to, out);
    return;
  }
  if (!is_integer(to))
    throw Error(Status::ERROR_INVALID_VALUE,
                what.str() + ": gpuhal cannot pass a value of parameter type " + to.name());
  if (!s.integral())
    throw Error(Status::ERROR_INVALID_VALUE,
                what.str() + ": a " + from.name() + " value for an " + to.name() + " parameter (pass an integer)");
  if (!store_integer(s, to, out))
    throw Error(Status::ERROR_INVALID_VALUE,
                what.str() + ": the value " + s.text() + " does not fit the parameter's type " + to.name());
}

// The alignment a device needs for loads of an element: its scalar's size
// (a complex's half). A record's is its struct's, which only the source
// knows: 1 here.
int64_t element_alignment(DType t) {
  if (t.kind == DTypeKind::Opaque) return 1;
  return t.kind == DTypeKind::Complex ? t.itemsize() / 2 : t.itemsize();
}

void check_array(const DeviceArray &d, const KernelParam *p, const What &what) {
  if (d.size() > 1 && !d.is_c_contiguous() && !d.is_f_contiguous())
    throw Error(Status::ERROR_NOT_CONTIGUOUS,
                what.str() + ": a kernel gets a plain pointer, so the array must be contiguous (copy it first)");
  // A view can start anywhere (view(uint8)[1:].view(float64), as NumPy
  // allows); a GPU faults on a misaligned load (CUDA_ERROR_MISALIGNED_ADDRESS,
  // sticky for the process), so every backend refuses it here.
  const int64_t alignment = element_alignment(d.dtype());
  if (d.size() > 0 && d.device_pointer() % uint64_t(alignment) != 0)
    throw Error(Status::ERROR_INVALID_VALUE,
                what.str() + ": the array's data is not aligned to its " + d.dtype().name() + " elements (" +
                    std::to_string(alignment) + " bytes); a device faults on such loads (copy it to a new array)");
  if (p && p->dtype && *p->dtype != d.dtype())
    throw Error(Status::ERROR_INVALID_DTYPE, what.str() + ": array of dtype " + d.dtype().name() +
                                                 " for a parameter of type " + p->type_text + " (" + p->dtype->name() +
                                                 ")");
}


// A scalar argument into `out` (8 bytes): converted to the parameter's
// type, or copied as it is for a kernel without a scanned declaration.
void pack_scalar(const KernelArg &a, const KernelParam *p, const What &what, uint64_t *out) {
  if (p && p->pointer)
    throw Error(Status::ERROR_INVALID_VALUE, what.str() + ": a scalar for the pointer parameter '" + p->type_text + "'");
  if (p)
    convert_scalar(a, *p->dtype, what, reinterpret_cast<unsigned char *>(out));
  else
    std::memcpy(out, a.scalar_bytes(), size_t(a.scalar_dtype().itemsize()));
}

// A device array argument of a kernel of `ctx`: live, of this context, usable.
void check_device_arg(const DeviceArray &d, const KernelParam *p, const What &what,
                      const std::shared_ptr<ContextImpl> &ctx) {
  if (!impl_of(d.memory()) && d.size() != 0)
    throw Error(Status::ERROR_INVALID_HANDLE, what.str() + ": an empty DeviceArray handle");
  if (d.size() != 0 && d.context() != Access::wrap<Context>(ctx))
    throw Error(Status::ERROR_INVALID_VALUE, what.str() + ": the array belongs to another context than the kernel");
  // An array from before a reset points at memory that is gone or reused by
  // now: refused, as copies refuse it.
  if (impl_of(d.memory()) && impl_of(d.memory())->generation != ctx->current_generation())
    throw Error(Status::ERROR_CONTEXT_DESTROYED,
                what.str() + ": the array was made before the context was reset; its memory is gone");
  check_array(d, p, what);
}

}  // namespace
}  // namespace detail

using detail::KernelDecl;

void Kernel::pack_args(const KernelArg *args, size_t count, const char *call, std::vector<uint64_t> *values,
                       std::vector<std::shared_ptr<const void>> *kept) const {
  const KernelDecl *decl = entry_->decl;
  if (decl && count != decl->params.size())
    throw Error(Status::ERROR_INVALID_VALUE, std::string(call) + ": kernel '" + entry_->name + "' takes " +
                                                 std::to_string(decl->params.size()) + " argument(s), " +
                                                 std::to_string(count) + " given");
  values->assign(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const KernelArg &a = args[i];
    const detail::KernelParam *p = decl ? &decl->params[i] : nullptr;
    const detail::What what{decl, &entry_->name, i};
    if (a.kind() == KernelArg::Kind::Scalar) {
      detail::pack_scalar(a, p, what, &(*values)[i]);
      continue;
    }
    if (a.kind() != KernelArg::Kind::Device)
      throw Error(Status::ERROR_CAPTURE_UNSUPPORTED,
                  what.str() + ": " + call +
                      " takes device arrays and scalars only (a host or mirrored array needs copies around each "
                      "launch); copy it to a device array first");
    if (p && !p->pointer)
      throw Error(Status::ERROR_INVALID_VALUE, what.str() + ": an array for the scalar parameter '" + p->type_text + "'");
    const DeviceArray &d = a.device();
    detail::check_device_arg(d, p, what, module_->ctx);
    (*values)[i] = d.size() ? d.device_pointer() : 0;
    if (detail::impl_of(d.memory())) kept->push_back(detail::impl_of(d.memory()));
  }
}

namespace detail {
namespace {

// Kernel::launch's phases, as LLVM offload's GenericKernelTy::launch has
// them: the launch shape against the device's limits, every argument
// checked (and scalars packed) before anything is queued, the arrays made
// device arguments, then the backend's launch.

// Phase 1: the grid and block against the device's limits. Shared memory is
// checked by the plugin: only it knows the kernel's static shared memory
// and the device's opt-in limit.
void check_launch_shape(const DeviceProperties &props, const std::string &kernel, const uint32_t g[3],
                        const uint32_t b[3]) {
  const auto kname = [&] { return "Kernel::launch: kernel '" + kernel + "'"; };  // for messages only
  uint64_t threads = 1;
  for (int d = 0; d < 3; ++d) {
    if (g[d] == 0 || b[d] == 0)
      throw Error(Status::ERROR_INVALID_VALUE,
                  kname() + ": grid and block sizes must be >= 1 (grid " + std::to_string(g[0]) + "x" +
                      std::to_string(g[1]) + "x" + std::to_string(g[2]) + ", block " + std::to_string(b[0]) + "x" +
                      std::to_string(b[1]) + "x" + std::to_string(b[2]) + ")");
    if (props.max_block_dim[d] > 0 && b[d] > uint32_t(props.max_block_dim[d]))
      throw Error(Status::ERROR_INVALID_VALUE, kname() + ": block dimension " + std::to_string(d) + " is " +
                                                   std::to_string(b[d]) + ", the device allows at most " +
                                                   std::to_string(props.max_block_dim[d]));
    if (props.max_grid_dim[d] > 0 && g[d] > uint32_t(props.max_grid_dim[d]))
      throw Error(Status::ERROR_INVALID_VALUE, kname() + ": grid dimension " + std::to_string(d) + " is " +
                                                   std::to_string(g[d]) + ", the device allows at most " +
                                                   std::to_string(props.max_grid_dim[d]));
    // Global ids are 32-bit in the dialect.
    if (uint64_t(g[d]) * b[d] > UINT32_MAX)
      throw Error(Status::ERROR_INVALID_VALUE, kname() + ": grid * block in dimension " + std::to_string(d) +
                                                   " exceeds 2^32 - 1 work-items");
    threads *= b[d];
  }
  if (props.max_threads_per_block > 0 && threads > uint64_t(props.max_threads_per_block))
    throw Error(Status::ERROR_INVALID_VALUE, kname() + ": a block of " + std::to_string(threads) +
                                                 " work-items, the device allows at most " +
                                                 std::to_string(props.max_threads_per_block));
}

// Phase 2, for one array argument: its kind against the parameter.
void check_array_arg(const KernelArg &a, const KernelParam *p, const What &what,
                     const std::shared_ptr<ContextImpl> &ctx) {
  if (p && !p->pointer)
    throw Error(Status::ERROR_INVALID_VALUE, what.str() + ": an array for the scalar parameter '" + p->type_text + "'");
  switch (a.kind()) {
    case KernelArg::Kind::Device:
      check_device_arg(a.device(), p, what, ctx);
      break;
    case KernelArg::Kind::Mirrored: {
      const MirroredArray &mi = a.mirrored();
      if (mi.context() != Access::wrap<Context>(ctx))
        throw Error(Status::ERROR_INVALID_VALUE,
                    what.str() + ": the mirrored array belongs to another context than the kernel");
      if (p && p->dtype && *p->dtype != mi.dtype())
        throw Error(Status::ERROR_INVALID_DTYPE, what.str() + ": mirrored array of dtype " + mi.dtype().name() +
                                                     " for a parameter of type " + p->type_text);
      break;
    }
    case KernelArg::Kind::Host: {
      const HostView &h = a.host();
      if (!h.data() && h.size() != 0) throw Error(Status::ERROR_INVALID_VALUE, what.str() + ": a host view without data");
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

// Phase 2: every argument against the kernel's declaration (when the
// source declared it); scalars packed into values[i].
void check_launch_args(const KernelArg *args, size_t n, const KernelDecl *decl, const std::string &kernel,
                       const std::shared_ptr<ContextImpl> &ctx, uint64_t *values) {
  if (decl && n != decl->params.size()) {
    std::string list;
    for (const auto &p : decl->params) list += (list.empty() ? "" : ", ") + p.type_text;
    throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: kernel '" + kernel + "' takes " +
                                                 std::to_string(decl->params.size()) + " argument(s) (" + list + "), " +
                                                 std::to_string(n) + " given");
  }
  for (size_t i = 0; i < n; ++i) {
    const KernelParam *p = decl ? &decl->params[i] : nullptr;
    const What what{decl, &kernel, i};
    if (args[i].kind() == KernelArg::Kind::Scalar)
      pack_scalar(args[i], p, what, &values[i]);
    else
      check_array_arg(args[i], p, what, ctx);
  }
}

// Phase 3: what the arrays became for one launch. The temporaries (host
// arrays copied in) must outlive the kernel and the copies back.
struct DeviceArgs {
  std::vector<std::pair<DeviceArray, HostView>> copy_back;
  std::vector<DeviceArray> temporaries;
  bool host_args = false;
};

// Phase 3: device arrays as their pointers, mirrored arrays brought up to
// date, host arrays copied in on `stream`, into values[i].
DeviceArgs make_device_args(const KernelArg *args, size_t n, const KernelDecl *decl, const std::string &kernel,
                            const Context &ctx, const Stream &stream, uint64_t *values) {
  DeviceArgs out;
  for (size_t i = 0; i < n; ++i) {
    const KernelArg &a = args[i];
    const KernelParam *p = decl ? &decl->params[i] : nullptr;
    switch (a.kind()) {
      case KernelArg::Kind::Device:
        values[i] = a.device().size() ? a.device().device_pointer() : 0;
        break;
      case KernelArg::Kind::Mirrored: {
        const DeviceArray &d = a.mirrored().get_device();
        check_array(d, p, What{decl, &kernel, i, "mirrored argument "});
        values[i] = d.size() ? d.device_pointer() : 0;
        break;
      }
      case KernelArg::Kind::Host: {
        out.host_args = true;
        if (a.host().size() == 0) break;
        DeviceArray tmp = to_device(ctx, a.host(), stream);
        values[i] = tmp.device_pointer();
        if (a.host().writeable() && !(p && p->is_const)) out.copy_back.emplace_back(tmp, a.host());
        out.temporaries.push_back(std::move(tmp));
        break;
      }
      case KernelArg::Kind::Scalar:
        break;
    }
  }
  return out;
}

}  // namespace
}  // namespace detail

void Kernel::launch(Dim3 grid, Dim3 block, const KernelArg *arg_list, size_t arg_count, const Stream &stream,
                    uint32_t shared_bytes) const {
  if (!module_) throw Error(Status::ERROR_INVALID_HANDLE, "Kernel::launch: empty kernel");
  if (arg_count && !arg_list) throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: null argument list");
  auto &m = *module_;
  auto &c = *m.ctx;
  c.check_alive(m.generation, "Kernel::launch");
  if (!detail::impl_of(stream)) throw Error(Status::ERROR_INVALID_HANDLE, "Kernel::launch: null stream");
  if (detail::impl_of(stream)->ctx != m.ctx)
    throw Error(Status::ERROR_INVALID_VALUE, "Kernel::launch: the stream belongs to another context than the kernel");
  const gpuhal_stream_t sh = detail::impl_of(stream)->live("Kernel::launch");
  const uint32_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  detail::check_launch_shape(c.device->properties, entry_->name, g, b);

  // Argument values and the pointers to them: inline for up to 16
  // arguments (no allocation on the launch path).
  constexpr size_t kInline = 16;
  uint64_t inline_values[kInline] = {};
  void *inline_ptrs[kInline];
  std::vector<uint64_t> heap_values;
  std::vector<void *> heap_ptrs;
  if (arg_count > kInline) {
    heap_values.assign(arg_count, 0);
    heap_ptrs.resize(arg_count);
  }
  uint64_t *values = arg_count > kInline ? heap_values.data() : inline_values;
  void **ptrs = arg_count > kInline ? heap_ptrs.data() : inline_ptrs;
  const KernelDecl *decl = entry_->decl;
  detail::check_launch_args(arg_list, arg_count, decl, entry_->name, m.ctx, values);

  if (detail::capturing(*detail::impl_of(stream))) {
    launch_captured(g, b, shared_bytes, arg_list, arg_count, stream);
    return;
  }
  const detail::DeviceArgs device_args = detail::make_device_args(
      arg_list, arg_count, decl, entry_->name, detail::Access::wrap<Context>(m.ctx), stream, values);
  for (size_t i = 0; i < arg_count; ++i) ptrs[i] = &values[i];
  const gpuhal_launch_config_t cfg = detail::launch_config(g, b, shared_bytes);
  c.backend().launch(c.handle, entry_->handle, &cfg, ptrs, uint32_t(arg_count), sh);
  for (size_t i = 0; i < arg_count; ++i)
    if (arg_list[i].kind() == KernelArg::Kind::Mirrored && !(decl && decl->params[i].is_const))
      arg_list[i].mirrored().mark_changed(Where::device);
  for (auto &cb : device_args.copy_back) cb.first.copy_to_host(cb.second, stream);
  // The temporaries must outlive the kernel and the copies back.
  if (device_args.host_args) stream.synchronize();
}

}  // namespace gpuhal
