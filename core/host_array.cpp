// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "gpuhal/host_array.hpp"

#include <cstdlib>
#include <string>
#include <utility>

namespace gpuhal {

HostView::HostView(void *data, const Shape &shape, DType dtype, const Strides &strides, char order)
    : data_(data), dtype_(dtype) {
  dtype.validate();
  layout_ = Layout::make(shape, dtype.itemsize(), strides, order);
  if (!data && layout_.size() != 0)
    throw Error(Status::ERROR_INVALID_VALUE, "HostView: null data pointer for a non-empty array");
}

HostView HostView::readonly(const void *data, const Shape &shape, DType dtype, const Strides &strides, char order) {
  HostView v(const_cast<void *>(data), shape, dtype, strides, order);
  v.writeable_ = false;
  return v;
}

HostView HostView::from_layout(void *base, const Layout &layout, DType dtype, bool writeable) {
  dtype.validate();
  if (layout.itemsize() != dtype.itemsize())
    throw Error(Status::ERROR_INVALID_DTYPE, "HostView: layout itemsize " + std::to_string(layout.itemsize()) +
                                                 " does not match dtype " + dtype.name());
  HostView v;
  v.data_ = static_cast<char *>(base) + layout.offset();
  v.layout_ = layout;
  v.dtype_ = dtype;
  v.writeable_ = writeable;
  return v;
}

HostView HostView::checked_over(void *data, size_t bytes, const Shape &shape, DType dtype, bool writeable) {
  HostView v(data, shape, dtype);
  v.writeable_ = writeable;
  const int64_t need = v.layout_.span_end() - v.layout_.offset();
  if (v.size() != 0 && uint64_t(need) > bytes)
    throw Error(Status::ERROR_INVALID_SHAPE, "HostView: shape " + Layout::format(shape) + " of " + dtype.name() +
                                                 " needs " + std::to_string(need) + " bytes but the vector holds " +
                                                 std::to_string(bytes));
  return v;
}

HostView HostView::view(const std::vector<Index> &indices) const {
  HostView v = *this;
  v.layout_ = layout_.index(indices);
  v.data_ = static_cast<char *>(data_) + (v.layout_.offset() - layout_.offset());
  return v;
}

HostView HostView::with_layout(Layout layout, DType dtype) const {
  HostView v = *this;
  v.layout_ = std::move(layout);
  v.dtype_ = dtype;
  return v;
}

HostView HostView::view(DType dtype) const {
  dtype.validate();
  return with_layout(layout_.view_itemsize(dtype.itemsize()), dtype);
}

HostView HostView::transpose(const std::vector<int> &axes) const {
  return with_layout(layout_.transpose(axes), dtype_);  // same element 0, same data pointer
}

void *HostView::element(const std::vector<int64_t> &indices) const {
  if (indices.size() != size_t(ndim()))
    throw Error(Status::ERROR_INDEX_OUT_OF_RANGE, "HostView::element: " + std::to_string(indices.size()) +
                                                      " indices for a " + std::to_string(ndim()) +
                                                      "-dimensional array");
  int64_t off = 0;
  for (size_t d = 0; d < indices.size(); ++d) {
    int64_t i = indices[d];
    const int64_t n = shape()[d];
    if (i < -n || i >= n)
      throw Error(Status::ERROR_INDEX_OUT_OF_RANGE, "index " + std::to_string(i) + " is out of bounds for axis " +
                                                        std::to_string(d) + " with size " + std::to_string(n));
    if (i < 0) i += n;
    off += i * strides()[d];
  }
  return static_cast<char *>(data_) + off;
}

HostArray HostArray::empty(const Shape &shape, DType dtype, char order) {
  dtype.validate();
  return with_layout(Layout::make(shape, dtype.itemsize(), {}, order), dtype);
}

HostArray HostArray::with_layout(const Layout &layout, DType dtype) {
  HostArray a;
  const int64_t bytes = layout.span_bytes();
  void *mem = nullptr;
  if (bytes > 0) {
    const size_t rounded = (size_t(bytes) + 63) / 64 * 64;
    mem = std::aligned_alloc(64, rounded);
    if (!mem)
      throw Error(Status::ERROR_OUT_OF_MEMORY, "HostArray: cannot allocate " + std::to_string(bytes) + " bytes");
  }
  a.buffer_ = std::shared_ptr<void>(mem, [](void *p) { std::free(p); });
  // Element 0 sits at offset - span_begin inside the buffer. Without
  // elements there is no buffer, and no offset is applied to the null
  // pointer (undefined behaviour, which UBSan reports).
  a.view_ = bytes == 0 ? HostView::from_layout(nullptr, layout.with_offset(0), dtype, true)
                       : HostView::from_layout(static_cast<char *>(mem) - layout.span_begin(), layout, dtype, true);
  return a;
}

HostArray HostArray::adopt(std::shared_ptr<void> buffer, const Layout &layout, DType dtype) {
  HostArray a;
  a.buffer_ = std::move(buffer);
  if (layout.span_bytes() == 0)
    a.view_ = HostView::from_layout(nullptr, layout.with_offset(0), dtype, true);
  else
    a.view_ = HostView::from_layout(static_cast<char *>(a.buffer_.get()) - layout.span_begin(), layout, dtype, true);
  return a;
}

}  // namespace gpuhal
