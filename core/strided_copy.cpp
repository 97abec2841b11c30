// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "strided_copy.hpp"

#include <cstring>

namespace gpuhal::detail {
namespace {

void copy_rec(char *dst, const int64_t *ds, const char *src, const int64_t *ss, const int64_t *shape, int ndim,
              int64_t itemsize) {
  if (ndim == 0) {
    std::memcpy(dst, src, size_t(itemsize));
    return;
  }
  if (ndim == 1) {
    if (ds[0] == itemsize && ss[0] == itemsize) {
      std::memcpy(dst, src, size_t(shape[0] * itemsize));
      return;
    }
    for (int64_t i = 0; i < shape[0]; ++i) std::memcpy(dst + i * ds[0], src + i * ss[0], size_t(itemsize));
    return;
  }
  for (int64_t i = 0; i < shape[0]; ++i)
    copy_rec(dst + i * ds[0], ds + 1, src + i * ss[0], ss + 1, shape + 1, ndim - 1, itemsize);
}

}  // namespace

void copy_elements(const HostView &dst, const HostView &src) {
  if (dst.shape() != src.shape() || dst.layout().itemsize() != src.layout().itemsize())
    throw Error(Status::ERROR_INCOMPATIBLE, "copy_elements: shape or itemsize differ");
  if (src.size() == 0) return;
  copy_rec(static_cast<char *>(dst.data()), dst.strides().data(), static_cast<const char *>(src.data()),
           src.strides().data(), src.shape().data(), src.ndim(), src.layout().itemsize());
}

}  // namespace gpuhal::detail
