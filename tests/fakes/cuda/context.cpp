// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: primary contexts, the per-thread context stack,
// context synchronisation and destruction.
#include "fake_cuda.hpp"

using namespace fake_cuda;

namespace fake_cuda {

// Destroys device dev's primary context: everything made in it goes, and
// its sticky error with it (a fresh context starts clean).
void destroy_context(int dev) {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    for (auto it = g_streams.begin(); it != g_streams.end();)
      if (it->second->dev == dev) {
        streams.push_back(it->second);
        it = g_streams.erase(it);
      } else {
        ++it;
      }
  }
  g_sticky[dev] = 700;  // queued work of the dying context does not run
  reset_limits(dev);
  destroy_graphs_of(dev);
  for (auto &st : streams)
    if (st->worker.joinable()) st->finish();
  {
    std::lock_guard<std::mutex> lock(g_events_mu);
    for (auto it = g_events.begin(); it != g_events.end();) it = it->second->dev == dev ? g_events.erase(it) : ++it;
  }
  {
    std::lock_guard<std::mutex> lock(g_module_mu);
    for (auto it = g_modules.begin(); it != g_modules.end();)
      if ((*it)->dev == dev) {
        delete *it;
        it = g_modules.erase(it);
      } else {
        ++it;
      }
  }
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    for (auto it = g_device.begin(); it != g_device.end();) {
      auto next = std::next(it);
      if (it->second.dev == dev) release_locked(it, false);
      it = next;
    }
    for (int s = 0; s < kMaxPools; ++s)  // the pools' memory went with the context
      if (g_pool_dev[size_t(s)] == dev) g_pool_idle[s] = 0;
    for (auto it = g_host_owner.begin(); it != g_host_owner.end();) {
      if (it->second == dev) {
        auto host = g_host.find(it->first);
        if (host != g_host.end()) {
          unmap_host_pages(reinterpret_cast<void *>(host->first), host->second);
          g_host.erase(host);
        }
        g_registered.erase(it->first);
        it = g_host_owner.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = g_ipc_opens.begin(); it != g_ipc_opens.end();)
      it = it->first.first == dev ? g_ipc_opens.erase(it) : ++it;
    for (auto it = g_pool_imports.begin(); it != g_pool_imports.end();)
      it = it->first.first == dev ? g_pool_imports.erase(it) : ++it;
  }
  g_legacy->drain();  // its queued work of this context is skipped
  g_sticky[dev] = 0;
}

}  // namespace fake_cuda

extern "C" {

API CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  if (const CUresult r = initialized_entry("cuDevicePrimaryCtxRetain"); r != OK) return r;
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (!ctx) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  // No new context in a process that hit a fault it keeps (fake_cuda.hpp);
  // releasing and resetting the old one still succeed (seen on an H100).
  if (const int fatal = g_process_fatal.load()) return fatal;
  ++g_ctx_refs[dev];
  *ctx = &g_ctx_token[dev];
  return OK;
}

API CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  if (const CUresult r = initialized_entry("cuDevicePrimaryCtxRelease_v2"); r != OK) return r;
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (bad_device(dev)) return INVALID_DEVICE;
  if (g_ctx_refs[dev] == 0) return INVALID_CONTEXT;
  if (--g_ctx_refs[dev] == 0) destroy_context(dev);  // the last reference destroys it
  return OK;
}

// "Destroy all allocations and reset all state on the primary context";
// "Resetting the primary context does not release it".
API CUresult cuDevicePrimaryCtxReset_v2(int dev) {
  if (const CUresult r = initialized_entry("cuDevicePrimaryCtxReset_v2"); r != OK) return r;
  if (t_in_host_fn) return NOT_PERMITTED;
  if (bad_device(dev)) return INVALID_DEVICE;
  destroy_context(dev);  // succeeds after a fault too (seen on an H100); the process's error stays
  return OK;
}

API CUresult cuCtxSetCurrent(void *ctx) {
  if (const CUresult r = initialized_entry("cuCtxSetCurrent"); r != OK) return r;
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (!ctx) {  // "equivalent to popping the top of the ... stack"
    if (!t_stack.empty()) t_stack.pop_back();
    return OK;
  }
  const int d = device_of(ctx);
  if (d < 0) return INVALID_CONTEXT;
  if (t_stack.empty())
    (void)t_stack.push_back(d);
  else
    t_stack.back() = d;  // "replace the top of that stack"
  return OK;
}

API CUresult cuCtxGetCurrent(void **ctx) {
  if (const CUresult r = initialized_entry("cuCtxGetCurrent"); r != OK) return r;
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (!ctx) return INVALID_VALUE;
  *ctx = t_stack.empty() ? nullptr : &g_ctx_token[t_stack.back()];
  return OK;
}

API CUresult cuCtxPushCurrent_v2(void *ctx) {
  if (const CUresult r = initialized_entry("cuCtxPushCurrent_v2"); r != OK) return r;
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  const int d = device_of(ctx);
  if (d < 0) return INVALID_CONTEXT;
  if (!t_stack.push_back(d)) return OUT_OF_MEMORY;  // the driver's stack is bounded too
  return OK;
}

API CUresult cuCtxPopCurrent_v2(void **ctx) {
  if (const CUresult r = initialized_entry("cuCtxPopCurrent_v2"); r != OK) return r;
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (t_stack.empty()) return INVALID_CONTEXT;
  if (ctx) *ctx = &g_ctx_token[t_stack.back()];
  t_stack.pop_back();
  return OK;
}

// cuda.h, cuCtxGetDevice: "Returns in *device the handle of the current
// context's device"; CUDA_ERROR_INVALID_CONTEXT without a current context,
// CUDA_ERROR_INVALID_VALUE for a null output.
API CUresult cuCtxGetDevice(int *device) {
  if (const CUresult r = initialized_entry("cuCtxGetDevice"); r != OK) return r;
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (!device) return INVALID_VALUE;
  if (t_stack.empty()) return INVALID_CONTEXT;
  *device = t_stack.back();
  return OK;
}

API CUresult cuCtxSynchronize() {
  int dev = -1;
  if (const CUresult r = context_entry("cuCtxSynchronize", &dev); r != OK) return r;
  if (const CUresult r = refuse_sync_in_capture(dev, true); r != OK) return r;
  drain_device_streams(dev);
  pool_release_above_threshold(dev);
  return after_wait(dev);
}


}  // extern "C"
