// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The loader over real plugin files: the host plugin and the fake variants.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "gpuhal/plugin.h"

using namespace gpuhal;

namespace {
Config by_path(const std::string &path) {
  Config c;
  c.backend = path;
  return c;
}
}  // namespace

TEST_CASE("the host backend loads by name from the plugin path", "[loader]") {
  Runtime rt = test::host_runtime();
  CHECK(rt.backend_name() == "host");
  CHECK(rt.plugin_abi_version() == GPUHAL_ABI_VERSION);
  CHECK(rt.device_count() == 1);
  CHECK_THAT(rt.plugin_path(), Catch::Matchers::EndsWith("/libgpuhal-host.so"));
  REQUIRE_FALSE(rt.attempts().empty());
  CHECK(rt.attempts().back().selected);
  CHECK(rt.supports(Capability::StreamBarrier));
  CHECK(rt.supports(Capability::HostMemory));
}

TEST_CASE("the default order falls back to host when cuda and hsa have no device", "[loader]") {
  Config c;  // no backend: cuda, hsa, host
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  Runtime rt = Runtime::load(c);
  CHECK(rt.backend_name() == "host");
  bool tried_cuda = false, tried_hsa = false;
  for (const auto &a : rt.attempts()) {
    // Not built, no driver or runtime, or (Debian's ROCr without /dev/kfd) no device.
    tried_cuda |= a.backend == "cuda" && !a.selected;
    tried_hsa |= a.backend == "hsa" && !a.selected;
  }
  CHECK(tried_cuda);
  CHECK(tried_hsa);
}

TEST_CASE("the core finds plugins in its own directory without a plugin path", "[loader]") {
  Config c;
  c.backend = "host";
  Runtime rt = Runtime::load(c);
  CHECK(rt.backend_name() == "host");
}

TEST_CASE("an unknown backend names itself and where it looked", "[loader][errors]") {
  Config c;
  c.backend = "nosuch";
  c.plugin_path = {"/nonexistent/dir"};
  REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_PLUGIN_NOT_FOUND, "backend 'nosuch' could not be loaded");
  REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_PLUGIN_NOT_FOUND, "/nonexistent/dir/libgpuhal-nosuch.so");
  REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_PLUGIN_NOT_FOUND, "system loader path");
  c.backend = "Bad Name!";
  REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_INVALID_CONFIG, "neither a backend name");
}

TEST_CASE("files that are not plugins are refused with the reason", "[loader][errors]") {
  REQUIRE_GPUHAL_ERROR(Runtime::load(by_path("/nonexistent/libx.so")), Status::ERROR_PLUGIN_NOT_FOUND, "no such file");
  REQUIRE_GPUHAL_ERROR(Runtime::load(by_path("/etc/hostname")), Status::ERROR_INVALID_PLUGIN,
                       "not a loadable shared object");
  REQUIRE_GPUHAL_ERROR(Runtime::load(by_path(test::fake("noentry"))), Status::ERROR_INVALID_PLUGIN,
                       "does not export gpuhal_plugin_negotiate");
}

TEST_CASE("a plugin of another ABI major is refused naming both versions", "[loader][abi]") {
  REQUIRE_GPUHAL_ERROR(Runtime::load(by_path(test::fake("abi2"))), Status::ERROR_ABI_MISMATCH,
                       "the plugin speaks ABI 2.0 but the core speaks ABI 1." + std::to_string(GPUHAL_ABI_MINOR));
}

TEST_CASE("a plugin of a newer minor ABI is accepted", "[loader][abi]") {
  Runtime rt = Runtime::load(by_path(test::fake("newer")));
  CHECK(rt.backend_name() == "fake");
  CHECK(rt.plugin_abi_version() == GPUHAL_MAKE_VERSION(1, 7));
  CHECK_FALSE(rt.supports(Capability::StreamBarrier));  // optional entry absent
  // The plugin works through the 1.0 subset.
  Context ctx = rt.device(0).primary_context();
  std::vector<int32_t> v{1, 2, 3};
  CHECK(to_device(ctx, HostView::of(v)).copy_to_host().to_vector<int32_t>() == v);
}

