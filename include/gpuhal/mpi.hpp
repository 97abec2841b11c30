// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal::mpi -- device arrays as MPI buffers. Header-only and optional: the
// CMake target gpuhal::mpi (gpuhal::gpuhal plus the MPI found by
// find_package(MPI)) exists when an MPI is found; libgpuhal itself never
// depends on MPI. This is not a communication layer: every function is one
// MPI call on a buffer gpuhal prepares (docs/scale-out.md).
//
// Two paths, chosen per call (Options::path):
//  - pass-through: MPI gets the array's device pointer. Chosen automatically
//    when this process's MPI reads and writes the backend's device memory
//    (accepts_device_memory()) and the array is C-contiguous.
//  - staged: the elements go through page-locked host buffers, copied on
//    the caller's stream (any layout). Used otherwise.
//
// Stream rule: the work that writes a sent array, or that uses an array
// about to be received into, is on `stream`. Before MPI touches device
// memory, gpuhal synchronizes `stream` (MPI knows nothing of streams). When
// a receive returns (or its Request's wait() does) the data is in the
// device array and `stream` is idle.
//
// The message: the array's elements in C (row-major) order as `count`
// elements of the dtype's MPI datatype (datatype_of); dtypes MPI has no
// name for (float16, bfloat16, records) travel as MPI_BYTE and cannot be
// reduced. Sender and receiver agree on the element count and dtype, as
// with any MPI buffer; a receive of a longer message is MPI's truncation
// error.
//
// Errors are gpuhal::Error. MPI's own errors reach gpuhal only when the
// communicator returns them (MPI_ERRORS_RETURN; MPI's default aborts the
// job): then ERROR_DRIVER naming the MPI call and MPI's message.
//
// Thread safety: gpuhal's part is thread-safe; MPI calls follow the thread
// level MPI was initialised with. A Staging is for one thread at a time.
#pragma once

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // Open MPI's deprecated C++ bindings need libmpi_cxx
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support / MPIX_Query_rocm_support
#endif

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpuhal/device_array.hpp"
#include "gpuhal/host_memory.hpp"
#include "gpuhal/stream.hpp"

namespace gpuhal {
namespace mpi {

enum class Path {
  automatic,     // pass-through when possible, else staged
  pass_through,  // the device pointer to MPI; refused when MPI cannot take it
  staged,        // through page-locked host buffers, always possible
};

class Staging;

struct Options {
  Path path = Path::automatic;
  // Reuses page-locked buffers across calls (a halo exchange every
  // iteration); without one each staged call allocates its own.
  Staging *staging = nullptr;
};

namespace detail {

inline void check(int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(Status::ERROR_DRIVER, std::string(call) + ": " + std::string(text, size_t(length)));
}

inline void *address(const DeviceArray &a) {
  return reinterpret_cast<void *>(static_cast<uintptr_t>(a.device_pointer()));
}

}  // namespace detail

// True when this process's MPI reads and writes `ctx`'s device memory
// directly. The host backend's device memory is the process's own memory:
// always. cuda and hsa: what Open MPI's MPIX_Query_cuda_support() /
// MPIX_Query_rocm_support() answer at run time (false where the MPI has no
// such query: an MPI that cannot say is taken as unaware). Any other
// backend: false. Needs MPI to be initialised for the run-time queries.
inline bool accepts_device_memory(const Context &ctx) {
  const std::string &backend = ctx.device().runtime().backend_name();
  if (backend == "host") return true;
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  if (backend == "cuda") return MPIX_Query_cuda_support() == 1;
#endif
#if defined(MPIX_ROCM_AWARE_SUPPORT)
  if (backend == "hsa") return MPIX_Query_rocm_support() == 1;
#endif
  return false;
}

// The MPI datatype of a gpuhal dtype; MPI_DATATYPE_NULL where MPI has none
// (float16, bfloat16, records, vectors of lanes).
inline MPI_Datatype datatype_of(DType dtype) {
  if (dtype.lanes != 1) return MPI_DATATYPE_NULL;
  switch (dtype.kind) {
    case DTypeKind::Int:
      return dtype.bits == 8 ? MPI_INT8_T : dtype.bits == 16 ? MPI_INT16_T : dtype.bits == 32 ? MPI_INT32_T
             : dtype.bits == 64 ? MPI_INT64_T : MPI_DATATYPE_NULL;
    case DTypeKind::UInt:
      return dtype.bits == 8 ? MPI_UINT8_T : dtype.bits == 16 ? MPI_UINT16_T : dtype.bits == 32 ? MPI_UINT32_T
             : dtype.bits == 64 ? MPI_UINT64_T : MPI_DATATYPE_NULL;
    case DTypeKind::Float:
      return dtype.bits == 32 ? MPI_FLOAT : dtype.bits == 64 ? MPI_DOUBLE : MPI_DATATYPE_NULL;
    case DTypeKind::Complex:
      return dtype.bits == 64 ? MPI_C_FLOAT_COMPLEX : dtype.bits == 128 ? MPI_C_DOUBLE_COMPLEX : MPI_DATATYPE_NULL;
    case DTypeKind::Bool:
      return dtype.bits == 8 ? MPI_C_BOOL : MPI_DATATYPE_NULL;
    default:
      return MPI_DATATYPE_NULL;
  }
}

namespace detail {
struct StagingState {
  Context ctx;
  std::vector<HostArray> free;
};
}  // namespace detail

// Page-locked host buffers kept for reuse, handed out as leases. A lease
// keeps the pool's state alive, so a Staging may go before its leases; a
// buffer goes back when its lease (or the Request holding it) ends. Pinned
// memory needs Capability::HostMemory; without it the buffers are pageable.
class Staging {
 public:
  class Lease {
   public:
    Lease() = default;
    Lease(Lease &&) noexcept = default;
    Lease &operator=(Lease &&other) noexcept {
      give_back();
      buffer_ = std::move(other.buffer_);
      pool_ = std::move(other.pool_);
      return *this;
    }
    ~Lease() { give_back(); }
    void *data() const { return buffer_.view().data(); }
    uint64_t capacity() const { return uint64_t(buffer_.view().nbytes()); }

