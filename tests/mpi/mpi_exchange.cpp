// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal::mpi on two ranks (run by mpirun -n 2; tests/CMakeLists.txt):
// point-to-point and allreduce exact for several dtypes and layouts, on the
// automatic, staged and pass-through paths; bad input refused with the
// error that names it; MPI's own errors (MPI_ERRORS_RETURN) as ERROR_DRIVER;
// every staging buffer back in its pool afterwards.
//
// Each check runs on both ranks in the same order (the exchanges pair up).
// A failed check is printed with its rank; the exit status is non-zero on
// any rank's failure.
#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"
#include "gpuhal/mpi.hpp"

namespace {

using gpuhal::DeviceArray;
using gpuhal::HostView;
using gpuhal::Slice;
using gpuhal::Status;
namespace gm = gpuhal::mpi;

int rank = 0;
int failures = 0;

void expect(bool ok, const std::string &what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

// Runs `call`, which must throw gpuhal::Error with `status` and a message
// containing `words`.
void expect_error(const std::function<void()> &call, Status status, const std::string &words,
                  const std::string &what) {
  try {
    call();
    expect(false, what + ": no error");
  } catch (const gpuhal::Error &e) {
    expect(e.status() == status, what + ": status " + gpuhal::to_string(e.status()) + " (" + e.what() + ")");
    expect(std::string(e.what()).find(words) != std::string::npos,
           what + ": message '" + e.what() + "' lacks '" + words + "'");
  }
}

const char *name(gm::Path path) {
  return path == gm::Path::staged ? "staged" : path == gm::Path::pass_through ? "pass-through" : "automatic";
}

// A value every element of rank r's message has at index i.
template <class T>
T value(int r, size_t i) {
  return T(double(r * 1000 + int(i % 997)) * 0.5);
}

template <class T>
void point_to_point(const gpuhal::Context &ctx, const gpuhal::Stream &stream, gm::Path path, gpuhal::DType dtype) {
  const std::string what = std::string("send/recv ") + dtype.name() + " " + name(path);
  gm::Options options{path, nullptr};
  const size_t n = 4099;
  if (rank == 0) {
    std::vector<T> host(n);
    for (size_t i = 0; i < n; ++i) host[i] = value<T>(0, i);
    DeviceArray a = gpuhal::to_device(ctx, HostView::of(host));
    gm::send(a, 1, 7, MPI_COMM_WORLD, stream, options);
  } else {
    DeviceArray a = gpuhal::device_array(ctx, {int64_t(n)}, dtype);
    a.memset(0xA5);
    gm::recv(a, 0, 7, MPI_COMM_WORLD, stream, options);
    const std::vector<T> got = a.copy_to_host().to_vector<T>();
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += !(got[i] == value<T>(0, i));
    expect(wrong == 0, what + ": " + std::to_string(wrong) + " elements wrong");
  }
}

// float16 has no MPI datatype: its bytes travel as MPI_BYTE.
void bytes_of_float16(const gpuhal::Context &ctx, const gpuhal::Stream &stream, gm::Path path) {
  std::vector<uint16_t> bits(1000);
  std::iota(bits.begin(), bits.end(), uint16_t(0x3C00));
  DeviceArray a = gpuhal::device_array(ctx, {1000}, gpuhal::dtypes::float16);
  if (rank == 0) {
    a.view(gpuhal::dtypes::uint16).copy_from_host(HostView::of(bits));
    gm::send(a, 1, 8, MPI_COMM_WORLD, stream, {path, nullptr});
  } else {
    gm::recv(a, 0, 8, MPI_COMM_WORLD, stream, {path, nullptr});
    expect(a.view(gpuhal::dtypes::uint16).copy_to_host().to_vector<uint16_t>() == bits,
           std::string("float16 as bytes ") + name(path));
  }
}

// A strided view (every other column of a transposed matrix) sent, a
// Fortran-ordered array received: the message is in C order both ways.
void strided_layouts(const gpuhal::Context &ctx, const gpuhal::Stream &stream, gm::Path path) {
  const std::string what = std::string("strided layouts ") + name(path);
  std::vector<int32_t> host(12 * 10);
  std::iota(host.begin(), host.end(), 0);
  DeviceArray full = gpuhal::to_device(ctx, HostView::of(host, {12, 10}));
  DeviceArray sent = full.T().view({gpuhal::all, Slice(0, 12, 2)});  // 10 x 6, not contiguous
  std::vector<int32_t> expected;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 12; j += 2) expected.push_back(host[size_t(j) * 10 + size_t(i)]);
  if (rank == 0) {
    gm::send(sent, 1, 9, MPI_COMM_WORLD, stream, {path, nullptr});
  } else {
    DeviceArray got = gpuhal::device_array(ctx, {10, 6}, gpuhal::dtypes::int32, {}, 'F');
    gm::recv(got, 0, 9, MPI_COMM_WORLD, stream, {path, nullptr});
    expect(got.copy_to_host().to_vector<int32_t>() == expected, what);
  }
}

// isend/irecv both ways at once through one Staging; one request left to
// its destructor. Every buffer goes back to the pool.
void nonblocking(const gpuhal::Context &ctx, const gpuhal::Stream &stream, gm::Path path) {
  const std::string what = std::string("isend/irecv ") + name(path);
  gm::Staging staging(ctx);
  gm::Options options{path, &staging};
  const int other = 1 - rank;
  std::vector<double> mine(300), expected(300);
  for (size_t i = 0; i < mine.size(); ++i) {
    mine[i] = value<double>(rank, i);
    expected[i] = value<double>(other, i);
  }
  DeviceArray out = gpuhal::to_device(ctx, HostView::of(mine));
  for (int round = 0; round < 3; ++round) {
    DeviceArray in = gpuhal::device_array(ctx, {300}, gpuhal::dtypes::float64);
    {
      gm::Request receiving = gm::irecv(in, other, 10 + round, MPI_COMM_WORLD, stream, options);
      gm::Request sending = gm::isend(out, other, 10 + round, MPI_COMM_WORLD, stream, options);
      receiving.wait();
      // `sending` ends here unwaited: its destructor waits for it.
    }
    expect(in.copy_to_host().to_vector<double>() == expected, what + " round " + std::to_string(round));
  }
  // Staged: one receive and one send buffer, reused by the later rounds.
  const bool staged = path == gm::Path::staged || (path == gm::Path::automatic && !gm::accepts_device_memory(ctx));
  const size_t idle = staged ? 2 : 0;
  expect(staging.idle_buffers() == idle,
         what + ": " + std::to_string(staging.idle_buffers()) + " staging buffers back, not " + std::to_string(idle));
}

void allreduce(const gpuhal::Context &ctx, const gpuhal::Stream &stream, gm::Path path) {
  const std::string what = std::string("allreduce ") + name(path);
  gm::Options options{path, nullptr};
  std::vector<int64_t> ints(1000);
  std::vector<double> doubles(1000);
  for (size_t i = 0; i < ints.size(); ++i) {
    ints[i] = int64_t(i) * (rank + 1);
    doubles[i] = double(i) * 0.25 * (rank + 1);  // exact in binary: the sum is exact
  }
  DeviceArray a = gpuhal::to_device(ctx, HostView::of(ints));
  DeviceArray sum = gpuhal::device_array_like(a);
  gm::allreduce(a, sum, MPI_SUM, MPI_COMM_WORLD, stream, options);
  std::vector<int64_t> got = sum.copy_to_host().to_vector<int64_t>();
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != int64_t(i) * 3;
  expect(wrong == 0, what + " int64 sum: " + std::to_string(wrong) + " wrong");

  DeviceArray d = gpuhal::to_device(ctx, HostView::of(doubles));
  gm::allreduce(d, MPI_MAX, MPI_COMM_WORLD, stream, options);  // in place
  std::vector<double> max = d.copy_to_host().to_vector<double>();
  wrong = 0;
  for (size_t i = 0; i < max.size(); ++i) wrong += max[i] != double(i) * 0.5;
  expect(wrong == 0, what + " float64 max in place: " + std::to_string(wrong) + " wrong");
}

// Into a strided destination (automatic and staged only: pass-through needs
// C order).
void allreduce_strided(const gpuhal::Context &ctx, const gpuhal::Stream &stream, gm::Path path) {
  std::vector<int32_t> ones(24, rank + 1);
  DeviceArray a = gpuhal::to_device(ctx, HostView::of(ones, {4, 6}));
  DeviceArray big = gpuhal::device_array(ctx, {6, 8}, gpuhal::dtypes::int32);
  big.fill(int32_t(-1));
  DeviceArray target = big.view({gpuhal::all, Slice(0, 8, 2)});  // 6 x 4, strided
  DeviceArray reshaped = a.reshape({6, 4});
  gm::allreduce(reshaped, target, MPI_SUM, MPI_COMM_WORLD, stream, {path, nullptr});
  const std::vector<int32_t> got = target.copy_to_host().to_vector<int32_t>();
  expect(got == std::vector<int32_t>(24, 3), std::string("allreduce into a strided array ") + name(path));
  const std::vector<int32_t> whole = big.copy_to_host().to_vector<int32_t>();
  expect(std::count(whole.begin(), whole.end(), -1) == 48 - 24,
         std::string("allreduce into a strided array wrote outside it ") + name(path));
}

void bad_input(const gpuhal::Context &ctx, const gpuhal::Stream &stream) {
  DeviceArray a = gpuhal::device_array(ctx, {4, 6}, gpuhal::dtypes::float32);
  const bool aware = gm::accepts_device_memory(ctx);
  if (aware) {
    expect_error([&] { gm::send(a.T(), 1 - rank, 20, MPI_COMM_WORLD, stream, {gm::Path::pass_through, nullptr}); },
                 Status::ERROR_NOT_CONTIGUOUS, "Path::pass_through needs a C-contiguous array",
                 "pass-through of a transposed array");
  } else {
    expect_error([&] { gm::send(a, 1 - rank, 20, MPI_COMM_WORLD, stream, {gm::Path::pass_through, nullptr}); },
                 Status::ERROR_NOT_SUPPORTED, "device memory (Path::pass_through)", "pass-through unaware MPI");
  }
  DeviceArray h = gpuhal::device_array(ctx, {8}, gpuhal::dtypes::float16);
  expect_error([&] { gm::allreduce(h, MPI_SUM, MPI_COMM_WORLD, stream); }, Status::ERROR_NOT_SUPPORTED,
               "MPI has no datatype for float16", "allreduce of float16");
  DeviceArray small = gpuhal::device_array(ctx, {5}, gpuhal::dtypes::float32);
  expect_error([&] { gm::allreduce(a, small, MPI_SUM, MPI_COMM_WORLD, stream); }, Status::ERROR_INCOMPATIBLE,
               "send has 24 float32 elements, recv 5 float32", "allreduce of different sizes");
  expect_error([&] { gm::send(DeviceArray{}, 1 - rank, 20, MPI_COMM_WORLD, stream); },
               Status::ERROR_INVALID_HANDLE, "empty DeviceArray", "send of an empty DeviceArray");
}

// A message longer than the receive buffer: MPI's truncation error, as
// ERROR_DRIVER naming MPI_Recv, when the communicator returns errors. The
// receiver's array keeps its old contents on the staged path.
void mpi_errors(const gpuhal::Context &ctx, const gpuhal::Stream &stream) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (rank == 0) {
    DeviceArray a = gpuhal::to_device(ctx, HostView::of(std::vector<int32_t>(10, 5)));
    gm::send(a, 1, 30, comm, stream);
  } else {
    DeviceArray a = gpuhal::to_device(ctx, HostView::of(std::vector<int32_t>(4, 9)));
    expect_error([&] { gm::recv(a, 0, 30, comm, stream, {gm::Path::staged, nullptr}); }, Status::ERROR_DRIVER,
                 "MPI_Recv: MPI_ERR_TRUNCATE", "truncated receive");
    expect(a.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>(4, 9),
           "a failed staged receive left the array as it was");
  }
  MPI_Comm_free(&comm);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "mpi_exchange: run on 2 ranks (mpirun -n 2)\n");
    MPI_Finalize();
    return 2;
  }
  try {
    gpuhal::Runtime rt = gpuhal::Runtime::get();
    gpuhal::Context ctx = rt.device(rank % rt.device_count()).primary_context();
    gpuhal::Stream stream = ctx.create_stream();
    const bool aware = gm::accepts_device_memory(ctx);
    // Strided layouts are gathered and scattered by the backend's kernels,
    // which a fake driver does not run.
    const char *no_kernels = std::getenv("GPUHAL_TEST_NO_KERNEL_RESULTS");
    const bool kernel_results = no_kernels == nullptr || std::string(no_kernels) != "1";
    std::vector<gm::Path> paths{gm::Path::automatic, gm::Path::staged};
    if (aware) paths.push_back(gm::Path::pass_through);
    for (gm::Path path : paths) {
      point_to_point<int32_t>(ctx, stream, path, gpuhal::dtypes::int32);
      point_to_point<uint8_t>(ctx, stream, path, gpuhal::dtypes::uint8);
      point_to_point<double>(ctx, stream, path, gpuhal::dtypes::float64);
      point_to_point<std::complex<float>>(ctx, stream, path, gpuhal::dtypes::complex64);
      bytes_of_float16(ctx, stream, path);
      nonblocking(ctx, stream, path);
      allreduce(ctx, stream, path);
      if (path != gm::Path::pass_through && kernel_results) {
        strided_layouts(ctx, stream, path);
        allreduce_strided(ctx, stream, path);
      }
    }
    bad_input(ctx, stream);
    mpi_errors(ctx, stream);
    ctx.synchronize();
    if (rank == 0)
      std::printf("mpi_exchange: %s backend, MPI %s its device memory, paths checked: %zu\n",
                  rt.backend_name().c_str(), aware ? "takes" : "does not take", paths.size());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "rank %d: unexpected error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("mpi_exchange: %d failed checks\n", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