TEST_CASE("a plugin without a required entry is refused", "[loader][abi]") {
  REQUIRE_GPUHAL_ERROR(Runtime::load(by_path(test::fake("missing"))), Status::ERROR_INVALID_PLUGIN,
                       "required entry 'mem_alloc' is NULL");
}

TEST_CASE("a plugin with part of an optional group is refused, naming the group", "[loader][abi]") {
  REQUIRE_GPUHAL_ERROR(Runtime::load(by_path(test::fake("halfgroup"))), Status::ERROR_INVALID_PLUGIN,
                       "the graph entries (stream_begin_capture ... graph_exec_set_kernel_args) must be all present");
}

TEST_CASE("a plugin whose init fails says why", "[loader][errors]") {
  // The fake fails the way a backend without its vendor driver does.
  REQUIRE_GPUHAL_ERROR(Runtime::load(by_path(test::fake("failinit"))), Status::ERROR_DRIVER_NOT_LOADABLE,
                       "libfake.so.1: cannot open shared object file");
}

TEST_CASE("a plugin with zero devices is reported, not used", "[loader][errors]") {
  REQUIRE_GPUHAL_ERROR(Runtime::load(by_path(test::fake("zero"))), Status::ERROR_NO_DEVICE, "reports no devices");
}

TEST_CASE("a plugin with two devices exposes both", "[loader]") {
  Runtime rt = Runtime::load(by_path(test::fake("two")));
  REQUIRE(rt.device_count() == 2);
  CHECK(rt.device(0).properties().name == "fake device 0");
  CHECK(rt.device(1).properties().name == "fake device 1");
  CHECK(rt.device(1).properties().total_memory == (uint64_t(2) << 30));
  CHECK(rt.device(1).properties().warp_size == 32);
  CHECK(rt.device(1).primary_context() != rt.device(0).primary_context());
  REQUIRE_GPUHAL_ERROR(rt.device(2), Status::ERROR_INVALID_VALUE, "device ordinal 2 out of range");
  REQUIRE_GPUHAL_ERROR(rt.device(-1), Status::ERROR_INVALID_VALUE, "out of range");
}

TEST_CASE("host devices and settings come from the plugin options", "[loader][host]") {
  Runtime rt = test::host_runtime({{"GPUHAL_HOST_DEVICES", "3"}, {"GPUHAL_HOST_MEMORY_LIMIT", "64M"}});
  REQUIRE(rt.device_count() == 3);
  CHECK(rt.device(2).properties().total_memory == (uint64_t(64) << 20));
  CHECK(rt.device(2).primary_context().memory_info().total == (uint64_t(64) << 20));
  REQUIRE_GPUHAL_ERROR(test::host_runtime({{"GPUHAL_HOST_DEVICES", "many"}}), Status::ERROR_INITIALIZATION_FAILED,
                       "GPUHAL_HOST_DEVICES='many': expected an integer from 0 to 64");
  REQUIRE_GPUHAL_ERROR(test::host_runtime({{"GPUHAL_HOST_MEMORY_LIMIT", "12Q"}}), Status::ERROR_INITIALIZATION_FAILED,
                       "expected a byte count");
}

TEST_CASE("two runtimes over one plugin share it while their settings agree", "[loader][host]") {
  Runtime a = test::host_runtime();
  Runtime b = test::host_runtime();
  CHECK(a.device(0).primary_context() != b.device(0).primary_context());
  REQUIRE_GPUHAL_ERROR(test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}}), Status::ERROR_INITIALIZATION_FAILED,
                       "already initialised in this process with other settings");
}

TEST_CASE("runtimes over one plugin unload in any order", "[loader][lifetime]") {
  for (int first_goes = 0; first_goes < 2; ++first_goes) {
    std::optional<Runtime> a = test::host_runtime(), b = test::host_runtime();
    Context ca = a->device(0).primary_context(), cb = b->device(0).primary_context();
    DeviceArray da = device_array(ca, {8}), db = device_array(cb, {8});
    (first_goes ? b : a).reset();  // one runtime value goes; its handles keep it alive
    da.memset(1);
    db.memset(2);
    ca = Context(nullptr);
    da = DeviceArray();                                        // the first runtime (and its context) really goes now
    CHECK(db.copy_to_host().to_vector<double>().size() == 8);  // the other is untouched
    (first_goes ? a : b).reset();
    db.memset(3);  // still alive through its handles
  }
  // After everything went the plugin is unloaded and loads again with other settings.
  Runtime again = test::host_runtime({{"GPUHAL_HOST_DEVICES", "3"}});
  CHECK(again.device_count() == 3);
}

