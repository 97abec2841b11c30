// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Inter-process memory over the plugin's ipc_* entries, and the text form of
// an IPC array handle.
#include "gpuhal/ipc.hpp"

#include <cstring>
#include <sstream>

#include "allocation.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"

namespace gpuhal {
namespace {

using detail::ContextImpl;

const std::shared_ptr<ContextImpl> &require_ipc(const std::shared_ptr<ContextImpl> &c, const char *what) {
  if (!c) throw Error(Status::ERROR_INVALID_HANDLE, std::string(what) + ": null context");
  c->check_alive(c->current_generation(), what);
  if (!c->backend().has_ipc_get_handle())
    throw Error(Status::ERROR_NOT_SUPPORTED,
                std::string(what) + ": backend '" + c->lib().name() + "' cannot share memory between processes");
  return c;
}

[[noreturn]] void bad_text(const std::string &why) {
  throw Error(Status::ERROR_INVALID_IPC_HANDLE, "IpcArrayHandle::deserialize: " + why);
}

uint64_t parse_u64(const std::string &key, const std::string &v) {
  if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos)
    bad_text(key + "='" + v + "' is not a non-negative integer");
  uint64_t out = 0;
  for (char ch : v) {
    const uint64_t d = uint64_t(ch - '0');
    if (out > (UINT64_MAX - d) / 10) bad_text(key + "='" + v + "' is too large");
    out = out * 10 + d;
  }
  return out;
}

int64_t parse_i64(const std::string &key, const std::string &v) {
  const bool neg = !v.empty() && v[0] == '-';
  const uint64_t mag = parse_u64(key, neg ? v.substr(1) : v);
  if (mag > uint64_t(INT64_MAX)) bad_text(key + "='" + v + "' is out of range");
  return neg ? -int64_t(mag) : int64_t(mag);
}

std::vector<int64_t> parse_list(const std::string &key, const std::string &v) {
  std::vector<int64_t> out;
  if (v.empty()) return out;  // 0-d
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    out.push_back(parse_i64(key, v.substr(start, comma - start)));
    if (out.size() > 64) bad_text(key + " has more than 64 dimensions");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string to_hex(const unsigned char *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

// The user API's handle bytes and the plugin ABI's are the same 64 bytes.
static_assert(sizeof(NativeIpcHandle) == sizeof(gpuhal_ipc_handle_t), "IPC handle sizes differ");
gpuhal_ipc_handle_t to_abi(const NativeIpcHandle &h) {
  gpuhal_ipc_handle_t out;
  std::memcpy(out.bytes, h.bytes, sizeof out.bytes);
  return out;
}

// Maps the handle and wraps [offset, offset+size) of it in a non-owning
// allocation that unmaps when its last user goes.
DeviceMemory open_memory(const std::shared_ptr<ContextImpl> &c, const IpcHandle &h) {
  gpuhal_deviceptr_t base = 0;
  uint64_t bytes = 0;
  const gpuhal_ipc_handle_t abi = to_abi(h.handle);
  c->backend().ipc_open(c->handle, &abi, &base, &bytes);
  const uint64_t gen = c->current_generation();
  // Unmapped through the deferred queue, as device memory is freed: a copy
  // from the mapping may still be queued on a stream when its last handle
  // goes, and a flush waits for the context's work first. A reset unmaps it
  // itself; a failure leaves it to the context's destruction or reset.
  auto close = [c, gen](void *p) {
    ContextImpl *ctx = c.get();
    const gpuhal_deviceptr_t ptr = gpuhal_deviceptr_t(reinterpret_cast<uintptr_t>(p));
    c->defer_release(gen, 0, [ctx, ptr] { return ctx->backend().ipc_close_status(ctx->handle, ptr); }, "ipc_close");
  };
  std::shared_ptr<void> mapping(reinterpret_cast<void *>(uintptr_t(base)), close);
  if (h.offset > bytes || h.size > bytes - h.offset)
    throw Error(Status::ERROR_INVALID_IPC_HANDLE, "open_ipc_array: the handle describes bytes [" +
                                                      std::to_string(h.offset) + ", +" + std::to_string(h.size) +
                                                      ") but the shared allocation has " + std::to_string(bytes));
  auto a = std::make_shared<detail::Allocation>();
  a->ctx = c;
  a->ptr = base + h.offset;
  a->size = h.size;
  a->generation = gen;
  a->owns_device_memory = false;
  a->keep_alive = std::move(mapping);
  return detail::Access::wrap<DeviceMemory>(a);
}

}  // namespace

IpcHandle detail::backend_ipc_handle(const DeviceMemory &mem, uint64_t offset, uint64_t size) {
  if (!mem) throw Error(Status::ERROR_INVALID_HANDLE, "get_ipc_handle: empty DeviceMemory");
  const auto &c = require_ipc(detail::impl_of(mem)->ctx, "get_ipc_handle");
  c->check_alive(detail::impl_of(mem)->generation, "get_ipc_handle");
  if (size == 0) throw Error(Status::ERROR_INVALID_VALUE, "get_ipc_handle: size must be positive");
  if (offset > mem.size() || size > mem.size() - offset)
    throw Error(Status::ERROR_INDEX_OUT_OF_RANGE, "get_ipc_handle: bytes [" + std::to_string(offset) + ", +" +
                                                      std::to_string(size) + ") are outside the memory of " +
                                                      std::to_string(mem.size()) + " bytes");
  IpcHandle h;
  gpuhal_deviceptr_t base = 0;
  uint64_t bytes = 0;
  const gpuhal_deviceptr_t first = mem.device_pointer() + offset;
  gpuhal_ipc_handle_t abi{};
  // Another process may map it from now on: never an idle block (memory.cpp).
  detail::impl_of(mem)->exported.store(true, std::memory_order_relaxed);
  c->backend().ipc_get_handle(c->handle, first, &abi, &base, &bytes);
  std::memcpy(h.handle.bytes, abi.bytes, sizeof abi.bytes);
  if (first < base || first - base > bytes || size > bytes - (first - base))
    throw Error(Status::ERROR_INVALID_PLUGIN,
                "get_ipc_handle: the backend's allocation range does not contain the "
                "shared bytes");
  h.offset = first - base;
  h.size = size;
  h.backend = c->lib().name();
  const auto &p = c->device->properties;
  h.pci_domain = p.pci_domain;
  h.pci_bus = p.pci_bus;
  h.pci_device = p.pci_device;
  h.exported_here = true;
  return h;
}

IpcHandle get_ipc_handle(const DeviceMemory &mem, uint64_t offset, uint64_t size) {
  if (!mem) throw Error(Status::ERROR_INVALID_HANDLE, "get_ipc_handle: empty DeviceMemory");
  const auto &c = detail::impl_of(mem)->ctx;
  c->check_alive(detail::impl_of(mem)->generation, "get_ipc_handle");
  return c->manager->get_ipc_handle(mem, offset, size);  // the manager knows its allocations' bases
}

IpcArrayHandle get_ipc_handle(const DeviceArray &array) {
  if (array.size() == 0)
    throw Error(Status::ERROR_INVALID_VALUE, "get_ipc_handle: a zero-size array has no memory to share");
  const Layout &l = array.layout();
  IpcArrayHandle out;
  out.memory = get_ipc_handle(array.memory(), uint64_t(l.span_begin()), uint64_t(l.span_bytes()));
  out.shape = array.shape();
  out.strides = array.strides();
  out.dtype = array.dtype();
  out.first_element = l.offset() - l.span_begin();
  return out;
}

std::string IpcArrayHandle::serialize() const {
  const IpcHandle &m = memory;
  std::ostringstream os;
  os << "gpuhal-ipc 1 backend=" << m.backend << " handle=" << to_hex(m.handle.bytes, sizeof m.handle.bytes)
     << " offset=" << m.offset << " size=" << m.size << " pci=" << m.pci_domain << ':' << m.pci_bus << ':'
     << m.pci_device << " dtype=" << dtype.typestr() << " shape=" << join(shape) << " strides=" << join(strides)
     << " first=" << first_element;
  return os.str();
}

IpcArrayHandle IpcArrayHandle::deserialize(const std::string &text) {
  std::istringstream is(text);
  std::string magic, version, field;
  if (!(is >> magic >> version) || magic != "gpuhal-ipc") bad_text("not a gpuhal IPC handle");
  if (version != "1") bad_text("handle format version '" + version + "' is not 1");
  IpcArrayHandle out;
  out.memory.exported_here = false;
  unsigned seen = 0;
  const char *const keys[] = {"backend", "handle", "offset", "size", "pci", "dtype", "shape", "strides", "first"};
  while (is >> field) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos) bad_text("'" + field + "' is not key=value");
    const std::string key = field.substr(0, eq), v = field.substr(eq + 1);
    unsigned bit = 0;
    for (unsigned i = 0; i < std::size(keys); ++i)
      if (key == keys[i]) bit = 1u << i;
    if (!bit) bad_text("unknown field '" + key + "'");
    if (seen & bit) bad_text("field '" + key + "' appears twice");
    seen |= bit;
    if (key == "backend") {
      if (v.empty()) bad_text("empty backend name");
      out.memory.backend = v;
    } else if (key == "handle") {
      if (v.size() != 2 * GPUHAL_IPC_HANDLE_SIZE || v.find_first_not_of("0123456789abcdef") != std::string::npos)
        bad_text("handle must be " + std::to_string(2 * GPUHAL_IPC_HANDLE_SIZE) + " lowercase hex digits");
      for (size_t i = 0; i < GPUHAL_IPC_HANDLE_SIZE; ++i)
        out.memory.handle.bytes[i] = static_cast<unsigned char>(std::stoul(v.substr(2 * i, 2), nullptr, 16));
    } else if (key == "offset") {
      out.memory.offset = parse_u64(key, v);
    } else if (key == "size") {
      out.memory.size = parse_u64(key, v);
    } else if (key == "pci") {
      const size_t a = v.find(':'), b = v.find(':', a == std::string::npos ? a : a + 1);
      if (a == std::string::npos || b == std::string::npos) bad_text("pci must be domain:bus:device");
      const int64_t d = parse_i64(key, v.substr(0, a)), bu = parse_i64(key, v.substr(a + 1, b - a - 1)),
                    de = parse_i64(key, v.substr(b + 1));
      if (d > INT32_MAX || bu > INT32_MAX || de > INT32_MAX || d < 0 || bu < 0 || de < 0)
        bad_text("pci ids out of range");
      out.memory.pci_domain = int32_t(d);
      out.memory.pci_bus = int32_t(bu);
      out.memory.pci_device = int32_t(de);
    } else if (key == "dtype") {
      try {
        out.dtype = DType::parse(v);
      } catch (const Error &e) {
        bad_text(e.what());
      }
    } else if (key == "shape") {
      out.shape = parse_list(key, v);
    } else if (key == "strides") {
      out.strides = parse_list(key, v);
    } else {
      out.first_element = parse_i64(key, v);
    }
  }
  if (seen != (1u << std::size(keys)) - 1) bad_text("fields are missing");
  if (out.shape.size() != out.strides.size()) bad_text("shape and strides differ in length");
  return out;
}

