// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal-info: which plugins the loader found (and why any failed), the
// selected backend and its devices, in the manner of clinfo and nvidia-smi:
// `-l` lists every device of every backend that loads, one per line;
// `--json` prints the same as a JSON document (schema_version 1, always
// valid UTF-8); `--backend` and `--device` narrow it down. docs/tools.md is
// the reference. Exit status: 0 when a backend with a device loaded (and the
// asked-for device exists), 1 otherwise, 2 on bad usage.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"
#include "json_text.hpp"
#include "tool_arguments.hpp"

namespace {

using gpuhal::support::json_bool;
using gpuhal::support::json_string;

struct Options {
  bool json = false, lowering = false, list = false;
  std::optional<std::string> backend, kernel_file;
  std::optional<int> device;
};

const char kUsage[] =
    "usage: gpuhal-info [-l | --list] [--backend NAME|PATH] [--device N] [--json] [--lowering]\n"
    "       gpuhal-info [--backend NAME|PATH] [--device N] --kernel FILE\n"
    "       gpuhal-info --version | --help\n"
    "Shows the gpuhal backend selected by GPUHAL_BACKEND (or the default order cuda, hsa, host),\n"
    "every plugin candidate tried and why it was or was not used, and the devices.\n"
    "  -l, --list      one line per device of every backend that loads\n"
    "  --backend B     use backend B (a name or a plugin path) instead of GPUHAL_BACKEND\n"
    "  --device N      show device N only (an error if there is none)\n"
    "  --json          the same as a JSON document (schema_version 1)\n"
    "  --lowering      the backend's text for every builtin of the portable kernel dialect\n"
    "  --kernel FILE   compiles FILE (portable kernel source) on the device and shows each\n"
    "                  kernel's attributes, occupancy and suggested block size\n"
    "  --version       the library's version and the plugin ABI it speaks\n"
    "Set GPUHAL_LOG=debug to see every step of the search.\n";

std::string abi_text(uint32_t v) {
  return std::to_string(v >> 16) + "." + std::to_string(v & 0xffff);
}

std::string status_text(const gpuhal::LoadAttempt &a) {
  return a.status == gpuhal::Status::SUCCESS ? a.message : gpuhal::to_string(a.status) + ": " + a.message;
}

// `selected` is recomputed against the runtime actually loaded, so that it
// agrees with `status` (only a successful attempt can be the one in use).
std::string attempts_json(const std::vector<gpuhal::LoadAttempt> &attempts, const gpuhal::Runtime *used) {
  std::string s = "[";
  for (size_t i = 0; i < attempts.size(); ++i) {
    const auto &a = attempts[i];
    const bool selected = used && a.status == gpuhal::Status::SUCCESS && a.path == used->plugin_path();
    s += std::string(i ? "," : "") + "{\"backend\":" + json_string(a.backend) + ",\"path\":" + json_string(a.path) +
         ",\"selected\":" + json_bool(selected) + ",\"status\":" + json_string(gpuhal::to_string(a.status)) +
         ",\"message\":" + json_string(a.message) + ",\"devices\":" + std::to_string(a.device_count) + "}";
  }
  return s + "]";
}

// [a, b, c] of three ints.
std::string json_triple(const int (&v)[3]) {
  return "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "]";
}

// The PCI location as nvidia-smi and lspci write it ("0000:41:00.0").
std::string pci_bus_id(const gpuhal::DeviceProperties &p) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.0", unsigned(p.pci_domain) & 0xffffu, unsigned(p.pci_bus) & 0xffu,
                unsigned(p.pci_device) & 0xffu);
  return text;
}

std::string device_json(const gpuhal::Runtime &rt, int i) {
  const auto &p = rt.device(i).properties();
  return "{\"backend\":" + json_string(rt.backend_name()) + ",\"ordinal\":" + std::to_string(i) +
         ",\"name\":" + json_string(p.name) + ",\"vendor\":" + json_string(p.vendor) +
         ",\"driver_version\":" + json_string(p.driver_version) +
         ",\"total_memory\":" + std::to_string(p.total_memory) + ",\"compute_capability\":\"" +
         std::to_string(p.compute_major) + "." + std::to_string(p.compute_minor) +
         "\",\"multiprocessors\":" + std::to_string(p.multiprocessor_count) +
         ",\"warp_size\":" + std::to_string(p.warp_size) +
         ",\"max_threads_per_block\":" + std::to_string(p.max_threads_per_block) +
         ",\"shared_memory_per_block\":" + std::to_string(p.shared_memory_per_block) +
         ",\"can_map_host_memory\":" + json_bool(p.can_map_host_memory) +
         ",\"unified_addressing\":" + json_bool(p.unified_addressing) +
         ",\"max_block_dim\":" + json_triple(p.max_block_dim) + ",\"max_grid_dim\":" + json_triple(p.max_grid_dim) +
         ",\"clock_rate_khz\":" + std::to_string(p.clock_rate_khz) + ",\"pci_bus_id\":" + json_string(pci_bus_id(p)) +
         ",\"uuid\":" + (p.uuid_string().empty() ? std::string("null") : json_string(p.uuid_string())) + "}";
}

