// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Status codes, dtypes and configuration parsing.
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "test_support.hpp"
#include "gpuhal/plugin.h"

using namespace gpuhal;

TEST_CASE("status codes come from one list and print their names", "[status]") {
  CHECK(to_string(Status::SUCCESS) == "SUCCESS");
  CHECK(to_string(Status::ERROR_OUT_OF_MEMORY) == "ERROR_OUT_OF_MEMORY");
  CHECK(static_cast<int>(Status::ERROR_OUT_OF_MEMORY) == GPUHAL_ERROR_OUT_OF_MEMORY);
  CHECK(static_cast<int>(Status::ERROR_REQUIRES_COPY) == GPUHAL_ERROR_REQUIRES_COPY);
  CHECK(to_string(static_cast<Status>(12345)) == "UNKNOWN_STATUS(12345)");
  CHECK(std::string(describe(Status::ERROR_NO_DEVICE)) == "no device available");
  Error e(Status::ERROR_INVALID_VALUE, "bad thing");
  CHECK(e.status() == Status::ERROR_INVALID_VALUE);
  CHECK(std::string(e.what()) == "bad thing");
  CHECK(e.peer_message().empty());
  // NumPy's or Numba's sentence for the same misuse travels beside gpuhal's message.
  Error numpy_like(Status::ERROR_INVALID_VALUE, "transpose: repeated axis in transpose", "repeated axis in transpose");
  CHECK(std::string(numpy_like.what()) == "transpose: repeated axis in transpose");
  CHECK(numpy_like.peer_message() == "repeated axis in transpose");
  const Error copied = numpy_like;
  CHECK(copied.peer_message() == "repeated axis in transpose");
}

TEST_CASE("errors NumPy also raises carry NumPy's sentence word for word as the peer message", "[status][layout]") {
  auto peer_of = [](auto &&call) -> std::string {
    try {
      call();
    } catch (const Error &e) {
      CHECK(std::string(e.what()).find(e.peer_message()) != std::string::npos);  // gpuhal's message keeps it
      return e.peer_message();
    }
    FAIL("no error");
    return "";
  };
  const Layout a = Layout::make({4, 3}, 2);
  CHECK(peer_of([&] { a.transpose({0, 0}); }) == "repeated axis in transpose");
  CHECK(peer_of([&] { a.transpose({0, 2}); }) == "axis 2 is out of bounds for array of dimension 2");
  CHECK(peer_of([&] { a.transpose({0}); }) == "axes don't match array");
  CHECK(peer_of([&] { a.view_itemsize(4); }) ==
        "When changing to a larger dtype, its size must be a divisor of the total size in bytes of the last axis of "
        "the array.");
  CHECK(peer_of([&] { Layout::make({4}, 8).view_itemsize(3); }) ==
        "When changing to a smaller dtype, its size must be a divisor of the size of original dtype");
  CHECK(peer_of([&] { Layout::make({}, 8).view_itemsize(4); }) ==
        "Changing the dtype of a 0d array is only supported if the itemsize is unchanged");
  CHECK(peer_of([&] { a.index({Slice(), Slice({}, {}, 2)}).view_itemsize(4); }) ==
        "To change to a dtype of a different size, the last axis must be contiguous");
  CHECK(peer_of([&] { a.index({Index(4)}); }) == "index 4 is out of bounds for axis 0 with size 4");
  CHECK(peer_of([&] { a.index({Slice({}, {}, 0)}); }) == "slice step cannot be zero");
}

TEST_CASE("dtypes have NumPy names, type strings and DLPack codes", "[dtype]") {
  CHECK(dtypes::float64.itemsize() == 8);
  CHECK(dtypes::complex128.itemsize() == 16);
  CHECK(dtypes::bool_.itemsize() == 1);
  CHECK(dtypes::float32.name() == "float32");
  CHECK(dtypes::float64.typestr() == "<f8");
  CHECK(dtypes::uint8.typestr() == "|u1");
  CHECK(DType::parse("float64") == dtypes::float64);
  CHECK(DType::parse("<f8") == dtypes::float64);
  CHECK(DType::parse("=i4") == dtypes::int32);
  CHECK(DType::parse("|b1") == dtypes::bool_);
  CHECK(DType::parse("complex64") == dtypes::complex64);
  CHECK(dtype_of<double>() == dtypes::float64);
  CHECK(dtype_of<uint16_t>() == dtypes::uint16);
  CHECK(static_cast<int>(DTypeKind::BFloat) == 4);  // kDLBfloat
  REQUIRE_GPUHAL_ERROR(DType::parse("float128"), Status::ERROR_INVALID_DTYPE, "unknown dtype 'float128'");
  REQUIRE_GPUHAL_ERROR((DType{DTypeKind::Float, 24, 1}.validate()), Status::ERROR_INVALID_DTYPE, "unsupported dtype");
}

