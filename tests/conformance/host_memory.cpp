// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host memory: pinned arrays, mapped arrays (with the portable and
// write-combined flags), registered ranges and their scopes.
#include "conformance.hpp"

#include <sys/mman.h>
#include <unistd.h>

namespace gpuhal {
namespace conformance {
namespace {

// Unsupported (after checking that the API refuses cleanly) unless the
// plugin claims host memory.
void require_host_memory(Env &env) {
  if (env.runtime.supports(Capability::HostMemory)) return;
  expect_error([&] { pinned_array(env.ctx, {4}); }, Status::ERROR_NOT_SUPPORTED, "",
               "pinned_array without host memory");
  throw Unsupported{"the plugin does not claim host memory (pinned_array says ERROR_NOT_SUPPORTED)",
                    to_string(Capability::HostMemory)};
}

void pinned_arrays(Env &env) {
  require_host_memory(env);
  HostArray p = pinned_array(env.ctx, {64, 33}, dtypes::int32);
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 0; c < 33; ++c) p.at<int32_t>({r, c}) = int32_t(r * 1000 + c);
  Stream s = env.ctx.create_stream();
  DeviceArray d = to_device(env.ctx, p, s);
  HostArray back = pinned_array(env.ctx, {64, 33}, dtypes::int32);
  d.copy_to_host(back, s);
  s.synchronize();
  expect(back.to_vector<int32_t>() == p.to_vector<int32_t>(), "an async round trip through pinned arrays differs");
  HostArray f = pinned_array(env.ctx, {4, 3}, dtypes::float64, {}, 'F');
  expect(f.strides() == Strides{8, 32}, "a Fortran-ordered pinned array has C strides");
  expect_error([&] { pinned_array(env.ctx, {-2}); }, Status::ERROR_INVALID_SHAPE, "", "pinned_array({-2})");
}

void mapped_arrays(Env &env) {
  require_host_memory(env);
  if (!env.runtime.supports(Capability::MappedHostMemory)) {
    expect_error([&] { mapped_array(env.ctx, {4}); }, Status::ERROR_NOT_SUPPORTED, "", "mapped_array without mapping");
    throw Unsupported{"the plugin does not claim mapped host memory", to_string(Capability::MappedHostMemory)};
  }
  for (int flags = 0; flags < 4; ++flags) {
    const bool portable = flags & 1, write_combined = flags & 2;
    const std::string which = std::string("mapped array (portable ") + (portable ? "on" : "off") + ", write-combined " +
                              (write_combined ? "on" : "off") + ")";
    MappedArray m = mapped_array(env.ctx, {16, 16}, dtypes::int64, {}, 'C', portable, write_combined);
    expect(m.device.device_pointer() != 0, which + ": no device pointer");
    m.device.memset(0);
    expect(m.host.at<int64_t>({15, 15}) == 0, which + ": a device memset is not seen by the host");
    m.host.at<int64_t>({2, 1}) = 99;
    expect(m.device.view({2, 1}).copy_to_host().at<int64_t>({}) == 99,
           which + ": a host write is not seen by the device");
    // Device work through the mapping: a D2D copy into device memory.
    DeviceArray copy = device_array(env.ctx, {16, 16}, dtypes::int64);
    copy.copy_from_device(m.device);
    expect(copy.copy_to_host().at<int64_t>({2, 1}) == 99,
           which + ": a D2D copy from the mapping lost the host's write");
    DeviceArray kept = m.device;
    m.host = HostArray();  // the device side keeps the buffer alive
    expect(kept.copy_to_host().at<int64_t>({2, 1}) == 99,
           which + ": the device side lost the buffer with the host side");
  }
}

void registered_ranges(Env &env) {
  require_host_memory(env);
  std::vector<double> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i) / 4;
  {
    HostRegistration r = register_host(env.ctx, HostView::of(v));
    expect(bool(r) && r.size() == 8000, "a registration of 8000 bytes reports " + std::to_string(r.size()));
    HostRegistration twice = register_host(env.ctx, HostView::of(v));  // the same range again: counted
    HostRegistration inner = register_host(env.ctx, HostView::of(v).view({Slice(10, 20)}));  // nested: counted
    Stream s = env.ctx.create_stream();
    DeviceArray d = to_device(env.ctx, HostView::of(v), s);
    std::vector<double> out(v.size());
    HostRegistration ro = register_host(env.ctx, HostView::of(out));
    d.copy_to_host(HostView::of(out), s);
    s.synchronize();
    expect(out == v, "an async round trip through registered memory differs");
  }
  std::vector<double> other(4);
  expect_error([&] { deregister_host(env.ctx, HostView::of(other)); }, Status::ERROR_NOT_REGISTERED, "",
               "deregistering memory never registered");
  // Every registration ended with its handles: the range registers again.
  HostRegistration again = register_host(env.ctx, HostView::of(v).view({Slice(500, {})}));
  expect(again.size() == 4000, "a registration after release has the wrong size");
  // Overlapping registrations: each keeps its bytes registered until it ends.
  HostRegistration head = register_host(env.ctx, HostView::of(v).view({Slice(0, 600)}));
  again.release();
  {
    Stream s = env.ctx.create_stream();
    std::vector<double> out(600);
    DeviceArray d = to_device(env.ctx, HostView::of(v).view({Slice(0, 600)}), s);
    d.copy_to_host(HostView::of(out), s);
    s.synchronize();
    expect(out == std::vector<double>(v.begin(), v.begin() + 600),
           "a transfer through an overlapping registration differs");
  }
  expect_error([&] { deregister_host(env.ctx, HostView::of(v).view({Slice(0, 10)})); }, Status::ERROR_NOT_REGISTERED,
               "", "deregistering part of a registered range");
}

// Three pages with the middle one unmapped, given back at scope's end.
struct PagesWithHole {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  char *bytes = static_cast<char *>(mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  PagesWithHole() {
    if (bytes == MAP_FAILED) throw Failure{"mmap of three pages failed"};
    munmap(bytes + page, page);
  }
  ~PagesWithHole() {
    munmap(bytes, page);
    munmap(bytes + 2 * page, page);
  }
  PagesWithHole(const PagesWithHole &) = delete;
  PagesWithHole &operator=(const PagesWithHole &) = delete;
};

// A range with an unmapped page is refused (ERROR_INVALID_VALUE naming it):
// a vendor driver page-locks what it registers, which fails there, and a
// registration of memory that is not there would only fault later. The
// mapped pages on either side still register.
void register_unmapped_refused(Env &env) {
  require_host_memory(env);
  PagesWithHole m;
  const int64_t page = int64_t(m.page);
  expect_error([&] { register_host(env.ctx, HostView(m.bytes, {3 * page}, dtypes::uint8)); },
               Status::ERROR_INVALID_VALUE, "not all mapped", "registering a range with an unmapped page");
  expect_error([&] { register_host(env.ctx, HostView(m.bytes + page + 8, {16}, dtypes::uint8)); },
               Status::ERROR_INVALID_VALUE, "not all mapped", "registering bytes inside an unmapped page");
  HostRegistration head = register_host(env.ctx, HostView(m.bytes, {page}, dtypes::uint8));
  HostRegistration tail = register_host(env.ctx, HostView(m.bytes + 2 * page, {page}, dtypes::uint8));
  expect(head.size() == uint64_t(page) && tail.size() == uint64_t(page),
         "the mapped pages beside the hole did not register");
  std::vector<uint8_t> ones(size_t(page), 1);
  to_device(env.ctx, HostView::of(ones)).copy_to_host(HostView(m.bytes + 2 * page, {page}, dtypes::uint8));
  expect(m.bytes[2 * page + page - 1] == 1, "a copy into the registered page beside the hole did not land");
}

void scopes(Env &env) {
  require_host_memory(env);
  std::vector<float> a(1000, 1.5f), b(10, 2.5f);
  {
    PinnedScope pin(env.ctx, {HostView::of(a), HostView::of(b)});
    expect(to_device(env.ctx, HostView::of(a)).copy_to_host().to_vector<float>() == a,
           "a copy of pinned memory differs");
  }
  try {
    PinnedScope pin(env.ctx, {HostView::of(a)});
    throw Failure{"(unwinding)"};
  } catch (const Failure &) {
  }
  PinnedScope again(env.ctx, {HostView::of(b)});  // nothing was left registered by the unwound scope
  HostRegistration r = register_host(env.ctx, HostView::of(a));
  r.release();
  if (!env.runtime.supports(Capability::MappedHostMemory)) return;
  std::vector<int32_t> m(64, 0), src(64);
  for (int i = 0; i < 64; ++i) src[size_t(i)] = i;
  {
    MappedScope mapped(env.ctx, {HostView::of(m, {8, 8})});
    expect(mapped[0].shape() == Shape{8, 8}, "a mapped scope's device array has the wrong shape");
    mapped[0].copy_from_host(HostView::of(src, {8, 8}));
    expect(m == src, "a copy into a mapped scope's device array did not reach the host memory");
  }
  PinnedScope after(env.ctx, {HostView::of(m)});  // the mapping ended with its scope
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"host_memory.pinned_arrays", "pinned arrays transfer asynchronously and keep their layout", pinned_arrays},
    {"host_memory.mapped_arrays",
     "mapped arrays are one memory seen from host and device, with every portable / write-combined "
     "combination",
     mapped_arrays},
    {"host_memory.register_unmapped_refused",
     "a range with an unmapped page does not register (ERROR_INVALID_VALUE); the pages beside it do",
     register_unmapped_refused},
    {"host_memory.registered_ranges",
     "registered ranges transfer; repeated, nested and overlapping registrations count; unknown ranges are refused",
     registered_ranges},
    {"host_memory.scopes", "pinned and mapped scopes register on entry and end with the scope, also on unwinding",
     scopes},
};

}  // namespace conformance
}  // namespace gpuhal
