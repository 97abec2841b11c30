// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// IPC: device arrays shared with a real second process, handle text,
// stale handles and the error paths.
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sanitizer_build.hpp"
#include "test_support.hpp"

extern char **environ;

using namespace gpuhal;

namespace {

// Runs the peer process on `text`; returns its exit status.
int run_peer(const std::string &text) {
  std::string peer = GPUHAL_TEST_IPC_PEER, lib = GPUHAL_TEST_LIB_DIR;
  char *argv[] = {peer.data(), lib.data(), const_cast<char *>(text.c_str()), nullptr};
  pid_t pid;
  REQUIRE(posix_spawn(&pid, peer.c_str(), nullptr, nullptr, argv, environ) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Writes i into element i (C index order) of `a`.
void fill_iota(const DeviceArray &a) {
  HostArray h = a.copy_to_host();
  std::vector<int64_t> idx(size_t(a.ndim()), 0);
  for (int64_t i = 0; i < a.size(); ++i) {
    h.at<float>(idx) = float(i);
    for (int d = a.ndim() - 1; d >= 0 && ++idx[size_t(d)] == a.shape()[size_t(d)]; --d) idx[size_t(d)] = 0;
  }
  a.copy_from_host(h);
}

}  // namespace

TEST_CASE("two processes see each other's writes through IPC") {
  Context ctx = test::host_context();
  REQUIRE(ctx.supports(Capability::Ipc));
  DeviceArray base = device_array(ctx, {6, 8}, dtypes::float32);
  base.memset(0);
  struct Variant {
    const char *name;
    DeviceArray array;
  };
  const std::vector<Variant> variants = {
      {"whole 2-D array", base},
      {"rows 2..4", base.view({Slice(2, 5)})},
      {"row 3", base[3]},
      {"F-ordered array", device_array(ctx, {5, 7}, dtypes::float32, {}, 'F')},
  };
  for (const auto &v : variants) {
    SECTION(v.name) {
      fill_iota(v.array);
      const IpcArrayHandle h = get_ipc_handle(v.array);
      CHECK(h.memory.exported_here);
      CHECK(h.memory.backend == "host");
      CHECK(h.memory.size == uint64_t(v.array.alloc_size()));
      REQUIRE(run_peer(h.serialize()) == 0);
      const std::vector<float> seen = v.array.copy_to_host().to_vector<float>();
      for (size_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == 1000.0f + float(i));
    }
  }
  SECTION("the rest of the allocation is untouched by a view's peer") {
    DeviceArray rows = base.view({Slice(2, 5)});
    fill_iota(rows);
    REQUIRE(run_peer(get_ipc_handle(rows).serialize()) == 0);
    const std::vector<float> all = base.copy_to_host().to_vector<float>();
    for (size_t i = 0; i < 16; ++i) CHECK(all[i] == 0.0f);
    for (size_t i = 40; i < 48; ++i) CHECK(all[i] == 0.0f);
    CHECK(all[16] == 1000.0f);
  }
}

// A MemoryPool's blocks are device memory like any other: a block (at
// whatever offset of its backend allocation it sits) is shared by its bytes.
TEST_CASE("a MemoryPool block is shared with a second process and its writes come back") {
  Context ctx = test::host_context();
  MemoryPool pool(ctx);
  Stream s = ctx.create_stream();
  DeviceMemory keep = pool.allocate(4096, s);  // another block of the pool, before ours
  DeviceArray block(pool.allocate(48 * 4, s), Layout::make({6, 8}, 4), dtypes::float32);
  fill_iota(block);
  s.synchronize();
  const IpcArrayHandle h = get_ipc_handle(block);
  CHECK(h.memory.size == 48 * 4);
  REQUIRE(run_peer(h.serialize()) == 0);
  const std::vector<float> seen = block.copy_to_host().to_vector<float>();
  for (size_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == 1000.0f + float(i));
  CHECK(pool.stats().allocations == 2);
}

TEST_CASE("an IPC export keeps the device pointer and the contents") {
  Context ctx = test::host_context();
  std::vector<double> v{1, 2, 3, 4, 5};
  DeviceArray a = to_device(ctx, HostView::of(v));
  const auto before = a.device_pointer();
  (void)get_ipc_handle(a);
  CHECK(a.device_pointer() == before);
  CHECK(a.copy_to_host().to_vector<double>() == v);
  (void)get_ipc_handle(a);  // a second export reuses the first
}

TEST_CASE("a deserialised handle maps the same memory and a freed export goes stale") {
  Context ctx = test::host_context();
  const std::string text = [&] {
    DeviceArray a = device_array(ctx, {16}, dtypes::int32);
    a.memset(0);
    std::string t = get_ipc_handle(a).serialize();
    {
      IpcArray opened = open_ipc_array(ctx, IpcArrayHandle::deserialize(t));
      std::vector<int32_t> ones(16, 0x01010101);
      opened.array().copy_from_host(HostView::of(ones));
      CHECK(a.copy_to_host().to_vector<int32_t>() == ones);  // same pages
      CHECK(opened.array().device_pointer() != a.device_pointer());
      opened.close();
      REQUIRE_GPUHAL_ERROR(opened.array(), Status::ERROR_INVALID_HANDLE, "not open");
      REQUIRE_GPUHAL_ERROR(opened.close(), Status::ERROR_INVALID_HANDLE, "not open");
    }
    return t;
  }();
  ctx.flush_deallocations();  // the exporter's memory is really freed now
  REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, IpcArrayHandle::deserialize(text)), Status::ERROR_INVALID_IPC_HANDLE,
                       "stale");
}

