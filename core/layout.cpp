// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Layout arithmetic. NumPy / Numba references are given where a rule comes
// from them; every multiplication or addition of sizes is checked.
#include "gpuhal/layout.hpp"

#include <algorithm>
#include <numeric>

#include "checked_math.hpp"
#include "gpuhal/error.hpp"
#include "peer_refusal.hpp"

namespace gpuhal {
namespace {

using detail::checked_add;
using detail::checked_mul;

using detail::refuse_like_peer;

std::string order_text(char order) {
  return std::string("'") + order + "'";
}

// NumPy's order letters, in either case (numpy's order converter); returns
// the upper-case letter.
char check_order(char order, const char *allowed, const char *what) {
  const char upper = (order >= 'a' && order <= 'z') ? char(order - 'a' + 'A') : order;
  for (const char *p = allowed; *p; ++p)
    if (*p == upper) return upper;
  std::string list;
  for (const char *p = allowed; *p; ++p) list += std::string(list.empty() ? "" : ", ") + *p;
  throw Error(Status::ERROR_INVALID_VALUE, std::string(what) + ": order must be one of " + list + ", got " +
                                               order_text(order) + " (letters in either case)");
}

// Python's slice.indices(): normalised start and number of elements.
void slice_indices(const Slice &s, int64_t length, int64_t *start_out, int64_t *count_out) {
  if (s.step == 0) refuse_like_peer(Status::ERROR_INVALID_VALUE, "", "slice step cannot be zero");
  const int64_t step = s.step;
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? length - 1 : length;
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x = x < -length ? lower : x + length;  // no overflow: x >= INT64_MIN, length >= 0
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const int64_t start = clamp(s.start, step < 0 ? upper : lower);
  const int64_t stop = clamp(s.stop, step < 0 ? lower : upper);
  int64_t count = 0;
  if (step > 0 && start < stop) count = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) {
    // -step computed unsigned so that INT64_MIN is a valid step.
    const uint64_t ustep = uint64_t(0) - uint64_t(step);
    count = int64_t(uint64_t(start - stop - 1) / ustep) + 1;
  }
  *start_out = start;
  *count_out = count;
}

// NumPy's PyArray_CreateSortedStridePerm: the axes by decreasing |stride|,
// ties in axis order.
std::vector<size_t> axes_by_decreasing_stride(const Strides &strides) {
  std::vector<size_t> axes(strides.size());
  std::iota(axes.begin(), axes.end(), 0);
  auto magnitude = [](int64_t v) { return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v); };
  std::stable_sort(axes.begin(), axes.end(),
                   [&](size_t a, size_t b) { return magnitude(strides[a]) > magnitude(strides[b]); });
  return axes;
}

}  // namespace

std::string Layout::format(const std::vector<int64_t> &values) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(values[i]);
  }
  if (values.size() == 1) s += ",";
  return s + ")";
}

Strides Layout::dense_strides(const Shape &shape, int64_t itemsize, char order) {
  Strides st(shape.size());
  int64_t acc = itemsize;
  const size_t n = shape.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t d = order == 'F' || order == 'f' ? k : n - 1 - k;
    st[d] = acc;
    // A zero-length dim keeps the running product (NumPy's reshape of an
    // empty array: (0, 5) -> (5, 0) in C order has strides (8, 8)).
    acc = checked_mul(acc, std::max<int64_t>(shape[d], 1), "strides");
  }
  return st;
}