TEST_CASE("handles keep the runtime and the plugin alive", "[loader][lifetime]") {
  Context ctx = test::host_context();  // the Runtime value is gone already
  DeviceArray d = device_array(ctx, {16}, dtypes::int32);
  Stream s = ctx.create_stream();
  d.memset(1, s);
  s.synchronize();
  CHECK(d.copy_to_host().to_vector<int32_t>()[15] == 0x01010101);
  CHECK(ctx.device().runtime().backend_name() == "host");
}

TEST_CASE("probe reports every known backend and the one asked for", "[loader][probe]") {
  Config c;
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.backend = test::fake("zero");
  const auto backends = Runtime::probe(c);
  REQUIRE(backends.size() == 4);
  CHECK(backends[0].backend == "cuda");  // built, but its driver is missing here
  CHECK(backends[1].backend == "hsa");   // built; no HSA runtime, or Debian's ROCr without /dev/kfd
  INFO("hsa: " << backends[1].message);
  CHECK(((backends[1].status == Status::ERROR_DRIVER_NOT_LOADABLE &&
          backends[1].message.find("libhsa-runtime64.so.1") != std::string::npos) ||
         (backends[1].status == Status::ERROR_NO_DEVICE &&
          backends[1].message.find("hsa_init failed") != std::string::npos)));
  CHECK(backends[2].backend == "host");
  CHECK(backends[2].status == Status::SUCCESS);
  CHECK(backends[2].device_count == 1);
  CHECK(backends[3].status == Status::ERROR_NO_DEVICE);  // loads, but has no device
  CHECK(backends[3].device_count == 0);
  c.backend = test::fake("abi2");
  CHECK(Runtime::probe(c).back().status == Status::ERROR_ABI_MISMATCH);
}

TEST_CASE("a plugin path that is not a regular file (FIFO, directory, device) is refused without opening it",
          "[loader]") {
  char dir[] = "/tmp/gpuhal-notfile-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/libgpuhal-fifo.so";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // dlopen would block for ever on the FIFO, waiting for a writer.
  for (const std::string &path : {fifo, std::string(dir), std::string("/dev/null")}) {
    INFO(path);
    gpuhal::Config c;
    c.backend = path;
    REQUIRE_GPUHAL_ERROR(gpuhal::Runtime::load(c), gpuhal::Status::ERROR_INVALID_PLUGIN, "not a regular file");
  }
  ::unlink(fifo.c_str());
  ::rmdir(dir);
}

TEST_CASE("plugins that break the ABI's rules are refused by name, never crash the core", "[loader]") {
  gpuhal::Config c;
  // last_error() returning NULL (here after a failed init).
  c.backend = test::fake("nullerror");
  REQUIRE_GPUHAL_ERROR(gpuhal::Runtime::load(c), gpuhal::Status::ERROR_DRIVER_NOT_LOADABLE,
                       "last_error returned NULL");
  // An absurd device count is refused, not iterated.
  c.backend = test::fake("hugecount");
  REQUIRE_GPUHAL_ERROR(gpuhal::Runtime::load(c), gpuhal::Status::ERROR_INVALID_PLUGIN, "2147483647 devices");
  // A NULL context handle returned as success.
  c.backend = test::fake("nullcontext");
  gpuhal::Runtime rt = gpuhal::Runtime::load(c);
  REQUIRE_GPUHAL_ERROR(rt.device(0).primary_context(), gpuhal::Status::ERROR_INVALID_PLUGIN,
                       "context_create returned a NULL context");
}