   private:
    friend class Staging;
    void give_back() {
      if (pool_) pool_->free.push_back(std::move(buffer_));
      pool_.reset();
    }
    HostArray buffer_;
    std::shared_ptr<detail::StagingState> pool_;
  };

  explicit Staging(Context ctx) : state_(std::make_shared<detail::StagingState>()) { state_->ctx = std::move(ctx); }

  // A buffer of at least `bytes` bytes (> 0): the smallest free one that
  // fits, else a new one.
  Lease acquire(uint64_t bytes) {
    auto &free = state_->free;
    size_t best = free.size();
    for (size_t i = 0; i < free.size(); ++i) {
      const uint64_t have = uint64_t(free[i].view().nbytes());
      if (have >= bytes && (best == free.size() || have < uint64_t(free[best].view().nbytes()))) best = i;
    }
    Lease lease;
    lease.pool_ = state_;
    if (best < free.size()) {
      lease.buffer_ = std::move(free[best]);
      free.erase(free.begin() + std::ptrdiff_t(best));
    } else {
      lease.buffer_ = allocate(state_->ctx, bytes);
    }
    return lease;
  }

  // Buffers waiting for reuse (not lent out).
  size_t idle_buffers() const { return state_->free.size(); }

  static HostArray allocate(const Context &ctx, uint64_t bytes) {
    const Shape shape{int64_t(bytes)};
    if (ctx.supports(Capability::HostMemory)) return pinned_array(ctx, shape, dtypes::uint8);
    return HostArray::empty(shape, dtypes::uint8);
  }

