// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Transfers: every direction, memset, strided views, zero sizes, and sizes
// past 4 GiB.
#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void round_trip(Env &env) {
  for (size_t n : {size_t(1), size_t(3), size_t(4097), size_t(1) << 20, (size_t(1) << 22) + 13}) {
    const auto v = pattern(n, uint8_t(n));
    DeviceArray d = to_device(env.ctx, HostView::of(v));
    std::string diff = first_difference(bytes_of(d), v);
    expect(diff.empty(), "H2D/D2H round trip of " + std::to_string(n) + " bytes: " + diff);
    // A round trip cannot see corruption that undoes itself; a device-side
    // memset read back checks D2H on its own.
    d.memset(0x3C);
    diff = first_difference(bytes_of(d), std::vector<uint8_t>(n, 0x3C));
    expect(diff.empty(), "D2H of " + std::to_string(n) + " memset bytes: " + diff);
  }
}

void device_to_device_and_memset(Env &env) {
  const auto v = pattern(10000, 7);
  DeviceArray a = to_device(env.ctx, HostView::of(v));
  DeviceArray b = device_array_like(a);
  b.copy_from_device(a);
  expect(bytes_of(b) == v, "D2D copy differs");
  b.view({Slice(100, 200)}).memset(0x5A);
  const auto out = bytes_of(b);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint8_t want = i >= 100 && i < 200 ? 0x5A : v[i];
    expect(out[i] == want, "memset of bytes [100, 200) wrong at byte " + std::to_string(i));
  }
  expect(bytes_of(a) == v, "the source of a D2D copy changed");
}

void views_at_offsets(Env &env) {
  // Rows 10..19 of a 40x24 int32 array (a contiguous view 960 bytes in),
  // written from the host and read back; the rest keeps its bytes. A
  // non-contiguous view (a column) cannot move as one region: refused with
  // ERROR_NOT_CONTIGUOUS (as Numba does), and nothing changes.
  std::vector<int32_t> all(40 * 24);
  for (size_t i = 0; i < all.size(); ++i) all[i] = int32_t(i * 7 + 1);
  DeviceArray d = to_device(env.ctx, HostView::of(all, {40, 24}));
  DeviceArray rows = d.view({Slice(10, 20)});
  std::vector<int32_t> fresh(10 * 24);
  for (size_t i = 0; i < fresh.size(); ++i) fresh[i] = -int32_t(i) - 1;
  rows.copy_from_host(HostView::of(fresh, {10, 24}));
  expect(rows.copy_to_host().to_vector<int32_t>() == fresh, "rows written from the host read back differently");
  DeviceArray col = d.view({Slice(), Index(3)});
  std::vector<int32_t> column(40, 5);
  expect_error([&] { col.copy_from_host(HostView::of(column)); }, Status::ERROR_NOT_CONTIGUOUS, "",
               "a host copy into a column view");
  auto want = all;
  for (size_t i = 0; i < fresh.size(); ++i) want[10 * 24 + i] = fresh[i];
  const auto back = d.copy_to_host().to_vector<int32_t>();
  for (size_t i = 0; i < back.size(); ++i)
    expect(back[i] == want[i],
           "element " + std::to_string(i) + " is " + std::to_string(back[i]) + ", expected " + std::to_string(want[i]));
  // A device-to-device copy between views at different offsets.
  DeviceArray other = device_array(env.ctx, {40, 24}, dtypes::int32);
  other.memset(0);
  other.view({Slice(30, 40)}).copy_from_device(rows);
  const auto got = other.copy_to_host().to_vector<int32_t>();
  for (size_t i = 0; i < got.size(); ++i) {
    const int32_t w = i >= 30 * 24 ? fresh[i - 30 * 24] : 0;
    expect(got[i] == w, "a D2D copy between views: element " + std::to_string(i) + " is " + std::to_string(got[i]));
  }
}

