// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The driver's rules about who calls it and from where, kept in one place:
//
//  - the calling thread's current context (ScopedContext, cuda_context.hpp);
//  - host functions (cuLaunchHostFunc): "The host function must not make any
//    CUDA API calls" and "the function will not be called in the event of an
//    error in the CUDA context" (cuda.h). Every callback queued is remembered
//    until it ran or was released: release_callbacks hands those the driver
//    will never run back to the core with an error status, on the calling
//    gpuhal thread (the core frees them, captures included, without running
//    them), so nothing waits on them and nothing leaks;
//  - fork(): CUDA is not fork-safe. A child forked after init is refused by
//    every entry instead of hanging on threads that are not there;
//  - process lifetime: once initialised, the plugin stays loaded (the driver
//    is never dlclosed, and the fork handler lives in the plugin).
//
// Thread safety: every function here may be called from any thread.
#pragma once

#include "cuda_context.hpp"

namespace gpuhal::cuda {

// Queues fn(user, status) on `stream` with cuLaunchHostFunc.
gpuhal_status_t queue_callback(CudaContext *c, CUstream stream, gpuhal_host_fn fn, void *user);
// The same on a capturing stream: the graph runs it at each launch, so the
// call is not taken by its first run; *keep owns it (the capture hands it to
// the graph and its execs), and a sticky error does not release it.
gpuhal_status_t queue_recorded_callback(CudaContext *c, CUstream stream, gpuhal_host_fn fn, void *user,
                                        std::shared_ptr<void> *keep);
// Releases c's callbacks that have not run, calling each with `why`.
// Only when the driver will never run them: the context hit a sticky error,
// or it is being destroyed after it synchronised.
void release_callbacks(CudaContext *c, gpuhal_status_t why);

// At init: installs the fork handler and keeps the plugin loaded.
void pin_plugin_and_watch_fork();

// After a driver call returned r in c: a sticky error releases c's
// callbacks (they will never run). Returns drv().error(r, call).
gpuhal_status_t context_error(CudaContext *c, CUresult r, const char *call);

}  // namespace gpuhal::cuda
