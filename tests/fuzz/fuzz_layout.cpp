// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Shape / strides / order handling: make, index, reshape, ravel, squeeze,
// core. Every gpuhal::Error is fine; any other exception, crash or broken
// invariant (a view reaching outside its base's span) is a finding.
#include <cstdlib>

#include "fuzz_input.hpp"
#include "gpuhal/error.hpp"
#include "gpuhal/layout.hpp"

using namespace gpuhal;

static void check_within(const Layout &base, const Layout &view) {
  if (view.size() == 0 || base.size() == 0) return;
  if (view.span_begin() < base.span_begin() || view.span_end() > base.span_end()) std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::Input in(data, size);
  const int ndim = int(in.small(0, 6));
  Shape shape;
  Strides strides;
  for (int i = 0; i < ndim; ++i) shape.push_back(in.dim());
  const bool explicit_strides = in.take<uint8_t>() & 1;
  for (int i = 0; explicit_strides && i < ndim; ++i) {
    const int64_t s = in.dim();  // small ones scaled to whole elements, huge ones as they are
    strides.push_back(s > -(1 << 20) && s < (1 << 20) ? s * 8 : s);
  }
  const char orders[] = {'C', 'F', 'A', 'X'};
  try {
    const Layout base = Layout::make(shape, int64_t(1) << in.small(0, 4), strides, orders[in.small(0, 3)]);
    for (int op = 0; op < 4 && !in.empty(); ++op) {
      try {
        switch (in.small(0, 4)) {
          case 0: {
            std::vector<Index> idx;
            const int n = int(in.small(0, ndim + 1));
            for (int i = 0; i < n; ++i) {
              if (in.take<uint8_t>() & 1)
                idx.emplace_back(in.dim());
              else
                idx.emplace_back(Slice(in.dim(), in.dim(), in.dim()));
            }
            check_within(base, base.index(idx));
            break;
          }
          case 1: {
            Shape ns;
            const int n = int(in.small(0, 6));
            for (int i = 0; i < n; ++i) ns.push_back(in.dim());
            const Layout r = base.reshape(ns, orders[in.small(0, 3)]);
            if (r.size() != base.size()) std::abort();
            check_within(base, r);
            break;
          }
          case 2:
            check_within(base, base.ravel(orders[in.small(0, 3)]));
            break;
          case 3:
            check_within(base, base.squeeze());
            break;
          default:
            check_within(base, base.core());
            (void)strides_like(base);
        }
      } catch (const Error &) {
      }
    }
  } catch (const Error &) {
  }
  return 0;
}
