// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Virtual memory: reserve, map, set access, arrays over mappings that
// follow each other, the refusals of the rules, and a buffer that grows in
// place.
#include "gpuhal/virtual_memory.hpp"
#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

std::vector<int32_t> counting(size_t n, int32_t from) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + int32_t(i);
  return v;
}

void reserve_map_access(Env &env) {
  if (!env.runtime.supports(Capability::VirtualMemory)) {
    expect_error([&] { (void)vm_granularity(env.ctx); }, Status::ERROR_NOT_SUPPORTED, "Capability::VirtualMemory",
                 "vm_granularity without the capability");
    expect_error([&] { (void)VirtualRange::reserve(env.ctx, 1 << 21); }, Status::ERROR_NOT_SUPPORTED,
                 "Capability::VirtualMemory", "VirtualRange::reserve without the capability");
    throw Unsupported{"the plugin does not claim virtual memory (refused as it must be)",
                      to_string(Capability::VirtualMemory)};
  }
  const VmGranularity g = vm_granularity(env.ctx);
  expect(g.minimum > 0 && g.recommended >= g.minimum && g.recommended % g.minimum == 0,
         "granularity " + std::to_string(g.minimum) + " / recommended " + std::to_string(g.recommended));
  const uint64_t m = g.minimum;
  VirtualRange range = VirtualRange::reserve(env.ctx, 4 * m);
  expect(range.base() != 0 && range.size() == 4 * m, "a reservation has no address or the wrong size");
  PhysicalMemory first = PhysicalMemory::create(env.ctx, 2 * m), second = PhysicalMemory::create(env.ctx, m);
  range.map(0, 2 * m, first);
  range.map(2 * m, m, second);
  // Not accessible yet: no array over it.
  expect_error([&] { (void)range.array(0, {int64_t(m / 4)}, dtypes::int32); }, Status::ERROR_INVALID_VALUE,
               "not mapped with access", "an array over a mapping without access");
  range.set_access(0, 3 * m, VmAccess::ReadWrite);
  {
    // One array across both mappings: written from the host, read back.
    const size_t n = size_t(3 * m / 4);
    DeviceArray a = range.array(0, {int64_t(n)}, dtypes::int32);
    expect(a.device_pointer() == range.base(), "the array does not start at the range's base");
    const auto v = counting(n, 7);
    a.copy_from_host(HostView::of(v));
    expect(a.copy_to_host().to_vector<int32_t>() == v, "data written across two mappings reads back differently");
    // A view at an offset sees the same bytes.
    DeviceArray tail = range.array(2 * m, {int64_t(m / 4)}, dtypes::int32);
    expect(tail.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>(v.begin() + int64_t(2 * m / 4), v.end()),
           "an array over the second mapping sees other bytes");
    // While arrays cover them, the mappings stay.
    expect_error([&] { range.unmap(2 * m, m); }, Status::ERROR_INVALID_VALUE, "still covers",
                 "unmapping under a live array");
  }
  // The rules, refused by name.
  expect_error([&] { range.map(3 * m, m, second, m); }, Status::ERROR_INVALID_VALUE, "",
               "mapping past the end of the physical memory");
  expect_error([&] { range.map(m, m, first); }, Status::ERROR_INVALID_VALUE, "", "mapping over a mapping");
  expect_error([&] { range.unmap(0, m); }, Status::ERROR_INVALID_VALUE, "unmapped whole",
               "unmapping part of a mapping");
  expect_error([&] { range.map(4 * m, m, second); }, Status::ERROR_INVALID_VALUE, "outside the range",
               "mapping outside the reservation");
  expect_error([&] { (void)VirtualRange::reserve(env.ctx, 0); }, Status::ERROR_INVALID_VALUE, "",
               "a reservation of 0 bytes");
  if (m > 1)
    expect_error([&] { (void)PhysicalMemory::create(env.ctx, m + 1); }, Status::ERROR_INVALID_VALUE, "",
                 "physical memory of a size off the granularity");
  // Unmapped and mapped again elsewhere: the data comes with the memory.
  range.unmap(2 * m, m);
  range.map(3 * m, m, second);
  range.set_access(3 * m, m, VmAccess::ReadWrite);
  DeviceArray moved = range.array(3 * m, {int64_t(m / 4)}, dtypes::int32);
  expect(moved.copy_to_host().to_vector<int32_t>() == counting(size_t(m / 4), 7 + int32_t(2 * m / 4)),
         "physical memory mapped at another place lost its data");
}

void growable_array(Env &env) {
  require(env, Capability::VirtualMemory, "virtual memory");
  const uint64_t step = vm_granularity(env.ctx).recommended / 4;  // int32 elements a step
  GrowableDeviceArray g(env.ctx, dtypes::int32, 8 * step);
  g.resize(100);
  const DevicePointer p = g.device_pointer();
  const auto head = counting(100, 1);
  g.array().copy_from_host(HostView::of(head));
  // Grows past one step, then past three: the pointer stays, the data too.
  for (uint64_t n : {step + 5, 3 * step + 17}) {
    const uint64_t before = g.size();
    g.resize(n);
    expect(g.device_pointer() == p && g.array().device_pointer() == p, "the array moved when it grew");
    expect(g.capacity() >= n, "capacity " + std::to_string(g.capacity()) + " below size " + std::to_string(n));
    const auto more = counting(size_t(n - before), int32_t(before) + 1);
    g.array().view({Slice(int64_t(before), int64_t(n))}).copy_from_host(HostView::of(more));
  }
  const auto all = g.array().copy_to_host().to_vector<int32_t>();
  bool ok = all.size() == g.size();
  for (size_t i = 0; ok && i < all.size(); ++i) ok = all[i] == int32_t(i) + 1;
  expect(ok, "a grown array's elements are not what was written before and after it grew");
  expect_error([&] { g.resize(8 * step + 1); }, Status::ERROR_OUT_OF_MEMORY, "max_size", "growing past max_size");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"memory.virtual_reserve_map_access",
     "with Capability::VirtualMemory, physical memory mapped into a reservation is usable only after "
     "set_access, arrays run across mappings, mappings under live arrays stay, and the granularity, "
     "overlap and whole-mapping rules are refused by name; without it ERROR_NOT_SUPPORTED",
     reserve_map_access},
    {"memory.growable_array_keeps_its_pointer",
     "a GrowableDeviceArray grows by mapping more memory at its end: the same device pointer and the "
     "same data before and after, refused past max_size",
     growable_array},
};

}  // namespace conformance
}  // namespace gpuhal
