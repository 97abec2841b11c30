// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Devices per thread: Numba's cuda.select_device / get_current_device /
// close / gpus. Each thread keeps the primary context of the device it
// selected; Context::current() answers from it.
#include "context_impl.hpp"
#include "gpuhal/context.hpp"
#include "handle_access.hpp"

namespace gpuhal {
namespace {

// The calling thread's selection: the selected device's primary context,
// or empty (device 0). Destroyed at the thread's exit, before the
// process's statics (the runtime).
thread_local Context t_selected;

// The selection, unless it was made by the parent of a fork(): a child
// uses its own runtime (fork_guard.hpp), so it starts with none.
const Context &selection() {
  if (detail::impl_of(t_selected) && detail::impl_of(t_selected)->inherited()) t_selected = Context();
  return t_selected;
}

}  // namespace

Context Context::current() {
  const Context &selected = selection();
  if (detail::impl_of(selected)) return selected;
  return Runtime::get().device(0).primary_context();
}

Device select_device(int ordinal) {
  Device device = Runtime::get().device(ordinal);
  t_selected = device.primary_context();
  return device;
}

Device get_current_device() {
  return Context::current().device();
}

void close_device() {
  t_selected = Context();
}

std::vector<Device> list_devices() {
  const Runtime rt = Runtime::get();
  std::vector<Device> out;
  for (int i = 0; i < rt.device_count(); ++i) out.push_back(rt.device(i));
  return out;
}

DeviceScope::DeviceScope(int ordinal) : DeviceScope(Runtime::get().device(ordinal)) {}

DeviceScope::DeviceScope(const Device &device) : context_(device.primary_context()), previous_(selection()) {
  t_selected = context_;
}

DeviceScope::~DeviceScope() {
  t_selected = previous_;
}

Device DeviceScope::device() const {
  return context_.device();
}

}  // namespace gpuhal
