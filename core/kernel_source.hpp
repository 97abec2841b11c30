// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The core's reading of a kernel source in the portable dialect.
//
// The core does not compile anything; it scans the source once to learn
// what every backend needs alike: the kernels (GPUHAL_KERNEL functions),
// their parameters (to check launch arguments the same way everywhere) and
// which kernels have work-group barriers (the host backend runs barrier-free
// kernels as a plain loop). It also writes the text the backend compiles:
// the plugin's lowering of each builtin, the constant arrays, then the
// source. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuhal/dtype.hpp"

namespace gpuhal::detail {

struct KernelParam {
  std::string name;       // may be empty (unnamed parameter)
  std::string type_text;  // as written, qualifiers included
  bool pointer = false;
  bool is_const = false;  // pointer to const (the kernel does not write through it)
  // Element type of a pointer, or the scalar's type; nullopt when gpuhal
  // does not know the type (a pointer to a struct or void: any array fits;
  // a scalar of an unknown type cannot be passed).
  std::optional<DType> dtype;
};

struct KernelDecl {
  std::string name;
  std::vector<KernelParam> params;
  bool uses_barrier = false;
};

struct ScannedSource {
  std::vector<KernelDecl> kernels;
};

// Finds the kernels of `source`. A kernel that contains gpuhal_barrier, or
// any kernel when gpuhal_barrier appears outside kernel bodies (a device
// function or a macro may use it), is marked uses_barrier. Throws
// ERROR_COMPILATION_FAILED for a malformed GPUHAL_KERNEL declaration (with
// its line number), a kernel defined twice, or a source without kernels.
ScannedSource scan_kernel_source(const std::string &source);

// One constant array for ModuleOptions: emitted as
// `GPUHAL_CONSTANT <c type> name[n] = { exact literals };`.
struct ConstantArray {
  std::string name;
  DType dtype;
  const void *data = nullptr;
  uint64_t count = 0;
  std::vector<int64_t> shape;  // the dimensions; empty: one dimension of `count`
};
// The C text of a constant array (exact: floats as hex literals). Throws
// ERROR_INVALID_VALUE for a name that is not a C identifier, and
// ERROR_INVALID_DTYPE for a dtype without a C type (complex, float16...).
std::string constant_array_text(const ConstantArray &c);

// The C type name of a dtype in the dialect ("float", "int32_t"), or "" when
// it has none.
std::string c_type_name(DType dtype);

}  // namespace gpuhal::detail