TEST_CASE("IPC handles refuse bad input") {
  Context ctx = test::host_context();
  DeviceArray a = device_array(ctx, {4, 4}, dtypes::float32);
  const IpcArrayHandle h = get_ipc_handle(a);
  SECTION("opening in the exporting process") {
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, h), Status::ERROR_INVALID_VALUE, "exported by this process");
  }
  SECTION("zero-size arrays and empty memory") {
    REQUIRE_GPUHAL_ERROR(get_ipc_handle(device_array(ctx, {0, 4})), Status::ERROR_INVALID_VALUE, "zero-size");
    REQUIRE_GPUHAL_ERROR(get_ipc_handle(DeviceMemory(), 0, 1), Status::ERROR_INVALID_HANDLE, "empty");
    REQUIRE_GPUHAL_ERROR(get_ipc_handle(a.memory(), 0, 0), Status::ERROR_INVALID_VALUE, "positive");
    REQUIRE_GPUHAL_ERROR(get_ipc_handle(a.memory(), 60, 8), Status::ERROR_INDEX_OUT_OF_RANGE, "outside");
    REQUIRE_GPUHAL_ERROR(get_ipc_handle(a.memory(), UINT64_MAX, 2), Status::ERROR_INDEX_OUT_OF_RANGE, "outside");
  }
  SECTION("a shape larger than the shared bytes") {
    IpcArrayHandle big = IpcArrayHandle::deserialize(h.serialize());
    big.shape = {8, 8};
    big.strides = {32, 4};
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, big), Status::ERROR_INVALID_SHAPE, "shared range of 64 bytes");
    big.shape = {0};
    big.strides = {4};
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, big), Status::ERROR_INVALID_SHAPE, "zero-size");
  }
  SECTION("another backend's handle") {
    IpcArrayHandle other = IpcArrayHandle::deserialize(h.serialize());
    other.memory.backend = "cuda";
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, other), Status::ERROR_INVALID_IPC_HANDLE, "from backend 'cuda'");
  }
  SECTION("garbage handle bytes") {
    NativeIpcHandle junk{};
    junk.bytes[0] = 'x';
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, junk, {4}, dtypes::float32), Status::ERROR_INVALID_IPC_HANDLE,
                         "not an IPC handle of the host backend");
  }
  SECTION("handle text") {
    const std::string good = h.serialize();
    CHECK(IpcArrayHandle::deserialize(good).serialize() == good);
    const char *bad[] = {"",
                         "gpuhal-ipc 2",
                         "something else",
                         "gpuhal-ipc 1 backend=host",
                         "gpuhal-ipc 1 nonsense",
                         "gpuhal-ipc 1 colour=red"};
    for (const char *t : bad)
      REQUIRE_GPUHAL_ERROR(IpcArrayHandle::deserialize(t), Status::ERROR_INVALID_IPC_HANDLE, "");
    std::string twice = good + " first=0";
    REQUIRE_GPUHAL_ERROR(IpcArrayHandle::deserialize(twice), Status::ERROR_INVALID_IPC_HANDLE, "appears twice");
    std::string overflow = good;
    overflow.replace(overflow.find("offset="), 8, "offset=99999999999999999999999");
    REQUIRE_GPUHAL_ERROR(IpcArrayHandle::deserialize(overflow), Status::ERROR_INVALID_IPC_HANDLE, "");
    std::string badtype = good;
    badtype.replace(badtype.find("dtype=<f4"), 9, "dtype=<q9");
    REQUIRE_GPUHAL_ERROR(IpcArrayHandle::deserialize(badtype), Status::ERROR_INVALID_IPC_HANDLE, "");
  }
  SECTION("after a reset") {
    ctx.reset();
    REQUIRE_GPUHAL_ERROR(get_ipc_handle(a), Status::ERROR_CONTEXT_DESTROYED, "reset");
  }
}

