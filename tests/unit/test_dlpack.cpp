// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DLPack export / import on the host backend.
#include <chrono>
#include <thread>

#include "test_support.hpp"

using namespace gpuhal;
using namespace gpuhal::dlpack;

namespace {
// A consumer-made tensor over a vector, with a counting deleter.
struct Foreign {
  DLManagedTensorVersioned m{};
  std::vector<int64_t> shape, strides;
  std::vector<float> data;
  int *deleted;
};

DLManagedTensorVersioned *foreign(int *deleted, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
  auto *f = new Foreign;
  f->deleted = deleted;
  f->shape = std::move(shape);
  f->strides = std::move(strides);
  f->data.resize(64);
  for (size_t i = 0; i < f->data.size(); ++i) f->data[i] = float(i);
  f->m.version = {1, 0};
  f->m.manager_ctx = f;
  f->m.deleter = [](DLManagedTensorVersioned *self) {
    auto *ff = static_cast<Foreign *>(self->manager_ctx);
    ++*ff->deleted;
    delete ff;
  };
  f->m.dl_tensor.data = f->data.data();
  f->m.dl_tensor.device = {kDLCPU, 0};
  f->m.dl_tensor.ndim = int32_t(f->shape.size());
  f->m.dl_tensor.dtype = {2, 32, 1};
  f->m.dl_tensor.shape = f->shape.data();
  f->m.dl_tensor.strides = f->strides.empty() ? nullptr : f->strides.data();
  return &f->m;
}
}  // namespace

TEST_CASE("a DLPack round trip keeps the pointer and the producer outlives the consumer", "[dlpack]") {
  Context ctx = test::host_context();
  std::vector<double> v{1, 2, 3, 4, 5, 6};
  DeviceArray a = to_device(ctx, HostView::of(v, {2, 3}));
  const gpuhal::DevicePointer ptr = a.device_pointer();
  DLManagedTensorVersioned *t = to_dlpack_versioned(a);
  CHECK(t->version.major == 1);
  CHECK(t->dl_tensor.device.device_type == kDLCPU);
  CHECK(t->dl_tensor.ndim == 2);
  CHECK(t->dl_tensor.strides[0] == 3);  // elements, not bytes
  CHECK(t->dl_tensor.dtype.code == 2);
  CHECK(t->dl_tensor.dtype.bits == 64);
  a = DeviceArray();  // the producer's own handle goes first
  ctx.flush_deallocations();
  DeviceArray b = from_dlpack(ctx, t);
  CHECK(b.device_pointer() == ptr);
  CHECK(b.shape() == Shape{2, 3});
  CHECK(b.copy_to_host().to_vector<double>() == v);
  CHECK(ctx.pending_deallocations() == 0);  // still alive: the consumer holds it
  DeviceArray view = b[1];
  b = DeviceArray();
  CHECK(view.copy_to_host().to_vector<double>() == std::vector<double>{4, 5, 6});
  view = DeviceArray();
  CHECK(ctx.pending_deallocations() == 1);  // freed (deferred) only after the consumer
}

TEST_CASE("imported tensors are views whose deleter runs exactly once", "[dlpack]") {
  Context ctx = test::host_context();
  int deleted = 0;
  {
    DeviceArray d = from_dlpack(ctx, foreign(&deleted, {4, 4}));
    DeviceArray col = d.view({all, 1});
    CHECK(col.copy_to_host().to_vector<float>() == std::vector<float>{1, 5, 9, 13});
    d = DeviceArray();
    CHECK(deleted == 0);
  }
  CHECK(deleted == 1);
  // Element strides, including a transposed view.
  DeviceArray t = from_dlpack(ctx, foreign(&deleted, {4, 4}, {1, 4}));
  CHECK(t.strides() == Strides{4, 16});
  CHECK(t.copy_to_host().at<float>({1, 0}) == 1.0f);
  // Legacy unversioned tensors from our own export.
  DLManagedTensor *legacy = to_dlpack(t.view({Slice(0, 2)}));
  DeviceArray back = from_dlpack(ctx, legacy);
  CHECK(back.shape() == Shape{2, 4});
}

