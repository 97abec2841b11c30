/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * gpuhal memory-manager ABI, version 1.0: a third-party memory manager in a
 * shared object, chosen with GPUHAL_MEMORY_MANAGER=/absolute/path/lib.so.
 *
 * Pure C (C99), with the same rules as plugin.h: one exported entry
 * (gpuhal_memory_manager_negotiate), a table starting with {abi_version,
 * struct_size}, minor versions only append, required and optional entries,
 * statuses from status.def. No exception may cross it.
 *
 * The core creates one manager instance per context (create) and destroys it
 * with the context (after reset). The instance gets the backend's raw
 * allocation services, so it can build pools, arenas or accounting on top.
 * It implements Numba's EMM interface version 1 for device memory; pinned
 * host memory, registration and IPC use the core's defaults.
 *
 * Threading: entries of one instance may be called from several threads at
 * once; the manager synchronises itself.
 */
#ifndef GPUHAL_MEMORY_MANAGER_H
#define GPUHAL_MEMORY_MANAGER_H

#include "gpuhal/abi_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUHAL_MM_ABI_MAJOR 1
#define GPUHAL_MM_ABI_MINOR 0
#define GPUHAL_MM_ABI_VERSION GPUHAL_MAKE_VERSION(GPUHAL_MM_ABI_MAJOR, GPUHAL_MM_ABI_MINOR)
/* Numba's EMM interface version; the table's interface_version must match. */
#define GPUHAL_MM_INTERFACE_VERSION 1
#define GPUHAL_MM_ENTRY_NAME "gpuhal_memory_manager_negotiate"

/* What the core gives each instance. Valid until destroy returns. */
typedef struct gpuhal_mm_backend {
  uint32_t abi_version;
  uint32_t struct_size;
  void *core; /* pass back to the functions below */
  const char *backend_name;
  int32_t device_ordinal;
  /* A device allocation of the backend (bytes > 0). Out of memory: the
   * context's deferred queue is flushed and the call retried once first. */
  gpuhal_status_t (*alloc)(void *core, uint64_t bytes, gpuhal_deviceptr_t *out);
  /* Frees a backend allocation immediately. */
  gpuhal_status_t (*free)(void *core, gpuhal_deviceptr_t ptr);
  gpuhal_status_t (*memory_info)(void *core, uint64_t *free_bytes, uint64_t *total_bytes);
  /* The message of the instance's most recent failed call above (valid
   * until the next failure). */
  const char *(*last_error)(void *core);
} gpuhal_mm_backend_t;

typedef struct gpuhal_memory_manager_table {
  uint32_t abi_version;
  uint32_t struct_size;
  /* REQUIRED. Static storage. */
  const char *name;
  /* REQUIRED: GPUHAL_MM_INTERFACE_VERSION. */
  int32_t interface_version;
  /* REQUIRED. Makes an instance for one context. */
  gpuhal_status_t (*create)(const gpuhal_mm_backend_t *backend, void **state);
  /* REQUIRED. Called after reset; frees the instance. */
  void (*destroy)(void *state);
  /* REQUIRED. Before any allocation and after every reset; idempotent. */
  gpuhal_status_t (*initialize)(void *state);
  /* REQUIRED. bytes > 0; out of memory: GPUHAL_ERROR_OUT_OF_MEMORY. */
  gpuhal_status_t (*memalloc)(void *state, uint64_t bytes, gpuhal_deviceptr_t *out);
  /* REQUIRED. The last user of a memalloc result is gone (never called for
   * memory handed out before a reset). */
  void (*memfree)(void *state, gpuhal_deviceptr_t ptr, uint64_t bytes);
  /* REQUIRED. Free everything; the context is reset or destroyed next. */
  gpuhal_status_t (*reset)(void *state);
  /* REQUIRED. The calling thread's message after a failed entry. */
  const char *(*last_error)(void *state);
  /* OPTIONAL. NULL: the core reports ERROR_NOT_SUPPORTED (as Numba's
   * NotImplementedError). */
  gpuhal_status_t (*get_memory_info)(void *state, uint64_t *free_bytes, uint64_t *total_bytes);
  /* OPTIONAL, both or neither: a DeferCleanup scope begins / ends. */
  void (*defer_cleanup_begin)(void *state);
  void (*defer_cleanup_end)(void *state);
} gpuhal_memory_manager_table_t;

typedef gpuhal_status_t (*gpuhal_memory_manager_negotiate_fn)(uint32_t core_max_abi,
                                                              const gpuhal_memory_manager_table_t **table);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GPUHAL_MEMORY_MANAGER_H */
