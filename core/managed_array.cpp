// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Managed arrays (Numba's cuda.managed_array): memory that the host and the
// device address at the same pointer, from the plugin's mem_alloc_managed.
#include "allocation.hpp"
#include "gpuhal/device_array.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"

namespace gpuhal {

bool DeviceArray::is_managed() const {
  return memory_ && detail::impl_of(memory_)->managed;
}

HostView DeviceArray::host_view() const {
  if (!ctx_) throw Error(Status::ERROR_INVALID_HANDLE, "DeviceArray::host_view: empty DeviceArray");
  if (size() == 0) return HostView::from_layout(nullptr, layout_.with_offset(0), dtype_, true);
  if (!is_managed())
    throw Error(Status::ERROR_INVALID_VALUE,
                "DeviceArray::host_view: not a managed array (device memory is not the host's; copy_to_host it)");
  ctx_->check_alive(detail::impl_of(memory_)->generation, "DeviceArray::host_view");
  return HostView::from_layout(reinterpret_cast<void *>(uintptr_t(memory_.device_pointer())), layout_, dtype_, true);
}

DeviceArray managed_array(const Context &ctx, const Shape &shape, DType dtype, const Strides &strides, char order) {
  if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, "managed_array: null context");
  auto &c = *detail::impl_of(ctx);
  c.check_alive(c.current_generation(), "managed_array");
  if (!c.backend().has_mem_alloc_managed())
    throw Error(Status::ERROR_NOT_SUPPORTED,
                "managed_array: backend '" + c.lib().name() + "' has no managed memory (Capability::ManagedMemory)");
  dtype.validate();
  const Layout layout = Layout::make(shape, dtype.itemsize(), strides, order);
  if (layout.size() == 0) return device_array(ctx, shape, dtype, strides, order);  // no memory to manage
  return DeviceArray(
      detail::Access::wrap<DeviceMemory>(detail::allocate_managed(detail::impl_of(ctx), uint64_t(layout.span_bytes()))),
      layout, dtype);
}

DeviceArray managed_array_like(const Context &ctx, const HostView &like) {
  return managed_array(ctx, like.shape(), like.dtype(), strides_like(like.layout()));
}

DeviceArray managed_array_like(const DeviceArray &like) {
  return managed_array(like.context(), like.shape(), like.dtype(), strides_like(like.layout()));
}

}  // namespace gpuhal
