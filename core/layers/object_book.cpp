// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "object_book.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

namespace gpuhal::detail::layers {
namespace {

thread_local uint64_t t_traced_call = 0;

uint64_t this_thread() { return static_cast<uint64_t>(::syscall(SYS_gettid)); }

}  // namespace

uint64_t current_traced_call() { return t_traced_call; }
void set_current_traced_call(uint64_t call) { t_traced_call = call; }

const char *to_string(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::context: return "context";
    case ObjectKind::device_memory: return "device memory";
    case ObjectKind::managed_memory: return "managed memory";
    case ObjectKind::async_memory: return "stream-ordered memory";
    case ObjectKind::host_memory: return "pinned host memory";
    case ObjectKind::registration: return "host registration";
    case ObjectKind::stream: return "stream";
    case ObjectKind::event: return "event";
    case ObjectKind::module: return "module";
    case ObjectKind::kernel: return "kernel";
    case ObjectKind::ipc_mapping: return "IPC mapping";
    case ObjectKind::graph: return "graph";
    case ObjectKind::graph_exec: return "graph exec";
    case ObjectKind::vm_reservation: return "virtual address reservation";
    case ObjectKind::vm_physical: return "physical memory";
    case ObjectKind::mem_pool: return "memory pool";
    case ObjectKind::kept_memory: return "memory kept past its context";
  }
  return "object";
}

std::string describe(const ObjectRecord &r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s 0x%" PRIx64, to_string(r.kind), r.handle);
  std::string s = buf;
  switch (r.kind) {
    case ObjectKind::device_memory:
    case ObjectKind::managed_memory:
    case ObjectKind::async_memory:
    case ObjectKind::host_memory:
    case ObjectKind::registration:
    case ObjectKind::ipc_mapping:
    case ObjectKind::vm_reservation:
    case ObjectKind::vm_physical:
      s += " (" + std::to_string(r.bytes) + " bytes)";
      break;
    case ObjectKind::context:
      s += " (device " + std::to_string(r.bytes) + ")";
      break;
    default:
      break;
  }
  if (r.call != 0) s += ", made by traced call #" + std::to_string(r.call);
  s += (r.call != 0 ? " on thread " : ", made on thread ") + std::to_string(r.thread);
  return s;
}

void ObjectBook::add(ObjectKind kind, uint64_t handle, uint64_t context, uint64_t bytes) {
  const Key key{kind, handle};
  std::lock_guard<std::mutex> lock(mu_);
  live_[key] = ObjectRecord{kind, handle, context, bytes, t_traced_call, this_thread()};
  if (is_memory(kind)) memory_by_base_[handle] = key;
  destroyed_.erase(key);  // a handle the plugin gives out again is new
}

void ObjectBook::put_back(const Taken &taken) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ObjectRecord &r : taken) {
    const Key key{r.kind, r.handle};
    live_[key] = r;
    if (is_memory(r.kind)) memory_by_base_[r.handle] = key;
    destroyed_.erase(key);
  }
}

void ObjectBook::take_locked(Key key, Taken *out) {
  auto it = live_.find(key);
  if (it == live_.end()) return;
  out->push_back(it->second);
  live_.erase(it);
  if (is_memory(key.first)) memory_by_base_.erase(key.second);
  if (destroyed_.insert(key).second) {
    destroyed_order_.push_back(key);
    if (destroyed_order_.size() > kDestroyedKept) {
      destroyed_.erase(destroyed_order_.front());
      destroyed_order_.pop_front();
    }
  }
}

ObjectBook::Taken ObjectBook::take(ObjectKind kind, uint64_t handle) {
  Taken out;
  std::lock_guard<std::mutex> lock(mu_);
  take_locked(Key{kind, handle}, &out);
  return out;
}

ObjectBook::Taken ObjectBook::take_memory(uint64_t address) {
  Taken out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = memory_by_base_.find(address);
  if (it != memory_by_base_.end() && it->second.first != ObjectKind::ipc_mapping) take_locked(it->second, &out);
  return out;
}

ObjectBook::Taken ObjectBook::take_kept(uint64_t address) {
  Taken out;
  std::lock_guard<std::mutex> lock(mu_);
  take_locked(Key{ObjectKind::host_memory, address}, &out);
  if (out.empty()) {
    auto it = memory_by_base_.find(address);
    if (it != memory_by_base_.end() && it->second.first == ObjectKind::managed_memory) take_locked(it->second, &out);
  }
  return out;
}

ObjectBook::Taken ObjectBook::take_module(uint64_t module) {
  Taken out;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Key> keys{Key{ObjectKind::module, module}};
  for (const auto &kv : live_)
    if (kv.first.first == ObjectKind::kernel && kv.second.bytes == module) keys.push_back(kv.first);
  for (const Key &k : keys) take_locked(k, &out);
  return out;
}

ObjectBook::Taken ObjectBook::take_context(uint64_t context) {
  Taken out;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Key> keys;
  for (const auto &kv : live_)
    if (kv.second.context == context) keys.push_back(kv.first);
  for (const Key &k : keys) take_locked(k, &out);
  return out;
}

std::optional<ObjectRecord> ObjectBook::find(ObjectKind kind, uint64_t handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(Key{kind, handle});
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

bool ObjectBook::was_destroyed(ObjectKind kind, uint64_t handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  return destroyed_.count(Key{kind, handle}) != 0;
}

std::optional<ObjectRecord> ObjectBook::allocation_containing(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = memory_by_base_.upper_bound(address);
  if (it == memory_by_base_.begin()) return std::nullopt;
  --it;
  const ObjectRecord &r = live_.at(it->second);
  if (address - r.handle >= r.bytes) return std::nullopt;
  return r;
}

std::vector<ObjectRecord> ObjectBook::alive(uint64_t context) const {
  std::vector<ObjectRecord> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto &kv : live_) {
    const ObjectRecord &r = kv.second;
    if (r.kind == ObjectKind::kernel) continue;
    if (context != 0 && (r.context != context || r.kind == ObjectKind::context)) continue;
    out.push_back(r);
  }
  return out;
}

}  // namespace gpuhal::detail::layers
