// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Context::set_limit / Context::limit: unsupported by capability on the
// host backend, and on cuda (over the fake driver, which encodes cuda.h's
// rules in tests/fakes/cuda/limits.cpp) the printf buffer's size set before
// a kernel that prints is launched, refused after it with an error saying
// so, and settable again in the fresh context a reset makes.
#include <cstdint>
#include <vector>

#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;

TEST_CASE("context limits: the host backend has none, and says which capability is missing", "[limits]") {
  Context ctx = test::host_context();
  CHECK_FALSE(ctx.supports(Capability::ContextLimits));
  REQUIRE_GPUHAL_ERROR(ctx.set_limit(Limit::PrintfBufferBytes, 1 << 20), Status::ERROR_NOT_SUPPORTED,
                       "Capability::ContextLimits");
  REQUIRE_GPUHAL_ERROR((void)ctx.limit(Limit::StackBytes), Status::ERROR_NOT_SUPPORTED, "Capability::ContextLimits");
  // A value that is no Limit is refused before anything else.
  REQUIRE_GPUHAL_ERROR(ctx.set_limit(static_cast<Limit>(7), 1), Status::ERROR_INVALID_VALUE, "unknown limit 7");
  REQUIRE_GPUHAL_ERROR(Context().set_limit(Limit::StackBytes, 1), Status::ERROR_INVALID_HANDLE, "Context::set_limit");
}

#ifdef GPUHAL_TEST_FAKE_CUDA
TEST_CASE("context limits: cuda sets the printf buffer before a printing kernel and refuses it after", "[limits][cuda]") {
  Context ctx = test::cuda_runtime().device(0).primary_context();
  REQUIRE(ctx.supports(Capability::ContextLimits));
  CHECK(ctx.limit(Limit::PrintfBufferBytes) == (uint64_t(1) << 20));  // the driver's defaults
  CHECK(ctx.limit(Limit::StackBytes) == 1024);
  ctx.set_limit(Limit::PrintfBufferBytes, uint64_t(4) << 20);
  ctx.set_limit(Limit::StackBytes, 4096);
  CHECK(ctx.limit(Limit::PrintfBufferBytes) == (uint64_t(4) << 20));
  CHECK(ctx.limit(Limit::StackBytes) == 4096);
  REQUIRE_GPUHAL_ERROR(ctx.set_limit(static_cast<Limit>(0), 1), Status::ERROR_INVALID_VALUE, "unknown limit 0");

  Module m;
  try {
    m = Module::compile(ctx, kPrintAssert);
  } catch (const Error &e) {
    if (std::string(e.what()).find("could not be loaded") == std::string::npos) throw;
    WARN("skipped: NVRTC is not installed here: " << e.what());
    return;
  }
  // A kernel without printf changes nothing; one with it fixes the size.
  Module plain = Module::compile(ctx, kSaxpy);
  DeviceArray x = device_array(ctx, {64}, dtypes::float32), y = device_array(ctx, {64}, dtypes::float32);
  plain.kernel("saxpy")({1}, {64})(y, x, 1.0f, 64);
  ctx.synchronize();
  ctx.set_limit(Limit::PrintfBufferBytes, uint64_t(2) << 20);
  DeviceArray d = device_array(ctx, {64}, dtypes::int32);
  d.memset(0);
  m.kernel("checked")({1}, {64})(d, 64u);
  ctx.synchronize();
  REQUIRE_GPUHAL_ERROR(ctx.set_limit(Limit::PrintfBufferBytes, uint64_t(8) << 20), Status::ERROR_INVALID_VALUE,
                       "cannot change once a kernel that uses gpuhal_printf has been launched");
  CHECK(ctx.limit(Limit::PrintfBufferBytes) == (uint64_t(2) << 20));  // unchanged by the refusal
  ctx.set_limit(Limit::StackBytes, 2048);  // the stack has no such rule
  CHECK(ctx.limit(Limit::StackBytes) == 2048);

  // A reset makes a fresh context: the defaults again, and settable.
  ctx.reset();
  CHECK(ctx.limit(Limit::PrintfBufferBytes) == (uint64_t(1) << 20));
  ctx.set_limit(Limit::PrintfBufferBytes, uint64_t(8) << 20);
  CHECK(ctx.limit(Limit::PrintfBufferBytes) == (uint64_t(8) << 20));
}
#endif