TEST_CASE("hostile DLPack tensors are refused and still deleted once", "[dlpack][errors]") {
  Context ctx = test::host_context();
  int deleted = 0;
  auto expect_refused = [&](DLManagedTensorVersioned *t, Status st, const char *text) {
    const int before = deleted;
    REQUIRE_GPUHAL_ERROR(from_dlpack(ctx, t), st, text);
    CHECK(deleted == before + 1);
  };
  auto *t = foreign(&deleted, {4});
  t->dl_tensor.device = {kDLCUDA, 0};
  expect_refused(t, Status::ERROR_INVALID_VALUE, "on device type 2 id 0");
  t = foreign(&deleted, {4});
  t->dl_tensor.ndim = 65;
  expect_refused(t, Status::ERROR_INVALID_SHAPE, "ndim 65");
  t = foreign(&deleted, {-4});
  expect_refused(t, Status::ERROR_INVALID_SHAPE, "negative dimension");
  t = foreign(&deleted, {4});
  t->dl_tensor.shape = nullptr;
  expect_refused(t, Status::ERROR_INVALID_SHAPE, "null shape");
  t = foreign(&deleted, {4});
  t->dl_tensor.dtype = {2, 24, 1};
  expect_refused(t, Status::ERROR_INVALID_DTYPE, "unsupported dtype");
  t = foreign(&deleted, {2}, {int64_t(1) << 62});
  expect_refused(t, Status::ERROR_SIZE_OVERFLOW, "overflows");
  t = foreign(&deleted, {4});
  t->dl_tensor.data = nullptr;
  expect_refused(t, Status::ERROR_INVALID_VALUE, "null data");
  t = foreign(&deleted, {4});
  t->flags = kFlagReadOnly;
  expect_refused(t, Status::ERROR_NOT_SUPPORTED, "read-only");
  t = foreign(&deleted, {4});
  t->version.major = 2;
  expect_refused(t, Status::ERROR_NOT_SUPPORTED, "major version 2");
  REQUIRE_GPUHAL_ERROR(from_dlpack(ctx, static_cast<DLManagedTensorVersioned *>(nullptr)), Status::ERROR_INVALID_VALUE,
                       "null tensor");
  REQUIRE_GPUHAL_ERROR(to_dlpack(DeviceArray()), Status::ERROR_INVALID_HANDLE, "empty DeviceArray");
}

