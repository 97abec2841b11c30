/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * A fake gpuhal plugin for loader tests, written in C against plugin.h.
 * One source, built several times with different definitions:
 *   FAKE_ABI_MAJOR / FAKE_ABI_MINOR  the version it answers with (default 1.0)
 *   FAKE_NEWER_MINOR                 a larger table with entries appended
 *   FAKE_DEVICES                     how many devices it reports (default 1)
 *   FAKE_FAIL_INIT                   init fails with a message
 *   FAKE_NO_ENTRY                    exports a wrongly named entry point
 *   FAKE_MISSING_REQUIRED            leaves the required mem_alloc entry NULL
 *   FAKE_CORRUPT_COPY                synchronous copies flip the first byte
 *   FAKE_BAD_PROPS_SIZE              device_properties ignores struct_size
 *   FAKE_NULL_LAST_ERROR             last_error returns NULL (init fails)
 *   FAKE_HUGE_DEVICE_COUNT           device_count says INT32_MAX
 *   FAKE_NULL_CONTEXT                context_create succeeds with a NULL handle
 *   FAKE_FUZZ_TABLE                  fake_fuzz_configure() sets what negotiation
 *                                    answers (version, size, NULL entries,
 *                                    init failure, device count)
 * It is a test double: a synchronous "device" on malloc'd memory, with
 * streams and events that complete immediately. Never installed.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuhal/plugin.h"

#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR GPUHAL_ABI_MAJOR
#endif
#ifndef FAKE_ABI_MINOR
#define FAKE_ABI_MINOR GPUHAL_ABI_MINOR
#endif
#ifndef FAKE_DEVICES
#define FAKE_DEVICES 1
#endif

static char g_error[256] = "";
static int g_devices = FAKE_DEVICES;
static int g_fail_init = 0;
#ifdef FAKE_FUZZ_TABLE
static uint32_t g_fuzz_abi, g_fuzz_size;
static uint64_t g_fuzz_null_mask;
GPUHAL_PLUGIN_EXPORT void fake_fuzz_configure(uint32_t abi, uint32_t size, uint64_t null_mask, int fail_init,
                                              int devices) {
  g_fuzz_abi = abi;
  g_fuzz_size = size;
  g_fuzz_null_mask = null_mask;
  g_fail_init = fail_init;
  g_devices = devices;
}
#endif
static int g_dummy;

static gpuhal_status_t fail(gpuhal_status_t s, const char *msg) {
  snprintf(g_error, sizeof g_error, "%s", msg);
  return s;
}

