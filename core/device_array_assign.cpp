// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DeviceArray::assign and fill: NumPy's `d[...] = value` on the device, as
// Numba does it (numba/cuda/cudadrv/devicearray.py, _do_setitem with its
// _assign_kernel): the source is broadcast to the destination's shape and
// a kernel of the backend copies element by element, ordered on a stream.
// Where a plain copy or memset does the same, that is used instead (also on
// backends without kernels).
#include <algorithm>
#include <cstring>

#include "context_impl.hpp"
#include "gpuhal/device_array.hpp"
#include "gpuhal/error.hpp"
#include "gpuhal/kernel.hpp"
#include "graph_impl.hpp"
#include "handle_access.hpp"
#include "module_impl.hpp"
#include "peer_refusal.hpp"
#include "rect_copy.hpp"
#include "scalar_value.hpp"

namespace gpuhal {
namespace {

// Axes the kernel takes after merging; an array with more (rare: axes that
// do not merge) is done as several launches over its outer axes.
constexpr int kKernelAxes = 8;

// One kernel for every dtype: elements are moved as `units` words of
// `unit` bytes (the largest of 8, 4, 2, 1 that divides the itemsize, every
// stride and both starts), read from `src` or, with from_value, from the
// 16 value bytes. Element i is found from its C-order index over n[] with
// byte strides d[] (destination) and s[] (source; 0 on broadcast axes).
constexpr const char *kAssignSource = R"(
GPUHAL_KERNEL void gpuhal_assign(GPUHAL_GLOBAL uint8_t *dst, GPUHAL_GLOBAL const uint8_t *src, int64_t dst_first,
    int64_t src_first, uint64_t count, uint32_t ndim, uint32_t unit, uint32_t units, uint32_t from_value,
    uint64_t value_lo, uint64_t value_hi,
    int64_t n0, int64_t n1, int64_t n2, int64_t n3, int64_t n4, int64_t n5, int64_t n6, int64_t n7,
    int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t d4, int64_t d5, int64_t d6, int64_t d7,
    int64_t s0, int64_t s1, int64_t s2, int64_t s3, int64_t s4, int64_t s5, int64_t s6, int64_t s7) {
  int64_t n[8], d[8], s[8];
  n[0] = n0; n[1] = n1; n[2] = n2; n[3] = n3; n[4] = n4; n[5] = n5; n[6] = n6; n[7] = n7;
  d[0] = d0; d[1] = d1; d[2] = d2; d[3] = d3; d[4] = d4; d[5] = d5; d[6] = d6; d[7] = d7;
  s[0] = s0; s[1] = s1; s[2] = s2; s[3] = s3; s[4] = s4; s[5] = s5; s[6] = s6; s[7] = s7;
  const uint64_t step = (uint64_t)gpuhal_global_size(0);
  for (uint64_t i = (uint64_t)gpuhal_global_id(0); i < count; i += step) {
    uint64_t rest = i;
    int64_t od = dst_first, os = src_first;
    for (int k = (int)ndim - 1; k >= 0; --k) {
      const uint64_t e = (uint64_t)n[k];
      const uint64_t q = rest / e;
      const int64_t r = (int64_t)(rest - q * e);
      od += r * d[k];
      os += r * s[k];
      rest = q;
    }
    for (uint32_t u = 0; u < units; ++u) {
      uint64_t v;
      if (from_value) {
        const uint32_t b = u * unit;
        v = (b < 8 ? value_lo : value_hi) >> ((b & 7) * 8);
      } else if (unit == 8) {
        v = ((GPUHAL_GLOBAL const uint64_t *)(src + os))[u];
      } else if (unit == 4) {
        v = ((GPUHAL_GLOBAL const uint32_t *)(src + os))[u];
      } else if (unit == 2) {
        v = ((GPUHAL_GLOBAL const uint16_t *)(src + os))[u];
      } else {
        v = src[os + u];
      }
      if (unit == 8) {
        ((GPUHAL_GLOBAL uint64_t *)(dst + od))[u] = v;
      } else if (unit == 4) {
        ((GPUHAL_GLOBAL uint32_t *)(dst + od))[u] = (uint32_t)v;
      } else if (unit == 2) {
        ((GPUHAL_GLOBAL uint16_t *)(dst + od))[u] = (uint16_t)v;
      } else {
        dst[od + u] = (uint8_t)v;
      }
    }
  }
}
)";

std::string what(const char *call) {
  return std::string("DeviceArray::") + call;
}

// The kernel, loaded once per context generation (see
// ContextImpl::builtin_module): compiled the first time, loaded from the
// previous generation's image after a reset.
Kernel assign_kernel(const std::shared_ptr<detail::ContextImpl> &ctx) {
  auto &c = *ctx;
  std::lock_guard<std::mutex> lock(c.builtin_mutex);
  if (!c.builtin_module || c.builtin_module->generation != c.current_generation()) {
    const std::shared_ptr<detail::ModuleImpl> previous = std::move(c.builtin_module);
    const Context context = detail::Access::wrap<Context>(ctx);
    Module m = previous ? Module::load(context, previous->format, previous->image.data(), previous->image.size())
                        : Module::compile(context, kAssignSource);
    std::shared_ptr<detail::ModuleImpl> impl = detail::ModuleAccess::impl(m);
    if (previous) impl->decls = previous->decls;
    m = Module();
    // Refer to the context without owning it (the context owns the module).
    impl->ctx = std::shared_ptr<detail::ContextImpl>(std::shared_ptr<detail::ContextImpl>(), ctx.get());
    c.builtin_module = std::move(impl);
  }
  return detail::ModuleAccess::wrap(c.builtin_module).kernel("gpuhal_assign");
}

}  // namespace