namespace {
Config parse(std::map<std::string, std::string> env, bool elevated = false) {
  std::vector<std::string> names;
  for (auto &kv : env) names.push_back(kv.first);
  return Config::parse(
      names,
      [&](const std::string &n) -> std::optional<std::string> {
        auto it = env.find(n);
        if (it == env.end()) return std::nullopt;
        return it->second;
      },
      elevated);
}
}  // namespace

TEST_CASE("config parses every GPUHAL_ variable once", "[config]") {
  Config c = parse({{"GPUHAL_BACKEND", "host"},
                    {"GPUHAL_LOG", "debug"},
                    {"GPUHAL_PLUGIN_PATH", "/opt/a::relative/dir:/opt/b"},
                    {"GPUHAL_HOST_DEVICES", "3"},
                    {"OTHER", "x"}});
  CHECK(c.backend == "host");
  CHECK(c.log_level == LogLevel::Debug);
  CHECK(c.plugin_path == std::vector<std::string>{"/opt/a", "/opt/b"});
  REQUIRE(c.notes.size() == 1);
  CHECK_THAT(c.notes[0], test::contains("'relative/dir' is not absolute"));
  CHECK(c.option("GPUHAL_HOST_DEVICES") == std::optional<std::string>("3"));
  CHECK_FALSE(c.option("OTHER"));
}

TEST_CASE("config: set_option of a variable the core reads sets its field, as the environment would", "[config]") {
  Config c;
  c.set_option("GPUHAL_MAX_PENDING_DEALLOCS_COUNT", "4")
      .set_option("GPUHAL_MAX_PENDING_DEALLOCS_RATIO", "0.5")
      .set_option("GPUHAL_LOG", "debug")
      .set_option("GPUHAL_LAYERS", "validation,leak")
      .set_option("GPUHAL_PLUGIN_PATH", "/opt/a:relative")
      .set_option("GPUHAL_HOST_DEVICES", "2");
  CHECK(c.max_pending_deallocs_count == 4);
  CHECK(c.max_pending_deallocs_ratio == 0.5);
  CHECK(c.log_level == LogLevel::Debug);
  CHECK(c.layers == std::vector<std::string>{"validation", "leak"});
  CHECK(c.plugin_path == std::vector<std::string>{"/opt/a"});
  REQUIRE(c.notes.size() == 1);
  CHECK_THAT(c.notes[0], test::contains("'relative' is not absolute"));
  // Each is handed to the plugin too, the plugin's own as before.
  CHECK(c.option("GPUHAL_MAX_PENDING_DEALLOCS_COUNT") == std::optional<std::string>("4"));
  CHECK(c.option("GPUHAL_HOST_DEVICES") == std::optional<std::string>("2"));
  // Set again: replaced, not added.
  c.set_option("GPUHAL_PLUGIN_PATH", "/opt/b");
  CHECK(c.plugin_path == std::vector<std::string>{"/opt/b"});
  // A bad value is refused by name, and nothing changes.
  REQUIRE_GPUHAL_ERROR(c.set_option("GPUHAL_MAX_PENDING_DEALLOCS_COUNT", "many"), Status::ERROR_INVALID_CONFIG,
                       "GPUHAL_MAX_PENDING_DEALLOCS_COUNT='many'");
  CHECK(c.max_pending_deallocs_count == 4);
  CHECK(c.option("GPUHAL_MAX_PENDING_DEALLOCS_COUNT") == std::optional<std::string>("4"));
  // What a runtime loads with: the count limit reaches the context's queue.
  Config h;
  h.backend = "host";
  h.plugin_path = {GPUHAL_TEST_LIB_DIR};
  h.set_option("GPUHAL_MAX_PENDING_DEALLOCS_COUNT", "2");
  Context ctx = Runtime::load(h).device(0).primary_context();
  std::vector<DeviceMemory> held;
  for (int i = 0; i < 3; ++i) held.push_back(ctx.allocate(64));
  held.resize(1);
  CHECK(ctx.pending_deallocations() == 2);
  held.clear();  // the third passes the limit of 2
  CHECK(ctx.pending_deallocations() == 0);
}

