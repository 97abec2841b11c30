// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver's copies of cuda.h's structs for copies, managed-memory
// hints and virtual memory (their layouts are cuda.h's; the fake keeps its
// own declarations, apart from the plugin's, so that each encodes cuda.h on
// its own). Split from fake_cuda.hpp, which includes it.
#pragma once

#include <cstddef>

namespace fake_cuda {

using CUdeviceptr = unsigned long long;

// cuda.h's CUmemorytype and CUDA_MEMCPY3D (the _v2 layout).
using CUmemorytype = int;
constexpr CUmemorytype CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_ARRAY = 3,
                       CU_MEMORYTYPE_UNIFIED = 4;
using CUmemLocationType = int;
constexpr CUmemLocationType CU_MEM_LOCATION_TYPE_DEVICE = 1, CU_MEM_LOCATION_TYPE_HOST = 2;
struct CUmemLocation {
  CUmemLocationType type;
  int id;
};
using CUmemGenericAllocationHandle = unsigned long long;
struct CUmemAllocationProp {
  int type;
  int requestedHandleTypes;
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType, gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};
// cuda.h's CUmemPoolProps (cuMemPoolCreate).
struct CUmemPoolProps_fake {
  int allocType;
  int handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;
};
struct CUDA_MEMCPY3D {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  void *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  void *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
};

}  // namespace fake_cuda
