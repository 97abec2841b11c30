// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "cuda_thread_rules.hpp"

#include "cuda_stream.hpp"
#include "handle_registry.hpp"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gpuhal::cuda {

namespace {

thread_local bool t_on_callback = false;
std::atomic<bool> g_initialised{false};
std::atomic<bool> g_forked_child{false};

struct HostCall {
  CudaContext *ctx;
  gpuhal_host_fn fn;
  void *user;
};
std::mutex g_calls_mu;
std::unordered_map<HostCall *, std::unique_ptr<HostCall>> g_calls;  // queued, not run yet

// Runs on the driver's thread. A call released meanwhile is gone from g_calls.
void trampoline(void *p) {
  std::unique_ptr<HostCall> call;
  {
    std::lock_guard<std::mutex> lock(g_calls_mu);
    call = plugin::take_owned(g_calls, static_cast<HostCall *>(p));
  }
  if (!call) return;
  t_on_callback = true;
  call->fn(call->user, GPUHAL_SUCCESS);  // the driver runs it only after the prior work succeeded
  t_on_callback = false;
}

// A callback recorded into a graph: run at each of its launches, owned by
// the graph (and its execs), never taken.
void recorded_trampoline(void *p) {
  auto *call = static_cast<HostCall *>(p);
  t_on_callback = true;
  call->fn(call->user, GPUHAL_SUCCESS);
  t_on_callback = false;
}

void forked_child() {
  if (g_initialised.load()) g_forked_child = true;
}

}  // namespace

bool on_callback_thread() {
  return t_on_callback;
}

bool in_forked_child() {
  return g_forked_child.load(std::memory_order_relaxed);
}

gpuhal_status_t check_thread(const char *entry) {
  if (t_on_callback)
    return fail(GPUHAL_ERROR_NOT_PERMITTED,
                std::string(entry) +
                    ": called from a stream callback, which runs on the CUDA driver's thread where no CUDA call is "
                    "allowed (cuLaunchHostFunc); do the work after the stream synchronises, or on another thread");
  if (in_forked_child())
    return fail(GPUHAL_ERROR_NOT_SUPPORTED,
                std::string(entry) +
                    ": this process was forked after the CUDA driver was initialised, and CUDA is not fork-safe; use "
                    "the cuda backend in the parent, or start the child with exec (posix_spawn)");
  return GPUHAL_SUCCESS;
}

gpuhal_status_t ScopedContext::enter(CUcontext cu, const char *entry) {
  if (const gpuhal_status_t st = check_thread(entry); st != GPUHAL_SUCCESS) return st;
  CUcontext current = nullptr;
  if (const gpuhal_status_t call_st = cu_call(drv().cuCtxGetCurrent, "cuCtxGetCurrent", &current);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  if (current == cu) return GPUHAL_SUCCESS;
  if (const gpuhal_status_t call_st = cu_call(drv().cuCtxPushCurrent, "cuCtxPushCurrent", cu);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  pushed_ = true;
  return GPUHAL_SUCCESS;
}

ScopedContext::~ScopedContext() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  drv().cuCtxPopCurrent(&popped);  // cannot fail: this entry pushed it
}

bool external_stream_of(CudaContext *c, gpuhal_stream_t s) {
  CUcontext owner = nullptr;
  return drv().cuStreamGetCtx && drv().cuStreamGetCtx(native(s), &owner) == CUDA_SUCCESS && owner == c->cu;
}

gpuhal_status_t queue_callback(CudaContext *c, CUstream stream, gpuhal_host_fn fn, void *user) {
  auto owned = std::make_unique<HostCall>(HostCall{c, fn, user});
  HostCall *call = owned.get();
  {
    std::lock_guard<std::mutex> lock(g_calls_mu);
    g_calls.emplace(call, std::move(owned));
  }
  const CUresult r = drv().cuLaunchHostFunc(stream, trampoline, call);
  if (r != CUDA_SUCCESS) {
    {
      std::lock_guard<std::mutex> lock(g_calls_mu);
      g_calls.erase(call);  // never queued: the caller keeps `user`
    }
    return context_error(c, r, "cuLaunchHostFunc");  // (releases the others after a sticky error)
  }
  return GPUHAL_SUCCESS;
}

gpuhal_status_t queue_recorded_callback(CudaContext *c, CUstream stream, gpuhal_host_fn fn, void *user,
                                        std::shared_ptr<void> *keep) {
  auto call = std::make_shared<HostCall>(HostCall{c, fn, user});
  const CUresult r = drv().cuLaunchHostFunc(stream, recorded_trampoline, call.get());
  if (r != CUDA_SUCCESS) return context_error(c, r, "cuLaunchHostFunc");
  *keep = std::move(call);
  return GPUHAL_SUCCESS;
}

void release_callbacks(CudaContext *c, gpuhal_status_t why) {
  std::vector<std::unique_ptr<HostCall>> released;
  {
    std::lock_guard<std::mutex> lock(g_calls_mu);
    for (auto it = g_calls.begin(); it != g_calls.end();)
      if (it->second->ctx == c) {
        released.push_back(std::move(it->second));
        it = g_calls.erase(it);
      } else {
        ++it;
      }
  }
  for (auto &call : released) call->fn(call->user, why);  // outside the lock: it may call gpuhal
}

gpuhal_status_t context_error(CudaContext *c, CUresult r, const char *call) {
  const gpuhal_status_t st = drv().error(r, call);
  if (Driver::is_sticky(r)) {
    const std::string message = plugin::last_error();
    release_callbacks(c, GPUHAL_ERROR_LAUNCH_FAILED);
    return fail(st, message);  // the releases may have set the thread's message
  }
  return st;
}

void pin_plugin_and_watch_fork() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The fork handler lives in this plugin: the plugin must outlive every
    // fork, so it is never unloaded once initialised (RTLD_NODELETE).
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&forked_child), &info) && info.dli_fname)
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    pthread_atfork(nullptr, nullptr, forked_child);
  });
  g_initialised = true;
}

}  // namespace gpuhal::cuda