 private:
  std::shared_ptr<detail::StagingState> state_;
};

namespace detail {

// What MPI is given for one array: its memory or a staging buffer.
struct Buffer {
  void *data = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_BYTE;
  bool staged = false;
  HostView staging_view;  // the staged elements, C order
  Staging::Lease lease;   // staged through a Staging: the buffer lent
  HostArray own;          // staged without one: a buffer of this call
};

inline bool pass_through(const DeviceArray &a, Path path, const char *what) {
  const bool accepted = accepts_device_memory(a.context());
  if (path == Path::staged) return false;
  if (path == Path::automatic) return accepted && a.is_c_contiguous();
  if (!accepted)
    throw Error(Status::ERROR_NOT_SUPPORTED,
                std::string(what) + ": this MPI does not take " + a.context().device().runtime().backend_name() +
                    " device memory (Path::pass_through); use Path::staged or Path::automatic");
  if (!a.is_c_contiguous())
    throw Error(Status::ERROR_NOT_CONTIGUOUS,
                std::string(what) + ": Path::pass_through needs a C-contiguous array; use Path::staged");
  return true;
}

inline Buffer prepare(const DeviceArray &a, const Options &options, const char *what) {
  if (!a.memory() && a.nbytes() != 0)
    throw Error(Status::ERROR_INVALID_HANDLE, std::string(what) + ": an empty DeviceArray (no memory)");
  Buffer b;
  const MPI_Datatype type = datatype_of(a.dtype());
  const int64_t count = type == MPI_DATATYPE_NULL ? a.nbytes() : a.size();
  if (count > INT_MAX)
    throw Error(Status::ERROR_SIZE_OVERFLOW, std::string(what) + ": " + std::to_string(count) +
                                                 " elements; an MPI count is an int (at most 2^31-1)");
  b.count = int(count);
  b.type = type == MPI_DATATYPE_NULL ? MPI_BYTE : type;
  if (pass_through(a, options.path, what)) {
    b.data = address(a);
    return b;
  }
  b.staged = true;
  if (a.nbytes() == 0) return b;
  if (options.staging != nullptr) {
    b.lease = options.staging->acquire(uint64_t(a.nbytes()));
    b.data = b.lease.data();
  } else {
    b.own = Staging::allocate(a.context(), uint64_t(a.nbytes()));
    b.data = b.own.view().data();
  }
  b.staging_view = HostView(b.data, a.shape(), a.dtype());
  return b;
}

// The array's elements into the staging buffer (staged) and `stream` idle:
// MPI may read the buffer. Another layout than C order is first gathered
// on the device (assign, a kernel of the backend) into a C-ordered
// temporary.
inline void ready_to_send(const DeviceArray &a, const Buffer &b, const Stream &stream) {
  if (b.staged && b.data != nullptr) {
    if (a.is_c_contiguous()) {
      a.copy_to_host(b.staging_view, stream);
    } else {
      DeviceArray gathered = device_array(a.context(), a.shape(), a.dtype());
      gathered.assign(a, stream);
      gathered.copy_to_host(b.staging_view, stream);
      stream.synchronize();  // before the temporary goes
    }
  }
  stream.synchronize();
}

// The received elements into the array (staged), `stream` idle afterwards.
inline void received(const DeviceArray &a, const Buffer &b, const Stream &stream) {
  if (b.staged && b.data != nullptr) {
    if (a.is_c_contiguous()) {
      a.copy_from_host(b.staging_view, stream);
    } else {
      a.assign(b.staging_view, stream);  // scattered on the device
    }
  }
  stream.synchronize();
}

}  // namespace detail

// A nonblocking send or receive in flight. wait() completes it (a staged
// receive then copies into the device array). Move-only. Destroying one
// that was not waited for waits for it: MPI may still read or write its
// buffer until then (errors are then ignored; call wait() to see them).
class Request {
 public:
  Request() = default;
  Request(Request &&other) noexcept { *this = std::move(other); }
  Request &operator=(Request &&other) noexcept {
    if (this != &other) {
      finish_quietly();
      request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
      buffer_ = std::move(other.buffer_);
      array_ = std::move(other.array_);
      stream_ = std::move(other.stream_);
      receive_ = other.receive_;
    }
    return *this;
  }
  Request(const Request &) = delete;
  Request &operator=(const Request &) = delete;
  ~Request() { finish_quietly(); }

  bool active() const { return request_ != MPI_REQUEST_NULL; }
  void wait(MPI_Status *status = MPI_STATUS_IGNORE) {
    if (!active()) return;
    detail::check(MPI_Wait(&request_, status), "MPI_Wait");
    complete();
  }
  // True once complete (then as wait()).
  bool test(MPI_Status *status = MPI_STATUS_IGNORE) {
    if (!active()) return true;
    int done = 0;
    detail::check(MPI_Test(&request_, &done, status), "MPI_Test");
    if (done) complete();
    return done != 0;
  }

