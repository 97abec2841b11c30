// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernels: compile portable kernel sources (or load prebuilt images) into a
// context, look kernels up, and launch them on a stream.
//
// A kernel source is written in gpuhal's portable dialect (C with the
// builtins of gpuhal/kernel_builtins.def; see docs/kernels.md) and runs on
// every backend: the backend lowers each builtin for its compiler.
//
//   auto module = gpuhal::Module::compile(ctx, R"(
//     GPUHAL_KERNEL void scale(GPUHAL_GLOBAL float *x, float a, int n) {
//       unsigned i = gpuhal_global_id(0);
//       if (i < n) x[i] *= a;
//     })");
//   auto scale = module.kernel("scale");
//   scale({(n + 255) / 256}, {256}, stream)(d_x, 2.0f, n);   // Numba's scale[grid, block, stream](...)
//
// Arguments (checked against the kernel's parameters, as scanned from the
// source): a DeviceArray (passed as a pointer, never copied; it must be
// contiguous and, when the parameter's element type is known, of that
// dtype), a MirroredArray (its device side is brought up to date before the
// launch, and marked changed after it unless the parameter points to const),
// a HostView or HostArray (Numba's conservative rule: copied to a temporary
// device array before the kernel and back after it, unless the view is
// read-only or the parameter points to const; the launch then synchronises
// its stream so that the host data is back when it returns), or a scalar
// (converted to the parameter's type: integers that fit, integers and floats
// to floating parameters; a float is never silently truncated to an integer).
//
// Thread safety: Module and Kernel are immutable handles; launches may come
// from several threads. Stream ordering: a launch is ordered on its stream
// like a copy. Lifetime: the module is unloaded through the context's
// deferred deallocation queue when its last handle goes (a flush waits for
// the context's work first), so launches still queued run their code, and
// dropping the last handle never blocks, also in a stream callback.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "gpuhal/context.hpp"
#include "gpuhal/device_array.hpp"
#include "gpuhal/host_array.hpp"
#include "gpuhal/mirrored_array.hpp"
#include "gpuhal/stream.hpp"

namespace gpuhal {

namespace detail {
struct ModuleImpl;
struct KernelEntry;
struct ModuleAccess;
}  // namespace detail

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  Dim3() = default;
  Dim3(uint32_t x_, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}  // NOLINT: implicit on purpose
};

enum class ImageFormat : uint32_t { HostSharedObject = 1, Ptx = 2, Cubin = 3, Hsaco = 4 };
const char *to_string(ImageFormat format);

struct ModuleOptions {
  // Extra options for the backend's compiler (space separated).
  std::string compiler_options;
  // Adds a constant array (Numba's cuda.const.array_like): `data` is copied
  // now and baked into the module as `GPUHAL_CONSTANT T name[n0][n1]...`
  // with the data's shape (a 0-d or empty one as `name[1]`), where T is
  // the C type of its dtype (float, double, int8_t ... uint64_t); the kernel
  // refers to it by name. Any contiguous layout is read in C order. Throws
  // ERROR_INVALID_VALUE for a bad or repeated name, ERROR_INVALID_DTYPE for a
  // dtype without a C type.
  ModuleOptions &constant(const std::string &name, const HostView &data);

  struct Constant {
    std::string name;
    DType dtype;
    std::vector<unsigned char> bytes;  // the elements in C order
    std::vector<int64_t> shape;        // the host data's shape (the array's dimensions)
  };
  std::vector<Constant> constants;
};

// One kernel argument; built implicitly from what a kernel accepts.
class KernelArg {
 public:
  enum class Kind { Device, Mirrored, Host, Scalar };
  KernelArg(const DeviceArray &a) : kind_(Kind::Device), device_(a) {}        // NOLINT
  KernelArg(const MirroredArray &a) : kind_(Kind::Mirrored), mirrored_(a) {}  // NOLINT
  KernelArg(const HostView &v) : kind_(Kind::Host), host_(v) {}               // NOLINT
  KernelArg(const HostArray &a) : kind_(Kind::Host), host_(a.view()) {}       // NOLINT
  template <class T, class = std::enable_if_t<std::is_arithmetic<T>::value && !std::is_same<T, bool>::value>>
  KernelArg(T value) : kind_(Kind::Scalar), dtype_(dtype_of<T>()) {  // NOLINT
    static_assert(sizeof(T) <= sizeof scalar_, "scalar too large");
    std::memcpy(scalar_, &value, sizeof value);
  }