Layout Layout::make(const Shape &shape, int64_t itemsize, const Strides &strides, char order) {
  if (itemsize <= 0)
    throw Error(Status::ERROR_INVALID_VALUE, "itemsize must be positive, got " + std::to_string(itemsize));
  if (shape.size() > size_t(kMaxDims))
    throw Error(Status::ERROR_INVALID_SHAPE, "too many dimensions: " + std::to_string(shape.size()) +
                                                 " (the limit is " + std::to_string(kMaxDims) + ")");
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 0)
      throw Error(Status::ERROR_INVALID_SHAPE, "negative dimension " + std::to_string(shape[d]) + " at axis " +
                                                   std::to_string(d) + " of shape " + format(shape));
  // With explicit strides the order letter says nothing (Numba ignores it,
  // and accepts 'A' there); without them it picks C or F.
  order = check_order(order, strides.empty() ? "CF" : "CFA", "array layout");
  Layout l;
  l.shape_ = shape;
  l.itemsize_ = itemsize;
  if (strides.empty() && !shape.empty()) {
    // NumPy's np.empty gives an array with no element zero strides
    // (np.empty((0, 5)).strides == (0, 0)).
    const bool no_elements = std::find(shape.begin(), shape.end(), 0) != shape.end();
    l.strides_ = no_elements ? Strides(shape.size(), 0) : dense_strides(shape, itemsize, order);
  } else {
    if (strides.size() != shape.size())
      throw Error(Status::ERROR_INVALID_SHAPE,
                  "strides " + format(strides) + " have " + std::to_string(strides.size()) + " entries but shape " +
                      format(shape) + " has " + std::to_string(shape.size()) + " dimensions");
    l.strides_ = strides;
  }
  // Place element 0 so that the lowest element is at offset 0: with negative
  // strides element 0 is not the lowest address (Numba leaves this unsafe).
  int64_t low = 0;
  bool empty = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) empty = true;
    if (shape[d] > 0 && l.strides_[d] < 0)
      low = checked_add(low, checked_mul(l.strides_[d], shape[d] - 1, "array span"), "array span");
  }
  // -INT64_MIN does not exist: refuse it before negating.
  if (low == INT64_MIN) throw Error(Status::ERROR_SIZE_OVERFLOW, "array span overflows");
  l.offset_ = empty ? 0 : -low;
  l.finish();
  return l;
}

void Layout::finish() {
  bool empty = false;
  for (int64_t s : shape_)
    if (s == 0) empty = true;
  size_ = 1;
  if (empty) {
    size_ = 0;
  } else {
    for (int64_t s : shape_) size_ = checked_mul(size_, s, "array size");
  }
  (void)checked_mul(size_, itemsize_, "array size in bytes");
  if (size_ == 0) {
    span_begin_ = span_end_ = offset_;
  } else {
    int64_t lo = offset_, hi = offset_;
    for (size_t d = 0; d < shape_.size(); ++d) {
      const int64_t ext = checked_mul(strides_[d], shape_[d] - 1, "array span");
      if (ext < 0)
        lo = checked_add(lo, ext, "array span");
      else
        hi = checked_add(hi, ext, "array span");
    }
    span_begin_ = lo;
    span_end_ = checked_add(hi, itemsize_, "array span");
  }
  // Contiguity: NumPy's _UpdateContiguousFlags (size-1 dims ignored
  // whatever their stride; zero-size and 0-d are both; a zero stride on a
  // longer dim makes it neither). Numba's port also calls a zero stride on
  // a size-1 dim broadcast; NumPy does not, and neither do we: the elements
  // are contiguous all the same.
  if (shape_.empty() || size_ == 0) {
    c_contig_ = f_contig_ = true;
    return;
  }
  for (size_t d = 0; d < shape_.size(); ++d)
    if (strides_[d] == 0 && shape_[d] != 1) {
      c_contig_ = f_contig_ = false;
      return;
    }
  int64_t sd = itemsize_;
  c_contig_ = true;
  for (size_t k = shape_.size(); k-- > 0;) {
    if (shape_[k] == 1) continue;
    if (strides_[k] != sd) {
      c_contig_ = false;
      break;
    }
    sd *= shape_[k];  // bounded by size * itemsize, checked above
  }
  sd = itemsize_;
  f_contig_ = true;
  for (size_t k = 0; k < shape_.size(); ++k) {
    if (shape_[k] == 1) continue;
    if (strides_[k] != sd) {
      f_contig_ = false;
      break;
    }
    sd *= shape_[k];
  }
}

bool Layout::has_broadcast_axis() const {
  if (size_ == 0) return false;
  for (int64_t s : strides_)
    if (s == 0) return true;
  return false;
}

