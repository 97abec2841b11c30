// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DeviceArray: a strided view of device memory with Numba's DeviceNDArray
// semantics (see docs/user-guide.md for the differences we chose).
//
// A DeviceArray is a value: copies share the memory. Views (index, reshape,
// ravel) keep their base allocation alive. Zero-size arrays own no memory
// and their device_pointer() is 0. Transfers:
//  - the overloads without a Stream are synchronous (they return when done);
//  - the overloads with a Stream are asynchronous on that stream; host
//    memory must stay valid until the stream ran them.
// Errors are gpuhal::Error with a message naming the problem. Methods are
// thread-safe; concurrent writes to the same memory are the caller's affair.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "gpuhal/context.hpp"
#include "gpuhal/dtype.hpp"
#include "gpuhal/host_array.hpp"
#include "gpuhal/layout.hpp"
#include "gpuhal/memory.hpp"
#include "gpuhal/stream.hpp"

namespace gpuhal {

class DeviceArray {
 public:
  DeviceArray() = default;

  // Wraps existing memory (trusted: the layout must fit in it; checked).
  DeviceArray(DeviceMemory memory, const Layout &layout, DType dtype);

  const Layout &layout() const { return layout_; }
  const Shape &shape() const { return layout_.shape(); }
  const Strides &strides() const { return layout_.strides(); }
  DType dtype() const { return dtype_; }
  int ndim() const { return layout_.ndim(); }
  int64_t size() const { return layout_.size(); }
  int64_t itemsize() const { return layout_.itemsize(); }
  int64_t nbytes() const { return layout_.nbytes(); }
  // Bytes spanned by the elements (what a transfer moves).
  int64_t alloc_size() const { return layout_.span_bytes(); }
  bool is_c_contiguous() const { return layout_.is_c_contiguous(); }
  bool is_f_contiguous() const { return layout_.is_f_contiguous(); }
  // Address of element 0; 0 for zero-size arrays.
  DevicePointer device_pointer() const;
  const DeviceMemory &memory() const { return memory_; }
  // True for managed memory (managed_array): host and device share it.
  bool is_managed() const;
  // The host's view of a managed array: the same elements at the same
  // addresses, writeable (Numba's managed arrays are NumPy arrays too).
  // Touch it only while no work of the context that uses the array is in
  // flight (synchronize first). ERROR_INVALID_VALUE for other arrays.
  HostView host_view() const;
  Context context() const;
  // len(): shape[0]; ERROR_INDEX_OUT_OF_RANGE for 0-d.
  int64_t length() const;

  // Views (no copy). See Layout::index / reshape / ravel for the rules.
  DeviceArray view(const std::vector<Index> &indices) const;
  DeviceArray operator[](int64_t i) const { return view({Index(i)}); }
  DeviceArray reshape(const Shape &new_shape, char order = 'C') const;
  DeviceArray ravel(char order = 'C') const;
  // NumPy's transpose(axes) and .T (Numba's device arrays have both):
  // views with permuted axes, see Layout::transpose.
  DeviceArray transpose(const std::vector<int> &axes = {}) const;
  DeviceArray T() const { return transpose(); }
  // NumPy's / Numba's view(dtype): the same memory as elements of `dtype`
  // (see Layout::view_itemsize for how the last axis changes).
  DeviceArray view(DType dtype) const;

  // Host -> this array (Numba's copy_to_device). The destination must be
  // contiguous at its core; a strided or differently ordered host source is
  // gathered into a staging buffer first. Checks dtype (ERROR_INVALID_DTYPE),
  // squeezed shape and strides (ERROR_INCOMPATIBLE). An empty source copies
  // nothing.
  void copy_from_host(const HostView &src) const;
  void copy_from_host(const HostView &src, const Stream &stream) const;
  // Device -> this array, same dtype and squeezed shape. Contiguous arrays
  // with the same squeezed strides are one byte copy; any other layouts of
  // the same context are copied element by element (as assign() does, where
  // Numba refuses them); across contexts both must be contiguous at their
  // core with the same squeezed strides (ERROR_NOT_CONTIGUOUS otherwise).
  void copy_from_device(const DeviceArray &src) const;
  void copy_from_device(const DeviceArray &src, const Stream &stream) const;
  // This array -> a new host array with the same strides (negative strides
  // included). With a stream, read the result only after synchronising;
  // dropping it earlier is safe (its buffer is then freed through the
  // context's deferred deallocation queue, after the context's work).
  HostArray copy_to_host() const;
  HostArray copy_to_host(const Stream &stream) const;
  // This array -> an existing writeable host view with the same dtype,
  // squeezed shape and strides. Only element bytes are written (a strided
  // source is staged and scattered, gaps are left alone).
  void copy_to_host(const HostView &dst) const;
  void copy_to_host(const HostView &dst, const Stream &stream) const;
  // Sets every byte of the elements' span to `value` (contiguous arrays only).
  void memset(uint8_t value) const;
  void memset(uint8_t value, const Stream &stream) const;