const DeviceArray &IpcArray::array() const {
  if (!array_.memory()) throw Error(Status::ERROR_INVALID_HANDLE, "IpcArray::array: not open (closed or empty)");
  return array_;
}

void IpcArray::close() {
  if (!array_.memory()) throw Error(Status::ERROR_INVALID_HANDLE, "IpcArray::close: not open");
  array_ = DeviceArray();
}

IpcArray open_ipc_array(const Context &ctx, const IpcArrayHandle &h) {
  const auto &c = require_ipc(detail::impl_of(ctx), "open_ipc_array");
  if (h.memory.exported_here)
    throw Error(Status::ERROR_INVALID_VALUE,
                "open_ipc_array: the handle was exported by this process; open it in another one (serialize it)");
  if (h.memory.backend != c->lib().name())
    throw Error(Status::ERROR_INVALID_IPC_HANDLE, "open_ipc_array: the handle comes from backend '" + h.memory.backend +
                                                      "', this context's is '" + c->lib().name() + "'");
  h.dtype.validate();
  // The layout as made from shape and strides, moved so element 0 sits
  // where the exporter said; it must fit in the shared bytes.
  const Layout made = Layout::make(h.shape, h.dtype.itemsize(), h.strides);
  if (made.size() == 0) throw Error(Status::ERROR_INVALID_SHAPE, "open_ipc_array: zero-size shape");
  const Layout layout = made.with_offset(h.first_element);
  if (layout.span_begin() < 0 || uint64_t(layout.span_end()) > h.memory.size)
    throw Error(Status::ERROR_INVALID_SHAPE, "open_ipc_array: the array spans bytes [" +
                                                 std::to_string(layout.span_begin()) + ", " +
                                                 std::to_string(layout.span_end()) + ") of a shared range of " +
                                                 std::to_string(h.memory.size) + " bytes");
  IpcArray out;
  out.array_ = DeviceArray(open_memory(c, h.memory), layout, h.dtype);
  return out;
}

IpcArray open_ipc_array(const Context &ctx, const NativeIpcHandle &handle, const Shape &shape, DType dtype,
                        const Strides &strides, uint64_t offset) {
  const auto &c = require_ipc(detail::impl_of(ctx), "open_ipc_array");
  dtype.validate();
  const Layout made = Layout::make(shape, dtype.itemsize(), strides);
  IpcArrayHandle h;
  h.memory.handle = handle;
  h.memory.backend = c->lib().name();
  h.memory.offset = offset;
  h.memory.size = uint64_t(made.span_bytes());
  h.shape = shape;
  h.strides = made.strides();
  h.dtype = dtype;
  h.first_element = made.offset() - made.span_begin();
  return open_ipc_array(ctx, h);
}

}  // namespace gpuhal
