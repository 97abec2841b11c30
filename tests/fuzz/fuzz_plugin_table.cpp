// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Plugin table validation: a fake plugin answers negotiation with a table
// whose version, struct_size, NULL entries, init result and device count come
// from the fuzzer. The loader must refuse bad tables with a gpuhal::Error and
// use good ones; no crash, no leak.
#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "fuzz_input.hpp"
#include "gpuhal/gpuhal.hpp"
#include "gpuhal/plugin.h"

using Configure = void (*)(uint32_t, uint32_t, uint64_t, int, int);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *path = GPUHAL_FUZZ_FAKE_TABLE;
  static Configure configure = [] {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);  // kept open: the loader's opens share it
    if (!h) std::abort();
    return reinterpret_cast<Configure>(dlsym(h, "fake_fuzz_configure"));
  }();
  fuzz::Input in(data, size);
  const uint32_t major = uint32_t(in.small(0, 2)), minor = uint32_t(in.small(0, 3));
  const uint32_t table_size =
      in.take<uint8_t>() & 1 ? uint32_t(sizeof(gpuhal_plugin_table_t)) : uint32_t(in.small(0, 64)) * 8;
  const uint64_t null_mask = in.take<uint8_t>() & 1 ? in.take<uint64_t>() : 0;
  configure(GPUHAL_MAKE_VERSION(major, minor), table_size, null_mask, int(in.take<uint8_t>() & 1),
            int(in.small(-1, 3)));
  gpuhal::Config c;
  c.backend = path;
  c.log_level = gpuhal::LogLevel::Error;
  try {
    gpuhal::Runtime rt = gpuhal::Runtime::load(c);
    if (rt.device_count() < 1) std::abort();  // zero devices must have been refused
    gpuhal::Context ctx = rt.device(0).primary_context();
    std::vector<int32_t> v{1, 2, 3};
    if (gpuhal::to_device(ctx, gpuhal::HostView::of(v)).copy_to_host().to_vector<int32_t>() != v) std::abort();
  } catch (const gpuhal::Error &) {
  }
  return 0;
}