TEST_CASE("a plugin shared by two runtimes logs through a live logger after either is destroyed", "[loader]") {
  gpuhal::Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.log_level = gpuhal::LogLevel::Debug;
  for (int destroyed_first = 0; destroyed_first < 2; ++destroyed_first) {
    INFO("the " << (destroyed_first ? "first" : "second") << " runtime is destroyed");
    std::optional<gpuhal::Runtime> one = gpuhal::Runtime::load(c), two = gpuhal::Runtime::load(c);
    (destroyed_first ? one : two).reset();
    gpuhal::Runtime &left = destroyed_first ? *two : *one;
    // The plugin logs (at debug level) while compiling a kernel with a
    // barrier: through a logger that must still exist (ASan sees a use
    // after free otherwise).
    gpuhal::Context ctx = left.device(0).primary_context();
    gpuhal::Module m = gpuhal::Module::compile(ctx, R"(
GPUHAL_KERNEL void twice(GPUHAL_GLOBAL int *out) {
  GPUHAL_SHARED_ARRAY(int, tile, 64);
  tile[gpuhal_local_id(0)] = (int)gpuhal_local_id(0);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  out[gpuhal_global_id(0)] = 2 * tile[63u - gpuhal_local_id(0)];
})");
    auto out = gpuhal::device_array(ctx, {64}, gpuhal::dtypes::int32);
    m.kernel("twice")({1}, {64})(out);
    ctx.synchronize();
    CHECK(out.copy_to_host().at<int32_t>({0}) == 126);
  }
}

namespace {
// A vendors directory holding the given manifests (name -> text).
struct VendorsDir {
  std::string path;
  explicit VendorsDir(const std::map<std::string, std::string> &manifests) {
    char tmpl[] = "/tmp/gpuhal-vendors-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    path = tmpl;
    for (const auto &m : manifests) std::ofstream(path + "/" + m.first) << m.second;
  }
  ~VendorsDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};
}  // namespace

TEST_CASE("plugins listed in a vendors directory are found by name and by the default order", "[loader][vendors]") {
  const std::string counting = test::fake_path("libgpuhal-counting-example.so");
  VendorsDir vendors({{"counting.plugin", "# the example plugin\n\n   " + counting + "  \n"},
                      {"relative.plugin", "libgpuhal-counting-example.so\n"},
                      {"empty.plugin", "# nothing\n"},
                      {"ignored.txt", counting + "\n"}});
  Config c;
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.vendor_dirs = {"/nonexistent/gpuhal-vendors", vendors.path};
  // By name.
  c.backend = "counting";
  {
    Runtime rt = Runtime::load(c);
    CHECK(rt.backend_name() == "counting");
    CHECK(rt.plugin_path() == counting);
  }
  // Manifests that cannot be used say why; files of other names are not manifests.
  c.backend = "relative";
  REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_INVALID_CONFIG, "must name the plugin by an absolute path");
  c.backend = "empty";
  REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_INVALID_CONFIG, "it names none");
  c.backend = "ignored";
  REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_PLUGIN_NOT_FOUND, "libgpuhal-ignored.so");
  // The default order: after cuda and hsa (no device here), before host.
  c.backend.clear();
  {
    Runtime rt = Runtime::load(c);
    CHECK(rt.backend_name() == "counting");
  }
  // Listed by the probe (and so by gpuhal-info).
  bool listed = false;
  for (const auto &a : Runtime::probe(c)) listed |= a.backend == "counting" && a.status == Status::SUCCESS;
  CHECK(listed);
  // Without the vendors directory the default is host again.
  c.vendor_dirs.clear();
  CHECK(Runtime::load(c).backend_name() == "host");
}

