// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// How the core reaches the implementation objects behind the public handles.
//
// Ownership (design §4): handles hold shared_ptrs to these. A ContextImpl
// holds its RuntimeImpl (so the plugin stays loaded); streams, events and
// allocations hold their ContextImpl. Devices live inside the RuntimeImpl and
// are handed out with shared_ptr's aliasing constructor, so a Device handle
// keeps the runtime alive without a reference cycle. The primary context is
// cached weakly: it is released when nothing uses it (CUDA's primary-context
// retain/release).
//
// One header per object: runtime_impl.hpp (RuntimeImpl, DeviceImpl),
// context_impl.hpp (ContextImpl, ContextChild), stream_impl.hpp (StreamImpl,
// EventImpl), allocation.hpp (Allocation and the backend's allocation
// services); each core file includes the ones it uses, and this one where
// it turns a handle into its impl or back.
#pragma once

#include <memory>
#include <utility>

namespace gpuhal::detail {

// The core's way into the public handles, whose impls and impl
// constructors are private (friends of Access only): the impl behind a
// handle, and a handle over an impl.
struct Access {
  template <class Handle>
  static const auto &impl(const Handle &h) {
    return h.impl_;
  }
  template <class Handle, class Impl>
  static Handle wrap(Impl &&impl) {
    return Handle(std::forward<Impl>(impl));
  }
};
template <class Handle>
const auto &impl_of(const Handle &h) {
  return Access::impl(h);
}

// The impl of a public handle, or ERROR_INVALID_HANDLE naming the call when
// the handle is empty (moved from, or default-constructed).
// The check is inline and the throw out of line: every call of every
// object makes it, and a call to it was a fifth of the core's dispatch cost.
[[noreturn]] void throw_empty_handle(const char *what);
template <class T>
inline const std::shared_ptr<T> &require_handle(const std::shared_ptr<T> &impl, const char *what) {
  if (__builtin_expect(!impl, 0)) throw_empty_handle(what);
  return impl;
}

}  // namespace gpuhal::detail