std::string header_json() {
  const gpuhal::Version v = gpuhal::version();
  return "\"schema_version\":1,\"library_version\":" + json_string(v.string) + ",\"core_plugin_abi\":\"" +
         std::to_string(v.plugin_abi_major) + "." + std::to_string(v.plugin_abi_minor) + "\"";
}

// The devices shown: all, or the one --device names (false if it has none).
bool devices_shown(const gpuhal::Runtime &rt, const Options &o, std::vector<int> *out) {
  if (o.device) {
    if (*o.device < 0 || *o.device >= rt.device_count()) return false;
    out->push_back(*o.device);
    return true;
  }
  for (int i = 0; i < rt.device_count(); ++i) out->push_back(i);
  return true;
}

// -l: every backend the probe found usable, loaded one by one.
int list_devices(const gpuhal::Config &config, const std::vector<gpuhal::LoadAttempt> &backends, const Options &o) {
  std::string json = "{" + header_json() + ",\"devices\":[";
  int shown = 0;
  // The backend asked for (--backend, else GPUHAL_BACKEND), if any; why the
  // backends that were asked for show no device, for the message below.
  const std::string want = o.backend ? *o.backend : config.backend;
  std::string why_none;
  for (const auto &b : backends) {
    if (!want.empty() && want != b.backend && want != b.path) continue;
    if (b.status != gpuhal::Status::SUCCESS || b.device_count == 0) {
      why_none += "; " + b.backend + ": " + (b.status == gpuhal::Status::SUCCESS ? "0 devices" : status_text(b));
      continue;
    }
    gpuhal::Config c = config;
    c.backend = b.path;
    try {
      gpuhal::Runtime rt = gpuhal::Runtime::load(c);
      std::vector<int> devices;
      if (!devices_shown(rt, o, &devices)) continue;
      for (int i : devices) {
        const auto &p = rt.device(i).properties();
        if (o.json)
          json += std::string(shown ? "," : "") + device_json(rt, i);
        else
          std::printf("%s %d: %s (%s), %.0f MiB, compute %d.%d\n", rt.backend_name().c_str(), i, p.name.c_str(),
                      p.vendor.c_str(), double(p.total_memory) / (1 << 20), p.compute_major, p.compute_minor);
        ++shown;
      }
    } catch (const gpuhal::Error &e) {
      std::fprintf(stderr, "gpuhal-info: %s: %s\n", b.backend.c_str(), e.what());
    }
  }
  if (o.json) std::printf("%s]}\n", json.c_str());
  if (shown == 0)
    std::fprintf(stderr, "gpuhal-info: no device%s%s\n", o.device ? " with that ordinal" : "", why_none.c_str());
  return shown ? 0 : 1;
}

void print_backends(const std::vector<gpuhal::LoadAttempt> &backends) {
  std::printf("Backends:\n");
  for (const auto &b : backends)
    std::printf("  %-8s %-11s %s%s\n", b.backend.c_str(),
                b.status == gpuhal::Status::SUCCESS ? "available" : "unavailable",
                b.status == gpuhal::Status::SUCCESS ? (b.path + ", ").c_str() : "", status_text(b).c_str());
}

