// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DeviceArray: Numba's DeviceNDArray semantics over the plugin's transfer
// entries. The rules follow numba-cuda's cudadrv/devicearray.py and dummyarray.py;
// deliberate differences (explicit streams, NumPy reshape, checks on empty
// copies) are documented in docs/user-guide.md.
#include "gpuhal/device_array.hpp"

#include <cstdlib>
#include <utility>

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "graph_impl.hpp"
#include "handle_access.hpp"
#include "peer_refusal.hpp"
#include "rect_copy.hpp"
#include "strided_copy.hpp"

namespace gpuhal {
namespace {

// Numba's sentence (devicearray.errmsg_contiguous_buffer), word for word.
const char kContiguousMessage[] =
    "Array contains non-contiguous buffer and cannot be transferred as a single memory region. Please ensure "
    "contiguous buffer with numpy .ascontiguousarray()";

// ERROR_NOT_CONTIGUOUS for `side` ("destination", "source", "host") of
// `call`, with Numba's sentence as the peer message.
[[noreturn]] void refuse_non_contiguous(const std::string &call, const char *side) {
  detail::refuse_like_peer(Status::ERROR_NOT_CONTIGUOUS, call + ": " + side, kContiguousMessage);
}

void check_dtype(DType a, DType b) {
  if (a != b) throw Error(Status::ERROR_INVALID_DTYPE, "incompatible dtype: " + a.name() + " vs. " + b.name());
}

// Numba's check_array_compatibility: dtype, squeezed shape, and (for
// non-empty arrays) squeezed strides. Messages print the unsqueezed values.
void check_compatible(const Layout &a, DType da, const Layout &b, DType db) {
  check_dtype(da, db);
  const Layout sa = a.squeeze(), sb = b.squeeze();
  if (sa.shape() != sb.shape())
    throw Error(Status::ERROR_INCOMPATIBLE,
                "incompatible shape: " + Layout::format(a.shape()) + " vs. " + Layout::format(b.shape()));
  if (a.size() != 0 && sa.strides() != sb.strides())
    throw Error(Status::ERROR_INCOMPATIBLE,
                "incompatible strides: " + Layout::format(a.strides()) + " vs. " + Layout::format(b.strides()));
}

std::string what(const char *call) {
  return std::string("DeviceArray::") + call;
}

}  // namespace

DeviceArray::DeviceArray(DeviceMemory memory, const Layout &layout, DType dtype)
    : memory_(std::move(memory)), layout_(layout), dtype_(dtype) {
  dtype.validate();
  if (layout.itemsize() != dtype.itemsize())
    throw Error(Status::ERROR_INVALID_DTYPE, "DeviceArray: layout itemsize " + std::to_string(layout.itemsize()) +
                                                 " does not match dtype " + dtype.name());
  if (!memory_) throw Error(Status::ERROR_INVALID_HANDLE, "DeviceArray: empty DeviceMemory");
  ctx_ = detail::impl_of(memory_)->ctx;
  if (layout.size() != 0 && (layout.span_begin() < 0 || uint64_t(layout.span_end()) > memory_.size()))
    throw Error(Status::ERROR_INVALID_SHAPE, "DeviceArray: layout spans bytes [" + std::to_string(layout.span_begin()) +
                                                 ", " + std::to_string(layout.span_end()) + ") outside the memory of " +
                                                 std::to_string(memory_.size()) + " bytes");
}

gpuhal_deviceptr_t DeviceArray::device_pointer() const {
  if (size() == 0 || !memory_) return 0;
  return memory_.device_pointer() + uint64_t(layout_.offset());
}

Context DeviceArray::context() const {
  if (!ctx_) throw Error(Status::ERROR_INVALID_HANDLE, "DeviceArray::context: empty DeviceArray");
  return detail::Access::wrap<Context>(ctx_);
}

int64_t DeviceArray::length() const {
  if (ndim() == 0) throw Error(Status::ERROR_INDEX_OUT_OF_RANGE, "length() of a 0-d array");
  return shape()[0];
}

DeviceArray DeviceArray::with_layout(Layout layout, DType dtype) const {
  DeviceArray out = *this;
  out.layout_ = std::move(layout);
  out.dtype_ = dtype;
  return out;
}

DeviceArray DeviceArray::view(const std::vector<Index> &indices) const {
  return with_layout(layout_.index(indices), dtype_);
}

DeviceArray DeviceArray::reshape(const Shape &new_shape, char order) const {
  return with_layout(layout_.reshape(new_shape, order), dtype_);
}

DeviceArray DeviceArray::view(DType dtype) const {
  dtype.validate();
  return with_layout(layout_.view_itemsize(dtype.itemsize()), dtype);
}

DeviceArray DeviceArray::transpose(const std::vector<int> &axes) const {
  return with_layout(layout_.transpose(axes), dtype_);
}

DeviceArray DeviceArray::ravel(char order) const {
  return with_layout(layout_.ravel(order), dtype_);
}

void DeviceArray::copy_from_host(const HostView &src) const {
  copy_from_host_impl(src, nullptr);
}
void DeviceArray::copy_from_host(const HostView &src, const Stream &stream) const {
  copy_from_host_impl(src, &stream);
}
void DeviceArray::copy_from_device(const DeviceArray &src) const {
  copy_from_device_impl(src, nullptr);
}
void DeviceArray::copy_from_device(const DeviceArray &src, const Stream &stream) const {
  copy_from_device_impl(src, &stream);
}
void DeviceArray::copy_to_host(const HostView &dst) const {
  copy_to_host_impl(dst, nullptr, false);
}
void DeviceArray::copy_to_host(const HostView &dst, const Stream &stream) const {
  copy_to_host_impl(dst, &stream, false);
}
void DeviceArray::memset(uint8_t value) const {
  memset_impl(value, nullptr);
}
void DeviceArray::memset(uint8_t value, const Stream &stream) const {
  memset_impl(value, &stream);
}

namespace {

// The plugin stream handle for a transfer, after liveness and context checks.
// A capturing stream's capture keeps `memory` (and `other`, a copy's
// source) alive: a graph replays the copy (graph_impl.hpp).

// Equal shapes. std::vector's == calls memcmp through the PLT, about 5 ns
// of a 4 KiB synchronous copy's 60 (most arrays have one to three axes):
// an inline loop.
bool same_extents(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// The common case, decided without building core layouts: the same dtype
// and shape on both sides, both C-contiguous (so element 0 starts the span
// on both), not empty. Numba's rules allow exactly this, and it is one copy
// of the span. The strides need no comparison: C-contiguous fixes every
// stride from the shape and the item size, except on axes of extent 1,
// which no element steps along (NumPy's relaxed strides, as Layout's flag).
bool same_c_contiguous(const Layout &layout, DType dtype, const HostView &src) {
  return layout.size() != 0 && src.dtype() == dtype && layout.is_c_contiguous() && src.is_c_contiguous() &&
         same_extents(src.shape(), layout.shape()) && src.data();
}

void check_live(const std::shared_ptr<detail::ContextImpl> &ctx, const DeviceMemory &mem, const char *call) {
  if (!ctx) throw Error(Status::ERROR_INVALID_HANDLE, what(call) + ": empty DeviceArray");
  ctx->check_alive(mem ? detail::impl_of(mem)->generation : ctx->current_generation(), call);
}

// The rectangle that moves the elements of `device` to or from `host`
// (their squeezed shapes equal), when the backend copies rectangles and the
// layouts make one (rect_copy.hpp).
std::optional<detail::RectPlan> rect_plan(const detail::ContextImpl &ctx, const Layout &dst, const Layout &src) {
  if (!ctx.backend().has_memcpy_rect_async()) return std::nullopt;
  const Layout d = dst.squeeze(), s = src.squeeze();
  if (d.shape() != s.shape()) return std::nullopt;
  return detail::plan_rect(d.shape(), d.strides(), s.strides(), d.itemsize());
}

// The address of an array's element 0.
gpuhal_deviceptr_t element0(const DeviceMemory &memory, const Layout &layout) {
  return memory.device_pointer() + uint64_t(layout.offset());
}
gpuhal_deviceptr_t element0(const HostView &view) {
  return gpuhal_deviceptr_t(reinterpret_cast<uintptr_t>(view.data()));
}

// The short path's copy (same_c_contiguous held): the array's span to or
// from `host`, synchronously, after the liveness check. Inline, to keep the
// callers' frames small.
[[gnu::always_inline]] inline void copy_span_sync(const std::shared_ptr<detail::ContextImpl> &ctx,
                                                  const DeviceMemory &memory, const Layout &layout, void *host,
                                                  bool to_device) {
  check_live(ctx, memory, to_device ? "copy_from_host" : "copy_to_host");
  // A non-empty array has its memory (the constructor's rule); read its
  // pointer here rather than call out for it.
  const gpuhal_deviceptr_t dev = detail::impl_of(memory)->ptr + uint64_t(layout.span_begin());
  const auto h = gpuhal_deviceptr_t(reinterpret_cast<uintptr_t>(host));
  const detail::Backend &t = ctx->backend();
  const uint64_t bytes = uint64_t(layout.nbytes());
  if (to_device)
    ctx->check(t.memcpy_sync_status(ctx->handle, GPUHAL_COPY_HOST_TO_DEVICE, dev, h, bytes), "memcpy_sync(H2D)");
  else
    ctx->check(t.memcpy_sync_status(ctx->handle, GPUHAL_COPY_DEVICE_TO_HOST, h, dev, bytes), "memcpy_sync(D2H)");
}

}  // namespace

void DeviceArray::copy_from_host_impl(const HostView &src, const Stream *stream) const {
  // The common case, synchronous, in a function of its own with a small
  // frame (every push and spill is a store, and after a small copy each
  // store waits for the copy's stores to drain).
  if (!stream && ctx_ && same_c_contiguous(layout_, dtype_, src)) {
    copy_span_sync(ctx_, memory_, layout_, src.data(), true);
    return;
  }
  copy_from_host_general(src, stream);
}

[[gnu::noinline]] void DeviceArray::copy_from_host_general(const HostView &src, const Stream *stream) const {
  const char *call = "copy_from_host";
  check_live(ctx_, memory_, call);
  gpuhal_stream_t sh = stream ? detail::transfer_stream(ctx_, *stream, call, memory_) : nullptr;
  // The common case: synchronously, copy_from_host_impl's own copy; on a
  // stream, the same span queued there.
  if (same_c_contiguous(layout_, dtype_, src)) {
    if (!stream) {
      copy_span_sync(ctx_, memory_, layout_, src.data(), true);
      return;
    }
    const gpuhal_deviceptr_t dst = memory_.device_pointer() + uint64_t(layout_.span_begin());
    const auto host = gpuhal_deviceptr_t(reinterpret_cast<uintptr_t>(src.data()));
    ctx_->check(ctx_->backend().memcpy_async_status(ctx_->handle, GPUHAL_COPY_HOST_TO_DEVICE, dst, host,
                                                    uint64_t(layout_.nbytes()), sh),
                "memcpy_async(H2D)");
    return;
  }
  const Layout dcore = layout_.core();
  if (size() != 0 && !dcore.is_contiguous())
    refuse_non_contiguous(what(call), "destination");
  check_dtype(dtype_, src.dtype());
  // Gather a strided or differently ordered host source into the order of
  // the destination (Numba: np.array(core(ary), order=...)).
  const HostView hcore = HostView::from_layout(static_cast<char *>(src.data()) - src.layout().offset(),
                                               src.layout().core(), src.dtype(), src.writeable());
  const char order = dcore.is_c_contiguous() ? 'C' : 'F';
  const bool in_order = order == 'C' ? hcore.is_c_contiguous() : hcore.is_f_contiguous();
  // A strided host source whose elements form a rectangle goes straight to
  // the array through the driver's rectangular copy (no gather, and in a
  // capture the graph reads the host memory at every launch, as a plain
  // copy does).
  if (!in_order && size() != 0 && hcore.size() != 0)
    if (const auto plan = rect_plan(*ctx_, layout_, hcore.layout())) {
      detail::submit_rect(*ctx_, GPUHAL_COPY_HOST_TO_DEVICE, *plan, element0(memory_, layout_), element0(hcore), sh);
      return;
    }
  HostArray staging;
  const HostView *source = &hcore;
  if (!in_order && hcore.size() != 0 && stream && detail::capturing(*detail::impl_of(*stream)))
    throw Error(Status::ERROR_CAPTURE_UNSUPPORTED,
                what(call) + ": the stream is capturing, and a host source in another order than the array is "
                             "gathered on the host when the copy is made, so a graph would copy the data of the "
                             "capture at every launch; copy from a host array in the array's order");
  if (!in_order && hcore.size() != 0) {
    staging = HostArray::empty(hcore.shape(), hcore.dtype(), order);
    detail::copy_elements(staging.view(), hcore);
    source = &staging.view();
  }
  check_compatible(dcore, dtype_, source->layout(), source->dtype());
  if (size() == 0 || src.size() == 0) return;
  const detail::Backend &t = ctx_->backend();
  const gpuhal_deviceptr_t dst = memory_.device_pointer() + uint64_t(layout_.span_begin());
  const auto host = gpuhal_deviceptr_t(reinterpret_cast<uintptr_t>(source->data()));
  const auto bytes = uint64_t(alloc_size());
  if (!stream) {
    ctx_->check(t.memcpy_sync_status(ctx_->handle, GPUHAL_COPY_HOST_TO_DEVICE, dst, host, bytes), "memcpy_sync(H2D)");
    return;
  }
  ctx_->check(t.memcpy_async_status(ctx_->handle, GPUHAL_COPY_HOST_TO_DEVICE, dst, host, bytes, sh), "memcpy_async(H2D)");
  // The staging buffer must outlive the queued copy.
  if (staging.data()) stream->add_callback([keep = staging]() {});
}

void DeviceArray::copy_from_device_impl(const DeviceArray &src, const Stream *stream) const {
  const char *call = "copy_from_device";
  check_live(ctx_, memory_, call);
  check_live(src.ctx_, src.memory_, call);
  if (src.ctx_->runtime != ctx_->runtime)
    throw Error(Status::ERROR_INVALID_VALUE, what(call) + ": the source array belongs to another runtime");
  gpuhal_stream_t sh = stream ? detail::transfer_stream(ctx_, *stream, call, memory_, &src.memory_) : nullptr;
  const Layout dcore = layout_.core(), score = src.layout_.core();
  // Layouts a byte copy cannot do (strided, or the same elements laid out
  // otherwise) are copied element by element in the same context, as
  // assign does; Numba refuses them.
  const bool bytes_copy = (size() == 0 || dcore.is_contiguous()) && (src.size() == 0 || score.is_contiguous()) &&
                          dcore.squeeze().strides() == score.squeeze().strides();
  if (!bytes_copy && src.ctx_ == ctx_ && src.dtype_ == dtype_ &&
      layout_.squeeze().shape() == src.layout_.squeeze().shape() && !layout_.squeeze().has_broadcast_axis()) {
    DeviceArray to = *this, from = src;
    to.layout_ = layout_.squeeze();
    from.layout_ = src.layout_.squeeze();
    to.assign_impl(from, stream);
    return;
  }
  if (size() != 0 && !dcore.is_contiguous())
    refuse_non_contiguous(what(call), "destination");
  if (src.size() != 0 && !score.is_contiguous())
    refuse_non_contiguous(what(call), "source");
  check_compatible(dcore, dtype_, score, src.dtype_);
  if (size() == 0) return;
  const detail::Backend &t = ctx_->backend();
  const gpuhal_deviceptr_t dst = memory_.device_pointer() + uint64_t(layout_.span_begin());
  const gpuhal_deviceptr_t from = src.memory_.device_pointer() + uint64_t(src.layout_.span_begin());
  const auto bytes = uint64_t(alloc_size());
  if (!stream)
    ctx_->check(t.memcpy_sync_status(ctx_->handle, GPUHAL_COPY_DEVICE_TO_DEVICE, dst, from, bytes), "memcpy_sync(D2D)");
  else
    ctx_->check(t.memcpy_async_status(ctx_->handle, GPUHAL_COPY_DEVICE_TO_DEVICE, dst, from, bytes, sh), "memcpy_async(D2D)");
  // The copy reads the source on this context's stream: work the source's
  // context neither counts nor waits for (its flush synchronises itself
  // only). So the source's memory is kept until the copy has run, by a
  // callback after it (a capture keeps it with the graph instead).
  if (stream && src.ctx_ != ctx_ && !detail::capturing(*detail::impl_of(*stream)))
    stream->add_callback([keep = src.memory_]() {});
}

HostArray DeviceArray::copy_to_host() const {
  HostArray out = HostArray::with_layout(layout_, dtype_);
  copy_to_host_impl(out.view(), nullptr, true);
  return out;
}

HostArray DeviceArray::copy_to_host(const Stream &stream) const {
  // The caller may drop the result before the stream ran the copy (an
  // exception before its synchronize, a Python caller ignoring it): the
  // buffer is then freed through the context's deferred deallocation
  // queue, whose flush waits for the context's work first (as pinned host
  // arrays are), so the copy never writes into freed memory. Dropped once
  // the stream is idle (the usual case), it is freed at once.
  const int64_t bytes = layout_.span_bytes();
  if (bytes == 0) {
    HostArray out = HostArray::with_layout(layout_, dtype_);
    copy_to_host_impl(out.view(), &stream, true);
    return out;
  }
  void *mem = std::aligned_alloc(64, (size_t(bytes) + 63) / 64 * 64);
  if (!mem)
    throw Error(Status::ERROR_OUT_OF_MEMORY,
                what("copy_to_host") + ": cannot allocate " + std::to_string(bytes) + " host bytes");
  auto release = [s = stream, b = uint64_t(bytes)](void *p) noexcept {
    try {
      // A capturing stream cannot be queried (that would invalidate its
      // capture): queued instead.
      if (detail::impl_of(s) && !detail::capturing(*detail::impl_of(s)) && s.query()) {
        std::free(p);
        return;
      }
    } catch (...) {
      // Not answerable here (a stream callback, a failed context): queue it.
    }
    try {
      s.context().defer_release([p] { std::free(p); }, b);
    } catch (...) {
      std::free(p);  // no queue: the context is gone, and with it every stream that could write here
    }
  };
  std::shared_ptr<void> buffer(mem, release);
  // Recorded into a capture, the copy writes here at every launch of the
  // graph: the graph keeps the buffer.
  if (detail::impl_of(stream)) detail::keep_for_capture(*detail::impl_of(stream), buffer);
  HostArray out = HostArray::adopt(std::move(buffer), layout_, dtype_);
  copy_to_host_impl(out.view(), &stream, true);
  return out;
}

void DeviceArray::copy_to_host_impl(const HostView &dst, const Stream *stream, bool own_buffer) const {
  // The common case, synchronous, as copy_from_host_impl's: the same dtype,
  // shape and strides on both sides, C-contiguous, into a writeable view;
  // then the span goes straight to dst.data() (the general path's
  // compatibility check builds squeezed layouts, two allocations each).
  if (!stream && ctx_ && dst.writeable() && same_c_contiguous(layout_, dtype_, dst)) {
    copy_span_sync(ctx_, memory_, layout_, dst.data(), false);
    return;
  }
  copy_to_host_general(dst, stream, own_buffer);
}

[[gnu::noinline]] void DeviceArray::copy_to_host_general(const HostView &dst, const Stream *stream,
                                                         bool own_buffer) const {
  const char *call = "copy_to_host";
  check_live(ctx_, memory_, call);
  gpuhal_stream_t sh = stream ? detail::transfer_stream(ctx_, *stream, call, memory_) : nullptr;
  if (!dst.writeable())
    throw Error(Status::ERROR_INVALID_VALUE, what(call) + ": the destination host view is read-only");
  check_compatible(layout_, dtype_, dst.layout(), dst.dtype());
  if (size() == 0) return;
  const detail::Backend &t = ctx_->backend();
  const gpuhal_deviceptr_t from = memory_.device_pointer() + uint64_t(layout_.span_begin());
  const auto bytes = uint64_t(alloc_size());
  // A strided view whose elements form a rectangle: only the elements move,
  // straight into dst (its strides are the array's, check_compatible).
  if (!layout_.is_contiguous())
    if (const auto plan = rect_plan(*ctx_, dst.layout(), layout_)) {
      detail::submit_rect(*ctx_, GPUHAL_COPY_DEVICE_TO_HOST, *plan, element0(dst), element0(memory_, layout_), sh);
      return;
    }
  // A dense array (or a host buffer made for exactly this layout) receives
  // the span directly; otherwise stage the span and scatter only elements,
  // so that bytes between a strided view's elements are left alone.
  if (own_buffer || layout_.is_contiguous()) {
    const auto host = gpuhal_deviceptr_t(reinterpret_cast<uintptr_t>(dst.data()) +
                                         uintptr_t(layout_.span_begin() - layout_.offset()));
    if (!stream)
      ctx_->check(t.memcpy_sync_status(ctx_->handle, GPUHAL_COPY_DEVICE_TO_HOST, host, from, bytes), "memcpy_sync(D2H)");
    else
      ctx_->check(t.memcpy_async_status(ctx_->handle, GPUHAL_COPY_DEVICE_TO_HOST, host, from, bytes, sh), "memcpy_async(D2H)");
    return;
  }
  HostArray staging = HostArray::with_layout(layout_, dtype_);
  const auto host = gpuhal_deviceptr_t(reinterpret_cast<uintptr_t>(staging.data()) +
                                       uintptr_t(layout_.span_begin() - layout_.offset()));
  // Compatible arrays have equal squeezed shapes and strides: scatter over those.
  const HostView dst_squeezed = HostView::from_layout(static_cast<char *>(dst.data()) - dst.layout().offset(),
                                                      dst.layout().squeeze(), dtype_, true);
  const HostView src_squeezed =
      HostView::from_layout(static_cast<char *>(staging.data()) - layout_.offset(), layout_.squeeze(), dtype_, true);
  if (!stream) {
    ctx_->check(t.memcpy_sync_status(ctx_->handle, GPUHAL_COPY_DEVICE_TO_HOST, host, from, bytes), "memcpy_sync(D2H)");
    detail::copy_elements(dst_squeezed, src_squeezed);
    return;
  }
  ctx_->check(t.memcpy_async_status(ctx_->handle, GPUHAL_COPY_DEVICE_TO_HOST, host, from, bytes, sh), "memcpy_async(D2H)");
  stream->add_callback([staging, dst_squeezed, src_squeezed]() { detail::copy_elements(dst_squeezed, src_squeezed); });
}

void DeviceArray::memset_impl(uint8_t value, const Stream *stream) const {
  const char *call = "memset";
  check_live(ctx_, memory_, call);
  gpuhal_stream_t sh = stream ? detail::transfer_stream(ctx_, *stream, call, memory_) : nullptr;
  if (size() == 0) return;
  if (!layout_.is_contiguous()) refuse_non_contiguous(what(call), "array");
  const detail::Backend &t = ctx_->backend();
  const gpuhal_deviceptr_t dst = memory_.device_pointer() + uint64_t(layout_.span_begin());
  if (!stream)
    t.memset_sync(ctx_->handle, dst, value, uint64_t(alloc_size()));
  else
    t.memset_async(ctx_->handle, dst, value, uint64_t(alloc_size()), sh);
}

DeviceArray device_array(const Context &ctx, const Shape &shape, DType dtype, const Strides &strides, char order) {
  if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, "device_array: null context");
  dtype.validate();
  const Layout layout = Layout::make(shape, dtype.itemsize(), strides, order);
  if (layout.size() == 0) {
    detail::impl_of(ctx)->check_alive(detail::impl_of(ctx)->current_generation(), "device_array");
    // A zero-size array owns no memory; it remembers its context only.
    DeviceArray out;
    out.layout_ = layout;
    out.dtype_ = dtype;
    out.ctx_ = detail::impl_of(ctx);
    return out;
  }
  return DeviceArray(ctx.allocate(uint64_t(layout.span_bytes())), layout, dtype);
}

DeviceArray device_array_like(const Context &ctx, const HostView &like) {
  return device_array(ctx, like.shape(), like.dtype(), strides_like(like.layout()));
}

DeviceArray device_array_like(const DeviceArray &like) {
  return device_array(like.context(), like.shape(), like.dtype(), strides_like(like.layout()));
}

static DeviceArray to_device_impl(const Context &ctx, const HostView &host, const Stream *stream, Copy copy) {
  host.dtype().validate();
  if (host.size() != 0 && !host.layout().core().is_contiguous())
    refuse_non_contiguous("to_device", "host array");
  DeviceArray d = device_array(ctx, host.shape(), host.dtype(), host.strides());
  if (copy == Copy::yes) {
    if (stream)
      d.copy_from_host(host, *stream);
    else
      d.copy_from_host(host);
  }
  return d;
}

DeviceArray to_device(const Context &ctx, const HostView &host, Copy copy) {
  return to_device_impl(ctx, host, nullptr, copy);
}
DeviceArray to_device(const Context &ctx, const HostView &host, const Stream &stream, Copy copy) {
  return to_device_impl(ctx, host, &stream, copy);
}
DeviceArray to_device(const HostView &host, const DeviceArray &to) {
  to.copy_from_host(host);
  return to;
}
DeviceArray to_device(const HostView &host, const DeviceArray &to, const Stream &stream) {
  to.copy_from_host(host, stream);
  return to;
}

namespace detail {

gpuhal_stream_t transfer_stream(const std::shared_ptr<ContextImpl> &ctx, const Stream &s, const char *call,
                                const DeviceMemory &memory, const DeviceMemory *other) {
  if (!impl_of(s)) throw Error(Status::ERROR_INVALID_HANDLE, what(call) + ": null stream");
  if (impl_of(s)->ctx != ctx)
    throw Error(Status::ERROR_INVALID_HANDLE, what(call) + ": the stream belongs to another context");
  const gpuhal_stream_t h = impl_of(s)->live(call);
  if (capturing(*impl_of(s))) {
    keep_for_capture(*impl_of(s), impl_of(memory));
    if (other) keep_for_capture(*impl_of(s), impl_of(*other));
  }
  return h;
}

}  // namespace detail

}  // namespace gpuhal
