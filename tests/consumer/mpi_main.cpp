// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A user program of the installed gpuhal::mpi target: compiles and links
// against the package's header and the consumer's MPI.
#include <gpuhal/mpi.hpp>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  gpuhal::Context ctx = gpuhal::Context::current();
  gpuhal::DeviceArray x = gpuhal::device_array(ctx, {16}, gpuhal::dtypes::float32);
  gpuhal::mpi::allreduce(x, MPI_SUM, MPI_COMM_WORLD, ctx.default_stream());
  MPI_Finalize();
  return 0;
}