 private:
  friend Request isend(const DeviceArray &, int, int, MPI_Comm, const Stream &, const Options &);
  friend Request irecv(const DeviceArray &, int, int, MPI_Comm, const Stream &, const Options &);
  void complete() {
    request_ = MPI_REQUEST_NULL;
    if (receive_) detail::received(array_, buffer_, stream_);
    buffer_ = detail::Buffer{};
    array_ = DeviceArray{};
  }
  void finish_quietly() noexcept {
    if (!active()) return;
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
    try {
      complete();
    } catch (...) {  // a destructor must not throw; wait() reports instead
    }
  }
  MPI_Request request_ = MPI_REQUEST_NULL;
  detail::Buffer buffer_;
  DeviceArray array_;
  Stream stream_;
  bool receive_ = false;
};

// Blocking point-to-point. `stream` orders the array's other work.
inline void send(const DeviceArray &a, int dest, int tag, MPI_Comm comm, const Stream &stream,
                 const Options &options = {}) {
  detail::Buffer b = detail::prepare(a, options, "gpuhal::mpi::send");
  detail::ready_to_send(a, b, stream);
  detail::check(MPI_Send(b.data, b.count, b.type, dest, tag, comm), "MPI_Send");
}

inline void recv(const DeviceArray &a, int source, int tag, MPI_Comm comm, const Stream &stream,
                 const Options &options = {}, MPI_Status *status = MPI_STATUS_IGNORE) {
  detail::Buffer b = detail::prepare(a, options, "gpuhal::mpi::recv");
  stream.synchronize();  // no queued work may still use the memory MPI writes
  detail::check(MPI_Recv(b.data, b.count, b.type, source, tag, comm, status), "MPI_Recv");
  detail::received(a, b, stream);
}

// Nonblocking point-to-point: the Request holds the buffer until complete.
inline Request isend(const DeviceArray &a, int dest, int tag, MPI_Comm comm, const Stream &stream,
                     const Options &options = {}) {
  Request r;
  r.buffer_ = detail::prepare(a, options, "gpuhal::mpi::isend");
  detail::ready_to_send(a, r.buffer_, stream);
  detail::check(MPI_Isend(r.buffer_.data, r.buffer_.count, r.buffer_.type, dest, tag, comm, &r.request_), "MPI_Isend");
  return r;
}

inline Request irecv(const DeviceArray &a, int source, int tag, MPI_Comm comm, const Stream &stream,
                     const Options &options = {}) {
  Request r;
  r.buffer_ = detail::prepare(a, options, "gpuhal::mpi::irecv");
  stream.synchronize();
  detail::check(MPI_Irecv(r.buffer_.data, r.buffer_.count, r.buffer_.type, source, tag, comm, &r.request_),
                "MPI_Irecv");
  r.array_ = a;
  r.stream_ = stream;
  r.receive_ = true;
  return r;
}

inline void wait_all(std::vector<Request> &requests) {
  for (Request &r : requests) r.wait();
}

// MPI_Allreduce of `send` into `recv` (same element count and dtype; the
// dtype must have an MPI datatype). send and recv may be the same array
// (then in place).
inline void allreduce(const DeviceArray &send, const DeviceArray &recv, MPI_Op op, MPI_Comm comm,
                      const Stream &stream, const Options &options = {}) {
  const char *what = "gpuhal::mpi::allreduce";
  if (send.size() != recv.size() || send.dtype() != recv.dtype())
    throw Error(Status::ERROR_INCOMPATIBLE, std::string(what) + ": send has " + std::to_string(send.size()) + " " +
                                                send.dtype().name() + " elements, recv " +
                                                std::to_string(recv.size()) + " " + recv.dtype().name());
  if (datatype_of(send.dtype()) == MPI_DATATYPE_NULL)
    throw Error(Status::ERROR_NOT_SUPPORTED,
                std::string(what) + ": MPI has no datatype for " + send.dtype().name() + " to reduce");
  detail::Buffer out = detail::prepare(recv, options, what);
  if (out.staged) {  // send's elements into the staging buffer, reduced there, then into recv
    detail::ready_to_send(send, out, stream);
    detail::check(MPI_Allreduce(MPI_IN_PLACE, out.data, out.count, out.type, op, comm), "MPI_Allreduce");
    detail::received(recv, out, stream);
    return;
  }
  const bool in_place = send.device_pointer() == recv.device_pointer() && send.layout() == recv.layout();
  detail::Buffer in;
  if (!in_place) in = detail::prepare(send, options, what);
  detail::ready_to_send(send, in, stream);
  detail::check(MPI_Allreduce(in_place ? MPI_IN_PLACE : in.data, out.data, out.count, out.type, op, comm),
                "MPI_Allreduce");
}

inline void allreduce(const DeviceArray &inout, MPI_Op op, MPI_Comm comm, const Stream &stream,
                      const Options &options = {}) {
  allreduce(inout, inout, op, comm, stream, options);
}

}  // namespace mpi
}  // namespace gpuhal
