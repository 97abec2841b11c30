// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DLPack import of hostile tensors into a host-backend context: every
// refusal is a gpuhal::Error, and the tensor's deleter runs exactly once.
#include <cstdlib>

#include "fuzz_host_context.hpp"
#include "fuzz_input.hpp"
#include "gpuhal/dlpack.hpp"

using namespace gpuhal;
using namespace gpuhal::dlpack;

namespace {
int g_deleted = 0;
struct Tensor {
  DLManagedTensorVersioned m{};
  int64_t shape[8];
  int64_t strides[8];
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Context &ctx = fuzz::host_context();
  static std::vector<uint8_t> buffer(4096);
  fuzz::Input in(data, size);
  auto *t = new Tensor;
  t->m.version = {uint32_t(in.small(0, 2)), 0};
  t->m.flags = in.take<uint8_t>() & 3;
  t->m.manager_ctx = t;
  t->m.deleter = [](DLManagedTensorVersioned *self) {
    ++g_deleted;
    delete static_cast<Tensor *>(self->manager_ctx);
  };
  DLTensor &d = t->m.dl_tensor;
  d.data = (in.take<uint8_t>() & 7) ? buffer.data() : nullptr;
  d.device = {int32_t(in.small(0, 14)), int32_t(in.small(-1, 1))};
  d.ndim = int32_t(in.small(-1, 8));
  d.dtype = {uint8_t(in.small(0, 7)), uint8_t(8 << in.small(0, 4)), uint16_t(in.small(0, 2))};
  for (int i = 0; i < 8; ++i) t->shape[i] = in.dim();
  for (int i = 0; i < 8; ++i) t->strides[i] = in.dim();
  d.shape = (in.take<uint8_t>() & 7) ? t->shape : nullptr;
  d.strides = (in.take<uint8_t>() & 1) ? t->strides : nullptr;
  d.byte_offset = in.take<uint8_t>() & 1 ? uint64_t(in.small(0, 64)) : in.take<uint64_t>();
  const int before = g_deleted;
  try {
    DeviceArray a = from_dlpack(ctx, &t->m);
    (void)a.view({Index(0)});
  } catch (const Error &) {
  }
  if (g_deleted != before + 1) std::abort();  // exactly once
  return 0;
}
