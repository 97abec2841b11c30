// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <cstddef>
#include <cstring>
#include <mutex>
#include <vector>

#include "allocation.hpp"
#include "capability_rules.hpp"
#include "context_impl.hpp"
#include "gpuhal/error.hpp"
#include "handle_access.hpp"
#include "loader.hpp"
#include "runtime_impl.hpp"

namespace gpuhal {

using detail::ContextImpl;
using detail::DeviceImpl;
using detail::RuntimeImpl;

namespace {

DeviceProperties convert(const gpuhal_device_properties_t &p) {
  DeviceProperties d;
  d.name = std::string(p.name, strnlen(p.name, sizeof p.name));
  d.vendor = std::string(p.vendor, strnlen(p.vendor, sizeof p.vendor));
  d.total_memory = p.total_memory;
  d.shared_memory_per_block = p.shared_memory_per_block;
  d.compute_major = p.compute_major;
  d.compute_minor = p.compute_minor;
  d.multiprocessor_count = p.multiprocessor_count;
  d.warp_size = p.warp_size;
  d.max_threads_per_block = p.max_threads_per_block;
  for (int i = 0; i < 3; ++i) {
    d.max_block_dim[i] = p.max_block_dim[i];
    d.max_grid_dim[i] = p.max_grid_dim[i];
  }
  d.clock_rate_khz = p.clock_rate_khz;
  d.can_map_host_memory = p.can_map_host_memory != 0;
  d.unified_addressing = p.unified_addressing != 0;
  d.concurrent_kernels = p.concurrent_kernels != 0;
  d.pci_domain = p.pci_domain;
  d.pci_bus = p.pci_bus;
  d.pci_device = p.pci_device;
  if (p.struct_size >= offsetof(gpuhal_device_properties_t, driver_version) + sizeof p.driver_version)
    d.driver_version = std::string(p.driver_version, strnlen(p.driver_version, sizeof p.driver_version));
  if (p.struct_size >= offsetof(gpuhal_device_properties_t, recovers_from_faults) + sizeof p.recovers_from_faults)
    d.recovers_from_faults = p.recovers_from_faults != 0;
  if (p.struct_size >= offsetof(gpuhal_device_properties_t, exclusive_contexts) + sizeof p.exclusive_contexts)
    d.exclusive_contexts = p.exclusive_contexts != 0;
  if (p.struct_size >= offsetof(gpuhal_device_properties_t, uuid) + sizeof p.uuid)
    std::memcpy(d.uuid.data(), p.uuid, d.uuid.size());
  if (p.struct_size >= offsetof(gpuhal_device_properties_t, module_loads_wait) + sizeof p.module_loads_wait)
    d.module_loads_wait = p.module_loads_wait != 0;
  if (p.struct_size >= offsetof(gpuhal_device_properties_t, synchronize_waits_for_all_work) +
                           sizeof p.synchronize_waits_for_all_work)
    d.synchronize_waits_for_all_work = p.synchronize_waits_for_all_work != 0;
  return d;
}

}  // namespace

std::string DeviceProperties::uuid_string() const {
  bool any = false;
  for (uint8_t b : uuid) any = any || b != 0;
  if (!any) return "";
  std::string s;
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += kHex[uuid[i] >> 4];
    s += kHex[uuid[i] & 15];
  }
  return s;
}

Runtime Runtime::load(const Config &config) {
  detail::Logger logger(config.log_level);
  auto sel = detail::select_backend(config, logger);
  auto rt = std::make_shared<RuntimeImpl>();
  rt->config = config;
  rt->dealloc_count = config.max_pending_deallocs_count;
  rt->dealloc_ratio = config.max_pending_deallocs_ratio;
  rt->library = std::move(sel.library);
  rt->backend = std::make_unique<detail::Backend>(*rt->library);
  rt->attempts = std::move(sel.attempts);
  if (config.memory_manager == "pool")
    rt->memory_manager = pool_memory_manager();
  else if (!config.memory_manager.empty() && config.memory_manager != "default")
    rt->memory_manager = detail::load_memory_manager_library(config.memory_manager);
  const detail::Backend &t = *rt->backend;
  for (int i = 0; i < rt->library->device_count(); ++i) {
    gpuhal_device_properties_t p{};
    p.abi_version = GPUHAL_ABI_VERSION;
    p.struct_size = sizeof p;
    t.device_properties(i, &p);
    auto d = std::make_unique<DeviceImpl>();
    d->runtime = rt.get();
    d->ordinal = i;
    d->properties = convert(p);
    rt->devices.push_back(std::move(d));
  }
  return Runtime(rt);
}

