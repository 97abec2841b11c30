// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DLPack capsules (the Python array API's __dlpack__ / from_dlpack).
//
// A capsule named "dltensor_versioned" (DLPack 1.x) or "dltensor" (legacy)
// carries a tensor the consumer takes by renaming the capsule to
// "used_dltensor[_versioned]"; a capsule nobody took runs the tensor's
// deleter when it is collected (the DLPack Python specification).
#include "bindings.hpp"

namespace gpuhal_py {
namespace {

constexpr const char *kVersioned = "dltensor_versioned";
constexpr const char *kLegacy = "dltensor";
constexpr const char *kUsedVersioned = "used_dltensor_versioned";
constexpr const char *kUsedLegacy = "used_dltensor";

template <class Tensor>
void delete_unused(PyObject *capsule, const char *name) {
  // A capsule destructor may run while an exception is set: keep it.
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (PyCapsule_IsValid(capsule, name)) {
    auto *tensor = static_cast<Tensor *>(PyCapsule_GetPointer(capsule, name));
    if (tensor && tensor->deleter) tensor->deleter(tensor);
  }
  PyErr_Restore(type, value, traceback);
}

void versioned_destructor(PyObject *capsule) {
  delete_unused<gpuhal::dlpack::DLManagedTensorVersioned>(capsule, kVersioned);
}
void legacy_destructor(PyObject *capsule) { delete_unused<gpuhal::dlpack::DLManagedTensor>(capsule, kLegacy); }

template <class Tensor, class Export>
nb::object export_capsule(Export export_tensor, const char *name, PyCapsule_Destructor destructor) {
  Tensor *t;
  {
    ReleasedCall unlocked;
    t = export_tensor();
  }
  PyObject *capsule = PyCapsule_New(t, name, destructor);
  if (!capsule) {
    t->deleter(t);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

nb::object to_capsule(const gpuhal::DeviceArray &a, bool versioned, std::optional<gpuhal::Stream> producer,
                      std::optional<gpuhal::Stream> consumer) {
  const gpuhal::Stream *p = stream_or_null(producer), *q = stream_or_null(consumer);
  if (versioned)
    return export_capsule<gpuhal::dlpack::DLManagedTensorVersioned>([&] { return gpuhal::to_dlpack_versioned(a, p, q); },
                                                                     kVersioned, versioned_destructor);
  return export_capsule<gpuhal::dlpack::DLManagedTensor>([&] { return gpuhal::to_dlpack(a, p, q); }, kLegacy,
                                                         legacy_destructor);
}

// A tensor from a Python producer: its deleter needs the GIL (NumPy's takes
// it with PyGILState_Ensure), and gpuhal may run it on a thread flushing
// the deferred deallocation queue while another thread holds the GIL and
// waits for that flush. So gpuhal gets a wrapper whose deleter runs the
// producer's with the GIL when it has it, and otherwise leaves it to the
// next drain (run_with_gil). The wrapper's fields point into the
// producer's tensor, which lives until its own deleter ran.
template <class Tensor>
Tensor *wrap_for_gil(Tensor *original) {
  if (!original || !original->deleter) return original;  // from_dlpack reports what is missing
  auto *w = new Tensor(*original);
  w->manager_ctx = original;
  w->deleter = [](Tensor *self) {
    auto *producer = static_cast<Tensor *>(self->manager_ctx);
    delete self;
    run_with_gil([producer] { producer->deleter(producer); });
  };
  return w;
}

template <class Tensor>
gpuhal::DeviceArray import_capsule(const gpuhal::Context &ctx, PyObject *c, const char *name, const char *used,
                                   const gpuhal::Stream *p, const gpuhal::Stream *q) {
  auto *t = static_cast<Tensor *>(PyCapsule_GetPointer(c, name));
  // Ours from here on (from_dlpack runs the deleter also when it throws).
  if (PyCapsule_SetName(c, used) != 0) throw nb::python_error();
  t = wrap_for_gil(t);
  ReleasedCall unlocked;
  return gpuhal::from_dlpack(ctx, t, p, q);
}

gpuhal::DeviceArray from_capsule(const gpuhal::Context &ctx, nb::handle capsule, std::optional<gpuhal::Stream> producer,
                                 std::optional<gpuhal::Stream> consumer) {
  PyObject *c = capsule.ptr();
  if (!PyCapsule_CheckExact(c)) throw nb::type_error("from_dlpack: __dlpack__() did not return a capsule");
  if (PyCapsule_IsValid(c, kUsedVersioned) || PyCapsule_IsValid(c, kUsedLegacy))
    throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "from_dlpack: the DLPack capsule was already consumed");
  const gpuhal::Stream *p = stream_or_null(producer), *q = stream_or_null(consumer);
  if (PyCapsule_IsValid(c, kVersioned))
    return import_capsule<gpuhal::dlpack::DLManagedTensorVersioned>(ctx, c, kVersioned, kUsedVersioned, p, q);
  if (PyCapsule_IsValid(c, kLegacy))
    return import_capsule<gpuhal::dlpack::DLManagedTensor>(ctx, c, kLegacy, kUsedLegacy, p, q);
  throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "from_dlpack: not a DLPack capsule");
}

// A foreign buffer described by the CUDA Array Interface (pointer, shape,
// strides in bytes, typestr) as a DLPack tensor of the context's device,
// keeping `owner` (the producer's object) alive until gpuhal lets it go.
struct ForeignTensor {
  gpuhal::dlpack::DLManagedTensor managed{};
  std::vector<int64_t> shape, strides;
  PyObject *owner = nullptr;
};

gpuhal::DeviceArray from_pointer(const gpuhal::Context &ctx, uint64_t pointer, const gpuhal::Shape &shape,
                                 const std::string &typestr, const gpuhal::Strides &strides, nb::handle owner) {
  const gpuhal::DType dtype = gpuhal::DType::parse(typestr);
  // DLPack reads one stride per axis: other counts would be read past.
  if (!strides.empty() && strides.size() != shape.size())
    throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_SHAPE,
                        "from_pointer: " + std::to_string(strides.size()) + " strides for a shape of " +
                            std::to_string(shape.size()) + " axes");
  auto t = std::make_unique<ForeignTensor>();
  t->shape = shape;
  for (int64_t s : strides) {
    if (s % int64_t(dtype.itemsize()) != 0)
      throw gpuhal::Error(gpuhal::Status::ERROR_NOT_SUPPORTED,
                          "from_cuda_array_interface: stride " + std::to_string(s) + " is not a multiple of the itemsize");
    t->strides.push_back(s / int64_t(dtype.itemsize()));
  }
  gpuhal::dlpack::DLTensor &d = t->managed.dl_tensor;
  d.data = reinterpret_cast<void *>(uintptr_t(pointer));
  d.device = gpuhal::dlpack_device(ctx);
  d.ndim = int32_t(shape.size());
  d.dtype = gpuhal::dlpack::DLDataType{uint8_t(dtype.kind), dtype.bits, dtype.lanes};
  d.shape = t->shape.empty() ? nullptr : t->shape.data();
  d.strides = strides.empty() ? nullptr : t->strides.data();
  t->owner = owner.inc_ref().ptr();
  t->managed.manager_ctx = t.get();
  t->managed.deleter = [](gpuhal::dlpack::DLManagedTensor *self) {
    auto *foreign = static_cast<ForeignTensor *>(self->manager_ctx);
    PyObject *o = foreign->owner;
    delete foreign;
    run_with_gil([o] { Py_DECREF(o); });
  };
  gpuhal::dlpack::DLManagedTensor *raw = &t.release()->managed;
  ReleasedCall unlocked;
  return gpuhal::from_dlpack(ctx, raw);  // runs the deleter also when it throws
}

}  // namespace

void bind_dlpack(nb::module_ &m) {
  m.def("from_pointer", &from_pointer, nb::arg("ctx"), nb::arg("pointer"), nb::arg("shape"), nb::arg("typestr"),
        nb::arg("strides"), nb::arg("owner").none(),
        "A device array over foreign device memory (the CUDA Array Interface's description), owner kept alive");
  m.def("to_dlpack", &to_capsule, nb::arg("array"), nb::arg("versioned"), nb::arg("producer").none(),
        nb::arg("consumer").none());
  m.def("from_dlpack", &from_capsule, nb::arg("ctx"), nb::arg("capsule"), nb::arg("producer").none(),
        nb::arg("consumer").none());
  m.def("dlpack_device", [](const gpuhal::Context &ctx) {
    gpuhal::dlpack::DLDevice d = gpuhal::dlpack_device(ctx);
    return nb::make_tuple(d.device_type, d.device_id);
  });
}

}  // namespace gpuhal_py