Layout Layout::index(const std::vector<Index> &indices) const {
  if (indices.size() > shape_.size())
    throw Error(Status::ERROR_INDEX_OUT_OF_RANGE, "too many indices: " + std::to_string(indices.size()) +
                                                      " given for a " + std::to_string(shape_.size()) +
                                                      "-dimensional array");
  Layout out;
  out.itemsize_ = itemsize_;
  // NumPy's get_view_from_index (numpy/_core/src/multiarray/mapping.c):
  // element 0 moves by start * stride for each slice and index * stride
  // for each integer, also when the result has no element; a slice that
  // selects nothing counts as start 0, step 1 (offset and stride kept).
  // For a non-empty array every such product lies inside the checked span.
  // A zero-size array has none: where its offset would leave 64 bits it is
  // kept (NumPy's pointer would wrap; an array with no element never
  // addresses memory).
  int64_t offset = offset_;
  auto moved = [](int64_t from, int64_t index, int64_t stride) {
    int64_t step = 0, to = 0;
    if (__builtin_mul_overflow(index, stride, &step) || __builtin_add_overflow(from, step, &to)) return from;
    return to;
  };
  for (size_t d = 0; d < shape_.size(); ++d) {
    const int64_t n = shape_[d];
    const int64_t st = strides_[d];
    if (d >= indices.size() || indices[d].is_slice()) {
      const Slice s = d < indices.size() ? indices[d].slice() : Slice{};
      int64_t start = 0, count = 0;
      slice_indices(s, n, &start, &count);
      out.shape_.push_back(count);
      if (count == 0) {
        out.strides_.push_back(st);
        continue;
      }
      offset = moved(offset, start, st);
      // NumPy's stride is stride * step, also for one element. Such an
      // axis's stride never addresses memory, so a product that does not
      // fit keeps the stride instead of failing (NumPy's C would wrap).
      int64_t stepped = st;
      if (count > 1)
        stepped = checked_mul(st, s.step, "slice stride");
      else if (__builtin_mul_overflow(st, s.step, &stepped))
        stepped = st;
      out.strides_.push_back(stepped);
    } else {
      int64_t i = indices[d].integer();
      if (i < -n || i >= n)
        refuse_like_peer(Status::ERROR_INDEX_OUT_OF_RANGE, "",
                         "index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(d) +
                             " with size " + std::to_string(n));
      if (i < 0) i += n;
      offset = moved(offset, i, st);
    }
  }
  out.offset_ = offset;
  out.finish();
  return out;
}

Layout Layout::reshape(const Shape &new_shape_in, char order) const {
  order = check_order(order, "CFA", "reshape");
  if (order == 'A') order = (f_contig_ && !c_contig_) ? 'F' : 'C';
  if (new_shape_in.size() > size_t(kMaxDims))
    throw Error(Status::ERROR_INVALID_SHAPE, "reshape: too many dimensions: " + std::to_string(new_shape_in.size()));
  // NumPy's _reshape_with_copy_arg (numpy/_core/src/multiarray/shape.c)
  // first: the same shape is a view as it is (strides kept, before any -1
  // is resolved).
  if (new_shape_in == shape_) return *this;
  Shape ns = new_shape_in;
  int unknown = -1;
  int64_t known = 1;
  for (size_t d = 0; d < ns.size(); ++d) {
    if (ns[d] < 0) {  // NumPy takes any negative value as the unknown size, not only -1
      if (unknown >= 0)
        throw Error(Status::ERROR_INVALID_SHAPE, "reshape: can only specify one unknown dimension in " + format(ns));
      unknown = int(d);
    } else {
      known = checked_mul(known, ns[d], "reshape size");
    }
  }
  if (unknown >= 0) {
    if (known == 0 || size_ % known != 0)
      throw Error(Status::ERROR_INVALID_SHAPE,
                  "reshape: cannot reshape array of size " + std::to_string(size_) + " into shape " + format(ns));
    ns[size_t(unknown)] = size_ / known;
    known = size_;
  }
  if (known != size_)
    throw Error(Status::ERROR_INVALID_SHAPE,
                "reshape: cannot reshape array of size " + std::to_string(size_) + " into shape " + format(ns));

  Layout out;
  out.itemsize_ = itemsize_;
  out.shape_ = ns;
  out.offset_ = offset_;
  // Contiguous in the order asked for (every empty array is): NumPy lays
  // the new shape out densely.
  if (size_ == 0 || (order == 'C' ? c_contig_ : f_contig_)) {
    out.strides_ = dense_strides(ns, itemsize_, order);
    out.finish();
    return out;
  }
  // NumPy's _attempt_nocopy_reshape (numpy/core/src/multiarray/shape.c).
  Shape od;
  Strides os;
  for (size_t d = 0; d < shape_.size(); ++d)
    if (shape_[d] != 1) {
      od.push_back(shape_[d]);
      os.push_back(strides_[d]);
    }
  const size_t oldnd = od.size(), newnd = ns.size();
  Strides nst(newnd, 0);
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  const bool f = order == 'F';
  auto fail = [&]() {
    return Error(Status::ERROR_REQUIRES_COPY,
                 "reshape from shape " + format(shape_) + " with strides " + format(strides_) + " to " + format(ns) +
                     " in order " + order_text(order) +
                     " cannot be a view; it requires a copy (copy to a contiguous array first)");
  };
  while (ni < newnd && oi < oldnd) {
    int64_t np = ns[ni], op = od[oi];
    while (np != op) {
      if (np < op)
        np *= ns[nj++];
      else
        op *= od[oj++];
    }
    // Axes combine when one's stride is the next one's extent; a product
    // that overflows cannot equal a stride (found by fuzz_layout).
    auto extent_is = [](int64_t dim, int64_t stride, int64_t want) {
      int64_t r;
      return !__builtin_mul_overflow(dim, stride, &r) && r == want;
    };
    for (size_t ok = oi; ok + 1 < oj; ++ok) {
      if (f) {
        if (!extent_is(od[ok], os[ok], os[ok + 1])) throw fail();
      } else {
        if (!extent_is(od[ok + 1], os[ok + 1], os[ok])) throw fail();
      }
    }
    if (f) {
      nst[ni] = os[oi];
      for (size_t nk = ni + 1; nk < nj; ++nk) nst[nk] = checked_mul(nst[nk - 1], ns[nk - 1], "reshape strides");
    } else {
      nst[nj - 1] = os[oj - 1];
      for (size_t nk = nj - 1; nk > ni; --nk) nst[nk - 1] = checked_mul(nst[nk], ns[nk], "reshape strides");
    }
    ni = nj++;
    oi = oj++;
  }
  int64_t last = ni >= 1 ? nst[ni - 1] : itemsize_;
  if (f && ni >= 1) last = checked_mul(last, ns[ni - 1], "reshape strides");
  for (size_t nk = ni; nk < newnd; ++nk) nst[nk] = last;
  out.strides_ = nst;
  out.finish();
  return out;
}