  Kind kind() const { return kind_; }
  const DeviceArray &device() const { return device_ref_ ? *device_ref_ : device_; }
  const MirroredArray &mirrored() const { return mirrored_; }
  const HostView &host() const { return host_; }
  DType scalar_dtype() const { return dtype_; }
  const unsigned char *scalar_bytes() const { return scalar_; }

 private:
  friend class ConfiguredKernel;
  // A device array argument that refers to the caller's array instead of
  // copying it (its layout): only for kernel(...)(args...), whose
  // arguments outlive the launch call.
  static KernelArg borrow(const DeviceArray &a) {
    KernelArg k(Kind::Device);
    k.device_ref_ = &a;
    return k;
  }
  explicit KernelArg(Kind kind) : kind_(kind) {}
  template <class T>
  static KernelArg borrow(const T &v) {
    return KernelArg(v);
  }
  Kind kind_;
  const DeviceArray *device_ref_ = nullptr;
  DeviceArray device_;
  MirroredArray mirrored_;
  HostView host_;
  DType dtype_;
  unsigned char scalar_[8] = {};
};

class Kernel;
class ConfiguredKernel;

class Module {
 public:
  Module() = default;
  // Lowers `source` for ctx's backend, compiles and loads it. Throws
  // ERROR_NOT_SUPPORTED on a backend without kernels (Capability::Kernels),
  // ERROR_COMPILATION_FAILED with the compiler's messages.
  static Module compile(const Context &ctx, const std::string &source, const ModuleOptions &options = {});
  // Loads a prebuilt image (PTX, cubin, code object, host shared object).
  // Prebuilt images carry no parameter lists: arguments are passed as given
  // (arrays as device pointers, scalars at their own size), unchecked.
  static Module load(const Context &ctx, ImageFormat format, const void *image, size_t bytes);

  // ERROR_NOT_FOUND for a name that is not a kernel of the module.
  Kernel kernel(const std::string &name) const;
  // Kernels found in the source, in order (empty for a prebuilt image).
  std::vector<std::string> kernel_names() const;
  // The text the backend compiled: its lowering of every builtin, the
  // constant arrays, then the source ("" for a prebuilt image).
  const std::string &lowered_source() const;
  // The compiled image (PTX text, a shared object ...) and its format.
  const std::string &image() const;
  ImageFormat image_format() const;
  Context context() const;
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  friend class Kernel;
  friend struct detail::ModuleAccess;
  std::shared_ptr<detail::ModuleImpl> impl_;
};

// What a kernel needs and allows on its backend (Kernel::attributes).
// Sizes in bytes; a count the backend does not have is 0.
struct KernelAttributes {
  uint32_t max_threads_per_block = 0;     // the largest block this kernel launches with
  uint32_t static_shared_bytes = 0;       // shared memory the kernel declares
  uint32_t max_dynamic_shared_bytes = 0;  // the most dynamic shared memory a launch may add
  uint32_t local_bytes_per_thread = 0;    // private / local / stack memory per work-item
  uint32_t registers_per_thread = 0;      // 0 on the host backend
  uint32_t preferred_block_multiple = 1;  // warp / wavefront size (1 on host)
};

// A block size for a kernel (Kernel::suggest_block_size): `block` work-items
// per block keeps the most work-items resident per compute unit, and
// `min_grid` blocks fill every unit of the device once.
struct BlockSizeSuggestion {
  uint32_t block = 0;
  uint32_t min_grid = 0;
};

class Kernel {
 public:
  Kernel() = default;
  const std::string &name() const;
  // Parameters in the source (-1 for a kernel of a prebuilt image).
  int parameter_count() const;

