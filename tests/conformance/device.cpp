// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Devices: properties, ordinals, the primary context.
#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void properties(Env &env) {
  expect(env.runtime.device_count() > 0, "no devices");
  for (int i = 0; i < env.runtime.device_count(); ++i) {
    const DeviceProperties &p = env.runtime.device(i).properties();
    const std::string d = "device " + std::to_string(i) + ": ";
    expect(!p.name.empty(), d + "no name");
    expect(p.total_memory > 0, d + "no memory");
    expect(p.max_threads_per_block > 0 && p.warp_size > 0, d + "thread limits are not positive");
    for (int k = 0; k < 3; ++k) expect(p.max_block_dim[k] >= 0 && p.max_grid_dim[k] >= 0, d + "negative limits");
    expect(p.max_block_dim[0] <= p.max_threads_per_block || p.max_block_dim[0] == 0,
           d + "a block dimension larger than the threads per block");
  }
}

void bad_ordinals(Env &env) {
  const int n = env.runtime.device_count();
  expect_error([&] { env.runtime.device(n); }, Status::ERROR_INVALID_VALUE, "", "device(device_count())");
  expect_error([&] { env.runtime.device(-1); }, Status::ERROR_INVALID_VALUE, "", "device(-1)");
  expect(env.runtime.device(0).ordinal() == 0, "device(0).ordinal() is not 0");
}

void primary_context_shared(Env &env) {
  Context again = env.runtime.device(0).primary_context();
  expect(again == env.ctx, "two primary_context() calls gave different contexts");
  expect(again.device().ordinal() == 0, "the primary context of device 0 names another device");
  for (int i = 1; i < env.runtime.device_count(); ++i)
    expect(env.runtime.device(i).primary_context() != env.ctx, "two devices share a primary context");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"device.properties", "every device has a name, memory and positive thread limits", properties},
    {"device.bad_ordinals_refused", "an ordinal out of range is ERROR_INVALID_VALUE", bad_ordinals},
    {"device.primary_context_shared", "a device's primary context is one context, shared by every caller, and its own",
     primary_context_shared},
};

}  // namespace conformance
}  // namespace gpuhal