Layout Layout::ravel(char order) const {
  // NumPy's PyArray_Ravel (numpy/_core/src/multiarray/shape.c).
  order = check_order(order, "CFAK", "ravel");
  if (order == 'K' && (c_contig_ || f_contig_)) order = c_contig_ ? 'C' : 'F';
  if (order == 'A') order = (f_contig_ && !c_contig_) ? 'F' : 'C';
  bool ok = order == 'C' ? c_contig_ : order == 'F' ? f_contig_ : false;
  if (order == 'K') {
    // A view when the axes by decreasing |stride| (ties in axis order) are
    // dense from the innermost one; size-1 axes do not count.
    const std::vector<size_t> axes = axes_by_decreasing_stride(strides_);
    int64_t want = itemsize_;
    ok = true;
    for (size_t k = axes.size(); ok && k-- > 0;) {
      if (shape_[axes[k]] == 1) continue;
      ok = strides_[axes[k]] == want;
      want *= shape_[axes[k]];  // no overflow: a dense span that fits
    }
  }
  if (!ok)
    throw Error(Status::ERROR_REQUIRES_COPY, "ravel in order " + order_text(order) + " of an array with shape " +
                                                 format(shape_) + " and strides " + format(strides_) +
                                                 " requires a copy (its elements are not contiguous in that order)");
  Layout out;
  out.itemsize_ = itemsize_;
  out.shape_ = {size_};
  out.strides_ = {itemsize_};
  out.offset_ = offset_;  // element 0 is the first of the elements in every order
  out.finish();
  return out;
}

