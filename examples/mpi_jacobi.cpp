// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A 2-D Jacobi heat solver over MPI ranks, each rank on its own gpuhal
// device, with a halo exchange of device rows every iteration
// (gpuhal::mpi::isend / irecv). Rank 0 then gathers the grid and solves the
// same problem alone on its device; the two must be bitwise equal (every
// point is computed by the same operations in the same order).
//
//   mpirun -n 2 mpi_jacobi [--staged | --pass-through] [rows cols iterations]
//
// --staged forces the path through page-locked host buffers, --pass-through
// the device pointers to MPI; the default picks (gpuhal/mpi.hpp). Exit 0
// when the results agree.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"
#include "gpuhal/mpi.hpp"

namespace {

// u and v: (rows + 2) x cols, rows 0 and rows + 1 the halos (or the fixed
// top and bottom boundaries); columns 0 and cols - 1 are fixed boundaries.
const char *kSource = R"(
GPUHAL_KERNEL void jacobi(GPUHAL_GLOBAL const float *u, GPUHAL_GLOBAL float *v, unsigned rows, unsigned cols) {
  unsigned j = gpuhal_global_id(0);
  unsigned i = gpuhal_global_id(1) + 1;
  if (i > rows || j >= cols) return;
  unsigned at = i * cols + j;
  if (j == 0 || j == cols - 1) {
    v[at] = u[at];
    return;
  }
  v[at] = 0.25f * ((u[at - cols] + u[at + cols]) + (u[at - 1] + u[at + 1]));
}
)";

struct Problem {
  int rows = 192, cols = 160, iterations = 300;
};

// One rank's part: `rows` interior rows starting at global row `first`.
struct Domain {
  gpuhal::DeviceArray u, v;
  int rows = 0, first = 0;
};

// Initial state: a hot top edge (1.0) and a warm left edge (0.5), else 0
// (the bottom edge stays 0).
Domain make_domain(const gpuhal::Context &ctx, const Problem &p, int first, int rows, bool top) {
  std::vector<float> init(size_t(rows + 2) * size_t(p.cols), 0.0f);
  for (int i = 1; i <= rows; ++i) init[size_t(i) * size_t(p.cols)] = 0.5f;
  if (top)
    for (int j = 0; j < p.cols; ++j) init[size_t(j)] = 1.0f;
  Domain d;
  d.rows = rows;
  d.first = first;
  const auto view = gpuhal::HostView::of(init, {int64_t(rows + 2), int64_t(p.cols)});
  d.u = gpuhal::to_device(ctx, view);
  d.v = gpuhal::to_device(ctx, view);  // the halo and boundary values must be in both
  return d;
}

gpuhal::DeviceArray row(const gpuhal::DeviceArray &a, int i) { return a[i]; }

// Exchanges u's edge rows with the ranks above and below.
void exchange(Domain &d, int rank, int size, const gpuhal::Stream &stream, const gpuhal::mpi::Options &options) {
  std::vector<gpuhal::mpi::Request> requests;
  if (rank > 0) {
    requests.push_back(gpuhal::mpi::irecv(row(d.u, 0), rank - 1, 1, MPI_COMM_WORLD, stream, options));
    requests.push_back(gpuhal::mpi::isend(row(d.u, 1), rank - 1, 0, MPI_COMM_WORLD, stream, options));
  }
  if (rank < size - 1) {
    requests.push_back(gpuhal::mpi::irecv(row(d.u, d.rows + 1), rank + 1, 0, MPI_COMM_WORLD, stream, options));
    requests.push_back(gpuhal::mpi::isend(row(d.u, d.rows), rank + 1, 1, MPI_COMM_WORLD, stream, options));
  }
  gpuhal::mpi::wait_all(requests);
}

void solve(const gpuhal::Kernel &jacobi, Domain &d, const Problem &p, int rank, int size, const gpuhal::Stream &stream,
           const gpuhal::mpi::Options &options) {
  const gpuhal::Dim3 block(16, 16);
  const gpuhal::Dim3 grid(uint32_t(p.cols + 15) / 16, uint32_t(d.rows + 15) / 16);
  for (int it = 0; it < p.iterations; ++it) {
    if (size > 1) exchange(d, rank, size, stream, options);
    jacobi(grid, block, stream)(d.u, d.v, unsigned(d.rows), unsigned(p.cols));
    std::swap(d.u, d.v);
  }
  stream.synchronize();
}

