// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Errors and recovery: refused calls leave everything intact; a device
// fault is reported, sticks, and a reset recovers.
#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void refusals_leave_state_intact(Env &env) {
  const auto v = pattern(1024, 13);
  DeviceArray a = to_device(env.ctx, HostView::of(v));
  std::vector<uint8_t> wrong(1000);
  expect_error([&] { a.copy_from_host(HostView::of(wrong)); }, Status::ERROR_INCOMPATIBLE, "",
               "a copy from a host array of another shape");
  expect_error([&] { a.copy_from_device(device_array(env.ctx, {512}, dtypes::uint8)); }, Status::ERROR_INCOMPATIBLE, "",
               "a copy from a device array of another shape");
  expect_error([&] { a.view({Index(5000)}); }, Status::ERROR_INDEX_OUT_OF_RANGE, "", "an index past the end");
  expect_error([&] { device_array(env.ctx, {-1}); }, Status::ERROR_INVALID_SHAPE, "", "a negative dimension");
  expect_error([&] { a.copy_to_host(Stream(nullptr)); }, Status::ERROR_INVALID_HANDLE, "", "an empty stream handle");
  expect(bytes_of(a) == v, "a refused call changed the array");
  Stream s = env.ctx.create_stream();
  std::vector<uint8_t> out(v.size());
  a.copy_to_host(HostView::of(out), s);
  s.synchronize();
  expect(out == v, "the context does not work after refused calls");
}

void device_fault_then_reset(Env &env) {
  if (!env.runtime.supports(Capability::Kernels))
    throw Unsupported{"the plugin has no device-code entries", to_string(Capability::Kernels)};
  if (env.runtime.backend_name() == "host")
    throw Unsupported{"the host backend runs kernels in this process: a device fault is a fault of the process"};
  Module m;
  try {
    m = Module::compile(env.ctx, R"(
GPUHAL_KERNEL void gpuhal_conformance_fault(GPUHAL_GLOBAL int *x, unsigned long long far) {
  x[far + gpuhal_global_id(0)] = 1;
})");
  } catch (const Error &e) {
    const std::string what = e.what();
    if (what.find("could not be loaded") != std::string::npos || what.find("cannot load") != std::string::npos)
      throw Unsupported{"no kernel compiler: " + what};
    throw;
  }
  DeviceArray x = device_array(env.ctx, {64}, dtypes::int32);
  const auto v = pattern(4096, 3);
  DeviceArray kept = to_device(env.ctx, HostView::of(v));
  Stream s = env.ctx.create_stream();
  // 2^40 elements past x: unmapped on every GPU.
  m.kernel("gpuhal_conformance_fault")({1}, {32}, s)(x, uint64_t(1) << 40);
  expect_error([&] { s.synchronize(); }, Status::ERROR_LAUNCH_FAILED, "", "synchronizing after a faulting kernel");
  expect_error([&] { env.ctx.synchronize(); }, Status::ERROR_LAUNCH_FAILED, "",
               "synchronizing the context after a fault (the error sticks)");
  if (!env.runtime.supports(Capability::FaultRecovery)) {
    // The vendor keeps the fault until the process ends (CUDA): the reset
    // says so instead of handing out a context that cannot work. (Each check
    // runs in a process of its own, so the checks after this one are not
    // affected.)
    expect_error([&] { env.ctx.reset(); }, Status::ERROR_LAUNCH_FAILED, "",
                 "resetting after a fault on a backend without Capability::FaultRecovery");
    expect_error([&] { to_device(env.ctx, HostView::of(v)); }, Status::ERROR_LAUNCH_FAILED, "",
                 "using the context after a reset that could not recover");
    return;
  }
  env.ctx.reset();
  expect_error([&] { kept.copy_to_host(); }, Status::ERROR_CONTEXT_DESTROYED, "", "an array from before the reset");
  expect(bytes_of(to_device(env.ctx, HostView::of(v))) == v, "the context does not work after the reset");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"errors.refusals_leave_state_intact", "refused copies, views and shapes name the problem and change nothing",
     refusals_leave_state_intact},
    {"errors.device_fault_then_reset",
     "a faulting kernel is ERROR_LAUNCH_FAILED at the next synchronize and sticks; reset recovers "
     "(Capability::FaultRecovery) or is refused with the same error",
     device_fault_then_reset},
};

}  // namespace conformance
}  // namespace gpuhal