TEST_CASE("backends by need: the default selection skips a backend without a required capability, saying why",
          "[loader][vendors]") {
  // The example plugin has no kernels; listed in a vendors directory it is
  // tried before host by the default order.
  const std::string counting = test::fake_path("libgpuhal-counting-example.so");
  VendorsDir vendors({{"counting.plugin", counting + "\n"}});
  test::CapturedLog log;
  Config c;
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.vendor_dirs = {vendors.path};
  c.log_level = LogLevel::Info;
  CHECK(Runtime::load(c).backend_name() == "counting");  // nothing required: the first with a device
  c.required = {Capability::Kernels};
  {
    Runtime rt = Runtime::load(c);
    CHECK(rt.backend_name() == "host");
    CHECK(rt.supports(Capability::Kernels));
    bool said = false;
    for (const auto &a : rt.attempts())
      said |= a.backend == "counting" && a.status == Status::ERROR_NOT_SUPPORTED &&
              a.message.find("skipped: lacks kernels, which GPUHAL_REQUIRE names") != std::string::npos;
    CHECK(said);
  }
  CHECK(log.saw(LogLevel::Info, "backend 'counting' lacks kernels, which this program requires (GPUHAL_REQUIRE)"));
  // The probe (gpuhal-info's table) says the same.
  bool probed = false;
  for (const auto &a : Runtime::probe(c))
    probed |= a.backend == "counting" && a.status == Status::ERROR_NOT_SUPPORTED &&
              a.message.find("lacks kernels") != std::string::npos;
  CHECK(probed);
  // Several needs: what is missing is named, the rest not.
  c.required = {Capability::HostMemory, Capability::Kernels, Capability::StreamBarrier};
  bool both = false;
  for (const auto &a : Runtime::probe(c))
    both |= a.backend == "counting" && a.message.find("lacks kernels, stream_barrier,") != std::string::npos;
  CHECK(both);
  // An explicit backend wins: it loads with a warning, and the call that needs
  // what it lacks is an error naming it, not an abort.
  c.required = {Capability::Kernels};
  c.backend = "counting";
  {
    Runtime rt = Runtime::load(c);
    CHECK(rt.backend_name() == "counting");
    CHECK_FALSE(rt.supports(Capability::Kernels));
    CHECK(log.saw(LogLevel::Warn, "backend 'counting' (GPUHAL_BACKEND) lacks kernels, which GPUHAL_REQUIRE names"));
    REQUIRE_GPUHAL_ERROR(Module::compile(rt.device(0).primary_context(), "GPUHAL_KERNEL void k() {}"),
                         Status::ERROR_NOT_SUPPORTED, "kernel");
  }
}

TEST_CASE("backends by need: GPUHAL_REQUIRE names capabilities, and a name that is none is refused",
          "[loader][config]") {
  CHECK(std::string(to_string(Capability::Kernels)) == "kernels");
  CHECK(capability_named("graphs") == Capability::Graphs);
  CHECK_FALSE(capability_named("Graphs").has_value());
  for (const char *name : {"stream_barrier", "host_memory", "mapped_host_memory", "ipc", "stream_ordered_memory",
                           "peer_access", "kernels", "managed_memory", "fault_recovery", "kernel_attributes",
                           "kernel_printf", "graphs", "stream_priorities", "rect_copies", "managed_hints",
                           "virtual_memory", "context_limits", "driver_memory_pools"}) {
    INFO(name);
    REQUIRE(capability_named(name).has_value());
    CHECK(std::string(to_string(*capability_named(name))) == name);
  }
  ::setenv("GPUHAL_REQUIRE", " kernels, graphs,,kernels ", 1);
  const Config c = Config::from_environment();
  CHECK(c.required == std::vector<Capability>{Capability::Kernels, Capability::Graphs});
  ::setenv("GPUHAL_REQUIRE", "kernels,graph", 1);
  REQUIRE_GPUHAL_ERROR(Config::from_environment(), Status::ERROR_INVALID_CONFIG,
                       "GPUHAL_REQUIRE='kernels,graph': 'graph' is not a capability (stream_barrier, host_memory");
  ::unsetenv("GPUHAL_REQUIRE");
  CHECK(Config::from_environment().required.empty());
}

TEST_CASE("backends by need: when no backend has what is required, the error says what was required and why each "
          "was passed over", "[loader][config]") {
  Config c;
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.vendor_dirs.clear();
  c.required = {Capability::ContextLimits};  // host has no context limits; cuda and hsa have no device here
  // The status is the most telling attempt's (which depends on the drivers
  // installed); the message names the requirement and host's reason.
  std::string message;
  try {
    Runtime rt = Runtime::load(c);
    CHECK(rt.supports(Capability::ContextLimits));  // a machine whose GPU backend has them: it was chosen
    return;
  } catch (const Error &e) {
    message = e.what();
  }
  CHECK(message.find("no backend with a device and context_limits (GPUHAL_REQUIRE) was found") != std::string::npos);
  CHECK(message.find("libgpuhal-host.so: ERROR_NOT_SUPPORTED: ") != std::string::npos);
  CHECK(message.find("skipped: lacks context_limits, which GPUHAL_REQUIRE names") != std::string::npos);
}
