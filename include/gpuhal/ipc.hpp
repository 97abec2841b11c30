// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Inter-process memory (Numba's IPC): share a device array with another
// process on the same machine.
//
//   exporter:  auto h = gpuhal::get_ipc_handle(array);  send(h.serialize());
//   importer:  auto h = gpuhal::IpcArrayHandle::deserialize(text);
//              gpuhal::IpcArray shared = gpuhal::open_ipc_array(ctx, h);
//              use(shared.array());  // same memory: writes are seen both ways
//
// Needs Capability::Ipc (ERROR_NOT_SUPPORTED otherwise). A handle covers the
// bytes the array spans, found relative to the base of its allocation (so
// views and arrays imported through DLPack export correctly). A handle from
// get_ipc_handle cannot be opened in the process that made it (as in CUDA);
// a deserialised one can be opened once per IpcArray. The memory stays
// mapped while the IpcArray or any array view of it lives; close() drops the
// IpcArray's own reference. The unmap itself goes through the context's
// deferred deallocation queue (as device frees do), so a copy from the
// mapping that is still queued on a stream reads mapped memory. The exporter must keep its array alive while
// others use it. Unlike Numba, omitted strides mean C-contiguous for any
// number of dimensions.
#pragma once

#include <cstdint>
#include <string>

#include "gpuhal/device_array.hpp"
#include "gpuhal/native.hpp"

namespace gpuhal {

// The shared bytes: the backend's handle for the allocation plus where the
// bytes sit in it.
struct IpcHandle {
  NativeIpcHandle handle{};
  uint64_t offset = 0;                                  // from the allocation's base
  uint64_t size = 0;                                    // bytes shared
  std::string backend;                                  // the backend that made it
  int32_t pci_domain = 0, pci_bus = 0, pci_device = 0;  // the source device
  // True in the exporting process (serialise to send it elsewhere).
  bool exported_here = false;
};

// An array description over an IpcHandle (Numba's IpcArrayHandle).
struct IpcArrayHandle {
  IpcHandle memory;
  Shape shape;
  Strides strides;  // bytes
  DType dtype = dtypes::float64;
  int64_t first_element = 0;  // byte offset of element 0 in the shared bytes

  // A single line of printable text; deserialize() rejects anything else
  // with ERROR_INVALID_IPC_HANDLE.
  std::string serialize() const;
  static IpcArrayHandle deserialize(const std::string &text);
};

// The handle of the bytes `mem` spans from `offset` for `size` bytes.
IpcHandle get_ipc_handle(const DeviceMemory &mem, uint64_t offset, uint64_t size);
// The handle of an array (any layout; zero-size arrays cannot be shared).
IpcArrayHandle get_ipc_handle(const DeviceArray &array);

// An opened handle. Move-only.
class IpcArray {
 public:
  IpcArray() = default;
  const DeviceArray &array() const;
  explicit operator bool() const { return static_cast<bool>(array_.memory()); }
  // Drops this object's reference to the mapping (views keep it open).
  void close();

 private:
  friend IpcArray open_ipc_array(const Context &, const IpcArrayHandle &);
  DeviceArray array_;
};

// A handle the backend cannot open -- garbage bytes, memory freed since,
// another backend's -- is ERROR_INVALID_IPC_HANDLE on every backend (the
// message names the driver's own error); opening in the exporting process
// is ERROR_INVALID_VALUE.
IpcArray open_ipc_array(const Context &ctx, const IpcArrayHandle &handle);
// Numba's open_ipc_array(handle, shape, dtype, strides, offset) over the raw
// backend bytes: the array starts `offset` bytes into the allocation.
IpcArray open_ipc_array(const Context &ctx, const NativeIpcHandle &handle, const Shape &shape, DType dtype,
                        const Strides &strides = {}, uint64_t offset = 0);

}  // namespace gpuhal
