// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host-side arrays: a non-owning strided HostView and an owning HostArray.
//
// A HostView is (pointer to element 0, Layout, dtype, writeable): the C++
// counterpart of a NumPy array handed to Numba's to_device / copy_to_host. It
// does not own memory; the caller keeps the memory alive (for asynchronous
// copies: until the stream ran the copy).
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "gpuhal/dtype.hpp"
#include "gpuhal/error.hpp"
#include "gpuhal/layout.hpp"

namespace gpuhal {

class HostView {
 public:
  HostView() = default;
  // `data` points at element 0. Empty strides: dense in `order`. Validates
  // the layout (see Layout::make).
  HostView(void *data, const Shape &shape, DType dtype, const Strides &strides = {}, char order = 'C');
  // A read-only view (a source for copies only).
  static HostView readonly(const void *data, const Shape &shape, DType dtype, const Strides &strides = {},
                           char order = 'C');

  template <class T>
  static HostView of(T *data, const Shape &shape, const Strides &strides = {}) {
    return HostView(data, shape, dtype_of<T>(), strides);
  }
  template <class T>
  static HostView of(const T *data, const Shape &shape, const Strides &strides = {}) {
    return readonly(data, shape, dtype_of<T>(), strides);
  }
  // A view of a whole vector; `shape` defaults to {v.size()}. Throws
  // ERROR_INVALID_SHAPE when the layout reaches outside the vector.
  // A vector of structs as a record array (dtype DType::record(sizeof(T))).
  template <class T>
  static HostView of_records(std::vector<T> &v, const Shape &shape = {}) {
    static_assert(std::is_trivially_copyable<T>::value, "records are copied as bytes");
    return checked_over(v.data(), v.size() * sizeof(T), shape.empty() ? Shape{int64_t(v.size())} : shape,
                        DType::record(int64_t(sizeof(T))), true);
  }
  template <class T>
  static HostView of(std::vector<T> &v, const Shape &shape = {}) {
    return checked_over(v.data(), v.size() * sizeof(T), shape.empty() ? Shape{int64_t(v.size())} : shape, dtype_of<T>(),
                        true);
  }
  template <class T>
  static HostView of(const std::vector<T> &v, const Shape &shape = {}) {
    return checked_over(const_cast<T *>(v.data()), v.size() * sizeof(T),
                        shape.empty() ? Shape{int64_t(v.size())} : shape, dtype_of<T>(), false);
  }
  // A 0-d view of one value.
  template <class T>
  static HostView scalar(const T &value) {
    return readonly(&value, {}, dtype_of<T>());
  }

  void *data() const { return data_; }
  const Layout &layout() const { return layout_; }
  const Shape &shape() const { return layout_.shape(); }
  const Strides &strides() const { return layout_.strides(); }
  DType dtype() const { return dtype_; }
  int ndim() const { return layout_.ndim(); }
  int64_t size() const { return layout_.size(); }
  int64_t nbytes() const { return layout_.nbytes(); }
  bool writeable() const { return writeable_; }
  bool is_c_contiguous() const { return layout_.is_c_contiguous(); }
  bool is_f_contiguous() const { return layout_.is_f_contiguous(); }
  // A view of part of this view (see Layout::index).
  HostView view(const std::vector<Index> &indices) const;
  // NumPy's transpose(axes) and .T: views with permuted axes.
  HostView transpose(const std::vector<int> &axes = {}) const;
  HostView T() const { return transpose(); }
  // NumPy's view(dtype): the same memory as elements of `dtype`.
  HostView view(DType dtype) const;
  // Address of the element at `indices` (one integer per dim, checked).
  void *element(const std::vector<int64_t> &indices) const;

  // Builds a view from a layout whose offset is relative to `base`.
  static HostView from_layout(void *base, const Layout &layout, DType dtype, bool writeable);

 private:
  // The same data pointer (element 0) under another layout and dtype.
  HostView with_layout(Layout layout, DType dtype) const;
  static HostView checked_over(void *data, size_t bytes, const Shape &shape, DType dtype, bool writeable);
  void *data_ = nullptr;
  Layout layout_;
  DType dtype_;
  bool writeable_ = true;
};

// An owning host array (64-byte aligned, uninitialised like np.empty).
// Copies of a HostArray share the buffer.
class HostArray {
 public:
  HostArray() = default;
  static HostArray empty(const Shape &shape, DType dtype, char order = 'C');
  // Allocates `layout.span_bytes()` bytes and places element 0 at
  // layout.offset() - layout.span_begin() (any strides, also negative).
  static HostArray with_layout(const Layout &layout, DType dtype);
  // Adopts `buffer` (at least layout.span_bytes() bytes; its deleter frees
  // it) with the same placement as with_layout.
  static HostArray adopt(std::shared_ptr<void> buffer, const Layout &layout, DType dtype);

  const HostView &view() const { return view_; }
  operator const HostView &() const { return view_; }  // NOLINT: implicit on purpose
  const Shape &shape() const { return view_.shape(); }
  const Strides &strides() const { return view_.strides(); }
  DType dtype() const { return view_.dtype(); }
  int64_t size() const { return view_.size(); }
  int ndim() const { return view_.ndim(); }
  void *data() const { return view_.data(); }
  // Typed element access; throws ERROR_INVALID_DTYPE when T does not match.
  template <class T>
  T &at(const std::vector<int64_t> &indices) const {
    if (dtype_of<T>() != dtype())
      throw Error(Status::ERROR_INVALID_DTYPE, "HostArray::at: element type does not match dtype " + dtype().name());
    return *static_cast<T *>(view_.element(indices));
  }
  // Elements in C index order, copied out.
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> out;
    out.reserve(size_t(size()));
    for_each_index([&](const std::vector<int64_t> &idx) { out.push_back(at<T>(idx)); });
    return out;
  }

 private:
  template <class F>
  void for_each_index(F fn) const {
    if (size() == 0) return;
    std::vector<int64_t> idx(size_t(ndim()), 0);
    for (;;) {
      fn(idx);
      int d = ndim() - 1;
      while (d >= 0 && ++idx[size_t(d)] == shape()[size_t(d)]) idx[size_t(d--)] = 0;
      if (d < 0) return;
    }
  }
  std::shared_ptr<void> buffer_;
  HostView view_;
};

}  // namespace gpuhal
