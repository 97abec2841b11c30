// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DLPack interchange: export a DeviceArray as a DLPack tensor and import
// DLPack tensors as DeviceArrays, without copying.
//
// The DLPack structs are declared here, layout-identical to dlpack.h 1.0
// (DLManagedTensorVersioned) and its legacy DLManagedTensor, in namespace
// gpuhal::dlpack so they never clash with a dlpack.h the application
// includes; pointers convert with reinterpret_cast (a test checks the
// layouts against Debian's dlpack.h when it is installed).
//
// Ownership: an exported tensor owns a reference to the array's memory until
// its deleter is called (exactly once, by the consumer). An imported tensor
// is owned by gpuhal from the call on: its deleter runs exactly once, when
// the last DeviceArray viewing it is gone (including when the import throws).
//
// Stream rule (like the CUDA Array Interface's): with no streams the caller
// guarantees the data is ready. With a producer stream only, the call
// synchronizes it before returning. With producer and consumer streams, the
// consumer waits (on the device) for all work submitted to the producer so
// far; nothing blocks the host.
#pragma once

#include <cstdint>

#include "gpuhal/device_array.hpp"

namespace gpuhal {
namespace dlpack {

enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
};

struct DLDevice {
  int32_t device_type;  // a DLDeviceType
  int32_t device_id;
};

struct DLDataType {
  uint8_t code;  // DTypeKind values
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;  // in elements; NULL means compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

inline constexpr uint32_t kMajorVersion = 1;
inline constexpr uint32_t kMinorVersion = 0;
inline constexpr uint64_t kFlagReadOnly = 1ull << 0;
inline constexpr uint64_t kFlagIsCopied = 1ull << 1;

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // namespace dlpack

// The DLPack device type of a context's memory (host backend: kDLCPU,
// cuda: kDLCUDA, hsa: kDLROCM, other backends: kDLExtDev).
dlpack::DLDevice dlpack_device(const Context &ctx);

// Export (no copy). The caller (the consumer) must call the deleter once.
dlpack::DLManagedTensorVersioned *to_dlpack_versioned(const DeviceArray &array, const Stream *producer = nullptr,
                                                      const Stream *consumer = nullptr);
dlpack::DLManagedTensor *to_dlpack(const DeviceArray &array, const Stream *producer = nullptr,
                                   const Stream *consumer = nullptr);

// Import (no copy); takes ownership of `tensor`. Validates everything:
// null pointers, ndim, shapes, strides (overflow-checked), dtype, device
// (type and id must be this context's), version (major 1), read-only flag
// (refused: DeviceArrays are writable). Throws gpuhal::Error naming the
// problem; the tensor's deleter has run by then.
DeviceArray from_dlpack(const Context &ctx, dlpack::DLManagedTensorVersioned *tensor, const Stream *producer = nullptr,
                        const Stream *consumer = nullptr);
DeviceArray from_dlpack(const Context &ctx, dlpack::DLManagedTensor *tensor, const Stream *producer = nullptr,
                        const Stream *consumer = nullptr);

}  // namespace gpuhal