static gpuhal_status_t fake_init(const gpuhal_init_args_t *args) {
  (void)args;
#ifdef FAKE_FAIL_INIT
  g_fail_init = 1;
#endif
  if (g_fail_init)
    return fail(GPUHAL_ERROR_DRIVER_NOT_LOADABLE, "fake driver: libfake.so.1: cannot open shared object file");
  return GPUHAL_SUCCESS;
}
static void fake_shutdown(void) {}
static const char *fake_last_error(void) {
#ifdef FAKE_NULL_LAST_ERROR
  return NULL;
#else
  return g_error;
#endif
}
static gpuhal_status_t fake_device_count(int32_t *count) {
#ifdef FAKE_HUGE_DEVICE_COUNT
  *count = 2147483647;
#else
  *count = g_devices;
#endif
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_device_properties(int32_t ordinal, gpuhal_device_properties_t *props) {
  gpuhal_device_properties_t p;
  uint32_t n;
  if (ordinal < 0 || ordinal >= g_devices) return fail(GPUHAL_ERROR_INVALID_VALUE, "no such fake device");
  memset(&p, 0, sizeof p);
#ifdef FAKE_BAD_UTF8
  /* Bytes a driver may return that are not UTF-8: a lone continuation byte,
     a truncated sequence, an overlong '/', a surrogate, then a valid e-acute. */
  snprintf(p.name, sizeof p.name, "fake \x80 \xc3 \xc0\xaf \xed\xa0\x80 \xc3\xa9 device %d", (int)ordinal);
#else
  snprintf(p.name, sizeof p.name, "fake device %d", (int)ordinal);
#endif
  snprintf(p.vendor, sizeof p.vendor, "fake");
  p.total_memory = (uint64_t)(ordinal + 1) << 30;
  p.warp_size = 32;
  p.max_threads_per_block = 256;
  n = props->struct_size < sizeof p ? props->struct_size : (uint32_t)sizeof p;
#ifdef FAKE_BAD_PROPS_SIZE
  n = (uint32_t)sizeof p;
#endif
  p.abi_version = GPUHAL_ABI_VERSION;
  p.struct_size = n;
  memcpy(props, &p, n);
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_context_create(int32_t ordinal, gpuhal_context_t *out) {
  if (ordinal < 0 || ordinal >= g_devices) return fail(GPUHAL_ERROR_INVALID_VALUE, "no such fake device");
#ifdef FAKE_NULL_CONTEXT
  *out = NULL;
#else
  *out = (gpuhal_context_t)&g_dummy;
#endif
  return GPUHAL_SUCCESS;
}
/* Live allocations, freed when the context is destroyed (as the ABI says). */
static void **g_allocs = NULL;
static size_t g_nallocs = 0, g_capacity = 0;

static int track(void *p) {
  if (g_nallocs == g_capacity) {
    size_t cap = g_capacity ? g_capacity * 2 : 64;
    void **grown = (void **)realloc(g_allocs, cap * sizeof *grown);
    if (!grown) return 0;
    g_allocs = grown;
    g_capacity = cap;
  }
  g_allocs[g_nallocs++] = p;
  return 1;
}

static int untrack(void *p) {
  size_t i;
  for (i = 0; i < g_nallocs; ++i)
    if (g_allocs[i] == p) {
      g_allocs[i] = g_allocs[--g_nallocs];
      return 1;
    }
  return 0;
}

static gpuhal_status_t fake_context_destroy(gpuhal_context_t ctx) {
  size_t i;
  (void)ctx;
  for (i = 0; i < g_nallocs; ++i) free(g_allocs[i]);
  free(g_allocs);
  g_allocs = NULL;
  g_nallocs = g_capacity = 0;
  return GPUHAL_SUCCESS;
}

static gpuhal_status_t fake_ctx_op(gpuhal_context_t ctx) {
  (void)ctx;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_memory_info(gpuhal_context_t ctx, uint64_t *f, uint64_t *t) {
  (void)ctx;
  *f = *t = (uint64_t)1 << 30;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  void *p;
  (void)ctx;
  p = malloc((size_t)bytes);
  if (!p) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "fake: malloc failed");
  if (!track(p)) {
    free(p);
    return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "fake: cannot track the allocation");
  }
  *out = (gpuhal_deviceptr_t)(uintptr_t)p;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t p) {
  (void)ctx;
  if (!untrack((void *)(uintptr_t)p)) return fail(GPUHAL_ERROR_INVALID_VALUE, "fake: mem_free of an unknown pointer");
  free((void *)(uintptr_t)p);
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_memcpy_sync(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst,
                                        gpuhal_deviceptr_t src, uint64_t bytes) {
  (void)ctx;
  (void)kind;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)bytes);
#ifdef FAKE_CORRUPT_COPY
  if (bytes > 0) *(unsigned char *)(uintptr_t)dst ^= 0xffu;
#endif
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_memcpy_async(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst,
                                         gpuhal_deviceptr_t src, uint64_t bytes, gpuhal_stream_t s) {
  (void)s;
  return fake_memcpy_sync(ctx, kind, dst, src, bytes);
}
static gpuhal_status_t fake_memset_sync(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t v, uint64_t bytes) {
  (void)ctx;
  memset((void *)(uintptr_t)dst, v, (size_t)bytes);
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_memset_async(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t v, uint64_t bytes,
                                         gpuhal_stream_t s) {
  (void)s;
  return fake_memset_sync(ctx, dst, v, bytes);
}
static gpuhal_status_t fake_stream_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_stream_t *out) {
  (void)ctx;
  (void)flags;
  *out = (gpuhal_stream_t)&g_dummy;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_stream_op(gpuhal_context_t ctx, gpuhal_stream_t s) {
  (void)ctx;
  (void)s;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_stream_wait_event(gpuhal_context_t ctx, gpuhal_stream_t s, gpuhal_event_t e) {
  (void)ctx;
  (void)s;
  (void)e;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_stream_add_callback(gpuhal_context_t ctx, gpuhal_stream_t s, gpuhal_host_fn fn,
                                                void *user) {
  (void)ctx;
  (void)s;
  fn(user, GPUHAL_SUCCESS);
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out) {
  (void)ctx;
  (void)flags;
  *out = (gpuhal_event_t)&g_dummy;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_event_op(gpuhal_context_t ctx, gpuhal_event_t e) {
  (void)ctx;
  (void)e;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_event_record(gpuhal_context_t ctx, gpuhal_event_t e, gpuhal_stream_t s) {
  (void)ctx;
  (void)e;
  (void)s;
  return GPUHAL_SUCCESS;
}
static gpuhal_status_t fake_event_elapsed_ms(gpuhal_context_t ctx, gpuhal_event_t a, gpuhal_event_t b, float *ms) {
  (void)ctx;
  (void)a;
  (void)b;
  *ms = 0.0f;
  return GPUHAL_SUCCESS;
}

/* A newer minor appends entries after the 1.0 table. */
typedef struct fake_table {
  gpuhal_plugin_table_t base;
#ifdef FAKE_NEWER_MINOR
  gpuhal_status_t (*future_entry_a)(void);
  gpuhal_status_t (*future_entry_b)(void);
#endif
} fake_table_t;

#ifdef FAKE_NEWER_MINOR
static gpuhal_status_t fake_future(void) {
  return GPUHAL_SUCCESS;
}
#endif

static fake_table_t g_table;

/* Entries that share one implementation. */
#define fake_context_synchronize fake_ctx_op
#define fake_stream_destroy fake_stream_op
#define fake_stream_synchronize fake_stream_op
#define fake_stream_query fake_stream_op
#define fake_event_destroy fake_event_op
#define fake_event_synchronize fake_event_op
#define fake_event_query fake_event_op

#ifdef FAKE_NO_ENTRY
#define FAKE_ENTRY_NAME gpuhal_plugin_negotiate_misspelt
#else
#define FAKE_ENTRY_NAME gpuhal_plugin_negotiate
#endif

GPUHAL_PLUGIN_EXPORT gpuhal_status_t FAKE_ENTRY_NAME(uint32_t core_max_abi, const gpuhal_plugin_table_t **table) {
  gpuhal_plugin_table_t *t = &g_table.base;
  (void)core_max_abi;
  memset(&g_table, 0, sizeof g_table);
  t->abi_version = GPUHAL_MAKE_VERSION(FAKE_ABI_MAJOR, FAKE_ABI_MINOR);
  t->struct_size = (uint32_t)sizeof g_table;
  t->name = "fake";
  /* From the one list of entries: every required entry is fake_<name> (an
   * entry added to the required group fails to compile here until the fake
   * has it); the optional groups stay NULL. */
#define FAKE_FILL_required(name) t->name = fake_##name;
#define FAKE_FILL_host_memory(name)
#define FAKE_FILL_ipc(name)
#define FAKE_FILL_stream_ordered(name)
#define FAKE_FILL_peer_access(name)
#define FAKE_FILL_kernels(name)
#define FAKE_FILL_graphs(name)
#define FAKE_FILL_stream_priorities(name)
#define FAKE_FILL_rect_copies(name)
#define FAKE_FILL_managed_hints(name)
#define FAKE_FILL_virtual_memory(name)
#define FAKE_FILL_context_limits(name)
#define FAKE_FILL_memory_pools(name)
#define FAKE_FILL_kept_memory(name)
#define FAKE_FILL_optional(name)
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) FAKE_FILL_##group(name)
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
#ifdef FAKE_MISSING_REQUIRED
  t->mem_alloc = NULL;
#endif
#ifdef FAKE_HALF_GROUP
  /* One entry of the graphs group, the other eight NULL: the loader must
   * refuse the table (a group is present in full or not at all). */
  t->stream_begin_capture = fake_stream_op;
#endif
#ifdef FAKE_FUZZ_TABLE
  {
    /* Entry slots are the pointers after `name`, up to the end of the table. */
    void **slots = (void **)((char *)t + offsetof(gpuhal_plugin_table_t, init));
    const size_t n = (sizeof *t - offsetof(gpuhal_plugin_table_t, init)) / sizeof(void *);
    size_t i;
    for (i = 0; i < n && i < 64; ++i)
      if (g_fuzz_null_mask & ((uint64_t)1 << i)) slots[i] = NULL;
    t->abi_version = g_fuzz_abi;
    t->struct_size = g_fuzz_size;
  }
#endif
#ifdef FAKE_NEWER_MINOR
  g_table.future_entry_a = fake_future;
  g_table.future_entry_b = fake_future;
#endif
  *table = t;
  return GPUHAL_SUCCESS;
}
