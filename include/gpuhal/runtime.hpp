// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Runtime and Device: the loaded backend plugin and its devices.
//
// Runtime::load(config) finds, opens and negotiates a plugin (see the
// loader rules in docs/ and design §3). Handles are cheap values holding a
// reference-counted implementation: a Device keeps its Runtime (and so the
// plugin library) alive; the plugin is shut down and unloaded when the last
// handle of anything made from it is gone. All methods are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpuhal/capability.hpp"
#include "gpuhal/config.hpp"
#include "gpuhal/error.hpp"

namespace gpuhal {

namespace detail {
struct RuntimeImpl;
struct DeviceImpl;
}  // namespace detail

class Context;

// One plugin candidate the loader looked at, and what happened.
struct LoadAttempt {
  std::string backend;  // "host", "cuda", "hsa", or the path given
  std::string path;     // the file (or SONAME) tried
  bool selected = false;
  Status status = Status::SUCCESS;
  std::string message;  // why it was refused, or a summary when usable
  int32_t device_count = 0;
};

struct DeviceProperties {
  std::string name;
  std::string vendor;
  uint64_t total_memory = 0;
  uint64_t shared_memory_per_block = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessor_count = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_block_dim[3] = {0, 0, 0};
  int max_grid_dim[3] = {0, 0, 0};
  int clock_rate_khz = 0;
  bool can_map_host_memory = false;
  bool unified_addressing = false;
  bool concurrent_kernels = false;
  int pci_domain = 0;
  int pci_bus = 0;
  int pci_device = 0;
  // The vendor driver / runtime version ("CUDA 12.4", "HSA 1.1 (ROCr)");
  // empty when the plugin does not say (plugins older than ABI 1.3).
  std::string driver_version;
  // True when Context::reset() recovers from a kernel's memory fault within
  // the process; false when the vendor keeps the fault until the process
  // ends (CUDA), or the plugin does not say (older than ABI 1.5).
  bool recovers_from_faults = false;
  // True when no other library in the process can put work on the device's
  // contexts (the host backend): memory released while none of gpuhal's
  // work is in flight is then reused at once (idle blocks, user guide).
  // False where the vendor shares them (cuda, hsa) or the plugin does not
  // say (older than ABI 1.6).
  bool exclusive_contexts = false;
  // The device's UUID: all zero when the backend does not give one (or its
  // plugin is older than ABI 1.12). cuda: the driver's (cuDeviceGetUuid; a
  // MIG instance's own); host: derived from the machine's id and the
  // ordinal, stable across runs.
  std::array<uint8_t, 16> uuid{};
  // True when loading a module or looking up a kernel may wait for work
  // queued on the device's contexts (cuda: the driver's lazy loading).
  // Contexts of such a device load the core's own kernels (fill, assign)
  // when they are made, so that those stream-ordered calls never wait;
  // Module::compile / load and Module::kernel may still wait there. False
  // where loading never waits (host, hsa) or the plugin does not say (older
  // than ABI 1.13).
  bool module_loads_wait = false;
  // True when Context::synchronize() waits for all work of the device's
  // context, work other libraries queued on it included (cuda:
  // cuCtxSynchronize; host: its contexts are its own). Memory released
  // while work may still use it is then reused after the deferred queue's
  // next flush instead of freed (busy blocks, user guide). False where it
  // waits for gpuhal's own queues only (hsa) or the plugin does not say
  // (older than ABI 1.14).
  bool synchronize_waits_for_all_work = false;
  // The UUID as text, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case
  // hex; nvidia-smi prints it after "GPU-"); "" when all zero.
  std::string uuid_string() const;
};


// Stream priorities, CUDA's convention: lower numbers are greater
// priorities; the meaningful ones lie in [greatest, least].
struct StreamPriorityRange {
  int least = 0;
  int greatest = 0;
};

class Device {
 public:
  int ordinal() const;
  const DeviceProperties &properties() const;
  // The device's primary context (created on first use, shared by every
  // caller; released when no handle refers to it any more).
  Context primary_context() const;
  class Runtime runtime() const;
  // True when this device can address `peer`'s memory directly (false for
  // the same device, for devices of another runtime, and on backends
  // without Capability::PeerAccess).
  bool can_access_peer(const Device &peer) const;
  // The stream priorities this device's streams take (CUDA runtime's
  // cudaDeviceGetStreamPriorityRange): those of its primary context, which
  // this makes when no handle holds it (as the CUDA runtime initialises
  // its primary context on first use). ERROR_NOT_SUPPORTED naming
  // Capability::StreamPriorities on backends without them.
  StreamPriorityRange stream_priority_range() const;

 private:
  friend class Runtime;
  friend class Context;
  explicit Device(std::shared_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::DeviceImpl> impl_;
};

class Runtime {
 public:
  // Loads the backend selected by `config`. Throws gpuhal::Error: ERROR_
  // PLUGIN_NOT_FOUND (naming what was asked for and every place looked),
  // ERROR_INVALID_PLUGIN, ERROR_ABI_MISMATCH (naming both versions),
  // ERROR_INITIALIZATION_FAILED, ERROR_NO_DEVICE.
  static Runtime load(const Config &config);
  // The process-wide runtime, loaded from Config::from_environment() on
  // first use (thread-safe). A failure is rethrown on every call.
  static Runtime get();

  // For diagnostics (gpuhal-info): tries every known backend (cuda, hsa,
  // host, and config.backend) on its own and unloads it again. One entry per
  // backend: loaded with its device count, or why not. Never throws for
  // plugin problems.
  static std::vector<LoadAttempt> probe(const Config &config);

  const std::string &backend_name() const;
  const std::string &plugin_path() const;
  // The ABI version the plugin answered with (major << 16 | minor).
  uint32_t plugin_abi_version() const;
  // Every candidate the loader tried before selecting this backend.
  const std::vector<LoadAttempt> &attempts() const;
  // As loaded (later set_pending_deallocation_limits calls do not show here).
  const Config &config() const;

  // The deferred deallocation queue's limits (Context::set_pending_
  // deallocation_limits) for every context of this runtime made from now
  // on and every live primary context; a context made by Context::adopt
  // keeps its own. What Python's gpuhal.config.CUDA_DEALLOCS_COUNT and
  // CUDA_DEALLOCS_RATIO set. A ratio outside 0..1 is ERROR_INVALID_VALUE,
  // changing nothing.
  void set_pending_deallocation_limits(uint64_t count, double ratio) const;
  struct PendingDeallocationLimits {
    uint64_t count = 0;
    double ratio = 0;
  };
  // What contexts made from now on start with.
  PendingDeallocationLimits pending_deallocation_limits() const;

  int device_count() const;
  // ERROR_INVALID_VALUE for an ordinal out of range.
  Device device(int ordinal) const;
  bool supports(Capability capability) const;
  // The backend's lowering of the portable kernel dialect: ("", prologue)
  // first, then (builtin, its definition) in kernel_builtins.def order; what
  // `gpuhal-info --lowering` prints. ERROR_NOT_SUPPORTED without kernels.
  std::vector<std::pair<std::string, std::string>> kernel_lowering() const;

 private:
  friend class Device;
  explicit Runtime(std::shared_ptr<detail::RuntimeImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::RuntimeImpl> impl_;
};

}  // namespace gpuhal