void zero_size_everywhere(Env &env) {
  std::vector<float> none;
  Stream s = env.ctx.create_stream();
  DeviceArray z = to_device(env.ctx, HostView::of(none));
  expect(z.size() == 0 && z.nbytes() == 0, "a zero-size array has elements");
  DeviceArray z2 = device_array(env.ctx, {0, 5}, dtypes::float32);
  DeviceArray z3 = device_array(env.ctx, {5, 0}, dtypes::float32);
  z.copy_from_host(HostView::of(none));
  z.copy_from_host(HostView::of(none), s);
  z.copy_to_host(HostView::of(none));
  z.copy_to_host(HostView::of(none), s);
  z2.copy_from_device(device_array(env.ctx, {0, 5}, dtypes::float32));
  z2.copy_from_device(device_array(env.ctx, {0, 5}, dtypes::float32), s);
  z3.memset(1);
  z3.memset(1, s);
  expect(z3.copy_to_host().size() == 0, "a zero-size array read back has elements");
  expect(z2.copy_to_host(s).size() == 0, "a zero-size array read back on a stream has elements");
  DeviceArray some = device_array(env.ctx, {8}, dtypes::uint8);
  some.memset(9);
  some.view({Slice(3, 3)}).memset(0);
  std::vector<uint8_t> no_bytes;
  some.view({Slice(5, 5)}).copy_from_host(HostView::of(no_bytes));
  s.synchronize();
  expect(bytes_of(some) == std::vector<uint8_t>(8, 9), "a zero-size view's memset or copy changed its array");
}

void beyond_4_gib(Env &env) {
  // One allocation of 4 GiB + 64 KiB: a memset of all of it (a 64-bit size),
  // a host copy into a window that straddles the 4 GiB mark (64-bit offsets)
  // and windows read back. Only where the device has the memory.
  const uint64_t size = (uint64_t(4) << 30) + (uint64_t(64) << 10);
  const uint64_t free = env.ctx.memory_info().free;
  if (free < size + (uint64_t(1) << 30))
    throw Unsupported{"needs " + std::to_string((size >> 20) + 1024) + " MiB of free device memory; the device has " +
                      std::to_string(free >> 20) + " MiB"};
  DeviceMemory m = env.ctx.allocate(size);
  DeviceArray a(m, Layout::make({int64_t(size)}, 1), dtypes::uint8);
  a.memset(0x11);
  const int64_t mark = int64_t(4) << 30;
  const auto window = pattern(8192, 77);
  a.view({Slice(mark - 4096, mark + 4096)}).copy_from_host(HostView::of(window));
  expect(bytes_of(a.view({Slice(0, 4096)})) == std::vector<uint8_t>(4096, 0x11), "the first 4 KiB lost the memset");
  expect(bytes_of(a.view({Slice(mark - 4096, mark + 4096)})) == window, "the window across the 4 GiB mark differs");
  expect(bytes_of(a.view({Slice(int64_t(size) - 4096, int64_t(size))})) == std::vector<uint8_t>(4096, 0x11),
         "the last 4 KiB (past 4 GiB) lost the memset");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"transfers.round_trip", "H2D then D2H returns the bytes, for sizes from 1 byte to 4 MiB", round_trip},
    {"transfers.device_to_device_and_memset", "D2D copies and memsets of a range write exactly their bytes",
     device_to_device_and_memset},
    {"transfers.views_at_offsets",
     "copies to, from and between views at offsets move only their elements; non-contiguous views are "
     "ERROR_NOT_CONTIGUOUS",
     views_at_offsets},
    {"transfers.zero_size", "zero-size copies and memsets (sync and on a stream) succeed and touch nothing",
     zero_size_everywhere},
    // Gigabytes of memsets and copies: four times the usual limit (it was
    // reported as a hang on a loaded machine).
    {"transfers.beyond_4_gib", "memset, copies and offsets past 4 GiB in one allocation (where the memory is)",
     beyond_4_gib, 4},
};

}  // namespace conformance
}  // namespace gpuhal