TEST_CASE("deallocation limits set at run time apply from the next release, per context or for the runtime",
          "[config][dealloc]") {
  Config h;
  h.backend = "host";
  h.plugin_path = {GPUHAL_TEST_LIB_DIR};
  h.set_option("GPUHAL_MAX_PENDING_DEALLOCS_COUNT", "10");
  Runtime rt = Runtime::load(h);
  Context ctx = rt.device(0).primary_context();
  const uint64_t total = ctx.memory_info().total;
  CHECK(ctx.pending_deallocation_limits().count == 10);
  CHECK(ctx.pending_deallocation_limits().bytes == uint64_t(double(total) * 0.2));
  // Lowered under three pending releases: nothing flushes until the next.
  std::vector<DeviceMemory> held;
  for (int i = 0; i < 4; ++i) held.push_back(ctx.allocate(64));
  held.resize(1);
  REQUIRE(ctx.pending_deallocations() == 3);
  ctx.set_pending_deallocation_limits(2, 0.2);
  CHECK(ctx.pending_deallocations() == 3);
  CHECK(ctx.pending_deallocation_limits().count == 2);
  held.clear();  // the fourth release passes the limit of 2
  CHECK(ctx.pending_deallocations() == 0);
  // The byte limit: Numba's rule, a flush once the pending bytes pass it.
  ctx.set_pending_deallocation_limits(100, 1000.0 / double(total));
  const uint64_t limit = ctx.pending_deallocation_limits().bytes;
  CHECK(limit == uint64_t(double(total) * (1000.0 / double(total))));
  { DeviceMemory half = ctx.allocate(limit / 2); }
  CHECK(ctx.pending_deallocations() == 1);
  { DeviceMemory rest = ctx.allocate(limit - limit / 2); }
  CHECK(ctx.pending_deallocations() == 2);  // exactly at the limit: not past it
  { DeviceMemory one = ctx.allocate(1); }
  CHECK(ctx.pending_deallocations() == 0);
  // A bad ratio is refused by name and changes nothing.
  REQUIRE_GPUHAL_ERROR(ctx.set_pending_deallocation_limits(5, 1.5), Status::ERROR_INVALID_VALUE, "from 0 to 1");
  REQUIRE_GPUHAL_ERROR(rt.set_pending_deallocation_limits(5, -0.1), Status::ERROR_INVALID_VALUE, "from 0 to 1");
  CHECK(ctx.pending_deallocation_limits().count == 100);
  // The runtime's: the live primary context and the contexts made later.
  rt.set_pending_deallocation_limits(3, 0.5);
  CHECK(ctx.pending_deallocation_limits().count == 3);
  CHECK(ctx.pending_deallocation_limits().bytes == uint64_t(double(total) * 0.5));
  CHECK(rt.config().max_pending_deallocs_count == 10);  // the config stays as loaded
  CHECK(rt.pending_deallocation_limits().count == 3);
  CHECK(rt.pending_deallocation_limits().ratio == 0.5);
  ctx.reset();  // the same context object: its queue keeps the limits
  CHECK(ctx.pending_deallocation_limits().count == 3);
  REQUIRE_GPUHAL_ERROR(Context().set_pending_deallocation_limits(1, 0.1), Status::ERROR_INVALID_HANDLE,
                       "set_pending_deallocation_limits");
}

