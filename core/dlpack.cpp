// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DLPack export and import (see dlpack.hpp for ownership and stream rules).
#include "gpuhal/dlpack.hpp"

#include <memory>

#include "allocation.hpp"
#include "checked_math.hpp"
#include "gpuhal/error.hpp"
#include "gpuhal/host_memory.hpp"
#include "handle_access.hpp"

namespace gpuhal {
namespace {

using dlpack::DLManagedTensor;
using dlpack::DLManagedTensorVersioned;
using dlpack::DLTensor;

void apply_stream_rule(const Stream *producer, const Stream *consumer) {
  if (producer && consumer) {
    if (!(*producer == *consumer)) consumer->wait(producer->record());
  } else if (producer) {
    producer->synchronize();
  }
}

// Storage an exported tensor points into; freed by the deleter.
template <class Managed>
struct Export {
  Managed managed{};
  DeviceArray array;  // keeps the memory alive
  std::vector<int64_t> shape, strides;
};

template <class Managed>
Managed *export_array(const DeviceArray &array, const Stream *producer, const Stream *consumer) {
  const Context ctx = array.context();  // throws for an empty array
  // Memory of a context that was reset since is gone (or reused): never exported.
  if (detail::impl_of(array.memory()))
    detail::impl_of(ctx)->check_alive(detail::impl_of(array.memory())->generation, "to_dlpack");
  if (array.dtype().kind == DTypeKind::Opaque)
    throw Error(Status::ERROR_INVALID_DTYPE, "to_dlpack: record arrays (" + array.dtype().name() +
                                                 ") have no DLPack type (kDLOpaqueHandle is a handle, not bytes)");
  apply_stream_rule(producer, consumer);
  // The consumer may still have work on it when it lets the tensor go (on
  // its own streams, out of gpuhal's sight): its release waits for a flush,
  // never an idle block.
  if (const auto &a = detail::impl_of(array.memory())) {
    a->exported.store(true, std::memory_order_relaxed);
    // Where device memory is host memory the consumer may read it with the
    // CPU (NumPy): a reset must not unmap it under the consumer.
    if (dlpack_device(ctx).device_type == dlpack::kDLCPU) a->mark_host_visible();
  }
  auto e = std::make_unique<Export<Managed>>();
  e->array = array;
  e->shape = array.shape();
  for (int64_t s : array.strides()) {
    if (s % array.itemsize() != 0)
      throw Error(Status::ERROR_NOT_SUPPORTED,
                  "to_dlpack: stride " + std::to_string(s) +
                      " is not a multiple of the itemsize (DLPack strides count elements)");
    e->strides.push_back(s / array.itemsize());
  }
  DLTensor &t = e->managed.dl_tensor;
  t.data = reinterpret_cast<void *>(uintptr_t(array.device_pointer()));
  t.device = dlpack_device(ctx);
  t.ndim = array.ndim();
  t.dtype = dlpack::DLDataType{uint8_t(array.dtype().kind), array.dtype().bits, array.dtype().lanes};
  t.shape = e->shape.empty() ? nullptr : e->shape.data();
  t.strides = e->strides.empty() ? nullptr : e->strides.data();
  t.byte_offset = 0;
  Export<Managed> *raw = e.release();
  raw->managed.manager_ctx = raw;
  raw->managed.deleter = [](Managed *self) { delete static_cast<Export<Managed> *>(self->manager_ctx); };
  return &raw->managed;
}

DeviceArray import_tensor(const Context &ctx, const DLTensor &t, std::shared_ptr<void> owner) {
  if (!detail::impl_of(ctx)) throw Error(Status::ERROR_INVALID_HANDLE, "from_dlpack: null context");
  const dlpack::DLDevice want = dlpack_device(ctx);
  if (t.device.device_type != want.device_type || t.device.device_id != want.device_id)
    throw Error(Status::ERROR_INVALID_VALUE,
                "from_dlpack: the tensor is on device type " + std::to_string(t.device.device_type) + " id " +
                    std::to_string(t.device.device_id) + " but the context is device type " +
                    std::to_string(want.device_type) + " id " + std::to_string(want.device_id));
  if (t.ndim < 0 || t.ndim > kMaxDims)
    throw Error(Status::ERROR_INVALID_SHAPE, "from_dlpack: ndim " + std::to_string(t.ndim) + " out of range");
  if (t.ndim > 0 && !t.shape) throw Error(Status::ERROR_INVALID_SHAPE, "from_dlpack: null shape");
  const DType dtype{DTypeKind(t.dtype.code), t.dtype.bits, t.dtype.lanes};
  if (dtype.kind == DTypeKind::Opaque)
    throw Error(Status::ERROR_INVALID_DTYPE, "from_dlpack: kDLOpaqueHandle elements are handles, not data");
  dtype.validate();
  Shape shape(t.shape, t.shape + t.ndim);
  Strides strides;
  if (t.strides) {
    for (int d = 0; d < t.ndim; ++d)
      strides.push_back(detail::checked_mul(t.strides[d], dtype.itemsize(), "from_dlpack strides"));
  }
  const Layout layout = Layout::make(shape, dtype.itemsize(), strides);  // validates dims and overflow
  auto a = std::make_shared<detail::Allocation>();
  a->ctx = detail::impl_of(ctx);
  a->generation = detail::impl_of(ctx)->current_generation();
  a->owns_device_memory = false;
  a->views_host_memory = true;  // the producer's memory, which the producer keeps
  a->keep_alive = std::move(owner);
  if (layout.size() != 0) {
    if (!t.data) throw Error(Status::ERROR_INVALID_VALUE, "from_dlpack: null data for a non-empty tensor");
    if (t.byte_offset > uint64_t(INT64_MAX)) throw Error(Status::ERROR_SIZE_OVERFLOW, "from_dlpack: byte_offset");
    const uint64_t element0 = uint64_t(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset;
    a->ptr = element0 - uint64_t(layout.offset());  // the lowest byte the tensor touches
    a->size = uint64_t(layout.span_bytes());
    if (want.device_type == dlpack::kDLCPU && ctx.supports(Capability::MappedHostMemory)) {
      // CPU memory from another producer: map it for the life of the import
      // so the backend accepts it as device memory. Registrations nest and
      // overlap (host_memory.cpp), so other imports and scopes over the same
      // bytes are fine; the plugin refuses only memory it allocated itself
      // (device, pinned or mapped memory), which is usable already.
      struct Mapped {
        std::shared_ptr<void> owner;
        HostRegistration registration;  // released before the owner's deleter runs
      };
      auto mapped = std::make_shared<Mapped>();
      mapped->owner = std::move(a->keep_alive);
      try {
        mapped->registration =
            register_host(ctx, HostView(reinterpret_cast<void *>(uintptr_t(a->ptr)), {int64_t(a->size)}, dtypes::uint8),
                          HostMemoryFlags{false, true, false});
      } catch (const Error &e) {
        if (e.status() != Status::ERROR_ALREADY_REGISTERED) throw;
      }
      a->keep_alive = std::move(mapped);
    }
  } else {
    a->size = 1;  // nothing is ever read; keeps DeviceArray's checks simple
  }
  return DeviceArray(detail::Access::wrap<DeviceMemory>(a), layout, dtype);
}

template <class Managed>
DeviceArray import_managed(const Context &ctx, Managed *m, const Stream *producer, const Stream *consumer,
                           uint64_t flags) {
  if (!m) throw Error(Status::ERROR_INVALID_VALUE, "from_dlpack: null tensor");
  // From here the tensor is ours: the deleter runs exactly once, when the
  // last view goes or now if the import fails.
  std::shared_ptr<void> owner(m, [](void *p) {
    auto *t = static_cast<Managed *>(p);
    if (t->deleter) t->deleter(t);
  });
  if (flags & dlpack::kFlagReadOnly)
    throw Error(Status::ERROR_NOT_SUPPORTED, "from_dlpack: read-only tensors cannot be imported as writable arrays");
  DeviceArray out = import_tensor(ctx, m->dl_tensor, owner);
  apply_stream_rule(producer, consumer);
  return out;
}

}  // namespace

dlpack::DLDevice dlpack_device(const Context &ctx) {
  const std::string &backend = ctx.device().runtime().backend_name();
  const int32_t type = backend == "host"   ? dlpack::kDLCPU
                       : backend == "cuda" ? dlpack::kDLCUDA
                       : backend == "hsa"  ? dlpack::kDLROCM
                                           : dlpack::kDLExtDev;
  // The host backend's memory is plain CPU memory: one CPU device.
  return dlpack::DLDevice{type, type == dlpack::kDLCPU ? 0 : ctx.device().ordinal()};
}

dlpack::DLManagedTensorVersioned *to_dlpack_versioned(const DeviceArray &array, const Stream *producer,
                                                      const Stream *consumer) {
  auto *m = export_array<DLManagedTensorVersioned>(array, producer, consumer);
  m->version = dlpack::DLPackVersion{dlpack::kMajorVersion, dlpack::kMinorVersion};
  m->flags = 0;
  return m;
}

dlpack::DLManagedTensor *to_dlpack(const DeviceArray &array, const Stream *producer, const Stream *consumer) {
  return export_array<DLManagedTensor>(array, producer, consumer);
}

DeviceArray from_dlpack(const Context &ctx, DLManagedTensorVersioned *tensor, const Stream *producer,
                        const Stream *consumer) {
  if (tensor && tensor->version.major != dlpack::kMajorVersion) {
    const uint32_t major = tensor->version.major;
    if (tensor->deleter) tensor->deleter(tensor);
    throw Error(Status::ERROR_NOT_SUPPORTED,
                "from_dlpack: DLPack major version " + std::to_string(major) + " (gpuhal reads major 1)");
  }
  return import_managed(ctx, tensor, producer, consumer, tensor ? tensor->flags : 0);
}

DeviceArray from_dlpack(const Context &ctx, DLManagedTensor *tensor, const Stream *producer, const Stream *consumer) {
  return import_managed(ctx, tensor, producer, consumer, 0);
}

}  // namespace gpuhal
