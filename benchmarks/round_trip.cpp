// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The C++ half of the Python overhead benchmark (benchmarks/python_round_trip.py):
// a small to_device + copy_to_host round trip through the C++ API, timed
// exactly as the Python half times its own (batches of round trips, the
// median and spread of the batches' per-round-trip time).
//
//   gpuhal-bench-round-trip [BYTES [BATCH [REPEATS]]]
//
// Prints one JSON object: {"bytes", "batch", "repeats", "new_ns": [...],
// "into_ns": [...]} -- per-round-trip nanoseconds of every batch, for
// copy_to_host() into a new host array and into an existing one.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpuhal/gpuhal.hpp"

namespace {

template <class F>
std::vector<double> time_batches(int batch, int repeats, F round_trip) {
  std::vector<double> ns;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) round_trip();
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / batch);
  }
  return ns;
}

void print_list(const char *name, const std::vector<double> &v, bool last) {
  std::printf("\"%s\": [", name);
  for (size_t i = 0; i < v.size(); ++i) std::printf("%s%.1f", i ? ", " : "", v[i]);
  std::printf("]%s", last ? "" : ", ");
}

}  // namespace

int main(int argc, char **argv) {
  const long bytes = argc > 1 ? std::atol(argv[1]) : 1024;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 20000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 7;
  if (bytes < 8 || batch < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: %s [BYTES>=8 [BATCH>=1 [REPEATS>=1]]]\n", argv[0]);
    return 2;
  }
  gpuhal::Context ctx = gpuhal::Context::current();
  std::vector<double> host(size_t(bytes / 8), 1.0), out(host.size());
  gpuhal::HostView in = gpuhal::HostView::of(host);
  gpuhal::HostView into = gpuhal::HostView::of(out);
  auto warm = [&] { gpuhal::to_device(ctx, in).copy_to_host(into); };
  time_batches(batch, 1, warm);
  std::vector<double> new_ns = time_batches(batch, repeats, [&] { (void)gpuhal::to_device(ctx, in).copy_to_host(); });
  std::vector<double> into_ns = time_batches(batch, repeats, warm);
  std::printf("{\"bytes\": %ld, \"batch\": %d, \"repeats\": %d, ", bytes, batch, repeats);
  print_list("new_ns", new_ns, false);
  print_list("into_ns", into_ns, true);
  std::printf("}\n");
  return 0;
}