  // NumPy's / Numba's `d[...] = src` on the device, for any layout of this
  // array (take a view for `d[index] = src`): `src` of the same dtype is
  // broadcast to this array's shape by NumPy's rules (missing leading
  // axes added, axes of length 1 repeated; leading axes of length 1 beyond
  // this array's dims dropped), and copied element by element by a kernel
  // of the backend, ordered on the stream (no host round trip). Memory
  // shared by source and destination is read before it is written (through
  // a temporary, as NumPy does). Errors: ERROR_INVALID_DTYPE (dtypes
  // differ), ERROR_INCOMPATIBLE (shapes do not broadcast, naming the axis),
  // ERROR_NOT_SUPPORTED (a backend without kernels, when no plain copy or
  // memset does it). A host source is first copied to a temporary device
  // array (with a stream: it must stay valid until the stream ran the copy).
  void assign(const DeviceArray &src) const;
  void assign(const DeviceArray &src, const Stream &stream) const;
  void assign(const HostView &src) const;
  void assign(const HostView &src, const Stream &stream) const;
  // `d[...] = value`: every element set to `value`, converted to this
  // array's dtype by the rules of kernel scalars (integers must fit; a
  // floating value never becomes an integer; bool takes bool and integers,
  // nonzero being true; complex takes real values). ERROR_INVALID_VALUE for
  // a value that does not convert, ERROR_INVALID_DTYPE for float16 and
  // bfloat16 arrays (fill their bits through view(uint16)).
  template <class T, class = std::enable_if_t<std::is_arithmetic<T>::value>>
  void fill(T value) const {
    fill_impl(dtype_of<T>(), &value, nullptr);
  }
  template <class T, class = std::enable_if_t<std::is_arithmetic<T>::value>>
  void fill(T value, const Stream &stream) const {
    fill_impl(dtype_of<T>(), &value, &stream);
  }

 private:
  // This array's memory under another layout and dtype (a view).
  DeviceArray with_layout(Layout layout, DType dtype) const;
  void copy_from_host_impl(const HostView &src, const Stream *stream) const;
  // The cases copy_from_host_impl's common one does not cover (out of line).
  void copy_from_host_general(const HostView &src, const Stream *stream) const;
  void copy_from_device_impl(const DeviceArray &src, const Stream *stream) const;
  // own_buffer: `dst` was made by copy_to_host() for exactly this layout.
  void copy_to_host_impl(const HostView &dst, const Stream *stream, bool own_buffer) const;
  // The cases copy_to_host_impl's common one does not cover (out of line).
  void copy_to_host_general(const HostView &dst, const Stream *stream, bool own_buffer) const;
  void memset_impl(uint8_t value, const Stream *stream) const;
  void assign_impl(const DeviceArray &src, const Stream *stream) const;
  void fill_impl(DType from, const void *value, const Stream *stream) const;

  friend DeviceArray device_array(const Context &, const Shape &, DType, const Strides &, char);

  DeviceMemory memory_;
  Layout layout_;
  DType dtype_ = dtypes::float64;
  std::shared_ptr<detail::ContextImpl> ctx_;  // for zero-size arrays too
};

// Uninitialised device array (np.empty). Empty strides: dense in `order`
// ('C' or 'F'). Given strides may be zero or negative.
DeviceArray device_array(const Context &ctx, const Shape &shape, DType dtype = dtypes::float64,
                         const Strides &strides = {}, char order = 'C');
// Same shape and dtype, strides as NumPy's empty_like (keeps the order).
DeviceArray device_array_like(const Context &ctx, const HostView &like);
DeviceArray device_array_like(const DeviceArray &like);

// Numba's cuda.managed_array: an uninitialised array in memory that the
// host and the device both address (cuda: cuMemAllocManaged; hsa:
// fine-grained system memory the agent may access; host: its own memory).
// Freed through the deferred deallocation queue like device memory; it
// does not come from the context's memory manager. ERROR_NOT_SUPPORTED on
// a backend without Capability::ManagedMemory or a device without it; the
// shape, strides and order rules of device_array.
DeviceArray managed_array(const Context &ctx, const Shape &shape, DType dtype = dtypes::float64,
                          const Strides &strides = {}, char order = 'C');
// Same shape and dtype, strides as NumPy's empty_like (keeps the order).
DeviceArray managed_array_like(const Context &ctx, const HostView &like);
DeviceArray managed_array_like(const DeviceArray &like);

enum class Copy { yes, no };
// Allocates a device array with the host array's shape, strides and dtype
// and (with Copy::yes) copies the data. The host array must be contiguous at
// its core (ERROR_NOT_CONTIGUOUS otherwise; broadcast arrays are fine).
DeviceArray to_device(const Context &ctx, const HostView &host, Copy copy = Copy::yes);
DeviceArray to_device(const Context &ctx, const HostView &host, const Stream &stream, Copy copy = Copy::yes);
// Copies into an existing array (Numba's `to=`) and returns it.
DeviceArray to_device(const HostView &host, const DeviceArray &to);
DeviceArray to_device(const HostView &host, const DeviceArray &to, const Stream &stream);
// A device array is already on the device: returned as is, no copy.
inline DeviceArray to_device(const DeviceArray &array) {
  return array;
}

}  // namespace gpuhal
