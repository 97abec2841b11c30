// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Peer access between two devices of one runtime.
#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void copies_between_devices(Env &env) {
  if (!env.runtime.supports(Capability::PeerAccess)) {
    if (env.runtime.device_count() > 1)
      expect_error([&] { env.ctx.enable_peer_access(env.runtime.device(1).primary_context()); },
                   Status::ERROR_NOT_SUPPORTED, "", "enable_peer_access without peer access");
    throw Unsupported{"the plugin does not claim peer access", to_string(Capability::PeerAccess)};
  }
  const Device d0 = env.runtime.device(0);
  expect(!d0.can_access_peer(d0), "a device says it can access itself as a peer");
  if (env.runtime.device_count() < 2) throw Unsupported{"one device: no peer to access"};
  const Device d1 = env.runtime.device(1);
  if (!d0.can_access_peer(d1) || !d1.can_access_peer(d0)) throw Unsupported{"devices 0 and 1 cannot access each other"};
  Context c1 = d1.primary_context();
  env.ctx.enable_peer_access(c1);
  env.ctx.enable_peer_access(c1);  // again: fine
  c1.enable_peer_access(env.ctx);
  const auto v = pattern(size_t(2) << 20, 31);
  DeviceArray on0 = to_device(env.ctx, HostView::of(v));
  DeviceArray on1 = device_array(c1, {int64_t(v.size())}, dtypes::uint8);
  on1.copy_from_device(on0);
  expect(bytes_of(on1) == v, "a copy from device 0 to device 1 differs");
  on1.view({Slice(0, 4096)}).memset(0x77);
  on0.copy_from_device(on1, env.ctx.create_stream());
  env.ctx.synchronize();
  c1.synchronize();
  auto want = v;
  for (size_t i = 0; i < 4096; ++i) want[i] = 0x77;
  expect(bytes_of(on0) == want, "a copy from device 1 back to device 0 on a stream differs");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"peer_access.copies_between_devices",
     "two devices that can access each other copy both ways after enable_peer_access (twice is fine)",
     copies_between_devices},
};

}  // namespace conformance
}  // namespace gpuhal
