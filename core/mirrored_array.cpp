// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "gpuhal/mirrored_array.hpp"

#include <mutex>

#include "gpuhal/error.hpp"
#include "handle_access.hpp"

namespace gpuhal {

struct MirroredArray::State {
  Context ctx;
  std::mutex mutex;
  Shape shape;
  DType dtype;
  HostArray host;
  DeviceArray device;
  bool host_valid = true;
  bool device_valid = false;
  bool host_allocated = true;
  bool device_allocated = false;
};

namespace {
const char kEmpty[] = "MirroredArray: empty handle";
}

MirroredArray MirroredArray::with_state(const Context &ctx, const Shape &shape, DType dtype) {
  MirroredArray m;
  m.state_ = std::make_shared<State>();
  m.state_->ctx = ctx;
  m.state_->shape = shape;
  m.state_->dtype = dtype;
  return m;
}

bool MirroredArray::has_device_locked() const {
  return state_->device_allocated;
}

MirroredArray MirroredArray::from_host(const Context &ctx, HostArray host) {
  if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, "MirroredArray: null context");
  if (host.size() != 0 && !host.view().layout().core().is_contiguous())
    throw Error(Status::ERROR_NOT_CONTIGUOUS, "MirroredArray: the host side must be contiguous");
  MirroredArray m = MirroredArray::with_state(ctx, host.shape(), host.dtype());
  m.state_->host = std::move(host);
  return m;
}

MirroredArray MirroredArray::from_device(DeviceArray device) {
  // context() throws ERROR_INVALID_HANDLE for an empty array.
  const Context ctx = device.context();
  if (device.size() != 0 && !device.layout().core().is_contiguous())
    throw Error(Status::ERROR_NOT_CONTIGUOUS, "MirroredArray: the device side must be contiguous");
  MirroredArray m = MirroredArray::with_state(ctx, device.shape(), device.dtype());
  m.state_->device = std::move(device);
  m.state_->device_allocated = true;
  m.state_->device_valid = true;
  m.state_->host_allocated = false;
  m.state_->host_valid = false;
  return m;
}

MirroredArray MirroredArray::empty(const Context &ctx, const Shape &shape, DType dtype, char order, Where where) {
  if (where == Where::device) {
    if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, "MirroredArray: null context");
    return from_device(device_array(ctx, shape, dtype, {}, order));
  }
  return from_host(ctx, HostArray::empty(shape, dtype, order));
}

const HostArray &MirroredArray::get_host() const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->host_allocated) {
    state_->host = HostArray::with_layout(state_->device.layout(), state_->dtype);
    state_->host_allocated = true;
  }
  if (!state_->host_valid) {
    state_->device.copy_to_host(state_->host.view());
    state_->host_valid = true;
  }
  return state_->host;
}

const DeviceArray &MirroredArray::get_device() const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->device_allocated) {
    const HostView &h = state_->host.view();
    state_->device = device_array(state_->ctx, h.shape(), h.dtype(), h.strides());
    state_->device_allocated = true;
  }
  if (!state_->device_valid) {
    state_->device.copy_from_host(state_->host.view());
    state_->device_valid = true;
  }
  return state_->device;
}

void MirroredArray::mark_changed(Where where) const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (where == Where::device && !has_device_locked()) {
    throw Error(Status::ERROR_INVALID_VALUE, "MirroredArray::mark_changed(device): there is no device side yet");
  }
  if (where == Where::host && !state_->host_allocated) {
    throw Error(Status::ERROR_INVALID_VALUE, "MirroredArray::mark_changed(host): there is no host side yet");
  }
  state_->host_valid = where == Where::host;
  state_->device_valid = where == Where::device;
}

bool MirroredArray::valid(Where where) const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  std::lock_guard<std::mutex> lock(state_->mutex);
  return where == Where::host ? state_->host_valid : state_->device_valid;
}

bool MirroredArray::has_host() const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->host_allocated;
}

bool MirroredArray::has_device() const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  std::lock_guard<std::mutex> lock(state_->mutex);
  return has_device_locked();
}

const Shape &MirroredArray::shape() const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  return state_->shape;
}

DType MirroredArray::dtype() const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  return state_->dtype;
}

Context MirroredArray::context() const {
  if (!state_) throw Error(Status::ERROR_INVALID_HANDLE, kEmpty);
  return state_->ctx;
}

}  // namespace gpuhal
