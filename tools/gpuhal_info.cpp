// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal-info: which plugins the loader found (and why any failed), the
// selected backend and its devices. `--json` prints the same as JSON.
// Exit status: 0 when a backend with a device loaded, 1 otherwise, 2 on
// bad usage.
#include <cstdio>
#include <cstring>
#include <string>

#include "gpuhal/gpuhal.hpp"

namespace {

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

void print_attempts_text(const std::vector<gpuhal::LoadAttempt> &attempts) {
  std::printf("Plugins tried:\n");
  for (const auto &a : attempts)
    std::printf("  %-6s %-8s %s: %s\n", a.selected ? "[used]" : "", a.backend.c_str(), a.path.c_str(),
                a.status == gpuhal::Status::SUCCESS ? a.message.c_str()
                                                    : (gpuhal::to_string(a.status) + ": " + a.message).c_str());
}

std::string attempts_json(const std::vector<gpuhal::LoadAttempt> &attempts) {
  std::string s = "[";
  for (size_t i = 0; i < attempts.size(); ++i) {
    const auto &a = attempts[i];
    s += std::string(i ? "," : "") + "{\"backend\":" + json_string(a.backend) + ",\"path\":" + json_string(a.path) +
         ",\"selected\":" + (a.selected ? "true" : "false") +
         ",\"status\":" + json_string(gpuhal::to_string(a.status)) + ",\"message\":" + json_string(a.message) +
         ",\"devices\":" + std::to_string(a.device_count) + "}";
  }
  return s + "]";
}

void print_backends_text(const std::vector<gpuhal::LoadAttempt> &backends) {
  std::printf("Backends:\n");
  for (const auto &b : backends)
    std::printf("  %-8s %-11s %s%s%s\n", b.backend.c_str(),
                b.status == gpuhal::Status::SUCCESS ? "available" : "unavailable",
                b.status == gpuhal::Status::SUCCESS ? "" : (gpuhal::to_string(b.status) + ": ").c_str(),
                b.status == gpuhal::Status::SUCCESS ? (b.path + ", ").c_str() : "", b.message.c_str());
}

int usage(FILE *out) {
  std::fprintf(out,
               "usage: gpuhal-info [--json | --lowering]\n"
               "Shows the gpuhal backend selected by GPUHAL_BACKEND (or the default order cuda, hsa, host),\n"
               "every plugin candidate tried and why it was or was not used, and the devices.\n"
               "--lowering prints the backend's text for every builtin of the portable kernel dialect.\n"
               "Set GPUHAL_LOG=debug to see every step of the search.\n");
  return out == stderr ? 2 : 0;
}

}  // namespace