namespace detail {

void prepare_builtin_kernels(const std::shared_ptr<ContextImpl> &ctx) {
  if (!ctx->device->properties.module_loads_wait || !ctx->backend().has_module_compile()) return;
  try {
    (void)assign_kernel(ctx);
  } catch (const Error &e) {
    // No compiler (NVRTC missing), or none that works: the first fill or
    // assign of a strided view then compiles and reports it.
    ctx->logger().write(LogLevel::Info, std::string("the core's kernels (fill, assign) are not loaded with the "
                                                    "context; their first use will load them: ") +
                                            e.what());
  }
}

}  // namespace detail

namespace {

// A shape as NumPy's broadcast error prints it: Python's tuple without the
// spaces, "(2,3)", "(35,)".
std::string numpy_shape(const Shape &shape) {
  std::string s = Layout::format(shape);
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

// NumPy's sentence for a source that does not broadcast: the source's shape
// as NumPy prints it, after the leading 1s it drops.
std::string broadcast_sentence(const Shape &src, const Shape &dst) {
  return "could not broadcast input array from shape " + numpy_shape(src) + " into shape " + numpy_shape(dst);
}

// ERROR_INCOMPATIBLE with NumPy's sentence (the peer message) and `more`.
[[noreturn]] void refuse_broadcast(const char *call, const Shape &src, const Shape &dst, const std::string &more) {
  detail::refuse_like_peer(Status::ERROR_INCOMPATIBLE, what(call), broadcast_sentence(src, dst), more);
}

// The source's strides broadcast to `dst`'s shape (NumPy's rules), or an
// ERROR_INCOMPATIBLE with NumPy's message and the axis.
Strides broadcast_strides(const Layout &dst, const Layout &src, const char *call) {
  Shape shape = src.shape();
  Strides strides = src.strides();
  // Leading axes of length 1 beyond the destination's dims are dropped.
  while (shape.size() > dst.shape().size() && shape.front() == 1) {
    shape.erase(shape.begin());
    strides.erase(strides.begin());
  }
  if (shape.size() > dst.shape().size()) refuse_broadcast(call, shape, dst.shape(), "");
  const size_t pad = dst.shape().size() - shape.size();
  Strides out(dst.shape().size(), 0);
  for (size_t k = 0; k < shape.size(); ++k) {
    const int64_t want = dst.shape()[pad + k];
    if (shape[k] == want)
      out[pad + k] = strides[k];
    else if (shape[k] != 1)
      refuse_broadcast(call, shape, dst.shape(),
                       " (axis " + std::to_string(pad + k) + ": " + std::to_string(shape[k]) + " into " +
                           std::to_string(want) + ")");
  }
  return out;
}

// A destination must not have a broadcast axis: its elements alias.
void check_not_broadcast(const Layout &dst, const char *call) {
  for (size_t k = 0; k < dst.shape().size(); ++k)
    if (dst.strides()[k] == 0 && dst.shape()[k] > 1)
      throw Error(Status::ERROR_INVALID_VALUE,
                  what(call) + ": the destination has a broadcast axis (axis " + std::to_string(k) +
                      ", stride 0): its elements alias each other (NumPy: assignment destination is read-only)");
}

// The axes of one assignment: lengths, destination and source strides,
// with axes of length 1 dropped and neighbours that walk memory as one
// merged (so that most arrays take one launch with few axes).
struct Axes {
  std::vector<int64_t> n, d, s;
};

Axes merged_axes(const Layout &dst, const Strides &src_strides) {
  Axes a;
  for (size_t k = 0; k < dst.shape().size(); ++k) {
    if (dst.shape()[k] == 1) continue;
    const int64_t n = dst.shape()[k], d = dst.strides()[k], s = src_strides[k];
    if (!a.n.empty() && a.d.back() == d * n && a.s.back() == s * n) {
      a.n.back() *= n;  // no overflow: the product is an element count of the array
      a.d.back() = d;
      a.s.back() = s;
      continue;
    }
    a.n.push_back(n);
    a.d.push_back(d);
    a.s.push_back(s);
  }
  return a;
}

// The largest word that divides the itemsize, every stride and the starts.
uint32_t word_size(int64_t itemsize, const Axes &a, uint64_t dst_start, uint64_t src_start) {
  uint64_t bits = uint64_t(itemsize) | dst_start | src_start;
  for (size_t k = 0; k < a.n.size(); ++k) bits |= uint64_t(a.d[k]) | uint64_t(a.s[k]);
  for (uint32_t unit : {8u, 4u, 2u})
    if (bits % unit == 0) return unit;
  return 1;
}

// Arguments of one launch, common to all its sub-launches.
struct Launch {
  Kernel kernel;
  DeviceArray dst_bytes, src_bytes;  // contiguous uint8 views of the spans
  uint32_t unit = 1, units = 1, from_value = 0;
  uint64_t value[2] = {0, 0};
  const Stream *stream = nullptr;
};

void launch_axes(const Launch &l, const Axes &a, int64_t dst_first, int64_t src_first) {
  if (a.n.size() > size_t(kKernelAxes)) {
    // Outer axes on the host, one launch per index.
    Axes inner{{a.n.begin() + 1, a.n.end()}, {a.d.begin() + 1, a.d.end()}, {a.s.begin() + 1, a.s.end()}};
    for (int64_t i = 0; i < a.n[0]; ++i) launch_axes(l, inner, dst_first + i * a.d[0], src_first + i * a.s[0]);
    return;
  }
  uint64_t count = 1;
  for (int64_t n : a.n) count *= uint64_t(n);
  int64_t n[kKernelAxes], d[kKernelAxes], s[kKernelAxes];
  for (int k = 0; k < kKernelAxes; ++k) {
    const bool used = size_t(k) < a.n.size();
    n[k] = used ? a.n[size_t(k)] : 1;
    d[k] = used ? a.d[size_t(k)] : 0;
    s[k] = used ? a.s[size_t(k)] : 0;
  }
  const uint32_t block = 256;
  const uint64_t groups = std::min<uint64_t>((count + block - 1) / block, 4096);
  std::vector<KernelArg> args = {l.dst_bytes, l.src_bytes, dst_first, src_first, count,
                                 uint32_t(a.n.size()), l.unit, l.units, l.from_value, l.value[0], l.value[1]};
  for (int64_t v : n) args.emplace_back(v);
  for (int64_t v : d) args.emplace_back(v);
  for (int64_t v : s) args.emplace_back(v);
  l.kernel.launch(Dim3(uint32_t(groups)), Dim3(block), args, *l.stream);
}

// A contiguous uint8 array over the bytes `a` spans (a kernel argument).
DeviceArray span_bytes(const DeviceArray &a) {
  const Layout &l = a.layout();
  return DeviceArray(a.memory(), Layout::make({l.span_bytes()}, 1).with_offset(l.span_begin()), dtypes::uint8);
}

bool overlaps(const DeviceArray &a, const DeviceArray &b) {
  if (a.size() == 0 || b.size() == 0) return false;
  const uint64_t a0 = a.memory().device_pointer() + uint64_t(a.layout().span_begin());
  const uint64_t b0 = b.memory().device_pointer() + uint64_t(b.layout().span_begin());
  return a0 < b0 + uint64_t(b.layout().span_bytes()) && b0 < a0 + uint64_t(a.layout().span_bytes());
}

// `value` (of dtype `from`) as the bytes of one element of `to`.
void convert_value(DType from, const void *value, DType to, unsigned char *out, const char *call) {
  detail::ScalarValue s;
  if (!detail::read_scalar(from, value, &s))
    throw Error(Status::ERROR_INVALID_VALUE, what(call) + ": a " + from.name() + " value is not supported");
  switch (to.kind) {
    case DTypeKind::Float:
    case DTypeKind::Complex:  // the real part; the imaginary part stays 0
      if (to == dtypes::float32 || to == dtypes::float64) {
        detail::store_float(s, to, out);
        return;
      }
      if (to == dtypes::complex64 || to == dtypes::complex128) {
        detail::store_float(s, to == dtypes::complex64 ? dtypes::float32 : dtypes::float64, out);
        return;
      }
      throw Error(Status::ERROR_INVALID_DTYPE,
                  what(call) + ": a value for a " + to.name() + " array (fill its bits through view(dtypes::uint16))");
    case DTypeKind::Bool:
      if (!s.integral())
        throw Error(Status::ERROR_INVALID_VALUE, what(call) + ": a " + from.name() + " value for a bool array");
      out[0] = (s.i != 0 || s.u != 0) ? 1 : 0;
      return;
    case DTypeKind::Int:
    case DTypeKind::UInt:
      if (!s.integral())
        throw Error(Status::ERROR_INVALID_VALUE,
                    what(call) + ": a " + from.name() + " value for an " + to.name() + " array (pass an integer)");
      if (!detail::store_integer(s, to, out))
        throw Error(Status::ERROR_INVALID_VALUE, what(call) + ": the value " + s.text() + " does not fit " + to.name());
      return;
    default:
      throw Error(Status::ERROR_INVALID_DTYPE, what(call) + ": a value for a " + to.name() + " array");
  }
}

// The assign kernel over dst's elements on s: from src (strides
// `src_strides`, broadcast) or, with src null, every element set to the 16
// bytes at `value`. ERROR_NOT_SUPPORTED on a backend without kernels.
void run_assign(const DeviceArray &dst, const DeviceArray *src, const Strides &src_strides,
                const unsigned char *value, const Stream &s, const char *call) {
  const Context context = dst.context();
  const std::shared_ptr<detail::ContextImpl> &ctx = detail::impl_of(context);
  if (!context.supports(Capability::Kernels))
    throw Error(Status::ERROR_NOT_SUPPORTED, what(call) + ": this needs a kernel, and backend '" + ctx->lib().name() +
                                                 "' has none (Capability::Kernels)");
  const Axes axes = merged_axes(dst.layout(), src_strides);
  Launch l;
  l.kernel = assign_kernel(ctx);
  l.dst_bytes = span_bytes(dst);
  l.src_bytes = src ? span_bytes(*src) : l.dst_bytes;  // not read for a value
  l.unit = word_size(dst.itemsize(), axes, dst.device_pointer(), src ? src->device_pointer() : 0);
  l.units = uint32_t(dst.itemsize() / l.unit);
  if (!src) {
    l.from_value = 1;
    std::memcpy(l.value, value, sizeof l.value);
  }
  l.stream = &s;
  const Layout &d = dst.layout();
  launch_axes(l, axes, d.offset() - d.span_begin(), src ? src->layout().offset() - src->layout().span_begin() : 0);
}

// A host source of `dst.assign` copied to a device array of its own layout.
DeviceArray staged_source(const DeviceArray &dst, const HostView &src, const Stream *stream) {
  const Context ctx = dst.context();  // ERROR_INVALID_HANDLE for an empty array
  if (src.dtype() != dst.dtype())
    throw Error(Status::ERROR_INVALID_DTYPE,
                what("assign") + ": source dtype " + src.dtype().name() + " differs from " + dst.dtype().name());
  return stream ? to_device(ctx, src, *stream) : to_device(ctx, src);
}

}  // namespace

void DeviceArray::assign(const DeviceArray &src) const {
  assign_impl(src, nullptr);
}
void DeviceArray::assign(const DeviceArray &src, const Stream &stream) const {
  assign_impl(src, &stream);
}

void DeviceArray::assign(const HostView &src) const {
  assign_impl(staged_source(*this, src, nullptr), nullptr);
}
void DeviceArray::assign(const HostView &src, const Stream &stream) const {
  // The temporary's release is deferred past the work queued on it.
  assign_impl(staged_source(*this, src, &stream), &stream);
}

void DeviceArray::assign_impl(const DeviceArray &src, const Stream *stream) const {
  const char *call = "assign";
  if (!ctx_ || !src.ctx_) throw Error(Status::ERROR_INVALID_HANDLE, what(call) + ": empty DeviceArray");
  ctx_->check_alive(ctx_->current_generation(), "DeviceArray::assign");
  if (src.ctx_ != ctx_)
    throw Error(Status::ERROR_INVALID_VALUE, what(call) + ": the source belongs to another context");
  if (src.dtype_ != dtype_)
    throw Error(Status::ERROR_INVALID_DTYPE,
                what(call) + ": source dtype " + src.dtype_.name() + " differs from " + dtype_.name());
  const Strides src_strides = broadcast_strides(layout_, src.layout_, call);
  if (size() == 0) return;
  check_not_broadcast(layout_, call);
  const Stream s = stream ? *stream : detail::Access::wrap<Context>(ctx_).default_stream();
  if (overlaps(*this, src)) {
    // Read everything before writing anything (NumPy copies overlapping
    // sources first): through a contiguous temporary.
    const DeviceArray staged = device_array(detail::Access::wrap<Context>(ctx_), src.shape(), dtype_);
    staged.assign_impl(src, &s);
    assign_impl(staged, &s);
    if (!stream) s.synchronize();
    return;
  }
  // The same layout, both contiguous: a plain device-to-device copy.
  if (src.layout_.shape() == layout_.shape() && src.layout_.strides() == layout_.strides() && layout_.is_contiguous()) {
    if (stream)
      copy_from_device(src, *stream);
    else
      copy_from_device(src);
    return;
  }
  // Views whose elements form the same rectangle on both sides (a sub-tile
  // into another): the driver's rectangular copy, no kernel.
  if (ctx_->backend().has_memcpy_rect_async())
    if (const auto plan = detail::plan_rect(layout_.shape(), layout_.strides(), src_strides, itemsize())) {
      const gpuhal_stream_t sh = detail::transfer_stream(ctx_, s, call, memory_, &src.memory_);
      detail::submit_rect(*ctx_, GPUHAL_COPY_DEVICE_TO_DEVICE, *plan,
                          memory_.device_pointer() + uint64_t(layout_.offset()),
                          src.memory_.device_pointer() + uint64_t(src.layout_.offset()), sh);
      if (!stream) s.synchronize();
      return;
    }
  run_assign(*this, &src, src_strides, nullptr, s, call);
  if (!stream) s.synchronize();
}

void DeviceArray::fill_impl(DType from, const void *value, const Stream *stream) const {
  const char *call = "fill";
  if (!ctx_) throw Error(Status::ERROR_INVALID_HANDLE, what(call) + ": empty DeviceArray");
  ctx_->check_alive(ctx_->current_generation(), "DeviceArray::fill");
  unsigned char bytes[16] = {};
  convert_value(from, value, dtype_, bytes, call);
  if (size() == 0) return;
  check_not_broadcast(layout_, call);
  const Stream s = stream ? *stream : detail::Access::wrap<Context>(ctx_).default_stream();
  // Every byte the same in a contiguous array: the driver's memset.
  const auto n = size_t(itemsize());
  if (layout_.is_contiguous() && std::count(bytes, bytes + n, bytes[0]) == long(n)) {
    memset(bytes[0], s);
    if (!stream) s.synchronize();
    return;
  }
  run_assign(*this, nullptr, Strides(size_t(ndim()), 0), bytes, s, call);
  if (!stream) s.synchronize();
}

}  // namespace gpuhal