Runtime Runtime::get() {
  // The process's runtime, or why it could not be loaded. Made inside the
  // static's initialiser, so that its destructor is registered after those
  // of the plugin and the vendor runtime it loads: at exit it shuts them
  // down while their own statics (threads, pools) still exist.
  struct ProcessRuntime {
    std::shared_ptr<detail::RuntimeImpl> runtime;
    std::unique_ptr<Error> failure;
    ProcessRuntime() {
      try {
        runtime = load(Config::from_environment()).impl_;
      } catch (const Error &e) {
        failure = std::make_unique<Error>(e);
      }
    }
  };
  static const ProcessRuntime process;  // thread-safe initialisation, once
  if (process.failure) throw *process.failure;
  if (!detail::inherited_runtime(*process.runtime)) return Runtime(process.runtime);
  // A child of fork(): the process runtime is its parent's (fork_guard.hpp).
  // The child loads its own, once per fork; the one it replaces is never
  // destroyed (nothing of the parent's may run here).
  static detail::ProcessMutex mu;
  static std::shared_ptr<detail::RuntimeImpl> *mine = nullptr;
  std::lock_guard<detail::ProcessMutex> lock(mu);
  if (!mine || detail::inherited_runtime(**mine))
    mine = new std::shared_ptr<detail::RuntimeImpl>(load(Config::from_environment()).impl_);
  return Runtime(*mine);
}

std::vector<LoadAttempt> Runtime::probe(const Config &config) {
  return detail::probe_backends(config, detail::Logger(config.log_level));
}

const std::string &Runtime::backend_name() const {
  return impl_->library->name();
}
const std::string &Runtime::plugin_path() const {
  return impl_->library->path();
}
uint32_t Runtime::plugin_abi_version() const {
  return impl_->library->abi_version();
}
const std::vector<LoadAttempt> &Runtime::attempts() const {
  return impl_->attempts;
}
const Config &Runtime::config() const {
  return impl_->config;
}

Runtime::PendingDeallocationLimits Runtime::pending_deallocation_limits() const {
  std::lock_guard<std::mutex> lock(impl_->dealloc_limits_mutex);
  return {impl_->dealloc_count, impl_->dealloc_ratio};
}

void Runtime::set_pending_deallocation_limits(uint64_t count, double ratio) const {
  // Every device's byte limit first: a bad ratio throws before anything changes.
  std::vector<uint64_t> max_bytes;
  for (const auto &d : impl_->devices)
    max_bytes.push_back(detail::dealloc_byte_limit(*d, ratio, "Runtime::set_pending_deallocation_limits"));
  {
    std::lock_guard<std::mutex> lock(impl_->dealloc_limits_mutex);
    impl_->dealloc_count = count;
    impl_->dealloc_ratio = ratio;
  }
  // A primary context made before the store read the old limits under its
  // device's mutex: taken here, it is seen and updated.
  for (size_t i = 0; i < impl_->devices.size(); ++i) {
    DeviceImpl &d = *impl_->devices[i];
    std::lock_guard<std::mutex> lock(d.mutex);
    if (auto ctx = d.primary.lock()) ctx->deallocs->set_limits(count, max_bytes[i]);
  }
}
int Runtime::device_count() const {
  return int(impl_->devices.size());
}

Device Runtime::device(int ordinal) const {
  if (ordinal < 0 || ordinal >= device_count())
    throw Error(Status::ERROR_INVALID_VALUE, "device ordinal " + std::to_string(ordinal) + " out of range: backend '" +
                                                 backend_name() + "' has " + std::to_string(device_count()) +
                                                 " device(s)");
  return Device(std::shared_ptr<DeviceImpl>(impl_, impl_->devices[size_t(ordinal)].get()));
}

bool Runtime::supports(Capability c) const {
  detail::DeviceFacts facts;
  for (const auto &d : impl_->devices) {
    facts.all_map_host_memory = facts.all_map_host_memory && d->properties.can_map_host_memory;
    facts.all_recover_from_faults = facts.all_recover_from_faults && d->properties.recovers_from_faults;
  }
  return detail::backend_supports(*impl_->backend, facts, c);
}

int Device::ordinal() const {
  return impl_->ordinal;
}
const DeviceProperties &Device::properties() const {
  return impl_->properties;
}

Runtime Device::runtime() const {
  // The aliasing handle shares ownership of the RuntimeImpl.
  return Runtime(std::shared_ptr<RuntimeImpl>(impl_, impl_->runtime));
}

bool Device::can_access_peer(const Device &peer) const {
  if (!impl_ || !peer.impl_) throw Error(Status::ERROR_INVALID_HANDLE, "Device::can_access_peer: empty device");
  RuntimeImpl *rt = impl_->runtime;
  if (peer.impl_->runtime != rt || peer.impl_ == impl_ || !rt->backend->has_device_can_access_peer()) return false;
  int32_t out = 0;
  rt->library->check(rt->backend->device_can_access_peer_status(impl_->ordinal, peer.impl_->ordinal, &out),
                     "device_can_access_peer");
  return out != 0;
}

StreamPriorityRange Device::stream_priority_range() const {
  if (!impl_) throw Error(Status::ERROR_INVALID_HANDLE, "Device::stream_priority_range: empty device");
  return primary_context().stream_priority_range();
}

Context Device::primary_context() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (auto existing = impl_->primary.lock()) return detail::Access::wrap<Context>(existing);
  auto ctx = detail::create_context(std::shared_ptr<RuntimeImpl>(impl_, impl_->runtime), impl_.get());
  impl_->primary = ctx;
  return detail::Access::wrap<Context>(ctx);
}

}  // namespace gpuhal
