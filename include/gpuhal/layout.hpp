// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Layout: the shape / byte-stride / offset model of a strided array, with no
// data (Numba's "dummy array"). All view arithmetic of DeviceArray and
// HostView is done here, host-side, with every size computation checked for
// overflow. A Layout is an immutable value; every method is thread-safe.
#pragma once

#include "gpuhal/cxx_standard.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuhal {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

// The largest number of dimensions (NumPy's limit).
inline constexpr int kMaxDims = 64;

// A Python slice: start, stop and step with Python's rules for negative and
// out-of-range bounds. A missing start/stop means "from the beginning / to
// the end" in the direction of the step.
struct Slice {
  std::optional<int64_t> start;
  std::optional<int64_t> stop;
  int64_t step = 1;
  Slice() = default;
  Slice(std::optional<int64_t> start_, std::optional<int64_t> stop_, int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};
// `all` selects a whole axis, like Python's `:`.
inline const Slice all{};

// One per-axis index: an integer (removes the axis) or a slice (keeps it).
class Index {
 public:
  Index(int64_t i) : is_slice_(false), integer_(i) {}  // NOLINT: implicit on purpose
  Index(int i) : is_slice_(false), integer_(i) {}      // NOLINT
  Index(Slice s) : is_slice_(true), slice_(s) {}       // NOLINT
  bool is_slice() const { return is_slice_; }
  int64_t integer() const { return integer_; }
  const Slice &slice() const { return slice_; }

 private:
  bool is_slice_;
  int64_t integer_ = 0;
  Slice slice_;
};

// "C" row-major, "F" column-major; "A" and "K" are accepted where NumPy
// accepts them, and every order letter in either case, as NumPy does.
class Layout {
 public:
  Layout() = default;  // 0-d, itemsize 1

  // Validates and builds a layout. Empty `strides` with ndim > 0 means dense
  // strides in `order` ('C' or 'F'), as np.empty's: all zero when a
  // dimension is zero. Throws ERROR_INVALID_SHAPE (negative
  // dimension, too many dims, strides of the wrong length),
  // ERROR_INVALID_VALUE (bad order, itemsize <= 0) or ERROR_SIZE_OVERFLOW.
  // Element 0 is placed so that every element lies at a non-negative byte
  // offset (negative strides push it up), see offset().
  static Layout make(const Shape &shape, int64_t itemsize, const Strides &strides = {}, char order = 'C');
  // Dense strides of `shape` in order 'C' or 'F' (no validation of shape); a
  // zero dimension counts as one (the strides of NumPy's reshape).
  static Strides dense_strides(const Shape &shape, int64_t itemsize, char order);

  const Shape &shape() const { return shape_; }
  const Strides &strides() const { return strides_; }
  int64_t itemsize() const { return itemsize_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  // Product of the shape (1 for 0-d).
  int64_t size() const { return size_; }
  // size * itemsize (NumPy's nbytes).
  int64_t nbytes() const { return size_ * itemsize_; }
  // Byte offset of element 0 from the start of the underlying allocation.
  int64_t offset() const { return offset_; }
  // Bytes the elements span, [span_begin, span_end) relative to the
  // allocation (0 for zero-size arrays). Broadcast axes add nothing.
  int64_t span_begin() const { return span_begin_; }
  int64_t span_end() const { return span_end_; }
  int64_t span_bytes() const { return span_end_ - span_begin_; }

  // NumPy's relaxed contiguity (size-1 dims ignored; 0-d and zero-size are
  // both; any zero stride on a non-empty array is neither; negative strides
  // never are contiguous unless their dim has size 1).
  bool is_c_contiguous() const { return c_contig_; }
  bool is_f_contiguous() const { return f_contig_; }
  bool is_contiguous() const { return c_contig_ || f_contig_; }
  bool has_broadcast_axis() const;

  // A view. More indices than dims -> ERROR_INDEX_OUT_OF_RANGE; missing
  // trailing indices are `:`; integer indices out of range ->
  // ERROR_INDEX_OUT_OF_RANGE; a zero slice step -> ERROR_INVALID_VALUE.
  Layout index(const std::vector<Index> &indices) const;

  // NumPy reshape: `order` ('C', 'F', 'A') is the index order in which
  // elements are read and placed. One -1 is inferred. Returns a view layout
  // when NumPy could do it without a copy, else throws ERROR_REQUIRES_COPY
  // (never a silent reinterpretation). Size mismatch -> ERROR_INVALID_SHAPE.
  Layout reshape(const Shape &new_shape, char order = 'C') const;
  // A contiguous 1-D view of all elements in `order` ('C', 'F', 'A'), or
  // ERROR_REQUIRES_COPY when the elements are not contiguous in that order.
  Layout ravel(char order = 'C') const;
  // NumPy's transpose: axis i of the result is axis axes[i] of this layout
  // (negative axes count from the end); no axes reverses them (NumPy's .T).
  // A view: same offset, strides permuted. ERROR_INVALID_VALUE when `axes`
  // is not a permutation of every axis ("axes don't match array",
  // "repeated axis in transpose"), ERROR_INDEX_OUT_OF_RANGE for an axis
  // outside [-ndim, ndim) (NumPy's AxisError).
  Layout transpose(const std::vector<int> &axes = {}) const;
  // NumPy's `a.view(dtype)` for a dtype of `itemsize` bytes: the same
  // memory read as other elements. Another itemsize resizes the last axis
  // (its stride becomes `itemsize`), which must be contiguous unless it has
  // length 1 or the array is empty; a smaller itemsize must divide the old,
  // a larger one the last axis's bytes; a 0-d layout keeps its itemsize.
  // Violations are ERROR_INVALID_VALUE with NumPy's message.
  Layout view_itemsize(int64_t itemsize) const;
  // Dims of size 1 removed (used by copy compatibility checks).
  Layout squeeze() const;
  // Numba's array_core: every stride-0 axis of a non-empty array indexed
  // with 0 (the repeated core of a broadcast array).
  Layout core() const;
  // Same dims, element 0 moved to `offset` (for views of another base).
  Layout with_offset(int64_t offset) const;

  // "(2, 3)" in Python tuple notation, for messages.
  static std::string format(const std::vector<int64_t> &values);

  friend bool operator==(const Layout &a, const Layout &b) {
    return a.shape_ == b.shape_ && a.strides_ == b.strides_ && a.itemsize_ == b.itemsize_ && a.offset_ == b.offset_;
  }

 private:
  // Computes size, span and contiguity from shape/strides/offset (checked).
  void finish();
  // This layout with only the axes keep(extent, stride) accepts.
  template <class Keep>
  Layout keep_axes(Keep keep) const;

  Shape shape_;
  Strides strides_;
  int64_t itemsize_ = 1;
  int64_t offset_ = 0;
  int64_t size_ = 1;
  int64_t span_begin_ = 0;
  int64_t span_end_ = 1;
  bool c_contig_ = true;
  bool f_contig_ = true;
};

// The strides of NumPy's np.empty_like(src, order=order): 'C' and 'F'
// dense; 'A' F when src is F- and not C-contiguous, else C; 'K' (the
// default, keep the source's order) C or F when src is contiguous in it (C
// first, and for ndim <= 1), else the axes sorted by decreasing |stride|
// (ties in axis order) made dense in that order; all zero when src has no
// element (as np.empty_like's). Letters in either case;
// another is ERROR_INVALID_VALUE.
Strides strides_like(const Layout &src, char order = 'K');

}  // namespace gpuhal