  // ---- Attributes and occupancy (Capability::KernelAttributes; else
  // ERROR_NOT_SUPPORTED). cuda: cuFuncGetAttribute and the driver's
  // occupancy calculator; hsa: the code object's metadata and the agent's
  // limits; host: one work-group at a time per worker thread.
  KernelAttributes attributes() const;
  // Blocks of `block_threads` work-items (> 0, else ERROR_INVALID_VALUE)
  // with `dynamic_shared_bytes` that can be resident at once on one compute
  // unit (a multiprocessor, a CU, a host worker): 0 when such a block cannot
  // launch at all.
  uint32_t max_active_blocks_per_unit(uint32_t block_threads, uint32_t dynamic_shared_bytes = 0) const;
  // The block size that keeps the most work-items resident per compute
  // unit (the larger one on a tie), tried in steps of the preferred block
  // multiple up to max_threads_per_block, as cuOccupancyMaxPotentialBlockSize
  // does; min_grid is the blocks that fill the device once. The same rule
  // on every backend.
  BlockSizeSuggestion suggest_block_size(uint32_t dynamic_shared_bytes = 0) const;
  Module module() const;

  // Launches on `stream`. grid in work-groups, block in work-items;
  // shared_bytes of dynamic shared memory. Throws ERROR_INVALID_VALUE for a
  // zero or too large grid / block, a wrong argument count or type, an array
  // whose data is not aligned to its elements (a GPU would fault on it),
  // ERROR_INVALID_DTYPE / ERROR_NOT_CONTIGUOUS for unusable arrays; nothing
  // is queued then and the context stays usable.
  void launch(Dim3 grid, Dim3 block, const std::vector<KernelArg> &args, const Stream &stream,
              uint32_t shared_bytes = 0) const;
  // The same with `count` arguments at `args`.
  void launch(Dim3 grid, Dim3 block, const KernelArg *args, size_t count, const Stream &stream,
              uint32_t shared_bytes = 0) const;
  // On the context's default stream.
  void launch(Dim3 grid, Dim3 block, const std::vector<KernelArg> &args, uint32_t shared_bytes = 0) const;

  // Numba's kernel[grid, block, stream, shared](args...):
  // kernel(grid, block, stream, shared)(args...).
  ConfiguredKernel operator()(Dim3 grid, Dim3 block, const Stream &stream, uint32_t shared_bytes = 0) const;
  // On the context's default stream.
  ConfiguredKernel operator()(Dim3 grid, Dim3 block) const;
  explicit operator bool() const { return module_ != nullptr; }

 private:
  friend class Module;
  friend class GraphExec;
  // Graphs (graph.cpp): a launch on a capturing stream, recorded with what
  // it names kept alive; and the arguments of one as the plugin takes them
  // (device arrays and scalars only), with the memory they name in *kept.
  void launch_captured(const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes, const KernelArg *args,
                       size_t count, const Stream &stream) const;
  void pack_args(const KernelArg *args, size_t count, const char *call, std::vector<uint64_t> *values,
                 std::vector<std::shared_ptr<const void>> *kept) const;
  std::shared_ptr<detail::ModuleImpl> module_;
  const detail::KernelEntry *entry_ = nullptr;  // owned by module_
};

// A kernel with its launch configuration; calling it launches.
class ConfiguredKernel {
 public:
  template <class... A>
  void operator()(const A &...args) const {
    if constexpr (sizeof...(A) == 0) {
      kernel_.launch(grid_, block_, nullptr, 0, stream_, shared_);
    } else {
      // On the stack, device arrays borrowed: nothing allocated per launch.
      const KernelArg list[] = {KernelArg::borrow(args)...};
      kernel_.launch(grid_, block_, list, sizeof...(A), stream_, shared_);
    }
  }

 private:
  friend class Kernel;
  ConfiguredKernel(Kernel k, Dim3 g, Dim3 b, Stream s, uint32_t sh)
      : kernel_(std::move(k)), grid_(g), block_(b), stream_(std::move(s)), shared_(sh) {}
  Kernel kernel_;
  Dim3 grid_, block_;
  Stream stream_;
  uint32_t shared_;
};

// Names of the dialect's builtins, in kernel_builtins.def order (see also
// Runtime::kernel_lowering).
const std::vector<std::string> &kernel_builtins();

}  // namespace gpuhal