void print_text(const gpuhal::Runtime &rt, const std::vector<gpuhal::LoadAttempt> &backends,
                const std::vector<int> &devices) {
  std::printf("gpuhal %s, core plugin ABI %s\n", gpuhal::version().string, abi_text((gpuhal::version().plugin_abi_major << 16) | gpuhal::version().plugin_abi_minor).c_str());
  std::printf("Backend: %s (%s), plugin ABI %s\n", rt.backend_name().c_str(), rt.plugin_path().c_str(),
              abi_text(rt.plugin_abi_version()).c_str());
  print_backends(backends);
  std::printf("Plugins tried:\n");
  for (const auto &a : rt.attempts())
    std::printf("  %-6s %-8s %s: %s\n", a.selected ? "[used]" : "", a.backend.c_str(), a.path.c_str(),
                status_text(a).c_str());
  // Each capability by its name (capability.hpp), as GPUHAL_REQUIRE spells it.
  std::string caps;
  for (gpuhal::Capability c : gpuhal::all_capabilities())
    caps += std::string(caps.empty() ? "" : ", ") + gpuhal::to_string(c) + (rt.supports(c) ? " yes" : " no");
  std::printf("Capabilities: %s\n", caps.c_str());
  std::printf("Layers (GPUHAL_LAYERS; docs/layers.md):\n");
  for (const auto &l : gpuhal::available_layers()) {
    const auto &on = rt.config().layers;
    const bool enabled = std::find(on.begin(), on.end(), l.name) != on.end();
    std::printf("  %-10s %-9s %s\n", l.name.c_str(), enabled ? "[enabled]" : "", l.description.c_str());
  }
  std::printf("Devices: %d\n", rt.device_count());
  for (int i : devices) {
    const auto &p = rt.device(i).properties();
    std::printf("  [%d] %s (%s), driver %s\n", i, p.name.c_str(), p.vendor.c_str(),
                p.driver_version.empty() ? "unknown" : p.driver_version.c_str());
    std::printf("      memory %.1f MiB, compute %d.%d, %d multiprocessors, warp %d\n",
                double(p.total_memory) / (1 << 20), p.compute_major, p.compute_minor, p.multiprocessor_count,
                p.warp_size);
    std::printf("      max threads/block %d, block dims %dx%dx%d, shared memory/block %llu bytes\n",
                p.max_threads_per_block, p.max_block_dim[0], p.max_block_dim[1], p.max_block_dim[2],
                static_cast<unsigned long long>(p.shared_memory_per_block));
    std::printf("      map host memory %s, unified addressing %s, PCI %04x:%02x:%02x, UUID %s\n",
                p.can_map_host_memory ? "yes" : "no", p.unified_addressing ? "yes" : "no", p.pci_domain, p.pci_bus,
                p.pci_device, p.uuid_string().empty() ? "unknown" : p.uuid_string().c_str());
  }
}

// {"stream_barrier": true, ...}: every capability by its name.
std::string capabilities_json(const gpuhal::Runtime &rt) {
  std::string s;
  for (gpuhal::Capability c : gpuhal::all_capabilities())
    s += std::string(s.empty() ? "{" : ",") + json_string(gpuhal::to_string(c)) + ":" + json_bool(rt.supports(c));
  return s + "}";
}

std::string runtime_json(const gpuhal::Runtime &rt, const std::vector<gpuhal::LoadAttempt> &backends,
                         const std::vector<int> &devices) {
  std::string s = "{" + header_json() + ",\"ok\":true,\"backend\":" + json_string(rt.backend_name()) +
                  ",\"plugin\":" + json_string(rt.plugin_path()) + ",\"abi\":\"" +
                  abi_text(rt.plugin_abi_version()) + "\",\"backends\":" + attempts_json(backends, &rt) +
                  ",\"attempts\":" + attempts_json(rt.attempts(), &rt) +
                  ",\"capabilities\":" + capabilities_json(rt) + ",\"layers\":[";
  const auto &on = rt.config().layers;
  const auto layers = gpuhal::available_layers();
  for (size_t k = 0; k < layers.size(); ++k)
    s += std::string(k ? "," : "") + "{\"name\":" + json_string(layers[k].name) +
         ",\"enabled\":" + json_bool(std::find(on.begin(), on.end(), layers[k].name) != on.end()) +
         ",\"description\":" + json_string(layers[k].description) + "}";
  s += "],\"devices\":[";
  for (size_t k = 0; k < devices.size(); ++k) s += std::string(k ? "," : "") + device_json(rt, devices[k]);
  return s + "]}";
}