int main(int argc, char **argv) {
  bool json = false, lowering = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json"))
      json = true;
    else if (!std::strcmp(argv[i], "--lowering"))
      lowering = true;
    else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h"))
      return usage(stdout);
    else {
      std::fprintf(stderr, "gpuhal-info: unknown argument '%s'\n", argv[i]);
      return usage(stderr);
    }
  }
  gpuhal::Config config;
  try {
    config = gpuhal::Config::from_environment();
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "gpuhal-info: %s: %s\n", gpuhal::to_string(e.status()).c_str(), e.what());
    return 1;
  }
  const std::vector<gpuhal::LoadAttempt> backends = gpuhal::Runtime::probe(config);
  gpuhal::Runtime rt = [&]() -> gpuhal::Runtime {
    try {
      return gpuhal::Runtime::load(config);
    } catch (const gpuhal::Error &e) {
      if (json) {
        std::printf("{\"ok\":false,\"status\":%s,\"error\":%s,\"backends\":%s}\n",
                    json_string(gpuhal::to_string(e.status())).c_str(), json_string(e.what()).c_str(),
                    attempts_json(backends).c_str());
      } else {
        print_backends_text(backends);
        std::fprintf(stderr, "gpuhal-info: %s: %s\n", gpuhal::to_string(e.status()).c_str(), e.what());
      }
      std::exit(1);
    }
  }();

  if (lowering) {
    try {
      std::printf("/* The portable kernel dialect lowered for the %s backend (%s) */\n", rt.backend_name().c_str(),
                  rt.plugin_path().c_str());
      for (const auto &b : rt.kernel_lowering())
        std::printf("\n/* %s */\n%s\n", b.first.empty() ? "prologue" : b.first.c_str(), b.second.c_str());
      return 0;
    } catch (const gpuhal::Error &e) {
      std::fprintf(stderr, "gpuhal-info: %s: %s\n", gpuhal::to_string(e.status()).c_str(), e.what());
      return 1;
    }
  }

  if (json) {
    std::string s =
        "{\"ok\":true,\"backend\":" + json_string(rt.backend_name()) + ",\"plugin\":" + json_string(rt.plugin_path()) +
        ",\"abi\":\"" + std::to_string(rt.plugin_abi_version() >> 16) + "." +
        std::to_string(rt.plugin_abi_version() & 0xffff) + "\",\"backends\":" + attempts_json(backends) +
        ",\"attempts\":" + attempts_json(rt.attempts()) +
        ",\"capabilities\":{\"stream_barrier\":" + (rt.supports(gpuhal::Capability::StreamBarrier) ? "true" : "false") +
        ",\"host_memory\":" + (rt.supports(gpuhal::Capability::HostMemory) ? "true" : "false") +
        ",\"mapped_host_memory\":" + (rt.supports(gpuhal::Capability::MappedHostMemory) ? "true" : "false") +
        ",\"ipc\":" + (rt.supports(gpuhal::Capability::Ipc) ? "true" : "false") +
        ",\"stream_ordered_memory\":" + (rt.supports(gpuhal::Capability::StreamOrderedMemory) ? "true" : "false") +
        ",\"peer_access\":" + (rt.supports(gpuhal::Capability::PeerAccess) ? "true" : "false") +
        ",\"kernels\":" + (rt.supports(gpuhal::Capability::Kernels) ? "true" : "false") + "},\"devices\":[";
    for (int i = 0; i < rt.device_count(); ++i) {
      const auto &p = rt.device(i).properties();
      s += std::string(i ? "," : "") + "{\"ordinal\":" + std::to_string(i) + ",\"name\":" + json_string(p.name) +
           ",\"vendor\":" + json_string(p.vendor) + ",\"total_memory\":" + std::to_string(p.total_memory) +
           ",\"compute_capability\":\"" + std::to_string(p.compute_major) + "." + std::to_string(p.compute_minor) +
           "\",\"multiprocessors\":" + std::to_string(p.multiprocessor_count) +
           ",\"warp_size\":" + std::to_string(p.warp_size) +
           ",\"max_threads_per_block\":" + std::to_string(p.max_threads_per_block) +
           ",\"shared_memory_per_block\":" + std::to_string(p.shared_memory_per_block) +
           ",\"can_map_host_memory\":" + (p.can_map_host_memory ? "true" : "false") +
           ",\"unified_addressing\":" + (p.unified_addressing ? "true" : "false") + "}";
    }
    std::printf("%s]}\n", s.c_str());
    return 0;
  }

  std::printf("Backend: %s (%s), plugin ABI %u.%u\n", rt.backend_name().c_str(), rt.plugin_path().c_str(),
              rt.plugin_abi_version() >> 16, rt.plugin_abi_version() & 0xffff);
  print_backends_text(backends);
  print_attempts_text(rt.attempts());
  std::printf(
      "Capabilities: stream barrier %s, host memory %s, mapped host memory %s, ipc %s, stream-ordered memory %s, "
      "peer access %s, kernels %s\n",
      rt.supports(gpuhal::Capability::StreamBarrier) ? "yes" : "no",
      rt.supports(gpuhal::Capability::HostMemory) ? "yes" : "no",
      rt.supports(gpuhal::Capability::MappedHostMemory) ? "yes" : "no",
      rt.supports(gpuhal::Capability::Ipc) ? "yes" : "no",
      rt.supports(gpuhal::Capability::StreamOrderedMemory) ? "yes" : "no",
      rt.supports(gpuhal::Capability::PeerAccess) ? "yes" : "no",
      rt.supports(gpuhal::Capability::Kernels) ? "yes" : "no");
  std::printf("Devices: %d\n", rt.device_count());
  for (int i = 0; i < rt.device_count(); ++i) {
    const auto &p = rt.device(i).properties();
    std::printf("  [%d] %s (%s)\n", i, p.name.c_str(), p.vendor.c_str());
    std::printf("      memory %.1f MiB, compute %d.%d, %d multiprocessors, warp %d\n",
                double(p.total_memory) / (1 << 20), p.compute_major, p.compute_minor, p.multiprocessor_count,
                p.warp_size);
    std::printf("      max threads/block %d, block dims %dx%dx%d, shared memory/block %llu bytes\n",
                p.max_threads_per_block, p.max_block_dim[0], p.max_block_dim[1], p.max_block_dim[2],
                static_cast<unsigned long long>(p.shared_memory_per_block));
    std::printf("      map host memory %s, unified addressing %s, PCI %04x:%02x:%02x\n",
                p.can_map_host_memory ? "yes" : "no", p.unified_addressing ? "yes" : "no", p.pci_domain, p.pci_bus,
                p.pci_device);
  }
  return 0;
}
