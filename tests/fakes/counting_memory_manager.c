/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * A memory manager in a shared object, written in C against
 * gpuhal/memory_manager.h, for the tests of GPUHAL_MEMORY_MANAGER. It serves
 * allocations from the backend services and keeps count of every call and
 * of the pointers it handed out; the tests read the counts through the
 * exported counting_mm_stats / counting_mm_owns. Built twice: as is, and
 * with MM_INTERFACE_VERSION=2 (refused by the core), and with MM_NULL_TABLE a
 * negotiation that succeeds without a table (refused too). Never installed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuhal/memory_manager.h"

#ifndef MM_INTERFACE_VERSION
#define MM_INTERFACE_VERSION GPUHAL_MM_INTERFACE_VERSION
#endif
#define MAX_LIVE 65536

typedef struct counting_mm_stats {
  uint64_t creates, destroys, initializes, allocs, frees, resets, defer_begins, defer_ends, live;
  uint64_t alloc_before_initialize; /* memalloc calls that came before initialize */
} counting_mm_stats_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static counting_mm_stats_t g_stats;
static gpuhal_deviceptr_t g_live[MAX_LIVE];
static size_t g_live_count;

typedef struct instance {
  gpuhal_mm_backend_t backend;
  int initialized;
  char error[256];
} instance_t;

__attribute__((visibility("default"))) void counting_mm_stats(counting_mm_stats_t *out) {
  pthread_mutex_lock(&g_mu);
  *out = g_stats;
  out->live = g_live_count;
  pthread_mutex_unlock(&g_mu);
}

__attribute__((visibility("default"))) int counting_mm_owns(gpuhal_deviceptr_t ptr) {
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_live_count && !found; ++i) found = g_live[i] == ptr;
  pthread_mutex_unlock(&g_mu);
  return found;
}

static gpuhal_status_t mm_create(const gpuhal_mm_backend_t *backend, void **state) {
  instance_t *in = (instance_t *)calloc(1, sizeof *in);
  if (!in) return GPUHAL_ERROR_OUT_OF_MEMORY;
  memcpy(&in->backend, backend, backend->struct_size < sizeof in->backend ? backend->struct_size : sizeof in->backend);
  pthread_mutex_lock(&g_mu);
  ++g_stats.creates;
  pthread_mutex_unlock(&g_mu);
  *state = in;
  return GPUHAL_SUCCESS;
}

static void mm_destroy(void *state) {
  pthread_mutex_lock(&g_mu);
  ++g_stats.destroys;
  pthread_mutex_unlock(&g_mu);
  free(state);
}

static gpuhal_status_t mm_initialize(void *state) {
  ((instance_t *)state)->initialized = 1;
  pthread_mutex_lock(&g_mu);
  ++g_stats.initializes;
  pthread_mutex_unlock(&g_mu);
  return GPUHAL_SUCCESS;
}

static gpuhal_status_t mm_memalloc(void *state, uint64_t bytes, gpuhal_deviceptr_t *out) {
  instance_t *in = (instance_t *)state;
  gpuhal_status_t st = in->backend.alloc(in->backend.core, bytes, out);
  if (st != GPUHAL_SUCCESS) {
    snprintf(in->error, sizeof in->error, "backend alloc: %s", in->backend.last_error(in->backend.core));
    return st;
  }
  pthread_mutex_lock(&g_mu);
  ++g_stats.allocs;
  if (!in->initialized) ++g_stats.alloc_before_initialize;
  if (g_live_count < MAX_LIVE) g_live[g_live_count++] = *out;
  pthread_mutex_unlock(&g_mu);
  return GPUHAL_SUCCESS;
}

static void mm_memfree(void *state, gpuhal_deviceptr_t ptr, uint64_t bytes) {
  instance_t *in = (instance_t *)state;
  (void)bytes;
  pthread_mutex_lock(&g_mu);
  ++g_stats.frees;
  for (size_t i = 0; i < g_live_count; ++i)
    if (g_live[i] == ptr) {
      g_live[i] = g_live[--g_live_count];
      break;
    }
  pthread_mutex_unlock(&g_mu);
  in->backend.free(in->backend.core, ptr);
}

static gpuhal_status_t mm_reset(void *state) {
  instance_t *in = (instance_t *)state;
  pthread_mutex_lock(&g_mu);
  ++g_stats.resets;
  size_t n = g_live_count;
  gpuhal_deviceptr_t *copy = (gpuhal_deviceptr_t *)malloc((n ? n : 1) * sizeof *copy);
  if (copy) memcpy(copy, g_live, n * sizeof *copy);
  g_live_count = 0;
  pthread_mutex_unlock(&g_mu);
  for (size_t i = 0; copy && i < n; ++i) in->backend.free(in->backend.core, copy[i]);
  free(copy);
  return GPUHAL_SUCCESS;
}

static const char *mm_last_error(void *state) {
  return state ? ((instance_t *)state)->error : "";
}

static gpuhal_status_t mm_memory_info(void *state, uint64_t *f, uint64_t *t) {
  instance_t *in = (instance_t *)state;
  return in->backend.memory_info(in->backend.core, f, t);
}

static void mm_defer_begin(void *state) {
  (void)state;
  pthread_mutex_lock(&g_mu);
  ++g_stats.defer_begins;
  pthread_mutex_unlock(&g_mu);
}

static void mm_defer_end(void *state) {
  (void)state;
  pthread_mutex_lock(&g_mu);
  ++g_stats.defer_ends;
  pthread_mutex_unlock(&g_mu);
}

static const gpuhal_memory_manager_table_t g_table = {GPUHAL_MM_ABI_VERSION,
                                                      sizeof(gpuhal_memory_manager_table_t),
                                                      "counting",
                                                      MM_INTERFACE_VERSION,
                                                      mm_create,
                                                      mm_destroy,
                                                      mm_initialize,
                                                      mm_memalloc,
                                                      mm_memfree,
                                                      mm_reset,
                                                      mm_last_error,
                                                      mm_memory_info,
                                                      mm_defer_begin,
                                                      mm_defer_end};

__attribute__((visibility("default"))) gpuhal_status_t gpuhal_memory_manager_negotiate(
    uint32_t core_max_abi, const gpuhal_memory_manager_table_t **table) {
  if (!table) return GPUHAL_ERROR_INVALID_VALUE;
  if (GPUHAL_VERSION_MAJOR(core_max_abi) != GPUHAL_MM_ABI_MAJOR) return GPUHAL_ERROR_ABI_MISMATCH;
  *table = &g_table;
#ifdef MM_NULL_TABLE
  *table = NULL; /* broken on purpose: success without a table */
#endif
  return GPUHAL_SUCCESS;
}