TEST_CASE("the DLPack stream rule orders the consumer after the producer", "[dlpack][stream]") {
  Context ctx = test::host_context();
  Stream producer = ctx.create_stream(StreamKind::NonBlocking), consumer = ctx.create_stream(StreamKind::NonBlocking);
  std::vector<int32_t> v(256, 3), out(256, 0);
  DeviceArray a = device_array(ctx, {256}, dtypes::int32);
  producer.add_callback([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  a.copy_from_host(HostView::of(v), producer);
  DeviceArray b = from_dlpack(ctx, to_dlpack(a), &producer, &consumer);
  b.copy_to_host(HostView::of(out), consumer);  // must see the producer's copy
  consumer.synchronize();
  CHECK(out == v);
}

namespace {
// A CPU tensor over floats someone else owns, with a counting deleter.
DLManagedTensorVersioned *over(float *data, int64_t n, int *deleted) {
  struct Over {
    DLManagedTensorVersioned m{};
    int64_t shape[1];
    int *deleted;
  };
  auto *o = new Over;
  o->shape[0] = n;
  o->deleted = deleted;
  o->m.version = {1, 0};
  o->m.manager_ctx = o;
  o->m.deleter = [](DLManagedTensorVersioned *self) {
    auto *oo = static_cast<Over *>(self->manager_ctx);
    ++*oo->deleted;
    delete oo;
  };
  o->m.dl_tensor.data = data;
  o->m.dl_tensor.device = {kDLCPU, 0};
  o->m.dl_tensor.ndim = 1;
  o->m.dl_tensor.dtype = {2, 32, 1};
  o->m.dl_tensor.shape = o->shape;
  return &o->m;
}
}  // namespace

TEST_CASE("overlapping and nested DLPack imports each work and end independently", "[dlpack][register]") {
  Context ctx = test::host_context();
  std::vector<float> buf(1024);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(i);
  int deleted = 0;
  DeviceArray a = from_dlpack(ctx, over(buf.data(), 600, &deleted));
  DeviceArray b = from_dlpack(ctx, over(buf.data() + 400, 600, &deleted));  // partly overlaps a
  DeviceArray c = from_dlpack(ctx, over(buf.data() + 100, 50, &deleted));   // inside a
  CHECK(b.copy_to_host().to_vector<float>()[0] == 400.0f);
  CHECK(c.copy_to_host().to_vector<float>()[49] == 149.0f);
  b.memset(0);
  CHECK(a.copy_to_host().to_vector<float>()[450] == 0.0f);  // one memory
  a = DeviceArray();  // the first import's end leaves the others usable
  CHECK(deleted == 1);
  CHECK(b.copy_to_host().to_vector<float>() == std::vector<float>(600, 0.0f));
  DeviceArray d = device_array(ctx, {50}, dtypes::float32);
  d.memset(0);
  c.copy_from_device(d);
  CHECK(buf[120] == 0.0f);
  b = DeviceArray();
  c = DeviceArray();
  CHECK(deleted == 3);
}

TEST_CASE("DLPack imports of memory inside pinned and mapped scopes outlive the scopes", "[dlpack][register]") {
  Context ctx = test::host_context();
  std::vector<float> buf(256, 3.0f);
  int deleted = 0;
  DeviceArray in_pinned, in_mapped;
  {
    PinnedScope pin(ctx, {HostView::of(buf)});
    in_pinned = from_dlpack(ctx, over(buf.data(), 128, &deleted));
    CHECK(in_pinned.copy_to_host().to_vector<float>() == std::vector<float>(128, 3.0f));
  }
  {
    MappedScope mapped(ctx, {HostView::of(buf)});
    in_mapped = from_dlpack(ctx, over(buf.data() + 64, 192, &deleted));
    mapped[0].memset(0);
  }
  // Both scopes ended; both imports still see and write the memory.
  CHECK(in_pinned.copy_to_host().to_vector<float>() == std::vector<float>(128, 0.0f));
  in_mapped.copy_from_host(HostView::of(std::vector<float>(192, 5.0f)));
  CHECK(buf[64] == 5.0f);
  CHECK(in_pinned.copy_to_host().to_vector<float>()[100] == 5.0f);
  in_pinned = in_mapped = DeviceArray();
  CHECK(deleted == 2);
  // Nothing is left registered: the bytes pin and release again.
  { PinnedScope again(ctx, {HostView::of(buf)}); }
}

TEST_CASE("DLPack imports of pinned and mapped arrays' memory work", "[dlpack][register]") {
  // Memory the backend allocated is page-locked already and cannot be
  // registered again; with unified addressing the device reaches it as it is
  // (cuda.h: host memory from cuMemHostAlloc "is always directly accessible
  // from all contexts on all devices that support unified addressing").
  Context ctx = test::host_context();
  int deleted = 0;
  HostArray pinned = pinned_array(ctx, {64}, dtypes::float32);
  MappedArray mapped = mapped_array(ctx, {64}, dtypes::float32);
  for (HostArray *h : {&pinned, &mapped.host}) {
    for (int i = 0; i < 64; ++i) h->at<float>({i}) = float(i);
    DeviceArray d = from_dlpack(ctx, over(static_cast<float *>(h->data()), 64, &deleted));
    CHECK(d.copy_to_host().to_vector<float>()[63] == 63.0f);
    d.memset(0);
    CHECK(h->at<float>({5}) == 0.0f);
  }
  CHECK(deleted == 2);
}