TEST_CASE("a backend without IPC entries reports ERROR_NOT_SUPPORTED") {
  Config c;
  c.backend = test::fake("good");
  Runtime rt = Runtime::load(c);
  CHECK_FALSE(rt.supports(Capability::Ipc));
  Context ctx = rt.device(0).primary_context();
  DeviceArray a = device_array(ctx, {4});
  REQUIRE_GPUHAL_ERROR(get_ipc_handle(a), Status::ERROR_NOT_SUPPORTED, "cannot share memory between processes");
}

TEST_CASE("an IPC array dropped while a copy from it is queued stays mapped until the copy ran") {
  Context ctx = test::host_context();
  std::vector<int32_t> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = int32_t(i * 3 + 1);
  DeviceArray exported = to_device(ctx, HostView::of(v));
  // Opened in this process from its text (the host backend maps it again).
  const std::string text = get_ipc_handle(exported).serialize();
  DeviceArray dst = device_array(ctx, {4096}, dtypes::int32);
  Stream s = ctx.create_stream();
  std::atomic<bool> gate{false};
  s.add_callback([&gate] {
    while (!gate) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  {
    IpcArray opened = open_ipc_array(ctx, IpcArrayHandle::deserialize(text));
    dst.copy_from_device(opened.array(), s);
  }  // the last handle goes with the copy still queued behind the gate
  gate = true;
  s.synchronize();
  CHECK(dst.copy_to_host().to_vector<int32_t>() == v);
}

namespace {

// Each round: a fresh 4 MiB array, zeroed; one thread writes its 1024 pages
// one by one (page k gets k % 250 + 1) with write_page while this thread
// exports the array for the first time (its pages move into shared
// memory); then it calls finish(). Every page must hold its value
// afterwards.
template <class WritePage, class Finish>
void export_racing_writes(Context &ctx, WritePage write_page, Finish finish) {
  constexpr int64_t kPages = 1024, kPage = 4096;
  // Fewer rounds under the sanitizers (each write is several times slower
  // there): the race is still crossed every round, and the test stays well
  // inside its limit with the cores shared.
  constexpr int kRounds = (detail::kThreadSanitizer || detail::kAddressSanitizer) ? 5 : 20;
  for (int round = 0; round < kRounds; ++round) {
    DeviceArray a = device_array(ctx, {kPages * kPage}, dtypes::uint8);
    a.memset(0);
    std::atomic<bool> started{false};
    std::thread writer([&] {
      started = true;
      // From the last page down: the export copies from the first page up,
      // so the two cross while both run.
      for (int64_t k = kPages - 1; k >= 0; --k)
        write_page(a.view({Slice(k * kPage, (k + 1) * kPage)}), uint8_t(k % 250 + 1));
      finish();
    });
    while (!started) std::this_thread::yield();
    (void)get_ipc_handle(a);
    writer.join();
    const std::vector<uint8_t> got = a.copy_to_host().to_vector<uint8_t>();
    int64_t lost = 0;
    for (int64_t k = 0; k < kPages; ++k) lost += got[size_t(k * kPage)] != uint8_t(k % 250 + 1);
    INFO("round " << round);
    REQUIRE(lost == 0);
  }
}

}  // namespace

TEST_CASE("a first IPC export racing with stream writes from another thread loses no write") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream(StreamKind::NonBlocking);
  export_racing_writes(
      ctx, [&](const DeviceArray &page, uint8_t value) { page.memset(value, s); }, [&] { s.synchronize(); });
}

// Synchronous writes on an idle device run on the calling thread, not on a
// stream worker (HostContext::run_inline_if_idle): they are excluded from
// the export's page swap by the context's submission lock.
TEST_CASE("a first IPC export racing with synchronous writes from another thread loses no write") {
  Context ctx = test::host_context();
  export_racing_writes(
      ctx, [](const DeviceArray &page, uint8_t value) { page.memset(value); }, [] {});
}