TEST_CASE("config notes a GPUHAL_ variable it does not know, with the nearest known name", "[config]") {
  Config c = parse({{"GPUHAL_BACKNED", "host"},             // a typo
                    {"GPUHAL_HOST_THREAD", "2"},            // one letter short
                    {"GPUHAL_SOMETHING_ELSE_ENTIRELY", "1"},  // nothing near
                    {"GPUHAL_TEST_FAKE_CUDA", "/x"},        // the project's own test variables: no note
                    {"GPUHAL_BENCH_SMOKE", "1"},
                    {"GPUHAL_KERNEL_CACHE_MAX", "1M"},      // known: no note
                    {"GPUHAL_FAULT", "mem_alloc:1"}});
  REQUIRE(c.notes.size() == 3);
  CHECK(c.notes[0] == "GPUHAL_BACKNED is not a gpuhal setting and is ignored (did you mean GPUHAL_BACKEND?)");
  CHECK(c.notes[1] == "GPUHAL_HOST_THREAD is not a gpuhal setting and is ignored (did you mean GPUHAL_HOST_THREADS?)");
  CHECK(c.notes[2] == "GPUHAL_SOMETHING_ELSE_ENTIRELY is not a gpuhal setting and is ignored");
  CHECK(c.backend.empty());  // a misspelt GPUHAL_BACKEND chooses nothing
}

TEST_CASE("config rejects bad values with the variable's name", "[config]") {
  REQUIRE_GPUHAL_ERROR(parse({{"GPUHAL_LOG", "loud"}}), Status::ERROR_INVALID_CONFIG, "GPUHAL_LOG='loud'");
  REQUIRE_GPUHAL_ERROR(parse({{"GPUHAL_BACKEND", "plugins/libx.so"}}), Status::ERROR_INVALID_CONFIG,
                       "must be absolute");
}

TEST_CASE("config ignores path-bearing variables in elevated processes", "[config][security]") {
  Config c = parse({{"GPUHAL_BACKEND", "/tmp/evil.so"},
                    {"GPUHAL_PLUGIN_PATH", "/tmp"},
                    {"GPUHAL_CUDA_DRIVER", "/tmp/libcuda.so.1"},
                    {"GPUHAL_HOST_DEVICES", "2"}},
                   true);
  CHECK(c.backend.empty());
  CHECK(c.plugin_path.empty());
  CHECK_FALSE(c.option("GPUHAL_CUDA_DRIVER"));
  CHECK_FALSE(c.option("GPUHAL_BACKEND"));
  CHECK(c.option("GPUHAL_HOST_DEVICES") == std::optional<std::string>("2"));
  CHECK(c.notes.size() == 3);
  // A backend *name* is not a path and still counts.
  CHECK(parse({{"GPUHAL_BACKEND", "host"}}, true).backend == "host");
}

TEST_CASE("the library reports its version, the headers', and the plugin ABI it speaks", "[version]") {
  const Version v = version();
  CHECK(v.major == GPUHAL_LIBRARY_VERSION_MAJOR);
  CHECK(v.minor == GPUHAL_LIBRARY_VERSION_MINOR);
  CHECK(v.patch == GPUHAL_LIBRARY_VERSION_PATCH);
  CHECK(std::string(v.string) ==
        std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch));
  CHECK(v.plugin_abi_major == GPUHAL_ABI_MAJOR);
  CHECK(v.plugin_abi_minor == GPUHAL_ABI_MINOR);
  CHECK(GPUHAL_LIBRARY_VERSION == v.major * 10000 + v.minor * 100 + v.patch);
  static_assert(kHeaderVersion.major == GPUHAL_LIBRARY_VERSION_MAJOR, "header version");
}

TEST_CASE("a log handler receives the library's and the plugin's messages instead of stderr", "[log]") {
  struct Seen {
    std::mutex mu;
    std::vector<std::pair<LogLevel, std::string>> lines;
  };
  auto seen = std::make_shared<Seen>();
  set_log_handler([seen](LogLevel level, const std::string &message) {
    std::lock_guard<std::mutex> lock(seen->mu);
    seen->lines.emplace_back(level, message);
  });
  Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.log_level = LogLevel::Debug;
  {
    Runtime rt = Runtime::load(c);  // the core logs each plugin it tries; the host plugin logs its devices
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back([&c] { Runtime::load(c); });
    for (auto &t : threads) t.join();
  }
  set_log_handler(nullptr);  // back to stderr; later messages are not seen here
  Runtime::load(c);
  std::lock_guard<std::mutex> lock(seen->mu);
  auto has = [&](const std::string &text) {
    for (auto &l : seen->lines)
      if (l.first == LogLevel::Debug && l.second.find(text) != std::string::npos) return true;
    return false;
  };
  CHECK(has(": trying"));      // the core's loader
  CHECK(has("host plugin: "));  // the plugin, through the core
  size_t tries = 0;
  for (auto &l : seen->lines) tries += l.second.find(": trying") != std::string::npos;
  CHECK(tries == 5);  // five loads while the handler was set, none after
}

