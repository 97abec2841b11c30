// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin over the fake HSA runtime (tests/fakes/hsa/):
// devices from agents, memory from pools, copies staged for pageable
// memory, streams as chains of completion signals over AQL queues, barrier
// packets, kernel dispatch packets checked field by field (the fake records
// them; it does not run GPU code), fault injection and leak checks against
// the fake's live-object counts.
#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "hsa_api.hpp"
#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;
namespace api = gpuhal::hsa::api;

#if GPUHAL_TEST_HAVE_HSA_PLUGIN

namespace {

// Keeps the fake runtime loaded for the test's whole life (its hooks stay
// callable after the plugin unloaded it). Faults must be set before the
// first load: the fake reads them once.
struct FakeHsa {
  void *handle = nullptr;
  explicit FakeHsa(const char *faults = nullptr) {
    if (faults) setenv("FAKE_HSA_FAIL", faults, 1);
    handle = dlopen(GPUHAL_TEST_FAKE_HSA, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle);
  }
  ~FakeHsa() { dlclose(handle); }
  template <class F>
  F *fn(const char *name) const {
    void *p = dlsym(handle, name);
    REQUIRE(p);
    return reinterpret_cast<F *>(p);
  }
  struct Live {
    size_t allocations = 0, signals = 0, queues = 0, executables = 0;
  };
  Live live() const {
    Live l;
    fn<void(size_t *, size_t *, size_t *, size_t *)>("fake_hsa_live_objects")(&l.allocations, &l.signals, &l.queues,
                                                                              &l.executables);
    return l;
  }
  uint64_t last_dispatch(api::hsa_kernel_dispatch_packet_t *p, std::vector<uint8_t> *kernarg) const {
    size_t size = 0;
    std::vector<uint8_t> buf(4096);
    const uint64_t n = fn<uint64_t(api::hsa_kernel_dispatch_packet_t *, void *, size_t, size_t *)>(
        "fake_hsa_last_dispatch")(p, buf.data(), buf.size(), &size);
    if (kernarg) kernarg->assign(buf.begin(), buf.begin() + std::min(size, buf.size()));
    return n;
  }
};

Runtime hsa_runtime() {
  Config c;
  c.backend = "hsa";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.set_option("GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA);
  return Runtime::load(c);
}

// Compiles with the real amd_comgr, or returns an empty module after saying
// why it cannot (amd_comgr not installed).
Module compile_or_skip(const Context &ctx, const char *source) {
  try {
    return Module::compile(ctx, source);
  } catch (const Error &e) {
    if (std::string(e.what()).find("could not be loaded") == std::string::npos) throw;
    WARN("skipped: amd_comgr is not installed here: " << e.what());
    return Module();
  }
}

template <class T>
T at(const std::vector<uint8_t> &bytes, size_t offset) {
  T v{};
  REQUIRE(offset + sizeof v <= bytes.size());
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

}  // namespace

TEST_CASE("hsa backend over the fake runtime: agents, pools, staged and pinned copies, memsets, no leaks") {
  FakeHsa fake;
  {
    Runtime rt = hsa_runtime();
    REQUIRE(rt.backend_name() == "hsa");
    REQUIRE(rt.device_count() == 1);
    const DeviceProperties &p = rt.device(0).properties();
    CHECK(p.name == "gpuhal fake HSA GPU (gfx90a)");
    CHECK(p.vendor == "AMD");
    CHECK(p.compute_major == 9);
    CHECK(p.compute_minor == 0);
    CHECK(p.warp_size == 64);
    CHECK(p.max_threads_per_block == 1024);
    CHECK(p.shared_memory_per_block == 65536);
    CHECK(p.pci_bus == 0x43);
    CHECK(rt.supports(Capability::StreamBarrier));
    CHECK(rt.supports(Capability::MappedHostMemory));
    CHECK(rt.supports(Capability::Kernels));
    CHECK_FALSE(rt.supports(Capability::Ipc));
    Context ctx = rt.device(0).primary_context();
    const MemoryInfo before = ctx.memory_info();
    CHECK(before.total == (uint64_t(16) << 30));

    // Pageable host memory goes through staging buffers (the fake refuses
    // copies from memory that is neither pool memory nor locked).
    std::vector<int32_t> v(10007);
    for (size_t i = 0; i < v.size(); ++i) v[i] = int32_t(i * 7 - 3);
    DeviceArray d = to_device(ctx, HostView::of(v));
    CHECK(ctx.memory_info().free == before.free - d.nbytes());
    CHECK(d.copy_to_host().to_vector<int32_t>() == v);
    // Byte memsets at unaligned offsets and lengths (fill words plus edges).
    DeviceArray bytes = device_array(ctx, {103}, dtypes::uint8);
    bytes.memset(0x11);
    bytes.view({Slice(1, 102)}).memset(0xEE);
    auto b = bytes.copy_to_host().to_vector<uint8_t>();
    CHECK(b[0] == 0x11);
    CHECK(b[1] == 0xEE);
    CHECK(b[101] == 0xEE);
    CHECK(b[102] == 0x11);
    // Pinned (fine-grained system pool) and registered memory are copied
    // directly, on a stream.
    Stream s = ctx.create_stream();
    HostArray pinned = pinned_array(ctx, {10007}, dtypes::int32);
    std::memcpy(pinned.data(), v.data(), v.size() * 4);
    DeviceArray d2 = device_array_like(d);
    d2.copy_from_host(pinned.view(), s);
    std::vector<int32_t> out(v.size());
    {
      HostRegistration reg = register_host(ctx, HostView::of(out));
      d2.copy_to_host(HostView::of(out), s);
      s.synchronize();
    }
    CHECK(out == v);
    // Device to device, then a stream-ordered memset seen by a later copy.
    DeviceArray d3 = device_array_like(d);
    d3.copy_from_device(d2, s);
    d3.view({Slice(0, 2)}).memset(0, s);
    s.synchronize();
    auto r = d3.copy_to_host().to_vector<int32_t>();
    CHECK(r[0] == 0);
    CHECK(r[1] == 0);
    CHECK(r[2] == v[2]);
    CHECK(r.back() == v.back());
  }
  // Everything the plugin made was released.
  const auto l = fake.live();
  CHECK(l.allocations == 0);
  CHECK(l.signals == 0);
  CHECK(l.queues == 0);
  CHECK(l.executables == 0);
}

TEST_CASE("hsa backend: a stream barrier over seven events chains barrier-AND packets, five signals each") {
  FakeHsa fake;
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  std::atomic<int> finished{0};
  std::vector<Stream> streams;
  std::vector<Event> events;
  for (int i = 0; i < 7; ++i) {
    streams.push_back(ctx.create_stream(StreamKind::NonBlocking));
    streams.back().add_callback([&finished, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2 + 3 * i));
      ++finished;
    });
    events.push_back(streams.back().record());
  }
  Stream c = ctx.create_stream(StreamKind::NonBlocking);
  int seen = -1;
  c.wait(events);
  c.add_callback([&] { seen = finished.load(); });
  c.synchronize();
  CHECK(seen == 7);
  // The legacy default stream waits for blocking streams (and not for
  // non-blocking ones); a synchronous copy sees a blocking stream's memset.
  Stream blocking = ctx.create_stream();
  DeviceArray d = device_array(ctx, {64}, dtypes::uint8);
  d.memset(1);
  blocking.add_callback([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  d.memset(9, blocking);
  CHECK(d.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(64, 9));
}

// Context::external_stream of a stream another gpuhal runtime made over the
// same plugin: the stream is that runtime's context's (its lock, its queue,
// its order), and work from this context joins that order.
TEST_CASE("hsa backend: another runtime's stream works as an external stream", "[stream][hsa]") {
  FakeHsa fake;
  Runtime my_rt = hsa_runtime(), their_rt = hsa_runtime();
  Context mine = my_rt.device(0).primary_context(), theirs = their_rt.device(0).primary_context();
  Stream owner = theirs.create_stream(StreamKind::NonBlocking);
  Stream ext = mine.external_stream(owner.native_handle());
  SECTION("every stream entry, in the owner's order") {
    std::atomic<bool> their_work_done{false};
    owner.add_callback([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      their_work_done = true;
    });
    DeviceArray d = device_array(mine, {4096}, dtypes::uint8);
    d.memset(5, ext);
    bool after_theirs = false;
    ext.add_callback([&] { after_theirs = their_work_done.load(); });
    Event e = mine.create_event();
    e.record(ext);
    Stream other = mine.create_stream();
    other.wait(e);
    ext.wait(mine.create_event());
    ext.wait_for_all_prior_work();
    std::vector<uint8_t> got(4096);
    d.copy_to_host(HostView::of(got), ext);
    ext.synchronize();
    CHECK(ext.query());
    CHECK(after_theirs);
    CHECK(got == std::vector<uint8_t>(4096, 5));
    other.synchronize();
  }
  SECTION("capture stays the owner's business") {
    REQUIRE_GPUHAL_ERROR(ext.begin_capture(), Status::ERROR_CAPTURE_UNSUPPORTED, "another context's");
    DeviceArray d = device_array(mine, {64}, dtypes::uint8);
    owner.begin_capture();
    REQUIRE_GPUHAL_ERROR(d.memset(1, ext), Status::ERROR_CAPTURE_UNSUPPORTED, "is capturing there");
    (void)owner.end_capture();
    d.memset(2, ext);  // usable again once the capture ended
    ext.synchronize();
    CHECK(d.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(64, 2));
  }
  SECTION("two threads, each on the other's stream, do not deadlock") {
    Stream my_own = mine.create_stream(StreamKind::NonBlocking);
    Stream theirs_ext_of_mine = theirs.external_stream(my_own.native_handle());
    DeviceArray a = device_array(mine, {256}, dtypes::uint8), b = device_array(theirs, {256}, dtypes::uint8);
    auto churn = [](const DeviceArray &d, const Stream &on, const Stream &also) {
      for (int i = 0; i < 200; ++i) {
        d.memset(uint8_t(i), on);
        on.synchronize();
        also.query();
      }
    };
    std::thread t([&] { churn(b, theirs_ext_of_mine, owner); });
    churn(a, ext, my_own);
    t.join();
    CHECK(a.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(256, 199));
    CHECK(b.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(256, 199));
  }
  SECTION("a destroyed stream is not found") {
    const NativeStream gone = owner.native_handle();
    ext = Stream();
    owner = Stream();
    theirs.flush_deallocations();  // stream destruction is a deferred release
    REQUIRE_GPUHAL_ERROR(mine.external_stream(gone).synchronize(), Status::ERROR_INVALID_HANDLE, "invalid stream");
  }
}

TEST_CASE("hsa kernel: counting barriers reserve their LDS cell before the dynamic part", "[kernel][hsa]") {
  FakeHsa fake;
  {
    Runtime rt = hsa_runtime();
    Context ctx = rt.device(0).primary_context();
    Module m = compile_or_skip(ctx, kVotes);
    if (!m) return;
    DeviceArray out = device_array(ctx, {5 * 64}, dtypes::int32);
    api::hsa_kernel_dispatch_packet_t p{};
    std::vector<uint8_t> args;
    m.kernel("votes")({1}, {64})(out, 2);
    ctx.synchronize();
    fake.last_dispatch(&p, &args);
    CHECK(p.group_segment_size == 16);  // no static LDS: the cell's 16 bytes
    m.kernel("votes")({1}, {64}, ctx.default_stream(), 100)(out, 2);
    ctx.synchronize();
    fake.last_dispatch(&p, &args);
    CHECK(p.group_segment_size == 16 + 100);  // the dynamic part after the cell
    // A prebuilt image of the module keeps the reservation (its marker).
    Module again = Module::load(ctx, ImageFormat::Hsaco, m.image().data(), m.image().size());
    again.kernel("votes")({1}, {64})(out, 2);
    ctx.synchronize();
    fake.last_dispatch(&p, &args);
    CHECK(p.group_segment_size == 16);
    // A module without counting barriers reserves nothing.
    Module plain = compile_or_skip(ctx, "GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *p) { p[0] = 1; }");
    plain.kernel("k")({1}, {64})(out);
    ctx.synchronize();
    fake.last_dispatch(&p, &args);
    CHECK(p.group_segment_size == 0);
  }
  CHECK(fake.live().allocations == 0);
}

TEST_CASE("hsa: managed arrays are fine-grained system memory the agent may access", "[managed][hsa]") {
  FakeHsa fake;
  {
    Runtime rt = hsa_runtime();
    REQUIRE(rt.supports(Capability::ManagedMemory));
    Context ctx = rt.device(0).primary_context();
    const uint64_t free_before = ctx.memory_info().free;
    DeviceArray m = managed_array(ctx, {64}, dtypes::int32);
    CHECK(m.is_managed());
    CHECK(ctx.memory_info().free == free_before);  // system memory: the device's pool is untouched
    HostView h = m.host_view();
    for (int i = 0; i < 64; ++i) *static_cast<int32_t *>(h.element({i})) = i;
    CHECK(m.copy_to_host().at<int32_t>({63}) == 63);  // the runtime's copy reads the host's writes
    m.memset(0);
    CHECK(*static_cast<int32_t *>(m.host_view().element({5})) == 0);  // and the host the device's
  }
  const auto l = fake.live();
  CHECK(l.allocations == 0);  // freed with hsa_amd_memory_pool_free
}

// ROCr hands a freed block to the next allocation of its size (the fake
// keeps the last freed blocks and does so). Before plugin ABI 1.17's
// mem_keep, a reset freed managed and write-combined host memory under live
// host views, the core could not map its copy back (the addresses were still
// the runtime's), and the next allocation shared the views' bytes: a view
// written 7 read 9 after a new array was filled with 9.
void reset_keeps_host_memory_apart(const std::vector<std::string> &layers) {
  FakeHsa fake;
  {
    Config c;
    c.backend = "hsa";
    c.plugin_path = {GPUHAL_TEST_LIB_DIR};
    c.set_option("GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA);
    c.layers = layers;
    c.leak_check_fail = !layers.empty();
    Runtime rt = Runtime::load(c);
    Context ctx = rt.device(0).primary_context();
    DeviceArray managed = managed_array(ctx, {1024}, dtypes::int32);
    MappedArray wc = mapped_array(ctx, {1024}, dtypes::int32, {}, 'C', false, true);  // host_alloc memory
    auto *m = static_cast<int32_t *>(managed.host_view().data());
    auto *w = static_cast<int32_t *>(wc.host.data());
    std::fill(m, m + 1024, 7);
    std::fill(w, w + 1024, 8);
    ctx.reset();
    std::vector<DeviceArray> later;
    std::vector<MappedArray> later_wc;
    for (int k = 0; k < 4; ++k) {
      later.push_back(managed_array(ctx, {1024}, dtypes::int32));
      later_wc.push_back(mapped_array(ctx, {1024}, dtypes::int32, {}, 'C', false, true));
      CHECK(later.back().host_view().data() != static_cast<void *>(m));
      CHECK(later_wc.back().host.data() != static_cast<void *>(w));
      later.back().memset(9);
      later_wc.back().device.memset(9);
    }
    CHECK(std::count(m, m + 1024, 7) == 1024);  // the views still read their own bytes
    CHECK(std::count(w, w + 1024, 8) == 1024);
    std::fill(m, m + 1024, 5);                  // and write them without touching the new arrays
    for (const DeviceArray &a : later) CHECK(a.copy_to_host().at<int32_t>({0}) == 0x09090909);
    REQUIRE_GPUHAL_ERROR(managed.memset(0), Status::ERROR_CONTEXT_DESTROYED, "reset");  // its handle: refused
  }
  CHECK(fake.live().allocations == 0);  // the kept memory went with its last handle (mem_free_kept)
}

TEST_CASE("hsa: a reset keeps managed and write-combined memory that host views address apart from later "
          "allocations (mem_keep)", "[managed][hsa][reset]") {
  reset_keeps_host_memory_apart({});
}

TEST_CASE("hsa: kept memory through the validation and leak layers", "[managed][hsa][reset][layers]") {
  reset_keeps_host_memory_apart({"validation", "leak"});
}

TEST_CASE("hsa kernel: assign of a transposed view dispatches the core's assign kernel", "[kernel][hsa][assign]") {
  FakeHsa fake;
  {
    Runtime rt = hsa_runtime();
    Context ctx = rt.device(0).primary_context();
    if (!compile_or_skip(ctx, "GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *p) { p[0] = 1; }")) return;
    DeviceArray a = device_array(ctx, {3, 5}, dtypes::int32);
    DeviceArray b = device_array(ctx, {5, 3}, dtypes::int32);
    const uint64_t before = fake.last_dispatch(nullptr, nullptr);
    b.assign(a.T());  // compiled by amd_comgr from the OpenCL C lowering
    api::hsa_kernel_dispatch_packet_t p{};
    std::vector<uint8_t> args;
    REQUIRE(fake.last_dispatch(&p, &args) == before + 1);
    CHECK(p.workgroup_size_x == 256);
    CHECK(p.grid_size_x == 256);  // one group for 15 elements
    CHECK(at<uint64_t>(args, 0) == b.device_pointer());
    CHECK(at<uint64_t>(args, 8) == a.device_pointer());
    CHECK(at<uint64_t>(args, 32) == 15);  // the element count
    CHECK(at<uint32_t>(args, 40) == 2);   // two axes
    CHECK(at<uint32_t>(args, 44) == 4);   // 4-byte words
  }
  const auto l = fake.live();
  CHECK(l.allocations == 0);
}

TEST_CASE("hsa graphs: a captured launch is dispatched again at each replay, with fresh arguments after an update",
          "[kernel][hsa][graphs]") {
  FakeHsa fake;
  {
    Runtime rt = hsa_runtime();
    Context ctx = rt.device(0).primary_context();
    REQUIRE(ctx.supports(Capability::Graphs));
    Module m = compile_or_skip(ctx, R"(
GPUHAL_KERNEL void bump(GPUHAL_GLOBAL float *out, float a) {
  out[gpuhal_global_id(0)] += a;
})");
    if (!m) return;
    DeviceArray x = device_array(ctx, {64}, dtypes::float32), y = device_array(ctx, {64}, dtypes::float32);
    Stream s = ctx.create_stream();
    const uint64_t before = fake.last_dispatch(nullptr, nullptr);
    s.begin_capture();
    m.kernel("bump")({1}, {64}, s)(x, 2.0f);
    GraphExec exec = s.end_capture().instantiate();
    CHECK(fake.last_dispatch(nullptr, nullptr) == before);  // recorded, not dispatched
    api::hsa_kernel_dispatch_packet_t p{};
    std::vector<uint8_t> args;
    for (int i = 1; i <= 2; ++i) {
      exec.launch(s);
      s.synchronize();
      REQUIRE(fake.last_dispatch(&p, &args) == before + uint64_t(i));
      CHECK(at<uint64_t>(args, 0) == x.device_pointer());
      CHECK(at<float>(args, 8) == 2.0f);
      CHECK(p.completion_signal.handle != 0);
    }
    exec.update_kernel_args(0, {y, 5.0f});
    exec.launch(s);
    s.synchronize();
    REQUIRE(fake.last_dispatch(&p, &args) == before + 3);
    CHECK(at<uint64_t>(args, 0) == y.device_pointer());
    CHECK(at<float>(args, 8) == 5.0f);
    CHECK(p.completion_signal.handle != 0);
    REQUIRE_GPUHAL_ERROR(exec.update_kernel_args(0, {y}), Status::ERROR_INVALID_VALUE, "argument");
    s.begin_capture();
    REQUIRE_GPUHAL_ERROR(s.synchronize(), Status::ERROR_CAPTURE_UNSUPPORTED, "capturing");
    REQUIRE_GPUHAL_ERROR(s.end_capture(), Status::ERROR_CAPTURE_INVALIDATED, "stream_synchronize");
  }
  const auto l = fake.live();
  CHECK(l.queues == 0);
  CHECK(l.allocations == 0);
}

TEST_CASE("hsa kernel: dispatch packets are validated and recorded field by field", "[kernel][hsa]") {
  FakeHsa fake;
  {
    Runtime rt = hsa_runtime();
    Context ctx = rt.device(0).primary_context();
    Module m = compile_or_skip(ctx, R"(
GPUHAL_KERNEL void scale(GPUHAL_GLOBAL float *out, unsigned n, float a, GPUHAL_GLOBAL const int *in) {
  GPUHAL_SHARED_ARRAY(int, tile, 64);
  unsigned i = gpuhal_global_id(0);
  tile[gpuhal_local_id(0)] = i < n ? in[i] : 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  if (i < n) out[i] = a * (float)tile[gpuhal_local_id(0)];
})");
    if (!m) return;
    CHECK(m.image_format() == ImageFormat::Hsaco);
    DeviceArray out = device_array(ctx, {1000}, dtypes::float32);
    DeviceArray in = device_array(ctx, {1000}, dtypes::int32);
    const uint64_t before = fake.last_dispatch(nullptr, nullptr);
    m.kernel("scale")({4, 3}, {64, 2}, ctx.default_stream(), 256)(out, 1000u, 2.5f, in);
    ctx.synchronize();
    api::hsa_kernel_dispatch_packet_t p{};
    std::vector<uint8_t> args;
    REQUIRE(fake.last_dispatch(&p, &args) == before + 1);
    CHECK((p.header & 0xff) == api::HSA_PACKET_TYPE_KERNEL_DISPATCH);
    CHECK(((p.header >> api::HSA_PACKET_HEADER_BARRIER) & 1) == 1);
    CHECK(((p.header >> api::HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) & 3) == api::HSA_FENCE_SCOPE_SYSTEM);
    CHECK(((p.header >> api::HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3) == api::HSA_FENCE_SCOPE_AGENT);  // made visible later, where something looks
    CHECK(p.setup == 2);  // two dimensions
    CHECK(p.workgroup_size_x == 64);
    CHECK(p.workgroup_size_y == 2);
    CHECK(p.workgroup_size_z == 1);
    CHECK(p.grid_size_x == 256);  // work-items: groups x block
    CHECK(p.grid_size_y == 6);
    CHECK(p.grid_size_z == 1);
    CHECK(p.group_segment_size == 64 * 4 + 256);  // the static tile plus the dynamic bytes
    CHECK(p.kernel_object != 0);
    CHECK(p.kernarg_address != nullptr);
    CHECK(p.completion_signal.handle != 0);
    // Arguments at the offsets of the code object's metadata: pointers 8
    // bytes, aligned; the scalars converted to the parameter types.
    REQUIRE(args.size() == 24);  // the kernarg segment: 8 + 4 + 4 + 8
    CHECK(at<uint64_t>(args, 0) == out.device_pointer());
    CHECK(at<uint32_t>(args, 8) == 1000u);
    CHECK(at<float>(args, 12) == 2.5f);
    CHECK(at<uint64_t>(args, 16) == in.device_pointer());

    // What the device or the kernel cannot take is refused before anything
    // is queued, with the limit in the message.
    REQUIRE_GPUHAL_ERROR(m.kernel("scale")({1}, {2048})(out, 1000u, 2.5f, in), Status::ERROR_INVALID_VALUE, "block");
    REQUIRE_GPUHAL_ERROR(m.kernel("scale")({1}, {64}, ctx.default_stream(), 65536)(out, 1000u, 2.5f, in),
                         Status::ERROR_INVALID_VALUE, "shared memory");
    REQUIRE_GPUHAL_ERROR(m.kernel("nope"), Status::ERROR_NOT_FOUND, "nope");
    ctx.synchronize();
    CHECK(fake.last_dispatch(nullptr, nullptr) == before + 1);
    // Malformed code objects are refused with ERROR_INVALID_IMAGE.
    const std::string image = m.image();
    REQUIRE_GPUHAL_ERROR(Module::load(ctx, ImageFormat::Hsaco, "not an ELF", 10), Status::ERROR_INVALID_IMAGE,
                         "not an ELF file");
    REQUIRE_GPUHAL_ERROR(Module::load(ctx, ImageFormat::Hsaco, image.data(), image.size() / 3),
                         Status::ERROR_INVALID_IMAGE, "module_load");
    REQUIRE_GPUHAL_ERROR(Module::load(ctx, ImageFormat::Ptx, image.data(), image.size()), Status::ERROR_INVALID_IMAGE,
                         "AMDGPU code objects");
    // The image loads again as a second module, and launches.
    Module again = Module::load(ctx, ImageFormat::Hsaco, image.data(), image.size());
    again.kernel("scale")({1}, {64})(out, 10u, 1.0f, in);
    ctx.synchronize();
    CHECK(fake.last_dispatch(nullptr, nullptr) == before + 2);
  }
  const auto l = fake.live();
  CHECK(l.allocations == 0);  // kernargs, staging buffers, arrays
  CHECK(l.signals == 0);
  CHECK(l.executables == 0);
}

TEST_CASE("hsa backend: a failing runtime call names itself and the context stays usable") {
  // The first async copy fails, the third pool allocation runs out, the
  // first lock fails.
  FakeHsa fake("hsa_amd_memory_async_copy:1:0x1008,hsa_amd_memory_lock:1:0x1001");
  {
    Runtime rt = hsa_runtime();
    Context ctx = rt.device(0).primary_context();
    std::vector<uint8_t> v(5000, 7);
    REQUIRE_GPUHAL_ERROR(to_device(ctx, HostView::of(v)), Status::ERROR_OUT_OF_MEMORY,
                         "hsa_amd_memory_async_copy failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
    CHECK(to_device(ctx, HostView::of(v)).copy_to_host().to_vector<uint8_t>() == v);
    REQUIRE_GPUHAL_ERROR(register_host(ctx, HostView::of(v)), Status::ERROR_INVALID_VALUE,
                         "hsa_amd_memory_lock failed: HSA_STATUS_ERROR_INVALID_ARGUMENT");
    {
      HostRegistration reg = register_host(ctx, HostView::of(v));
      CHECK(to_device(ctx, HostView::of(v)).copy_to_host().to_vector<uint8_t>() == v);  // copied without staging
    }
    // Pinned memory is locked already: the plugin refuses to lock it again.
    HostArray pinned = pinned_array(ctx, {64}, dtypes::uint8);
    REQUIRE_GPUHAL_ERROR(register_host(ctx, pinned.view()), Status::ERROR_ALREADY_REGISTERED,
                         "overlaps registered or pinned memory");
    // Events: timing needs timing events, both recorded.
    Stream s = ctx.create_stream();
    Event plain = ctx.create_event(false), timed = ctx.create_event();
    plain.record(s);
    timed.record(s);
    s.synchronize();
    REQUIRE_GPUHAL_ERROR(Event::elapsed_ms(plain, timed), Status::ERROR_INVALID_HANDLE, "timing disabled");
    REQUIRE_GPUHAL_ERROR(Event::elapsed_ms(ctx.create_event(), timed), Status::ERROR_INVALID_HANDLE, "never recorded");
    CHECK(Event::elapsed_ms(timed, timed) == 0.0f);
  }
  const auto l = fake.live();
  CHECK(l.allocations == 0);
  CHECK(l.signals == 0);
}

TEST_CASE("hsa backend: an hsa_init failure is zero devices with hsa_init's status") {
  setenv("FAKE_HSA_INIT_FAIL", "0x1008", 1);
  FakeHsa fake;
  REQUIRE_GPUHAL_ERROR(hsa_runtime(), Status::ERROR_NO_DEVICE,
                       "reports no devices: hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)");
  unsetenv("FAKE_HSA_INIT_FAIL");
}

TEST_CASE(
    "hsa: every runtime call that fails surfaces as an error naming it, the context stays usable, nothing leaks") {
  FakeHsa fake;
  auto inject = fake.fn<void(const char *, long, int)>("fake_hsa_fail");
  auto clear = fake.fn<void()>("fake_hsa_clear_faults");
  {
    Runtime rt = hsa_runtime();
    Context ctx = rt.device(0).primary_context();
    std::vector<float> v(256, 1.0f);
    DeviceArray a = to_device(ctx, HostView::of(v)), b = device_array(ctx, {256}, dtypes::float32);
    Stream s = ctx.create_stream();
    Event e0 = ctx.create_event(), e1 = ctx.create_event();
    e0.record(s);
    e1.record(s);
    s.synchronize();
    HostArray host = HostArray::empty({256}, dtypes::float32);
    std::vector<std::string> released;  // failures of releases, via the error handler
    ctx.set_deallocation_error_handler([&](const Error &err) { released.push_back(err.what()); });
    struct Case {
      const char *symbol;
      std::function<void()> action;
    };
    const std::vector<Case> cases = {
        {"hsa_amd_memory_pool_allocate", [&] { device_array(ctx, {16}); }},
        {"hsa_amd_memory_async_copy", [&] { b.copy_from_host(HostView::of(v)); }},
        {"hsa_amd_memory_async_copy", [&] { a.copy_to_host(host); }},
        {"hsa_amd_memory_async_copy", [&] { b.copy_from_device(a, s); }},
        {"hsa_amd_memory_fill", [&] { b.memset(0); }},
        {"hsa_amd_memory_fill",
         [&] {
           b.memset(0, s);
           s.synchronize();
         }},
        // Signals are pooled: holding many events drains the pool until one
        // has to be created.
        {"hsa_signal_create",
         [&] {
           std::vector<Event> held;
           for (int k = 0; k < 10000; ++k) held.push_back(s.record());
         }},
        {"hsa_queue_create", [&] { ctx.create_stream(); }},
        {"hsa_amd_agents_allow_access", [&] { mapped_array(ctx, {16}, dtypes::float64, {}, 'C', false, true); }},
        {"hsa_amd_memory_lock", [&] { register_host(ctx, HostView::of(v)); }},
        {"hsa_amd_memory_unlock", [&] { PinnedScope pin(ctx, {HostView::of(v)}); }},
        {"hsa_amd_memory_pool_free",
         [&] {
           { DeviceArray t = device_array(ctx, {4}); }
           ctx.flush_deallocations();
         }},
        {"hsa_amd_memory_pool_free",
         [&] {
           { MappedArray t = mapped_array(ctx, {4}, dtypes::float64, {}, 'C', false, true); }
           ctx.flush_deallocations();
         }},
    };
    for (const auto &c : cases) {
      INFO("failing " << c.symbol);
      inject(c.symbol, 1, 0x1000);
      released.clear();
      std::string seen;
      try {
        c.action();
        if (!released.empty()) seen = released.front();
      } catch (const Error &err) {
        seen = err.what();
      }
      CHECK_THAT(seen, test::contains(std::string(c.symbol) + " failed: HSA_STATUS_ERROR (0x1000)"));
      clear();
      // The context is still usable.
      b.copy_from_host(HostView::of(v));
      CHECK(b.copy_to_host().to_vector<float>() == v);
    }
    s.synchronize();
    ctx.flush_deallocations();
    WARN(cases.size() << " runtime call sites failed in turn");
  }
  const auto l = fake.live();
  CHECK(l.allocations == 0);
  CHECK(l.signals == 0);
  CHECK(l.queues == 0);
}

TEST_CASE("hsa: failures while discovering agents and creating a context name the runtime call") {
  FakeHsa fake;
  auto inject = fake.fn<void(const char *, long, int)>("fake_hsa_fail");
  auto clear = fake.fn<void()>("fake_hsa_clear_faults");
  for (const char *symbol : {"hsa_iterate_agents", "hsa_agent_get_info", "hsa_amd_agent_iterate_memory_pools"}) {
    INFO("failing " << symbol);
    inject(symbol, 1, 0x1000);
    REQUIRE_GPUHAL_ERROR(hsa_runtime(), Status::ERROR_INITIALIZATION_FAILED,
                         std::string(symbol) + " failed: HSA_STATUS_ERROR (0x1000)");
    clear();
  }
  Runtime rt = hsa_runtime();
  for (const char *symbol : {"hsa_queue_create", "hsa_amd_memory_pool_allocate"}) {
    INFO("failing " << symbol);
    inject(symbol, 1, 0x1000);
    REQUIRE_GPUHAL_ERROR(rt.device(0).primary_context(), Status::ERROR_DRIVER,
                         std::string(symbol) + " failed: HSA_STATUS_ERROR (0x1000)");
    clear();
  }
  Context ctx = rt.device(0).primary_context();
  CHECK(to_device(ctx, HostView::of(std::vector<int>{1, 2, 3})).copy_to_host().to_vector<int>() ==
        std::vector<int>{1, 2, 3});
}

TEST_CASE("hsa kernel: attributes from the code object's metadata, occupancy by AMD's LDS, wave and VGPR limits",
          "[kernel][hsa][attributes]") {
  FakeHsa fake;
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  REQUIRE(ctx.supports(Capability::KernelAttributes));
  Module m = compile_or_skip(ctx, kReduce);
  if (!m) return;
  Kernel k = m.kernel("block_sum");
  const KernelAttributes a = k.attributes();
  CHECK(a.static_shared_bytes == 1024);  // double s[128]
  CHECK(a.preferred_block_multiple == 64);
  CHECK(a.registers_per_thread > 0);    // the metadata's .vgpr_count
  CHECK(a.max_threads_per_block > 0);
  CHECK(a.max_threads_per_block <= 1024);
  const uint64_t lds = ctx.device().properties().shared_memory_per_block;
  CHECK(a.max_dynamic_shared_bytes == lds - 1024);
  // The fake agent: gfx90a, 32 waves and 4 SIMDs per CU, 512 VGPRs per lane.
  auto expected = [&](uint32_t block, uint32_t dynamic) {
    const uint32_t waves = (block + 63) / 64;
    uint64_t n = 32 / waves;
    n = std::min<uint64_t>(n, lds / (dynamic ? 1024 + dynamic : 1024));
    n = std::min<uint64_t>(n, 512 / ((a.registers_per_thread + 7) / 8 * 8) * 4 / waves);
    return uint32_t(n);
  };
  CHECK(k.max_active_blocks_per_unit(64) == expected(64, 0));
  CHECK(k.max_active_blocks_per_unit(128, 4096) == expected(128, 4096));
  CHECK(k.max_active_blocks_per_unit(a.max_threads_per_block + 1) == 0);
  CHECK(k.max_active_blocks_per_unit(64, uint32_t(lds)) == 0);
  const BlockSizeSuggestion s = k.suggest_block_size();
  CHECK(s.block % 64 == 0);
  CHECK(s.min_grid == k.max_active_blocks_per_unit(s.block) * uint32_t(ctx.device().properties().multiprocessor_count));
}

TEST_CASE("hsa kernel: gpuhal_printf is unsupported and names itself, gpuhal_assert compiles to a trap",
          "[kernel][hsa][printf]") {
  FakeHsa fake;
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  CHECK_FALSE(rt.supports(Capability::KernelPrintf));
  // The lowering still defines it (gpuhal-info --lowering shows it).
  bool listed = false;
  for (const auto &b : rt.kernel_lowering())
    if (b.first == "gpuhal_printf") listed = b.second.find("has no device printf") != std::string::npos;
  CHECK(listed);
  Module m = compile_or_skip(ctx, R"(
GPUHAL_KERNEL void checked(GPUHAL_GLOBAL int *x, unsigned limit) {
  unsigned i = gpuhal_global_id(0);
  gpuhal_assert(i < limit);
  x[i] += 1;
})");
  if (!m) return;
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, kPrintAssert), Status::ERROR_COMPILATION_FAILED,
                       "gpuhal_printf: the hsa backend has no device printf (Capability::KernelPrintf)");
}

#endif

TEST_CASE("hsa backend: the native device is the GPU agent, and HSA has no native context") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  const uint64_t agent = ctx.native_device();
  CHECK(agent != 0);
  CHECK(rt.device(0).primary_context().native_device() == agent);
  REQUIRE_GPUHAL_ERROR(ctx.native_context(), Status::ERROR_NOT_SUPPORTED, "HSA has no context object");
}

TEST_CASE("hsa backend: the device properties carry the HSA version the runtime implements") {
  Runtime rt = hsa_runtime();
  CHECK(rt.device(0).properties().driver_version == "HSA 1.1 (ROCr)");
  // The plugin registered its system event handler: a memory fault fails the
  // contexts, and a reset makes them anew.
  CHECK(rt.device(0).properties().recovers_from_faults);
  CHECK(rt.supports(Capability::FaultRecovery));
  // Other ROCm libraries put work on the same agents: no idle blocks.
  CHECK_FALSE(rt.device(0).properties().exclusive_contexts);
}

