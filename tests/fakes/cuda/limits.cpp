// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: a primary context's limits (cuCtxSetLimit /
// cuCtxGetLimit), with the driver API's documented rules:
//  - "Setting CU_LIMIT_PRINTF_FIFO_SIZE must be performed before launching
//    any kernel that uses the printf() device system call, otherwise
//    CUDA_ERROR_INVALID_VALUE will be returned." (the same for
//    CU_LIMIT_MALLOC_HEAP_SIZE and malloc(); the fake's kernels use none);
//  - CU_LIMIT_STACK_SIZE: "Setting this value will take effect immediately,
//    and if necessary, the device will block until all preceding requested
//    tasks are complete." (the call waits for the context's streams);
//  - a limit the device does not have is CUDA_ERROR_UNSUPPORTED_LIMIT;
//  - the limits are the context's: a new primary context starts from the
//    defaults. The CUDA programming guide gives two: the printf buffer
//    "is set to a fixed size before kernel launch" (1 MiB), and "the
//    device heap ... default size of 8 megabytes". The stack's 1 KiB per
//    thread is the value cuCtxGetLimit is commonly reported to give; it was
//    not measured on this project's GPU runs yet.
#include "fake_cuda.hpp"

using namespace fake_cuda;

namespace fake_cuda {
namespace {

constexpr int kStackSize = 0, kPrintfFifoSize = 1, kMallocHeapSize = 2;
constexpr CUresult UNSUPPORTED_LIMIT = 215;
constexpr uint64_t kDefaults[3] = {1024, uint64_t(1) << 20, uint64_t(8) << 20};
std::atomic<uint64_t> g_limit[kMaxDevices][3];
std::atomic<bool> g_limits_set[kMaxDevices];  // g_limit holds values (else the defaults)
std::atomic<bool> g_printed[kMaxDevices];     // a kernel that prints was launched

uint64_t limit_of(int dev, int which) {
  return g_limits_set[dev].load() ? g_limit[dev][which].load() : kDefaults[which];
}

}  // namespace

void note_printing_launch(int dev) { g_printed[dev] = true; }

void reset_limits(int dev) {
  g_limits_set[dev] = false;
  g_printed[dev] = false;
}

}  // namespace fake_cuda

extern "C" {

API CUresult cuCtxSynchronize();  // context.cpp

API CUresult cuCtxSetLimit(int limit, size_t value) {
  int dev = -1;
  if (const CUresult r = context_entry("cuCtxSetLimit", &dev); r != OK) return r;
  if (limit != kStackSize && limit != kPrintfFifoSize && limit != kMallocHeapSize) return UNSUPPORTED_LIMIT;
  if (limit == kPrintfFifoSize && g_printed[dev].load()) return INVALID_VALUE;
  if (limit == kStackSize) {
    if (const CUresult r = cuCtxSynchronize(); r != OK) return r;
  }
  if (!g_limits_set[dev].load()) {
    for (int i = 0; i < 3; ++i) g_limit[dev][i] = kDefaults[i];
    g_limits_set[dev] = true;
  }
  g_limit[dev][limit] = value;
  return OK;
}

API CUresult cuCtxGetLimit(size_t *value, int limit) {
  int dev = -1;
  if (const CUresult r = context_entry("cuCtxGetLimit", &dev); r != OK) return r;
  if (!value) return INVALID_VALUE;
  if (limit != kStackSize && limit != kPrintfFifoSize && limit != kMallocHeapSize) return UNSUPPORTED_LIMIT;
  *value = size_t(limit_of(dev, limit));
  return OK;
}

}  // extern "C"