Layout Layout::transpose(const std::vector<int> &axes) const {
  const int n = ndim();
  std::vector<int> perm(axes.begin(), axes.end());
  if (perm.empty())
    for (int d = n - 1; d >= 0; --d) perm.push_back(d);
  if (int(perm.size()) != n)
    refuse_like_peer(Status::ERROR_INVALID_VALUE, "transpose", "axes don't match array",
                     " (" + std::to_string(perm.size()) + " axes for " + std::to_string(n) + " dimensions)");
  std::vector<bool> seen(size_t(n), false);
  Layout out;
  out.itemsize_ = itemsize_;
  out.offset_ = offset_;
  for (int a : perm) {
    const int d = a < 0 ? a + n : a;
    if (d < 0 || d >= n)
      refuse_like_peer(Status::ERROR_INDEX_OUT_OF_RANGE, "transpose",
                       "axis " + std::to_string(a) + " is out of bounds for array of dimension " + std::to_string(n));
    if (seen[size_t(d)]) refuse_like_peer(Status::ERROR_INVALID_VALUE, "transpose", "repeated axis in transpose");
    seen[size_t(d)] = true;
    out.shape_.push_back(shape_[size_t(d)]);
    out.strides_.push_back(strides_[size_t(d)]);
  }
  out.finish();
  return out;
}

Layout Layout::view_itemsize(int64_t itemsize) const {
  if (itemsize <= 0) throw Error(Status::ERROR_INVALID_VALUE, "view: itemsize must be positive");
  Layout out = *this;
  out.itemsize_ = itemsize;
  if (itemsize != itemsize_) {
    if (shape_.empty())
      refuse_like_peer(Status::ERROR_INVALID_VALUE, "view",
                       "Changing the dtype of a 0d array is only supported if the itemsize is unchanged");
    const size_t axis = shape_.size() - 1;
    if (shape_[axis] != 1 && size_ != 0 && strides_[axis] != itemsize_)
      refuse_like_peer(Status::ERROR_INVALID_VALUE, "view",
                       "To change to a dtype of a different size, the last axis must be contiguous");
    if (itemsize < itemsize_) {
      if (itemsize_ % itemsize != 0)
        refuse_like_peer(Status::ERROR_INVALID_VALUE, "view",
                         "When changing to a smaller dtype, its size must be a divisor of the size of original dtype");
      out.shape_[axis] = detail::checked_mul(shape_[axis], itemsize_ / itemsize, "view");
    } else {
      const int64_t bytes = detail::checked_mul(shape_[axis], itemsize_, "view");
      if (bytes % itemsize != 0)
        refuse_like_peer(Status::ERROR_INVALID_VALUE, "view",
                         "When changing to a larger dtype, its size must be a divisor of the total size in bytes "
                         "of the last axis of the array.");
      out.shape_[axis] = bytes / itemsize;
    }
    out.strides_[axis] = itemsize;
  }
  out.finish();
  return out;
}

template <class Keep>
Layout Layout::keep_axes(Keep keep) const {
  Layout out;
  out.itemsize_ = itemsize_;
  out.offset_ = offset_;
  for (size_t d = 0; d < shape_.size(); ++d)
    if (keep(shape_[d], strides_[d])) {
      out.shape_.push_back(shape_[d]);
      out.strides_.push_back(strides_[d]);
    }
  out.finish();
  return out;
}

Layout Layout::squeeze() const {
  return keep_axes([](int64_t extent, int64_t) { return extent != 1; });
}

Layout Layout::core() const {
  if (size_ == 0) return *this;
  return keep_axes([](int64_t, int64_t stride) { return stride != 0; });
}

Layout Layout::with_offset(int64_t offset) const {
  Layout out = *this;
  out.offset_ = offset;
  out.finish();
  return out;
}

Strides strides_like(const Layout &src, char order) {
  // NumPy's PyArray_NewLikeArrayWithShape (numpy/_core/src/multiarray/ctors.c).
  order = check_order(order, "CFAK", "strides_like");
  const bool c = src.is_c_contiguous(), f = src.is_f_contiguous();
  if (order == 'A') order = f && !c ? 'F' : 'C';
  if (order == 'K') {
    if (c || src.ndim() <= 1)
      order = 'C';
    else if (f)
      order = 'F';
  }
  // An array with no element: zero strides, as np.empty's (see make).
  if (src.size() == 0) return Strides(size_t(src.ndim()), 0);
  if (order != 'K') return Layout::dense_strides(src.shape(), src.itemsize(), order);
  // The axes by decreasing |stride| get dense strides from the last one.
  const std::vector<size_t> axes = axes_by_decreasing_stride(src.strides());
  Strides out(axes.size());
  int64_t acc = src.itemsize();
  for (size_t k = axes.size(); k-- > 0;) {
    out[axes[k]] = acc;
    acc = detail::checked_mul(acc, src.shape()[axes[k]], "strides");
  }
  return out;
}

}  // namespace gpuhal
