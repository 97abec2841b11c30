// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// X1: a 64 MiB message between two ranks (a ping-pong, one-way time = half
// the round trip), side by side in one run:
//   mpi-host      MPI on plain host buffers (std::vector: what gpuhal is
//                 measured against)
//   mpi-host-thp  the same on buffers advised to transparent huge pages, as
//                 the host backend's device memory is (Linux's process_vm_readv,
//                 Open MPI's single copy, pins fewer pages)
//   pass-through  gpuhal::mpi with the device arrays handed to MPI
//   staged        gpuhal::mpi through page-locked buffers (a Staging reused)
//   memcpy        one copy of the same bytes in one process (the machine's
//                 single-copy limit; an MPI message costs at least one)
// Medians with min and max over the repetitions, in GB/s (10^9 B/s).
//
//   mpirun -n 2 gpuhal-bench-mpi [MiB] [repetitions]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include <sys/mman.h>

#include "gpuhal/gpuhal.hpp"
#include "gpuhal/mpi.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Summary {
  double median, min, max;
};

Summary summarize(std::vector<double> seconds, double bytes) {
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  return {bytes / median / 1e9, bytes / seconds.back() / 1e9, bytes / seconds.front() / 1e9};
}

// Rank 0 sends, rank 1 answers; `exchange(dest, sending)` moves one message.
std::vector<double> ping_pong(int rank, int repetitions, const std::function<void(int, bool)> &exchange) {
  std::vector<double> seconds;
  for (int i = -2; i < repetitions; ++i) {  // two warm-up rounds
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    exchange(1 - rank, rank == 0);
    exchange(1 - rank, rank == 1);
    const double round_trip = std::chrono::duration<double>(Clock::now() - start).count();
    if (i >= 0) seconds.push_back(round_trip / 2);
  }
  return seconds;
}

void print(int rank, const char *name, const Summary &s, double reference) {
  if (rank != 0) return;
  std::printf("%-13s %8.2f %8.2f %8.2f %8.2fx\n", name, s.median, s.min, s.max, reference / s.median);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "gpuhal-bench-mpi: run on 2 ranks (mpirun -n 2)\n");
    MPI_Finalize();
    return 2;
  }
  const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 64;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 15;
  const int64_t bytes = mib << 20;
  try {
    gpuhal::Runtime rt = gpuhal::Runtime::get();
    gpuhal::Context ctx = rt.device(rank % rt.device_count()).primary_context();
    gpuhal::Stream stream = ctx.create_stream();

    std::vector<char> plain(static_cast<size_t>(bytes), static_cast<char>(rank));
    auto host = [&](int peer, bool sending) {
      if (sending) {
        MPI_Send(plain.data(), int(bytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      } else {
        MPI_Recv(plain.data(), int(bytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    };
    // The same on huge pages: 2 MiB aligned and advised (a hint; the row
    // shows what the kernel made of it).
    void *aligned = nullptr;
    if (posix_memalign(&aligned, size_t(2) << 20, size_t(bytes)) != 0) throw std::bad_alloc();
    std::unique_ptr<void, void (*)(void *)> thp_buffer(aligned, std::free);
    madvise(aligned, size_t(bytes), MADV_HUGEPAGE);
    std::memset(aligned, rank, size_t(bytes));
    auto host_thp = [&](int peer, bool sending) {
      if (sending) {
        MPI_Send(aligned, int(bytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      } else {
        MPI_Recv(aligned, int(bytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    };
    gpuhal::DeviceArray device = gpuhal::device_array(ctx, {bytes}, gpuhal::dtypes::uint8);
    device.memset(uint8_t(rank));
    gpuhal::mpi::Staging staging(ctx);
    auto through = [&](gpuhal::mpi::Path path) {
      return [&, path](int peer, bool sending) {
        const gpuhal::mpi::Options options{path, &staging};
        if (sending) {
          gpuhal::mpi::send(device, peer, 0, MPI_COMM_WORLD, stream, options);
        } else {
          gpuhal::mpi::recv(device, peer, 0, MPI_COMM_WORLD, stream, options);
        }
      };
    };
    std::vector<char> other(size_t(bytes), 1);
    std::vector<double> copies;
    for (int i = -2; i < repetitions; ++i) {
      const auto start = Clock::now();
      std::memcpy(other.data(), plain.data(), size_t(bytes));
      if (i >= 0) copies.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }

    const Summary mpi_host = summarize(ping_pong(rank, repetitions, host), double(bytes));
    const Summary mpi_thp = summarize(ping_pong(rank, repetitions, host_thp), double(bytes));
    const bool aware = gpuhal::mpi::accepts_device_memory(ctx);
    Summary pass{0, 0, 0};
    if (aware) pass = summarize(ping_pong(rank, repetitions, through(gpuhal::mpi::Path::pass_through)), double(bytes));
    const Summary staged = summarize(ping_pong(rank, repetitions, through(gpuhal::mpi::Path::staged)), double(bytes));
    const Summary limit = summarize(copies, double(bytes));
    if (rank == 0) {
      std::printf("X1: %lld MiB between 2 ranks, %s backend, %d repetitions; GB/s one way (median, min, max), "
                  "and the time against mpi-host (median)\n",
                  static_cast<long long>(mib), rt.backend_name().c_str(), repetitions);
      std::printf("%-13s %8s %8s %8s %9s\n", "row", "median", "min", "max", "time");
    }
    print(rank, "mpi-host", mpi_host, mpi_host.median);
    print(rank, "mpi-host-thp", mpi_thp, mpi_host.median);
    if (aware) print(rank, "pass-through", pass, mpi_host.median);
    print(rank, "staged", staged, mpi_host.median);
    print(rank, "memcpy", limit, mpi_host.median);
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "gpuhal-bench-mpi (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}