// --kernel FILE: every kernel of the file, compiled on device `ordinal`,
// with its attributes, occupancy and suggested block size. 0 when all were
// shown, 1 on any error (unreadable file, compile error, no such device,
// a backend without kernels or attributes).
int show_kernels(const gpuhal::Runtime &rt, int ordinal, const std::string &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "gpuhal-info: --kernel: cannot read '%s'\n", file.c_str());
    return 1;
  }
  const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    if (ordinal >= rt.device_count())
      throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "backend " + rt.backend_name() + " has no device " +
                                                                   std::to_string(ordinal));
    gpuhal::Context ctx = rt.device(ordinal).primary_context();
    gpuhal::Module m = gpuhal::Module::compile(ctx, source);
    std::printf("%s on %s device %d (%s)\n", file.c_str(), rt.backend_name().c_str(), ordinal,
                ctx.device().properties().name.c_str());
    for (const std::string &name : m.kernel_names()) {
      const gpuhal::Kernel k = m.kernel(name);
      const gpuhal::KernelAttributes a = k.attributes();
      const gpuhal::BlockSizeSuggestion s = k.suggest_block_size();
      std::printf("  %s: max block %u, static shared %u B, dynamic shared up to %u B, local %u B per work-item, "
                  "%u registers, blocks in multiples of %u; suggested block %u (%u resident per unit), grid of at "
                  "least %u\n",
                  name.c_str(), a.max_threads_per_block, a.static_shared_bytes, a.max_dynamic_shared_bytes,
                  a.local_bytes_per_thread, a.registers_per_thread, a.preferred_block_multiple, s.block,
                  k.max_active_blocks_per_unit(s.block), s.min_grid);
    }
    return 0;
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "gpuhal-info: --kernel %s: %s: %s\n", file.c_str(), gpuhal::to_string(e.status()).c_str(),
                 e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  gpuhal::tools::Arguments args("gpuhal-info", kUsage);
  args.flag("--json", [&] { o.json = true; })
      .flag("--lowering", [&] { o.lowering = true; })
      .flag("--list", [&] { o.list = true; }, "-l")
      .option("--kernel",
              [&](const std::string &v) {
                o.kernel_file = v;
                return std::string();
              })
      .option("--backend",
              [&](const std::string &v) {
                o.backend = v;
                return std::string();
              })
      .option("--device",
              [&](const std::string &v) {
                long n = 0;
                const std::string bad = gpuhal::tools::parse_integer(v, 0, 1 << 20, &n);
                o.device = int(n);
                return bad.empty() ? bad : "a device ordinal is wanted: " + bad;
              })
      // --list and --kernel print their own reports: nothing else combines with them.
      .exclusive({"--list", "--kernel", "--lowering"})
      .exclusive({"--kernel", "--json"});
  if (const auto status = args.parse(argc, argv)) return *status;
  gpuhal::Config config;
  try {
    config = gpuhal::Config::from_environment();
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "gpuhal-info: %s: %s\n", gpuhal::to_string(e.status()).c_str(), e.what());
    return 1;
  }
  if (o.backend) config.backend = *o.backend;
  // The probe tries every backend for the table below; its warnings are the
  // ones the load prints again, so it runs quietly (a run warns once).
  gpuhal::Config quiet = config;
  if (quiet.log_level < gpuhal::LogLevel::Debug) quiet.log_level = gpuhal::LogLevel::Error;
  const std::vector<gpuhal::LoadAttempt> backends = gpuhal::Runtime::probe(quiet);
  if (o.list) return list_devices(quiet, backends, o);

  std::optional<gpuhal::Runtime> rt;
  try {
    rt = gpuhal::Runtime::load(config);
  } catch (const gpuhal::Error &e) {
    if (o.json) {
      std::printf("{%s,\"ok\":false,\"status\":%s,\"error\":%s,\"backends\":%s}\n", header_json().c_str(),
                  json_string(gpuhal::to_string(e.status())).c_str(), json_string(e.what()).c_str(),
                  attempts_json(backends, nullptr).c_str());
    } else {
      print_backends(backends);
      std::fprintf(stderr, "gpuhal-info: %s: %s\n", gpuhal::to_string(e.status()).c_str(), e.what());
    }
    return 1;
  }

  if (o.lowering) {
    try {
      if (o.json) {
        std::string s = "{" + header_json() + ",\"ok\":true,\"backend\":" + json_string(rt->backend_name()) +
                        ",\"plugin\":" + json_string(rt->plugin_path()) + ",\"lowering\":[";
        bool first = true;
        for (const auto &b : rt->kernel_lowering()) {
          s += std::string(first ? "" : ",") + "{\"builtin\":" + json_string(b.first.empty() ? "prologue" : b.first) +
               ",\"text\":" + json_string(b.second) + "}";
          first = false;
        }
        std::printf("%s]}\n", s.c_str());
        return 0;
      }
      std::printf("/* The portable kernel dialect lowered for the %s backend (%s) */\n", rt->backend_name().c_str(),
                  rt->plugin_path().c_str());
      for (const auto &b : rt->kernel_lowering())
        std::printf("\n/* %s */\n%s\n", b.first.empty() ? "prologue" : b.first.c_str(), b.second.c_str());
      return 0;
    } catch (const gpuhal::Error &e) {
      std::fprintf(stderr, "gpuhal-info: %s: %s\n", gpuhal::to_string(e.status()).c_str(), e.what());
      return 1;
    }
  }

  if (o.kernel_file) return show_kernels(*rt, o.device.value_or(0), *o.kernel_file);

  std::vector<int> devices;
  if (!devices_shown(*rt, o, &devices)) {
    std::fprintf(stderr, "gpuhal-info: backend %s has no device %d (it has %d)\n", rt->backend_name().c_str(),
                 *o.device, rt->device_count());
    return 1;
  }
  if (o.json)
    std::printf("%s\n", runtime_json(*rt, backends, devices).c_str());
  else
    print_text(*rt, backends, devices);
  return 0;
}
