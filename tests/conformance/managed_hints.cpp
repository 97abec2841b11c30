// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Managed-memory prefetch and advice: hints that keep the data as it is,
// ordered on their stream, refused by name where they do not apply.
#include "gpuhal/managed_hints.hpp"
#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void prefetch_and_advise(Env &env) {
  require(env, Capability::ManagedMemory, "managed memory");
  DeviceArray m;
  try {
    m = managed_array(env.ctx, {1 << 16}, dtypes::int32);
  } catch (const Error &e) {
    if (e.status() != Status::ERROR_NOT_SUPPORTED) throw;
    throw Unsupported{std::string("this device has no managed memory: ") + e.what()};
  }
  Stream s = env.ctx.create_stream();
  if (!env.runtime.supports(Capability::ManagedHints)) {
    expect_error([&] { prefetch(m, Location::device(0), s); }, Status::ERROR_NOT_SUPPORTED, "Capability::ManagedHints",
                 "prefetch without the capability");
    expect_error([&] { advise(m, Advice::SetReadMostly); }, Status::ERROR_NOT_SUPPORTED, "Capability::ManagedHints",
                 "advise without the capability");
    throw Unsupported{"the plugin does not claim managed-memory hints (refused as it must be)",
                      to_string(Capability::ManagedHints)};
  }
  // Written by the host, prefetched to the device, changed there in
  // stream order, prefetched back: the data is the data at every step.
  HostView h = m.host_view();
  for (int64_t i = 0; i < m.size(); ++i) static_cast<int32_t *>(h.data())[i] = int32_t(i * 3);
  prefetch(m, Location::device(0), s);
  m.view({Slice(0, 1024)}).memset(0x11, s);
  prefetch(m, Location::host(), s);
  s.synchronize();
  const int32_t *p = static_cast<const int32_t *>(h.data());
  for (int64_t i = 0; i < m.size(); ++i) {
    const int32_t want = i < 1024 ? 0x11111111 : int32_t(i * 3);
    if (p[i] != want) {
      expect(false, "element " + std::to_string(i) + " is " + std::to_string(p[i]) +
                        " after the prefetches, expected " + std::to_string(want));
      break;
    }
  }
  // Every advice, each to a device and to the host where it takes one.
  for (Advice a : {Advice::SetReadMostly, Advice::UnsetReadMostly, Advice::SetPreferredLocation,
                   Advice::UnsetPreferredLocation, Advice::SetAccessedBy, Advice::UnsetAccessedBy}) {
    advise(m, a, Location::device(0));
    advise(m, a, Location::host());
  }
  // A view names its own span; an empty array nothing.
  prefetch(m.view({Slice(4096, 8192)}), Location::device(0), s);
  advise(m.view({Slice(4096, 8192)}), Advice::SetPreferredLocation, Location::device(0));
  s.synchronize();
  expect(p[5000] == 15000, "a view's prefetch changed its data");
  // Refused by name: an array that is not managed, a device that does not
  // exist, an advice that does not exist, a stream of another context.
  DeviceArray plain = device_array(env.ctx, {64}, dtypes::int32);
  expect_error([&] { prefetch(plain, Location::device(0), s); }, Status::ERROR_INVALID_VALUE, "not a managed array",
               "prefetch of device memory");
  expect_error([&] { advise(plain, Advice::SetReadMostly); }, Status::ERROR_INVALID_VALUE, "not a managed array",
               "advise of device memory");
  const int beyond = env.runtime.device_count();
  expect_error([&] { prefetch(m, Location::device(beyond), s); }, Status::ERROR_INVALID_VALUE, "does not exist",
               "prefetch to a device that does not exist");
  expect_error([&] { advise(m, static_cast<Advice>(7)); }, Status::ERROR_INVALID_VALUE, "unknown advice",
               "an advice that does not exist");
  expect_error([&] { prefetch(DeviceArray(), Location::host(), s); }, Status::ERROR_INVALID_HANDLE, "empty array",
               "prefetch of an empty handle");
  s.synchronize();
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"memory.managed_prefetch_advise",
     "with Capability::ManagedHints, prefetch (ordered on its stream) and every advice keep a managed "
     "array's data; device memory, unknown devices and advice are refused by name; without it both "
     "are ERROR_NOT_SUPPORTED",
     prefetch_and_advise},
};

}  // namespace conformance
}  // namespace gpuhal