TEST_CASE("a throwing log handler is contained and stderr takes the message", "[log][errors]") {
  set_log_handler([](LogLevel, const std::string &) { throw std::runtime_error("handler failed"); });
  Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.log_level = LogLevel::Debug;
  CHECK_NOTHROW(Runtime::load(c));
  set_log_handler(nullptr);
}

TEST_CASE("native handles: the host backend has none, and bad contexts are refused", "[native][errors]") {
  Context ctx = test::host_context();
  REQUIRE_GPUHAL_ERROR(ctx.native_context(), Status::ERROR_NOT_SUPPORTED, "gives no native handles");
  REQUIRE_GPUHAL_ERROR(ctx.native_device(), Status::ERROR_NOT_SUPPORTED, "gives no native handles");
  REQUIRE_GPUHAL_ERROR(Context(nullptr).native_device(), Status::ERROR_INVALID_HANDLE, "Context::native_device");
  Context moved = ctx;
  Context taken = std::move(moved);
  REQUIRE_GPUHAL_ERROR(moved.native_context(), Status::ERROR_INVALID_HANDLE, "Context::native_context");
}

TEST_CASE("GPUHAL_VENDORS_PATH: absolute directories, the default kept when elevated", "[config][vendors]") {
  CHECK(Config().vendor_dirs == std::vector<std::string>{"/etc/gpuhal/vendors"});
  Config c = parse({{"GPUHAL_VENDORS_PATH", "/opt/a/vendors:relative:/opt/b"}});
  CHECK(c.vendor_dirs == std::vector<std::string>{"/opt/a/vendors", "/opt/b"});
  REQUIRE(c.notes.size() == 1);
  CHECK_THAT(c.notes[0], test::contains("'relative' is not absolute"));
  Config e = parse({{"GPUHAL_VENDORS_PATH", "/tmp/evil"}}, true);
  CHECK(e.vendor_dirs == std::vector<std::string>{"/etc/gpuhal/vendors"});
  REQUIRE(e.notes.size() == 1);
  CHECK_THAT(e.notes[0], test::contains("GPUHAL_VENDORS_PATH is ignored in a setuid/elevated process"));
}

TEST_CASE("the host backend names itself as the driver in the device properties", "[properties]") {
  Context ctx = test::host_context();
  CHECK_THAT(ctx.device().properties().driver_version, test::contains("gpuhal host backend"));
  // Its kernels run in this process: a bad access is the process's fault.
  CHECK_FALSE(ctx.device().properties().recovers_from_faults);
  CHECK_FALSE(ctx.supports(Capability::FaultRecovery));
  // Only the core submits to its streams: idle blocks are on.
  CHECK(ctx.device().properties().exclusive_contexts);
}

TEST_CASE("device UUID: a host device has one, stable, in the 8-4-4-4-12 form, version 8", "[device]") {
  const Context ctx = test::host_context();  // the properties live as long as the device's runtime
  const std::string u = ctx.device().properties().uuid_string();
  REQUIRE(u.size() == 36);
  for (size_t i = 0; i < u.size(); ++i) {
    INFO(u);
    if (i == 8 || i == 13 || i == 18 || i == 23)
      CHECK(u[i] == '-');
    else
      CHECK(((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f')));
  }
  CHECK(u[14] == '8');                                              // RFC 9562 version 8
  CHECK((u[19] == '8' || u[19] == '9' || u[19] == 'a' || u[19] == 'b'));  // the RFC's variant
  // The same device of another runtime: the same UUID.
  CHECK(test::host_runtime().device(0).properties().uuid_string() == u);
  // All zero reads as "" (what an older plugin leaves).
  DeviceProperties none;
  CHECK(none.uuid_string().empty());
}

TEST_CASE("device UUID: two host devices have different UUIDs", "[device]") {
  Runtime rt = test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}});
  REQUIRE(rt.device_count() == 2);
  CHECK(rt.device(0).properties().uuid_string() != rt.device(1).properties().uuid_string());
  CHECK_FALSE(rt.device(1).properties().uuid_string().empty());
}