gpuhal::DeviceArray interior(const Domain &d) { return d.u.view({gpuhal::Slice(1, d.rows + 1)}); }

int run(int argc, char **argv, int rank, int size) {
  gpuhal::mpi::Options options;
  Problem p;
  std::vector<int> numbers;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--staged") == 0) {
      options.path = gpuhal::mpi::Path::staged;
    } else if (std::strcmp(argv[i], "--pass-through") == 0) {
      options.path = gpuhal::mpi::Path::pass_through;
    } else {
      numbers.push_back(std::atoi(argv[i]));
    }
  }
  if (numbers.size() == 3) p = Problem{numbers[0], numbers[1], numbers[2]};
  if (p.rows < size || p.cols < 3 || p.iterations < 0) {
    if (rank == 0) std::fprintf(stderr, "mpi_jacobi: need rows >= ranks, cols >= 3, iterations >= 0\n");
    return 2;
  }
  gpuhal::Runtime rt = gpuhal::Runtime::get();
  gpuhal::Context ctx = rt.device(rank % rt.device_count()).primary_context();
  gpuhal::Stream stream = ctx.create_stream();
  gpuhal::Kernel jacobi = gpuhal::Module::compile(ctx, kSource).kernel("jacobi");
  gpuhal::mpi::Staging staging(ctx);
  options.staging = &staging;

  const int first = rank * (p.rows / size) + std::min(rank, p.rows % size);
  const int rows = p.rows / size + (rank < p.rows % size ? 1 : 0);
  Domain d = make_domain(ctx, p, first, rows, rank == 0);
  solve(jacobi, d, p, rank, size, stream, options);

  // Gather on rank 0 and compare with one rank's solve of the whole grid.
  if (rank != 0) {
    gpuhal::mpi::send(interior(d), 0, 2, MPI_COMM_WORLD, stream, options);
    return 0;
  }
  auto gathered = gpuhal::device_array(ctx, {int64_t(p.rows), int64_t(p.cols)}, gpuhal::dtypes::float32);
  gathered.view({gpuhal::Slice(0, rows)}).assign(interior(d), stream);
  for (int r = 1; r < size; ++r) {
    const int r_first = r * (p.rows / size) + std::min(r, p.rows % size);
    const int r_rows = p.rows / size + (r < p.rows % size ? 1 : 0);
    gpuhal::mpi::recv(gathered.view({gpuhal::Slice(r_first, r_first + r_rows)}), r, 2, MPI_COMM_WORLD, stream,
                      options);
  }
  Domain whole = make_domain(ctx, p, 0, p.rows, true);
  solve(jacobi, whole, p, 0, 1, stream, options);
  const gpuhal::HostArray mine_host = gathered.copy_to_host(stream);
  const gpuhal::HostArray alone_host = interior(whole).copy_to_host(stream);
  stream.synchronize();  // the copies are stream-ordered: read them after
  const std::vector<float> mine = mine_host.to_vector<float>(), alone = alone_host.to_vector<float>();
  size_t differing = 0;
  double sum = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    differing += std::memcmp(&mine[i], &alone[i], sizeof(float)) != 0;
    sum += double(mine[i]);
  }
  const char *path = options.path == gpuhal::mpi::Path::staged         ? "staged"
                     : options.path == gpuhal::mpi::Path::pass_through ? "pass-through"
                     : gpuhal::mpi::accepts_device_memory(ctx)         ? "automatic: pass-through"
                                                                       : "automatic: staged";
  std::printf("mpi_jacobi: %d ranks on %s, %dx%d, %d iterations, %s path: sum %.6f, %zu of %zu points differ "
              "from one rank's solve: %s\n",
              size, rt.backend_name().c_str(), p.rows, p.cols, p.iterations, path, sum, differing, mine.size(),
              differing == 0 ? "equal" : "DIFFERENT");
  return differing == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 1;
  try {
    rc = run(argc, argv, rank, size);
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "mpi_jacobi (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // Every rank's verdict: rank 0 decides, the others wait for it.
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
