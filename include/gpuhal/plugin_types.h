/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * gpuhal plugin ABI, version 1: the handles, enumerations and descriptor
 * structs of the plugin table. Part of the contract gpuhal/plugin.h states
 * (its compatibility rules hold here: every struct starts with
 * {abi_version, struct_size}, a minor version only appends). Included by
 * plugin.h, the one header a plugin includes; pure C (C99).
 */
#ifndef GPUHAL_PLUGIN_TYPES_H
#define GPUHAL_PLUGIN_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "gpuhal/abi_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles -------------------------------------------------------------
 * Opaque to the core. A NULL stream in an *_async entry means the context's
 * default stream (legacy semantics: it waits for all prior work of the
 * blocking streams of its context, and they wait for it). */
typedef struct gpuhal_context_s *gpuhal_context_t;
typedef struct gpuhal_stream_s *gpuhal_stream_t;
typedef struct gpuhal_event_s *gpuhal_event_t;
typedef struct gpuhal_module_s *gpuhal_module_t;
typedef struct gpuhal_kernel_s *gpuhal_kernel_t;
/* A captured graph, and an instantiated one that can be launched (ABI 1.8). */
typedef struct gpuhal_graph_s *gpuhal_graph_t;
/* Physical memory made by vm_create, mapped into reserved ranges (ABI 1.10). */
typedef struct gpuhal_physical_memory_s *gpuhal_physical_memory_t;
typedef struct gpuhal_graph_exec_s *gpuhal_graph_exec_t;
/* A stream-ordered memory pool made by mem_pool_create (ABI 1.16). */
typedef struct gpuhal_mem_pool_s *gpuhal_mem_pool_t;
/* Special stream handles every *_async / stream entry accepts (CUDA's
 * values): the legacy default stream, and the calling thread's own default
 * stream (a blocking stream per host thread, created on first use and
 * destroyed with its context). Neither may be destroyed. */
#define GPUHAL_STREAM_LEGACY ((gpuhal_stream_t)0x1)
#define GPUHAL_STREAM_PER_THREAD ((gpuhal_stream_t)0x2)
/* gpuhal_deviceptr_t: see abi_base.h. */

/* ---- Enumerations (fixed 32-bit values) --------------------------------- */
/* Copy direction. Host addresses are passed as gpuhal_deviceptr_t. */
#define GPUHAL_COPY_HOST_TO_DEVICE 1u
#define GPUHAL_COPY_DEVICE_TO_HOST 2u
#define GPUHAL_COPY_DEVICE_TO_DEVICE 3u

/* stream_create flags */
#define GPUHAL_STREAM_DEFAULT 0u
/* Does not synchronise with the context's default stream. */
#define GPUHAL_STREAM_NON_BLOCKING 1u

/* event_create flags */
#define GPUHAL_EVENT_DEFAULT 0u
#define GPUHAL_EVENT_DISABLE_TIMING 1u

/* stream_barrier flags */
/* Wait for all work submitted to every stream of the context before the call,
 * in addition to the listed events. */
#define GPUHAL_BARRIER_ALL_PRIOR_WORK 1u

/* host_alloc / host_register flags (pass-through of CUDA's meanings) */
#define GPUHAL_HOST_ALLOC_PORTABLE 1u
#define GPUHAL_HOST_ALLOC_MAPPED 2u
#define GPUHAL_HOST_ALLOC_WRITE_COMBINED 4u

/* Log levels of the core's log callback. */
#define GPUHAL_LOG_ERROR 0
#define GPUHAL_LOG_WARN 1
#define GPUHAL_LOG_INFO 2
#define GPUHAL_LOG_DEBUG 3

/* ---- Init arguments ---------------------------------------------------- */
/* A configuration option handed down by the core. The core parses the
 * environment once; plugins never read it themselves. Names are the full
 * variable names (e.g. "GPUHAL_HOST_DEVICES"). Strings are valid during init
 * only: copy what you keep. */
typedef struct gpuhal_option {
  const char *name;
  const char *value;
} gpuhal_option_t;

typedef void (*gpuhal_log_fn)(void *user, int32_t level, const char *message);

typedef struct gpuhal_init_args {
  uint32_t abi_version;
  uint32_t struct_size;
  const gpuhal_option_t *options;
  uint32_t option_count;
  int32_t log_level; /* highest level the core will print */
  gpuhal_log_fn log; /* may be NULL; callable from any thread */
  void *log_user;
} gpuhal_init_args_t;

/* ---- Device properties ------------------------------------------------- */
typedef struct gpuhal_device_properties {
  uint32_t abi_version;
  uint32_t struct_size;
  char name[256];
  char vendor[64];
  uint64_t total_memory;
  uint64_t shared_memory_per_block;
  int32_t compute_major;
  int32_t compute_minor;
  int32_t multiprocessor_count;
  int32_t warp_size;
  int32_t max_threads_per_block;
  int32_t max_block_dim[3];
  int32_t max_grid_dim[3];
  int32_t clock_rate_khz;
  uint32_t can_map_host_memory; /* 0 or 1 */
  uint32_t unified_addressing;  /* 0 or 1 */
  uint32_t concurrent_kernels;  /* 0 or 1 */
  int32_t pci_domain;
  int32_t pci_bus;
  int32_t pci_device;
  /* ABI 1.3: the vendor driver / runtime version, NUL-terminated text
   * ("CUDA 12.4", "HSA 1.1 (ROCr)"); empty when unknown. A reader checks
   * struct_size before using it (an older plugin does not write it). */
  char driver_version[64];
  /* ABI 1.5: 1 when context_destroy + context_create recover from a kernel's
   * memory fault within the process (the fault is reported, the context is
   * made anew, other work goes on); 0 when the vendor keeps the fault for the
   * rest of the process (CUDA: "To continue using CUDA, the process must be
   * terminated and relaunched"). Absent (older plugin): 0. */
  uint32_t recovers_from_faults;
  /* ABI 1.6: 1 when the device's contexts are the plugin's own: no other
   * library in the process can put work on them, their streams or their
   * queues, except through the native handles the core gives out (which it
   * then knows of). The core may then hand memory released while none of
   * its own submitted work is in flight to the next allocation at once. 0
   * when the vendor shares them (CUDA's primary context is cudart's and every
   * CUDA library's too; ROCr's agents and queues are the process's), so only
   * a synchronisation of the whole context proves memory unused. Absent
   * (older plugin): 0. */
  uint32_t exclusive_contexts;
  /* ABI 1.12: the device's UUID, 16 bytes; all zero when the plugin does not
   * know one (and from an older plugin). cuda: cuDeviceGetUuid (for a MIG
   * instance, its MIG UUID); host: derived from the machine's id and the
   * ordinal (stable across runs on one machine). */
  unsigned char uuid[16];
  /* ABI 1.13: 1 when loading a module (module_load) or looking up one of
   * its kernels (module_get_kernel) may wait for work already queued on the
   * device's contexts -- CUDA's lazy loading: "Loading kernels might require
   * context synchronization". The core then loads the kernels its own
   * stream-ordered entries use (DeviceArray::fill and assign of strided
   * views) when it makes a context, before any of the user's work can be
   * queued, so that those entries never wait for a stream. 0 when loading
   * never waits for queued work; absent (older plugin): 0. */
  uint32_t module_loads_wait;
  /* ABI 1.14: 1 when context_synchronize waits for all work of the device's
   * vendor context, work other libraries of the process queued on it
   * included (CUDA's cuCtxSynchronize: "Blocks until the current context
   * has completed all preceding requested tasks"). The core then keeps
   * device memory released while work may still use it until its deferred
   * queue's next flush over the limits has synchronised, and reuses it for
   * an allocation of the same size instead of freeing it. 0 when it waits
   * for the plugin's own queues only (ROCr has no context-wide wait); absent
   * (older plugin): 0. */
  uint32_t synchronize_waits_for_all_work;
} gpuhal_device_properties_t;

/* Host callback run in stream order. `status` is GPUHAL_SUCCESS unless the
 * stream failed. It must not call stream or event entries of the same
 * context that block. A plugin calls every callback it accepted exactly
 * once: with GPUHAL_SUCCESS when it runs in order, or with an error status
 * to release one that will never run (the stream or context failed, or the
 * context is destroyed); the core then frees it without running the
 * user's function. */
typedef void (*gpuhal_host_fn)(void *user, gpuhal_status_t status);

/* An inter-process memory handle: opaque bytes (CUDA's CUipcMemHandle is
 * 64 bytes). */
#define GPUHAL_IPC_HANDLE_SIZE 64
typedef struct gpuhal_ipc_handle {
  unsigned char bytes[GPUHAL_IPC_HANDLE_SIZE];
} gpuhal_ipc_handle_t;

/* ---- Native handles (ABI 1.3) -------------------------------------------- */
/* GPUHAL_NATIVE_CONTEXT: CUDA's CUcontext; HSA has no contexts.
 * GPUHAL_NATIVE_DEVICE: CUDA's CUdevice (an int); HSA's hsa_agent_t (its
 * `handle` member). */
#define GPUHAL_NATIVE_CONTEXT 1
#define GPUHAL_NATIVE_DEVICE 2

/* ---- Kernels (ABI 1.2) -------------------------------------------------- */
/* Module image formats (module_compile's output, module_load's input). */
#define GPUHAL_IMAGE_HOST_SHARED_OBJECT 1u /* an ELF shared object (host) */
#define GPUHAL_IMAGE_PTX 2u                /* NUL-terminated PTX text (cuda) */
#define GPUHAL_IMAGE_CUBIN 3u              /* a cubin / fatbin ELF (cuda) */
#define GPUHAL_IMAGE_HSACO 4u              /* an AMDGPU code object (hsa) */

/* What module_compile gets: the source in the portable kernel dialect (see
 * kernel_builtins.def) with every builtin already lowered by the plugin's
 * lower_builtin text (the core prepends the definitions), plus what the core
 * learnt from scanning it. */
typedef struct gpuhal_compile_args {
  uint32_t abi_version;
  uint32_t struct_size;
  const char *source;                /* NUL-terminated, lowered */
  const char *const *kernel_names;   /* the GPUHAL_KERNEL functions, in order */
  const uint32_t *kernel_uses_barrier; /* per kernel: 1 when it (or a function it may call) has a work-group barrier */
  uint32_t kernel_count;
  const char *options;               /* extra compiler options (space separated); may be "" */
} gpuhal_compile_args_t;

/* What graph_info reports of a captured graph (ABI 1.8). The caller sets
 * abi_version and struct_size; a plugin writes no more than struct_size
 * bytes. */
typedef struct gpuhal_graph_info {
  uint32_t abi_version;
  uint32_t struct_size;
  uint32_t node_count;        /* every captured operation (launches, copies, memsets, records, waits, callbacks) */
  uint32_t kernel_node_count; /* the launches among them, numbered 0.. in the order they were captured */
} gpuhal_graph_info_t;

/* A launch: grid in work-groups, block in work-items, per dimension. */
typedef struct gpuhal_launch_config {
  uint32_t abi_version;
  uint32_t struct_size;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_shared_bytes;
  uint32_t reserved;
} gpuhal_launch_config_t;

/* ---- Kernel attributes and occupancy (ABI 1.7) --------------------------- */
/* What a loaded kernel needs and allows (kernel_attributes' output). Sizes
 * in bytes; a count the backend does not have is 0. */
typedef struct gpuhal_kernel_attributes {
  uint32_t abi_version;
  uint32_t struct_size;
  uint32_t max_threads_per_block;    /* the largest block (work-items) this kernel launches with */
  uint32_t static_shared_bytes;      /* shared (group) memory the kernel declares */
  uint32_t max_dynamic_shared_bytes; /* the most dynamic shared memory a launch may add now */
  uint32_t local_bytes_per_thread;   /* private (local, spill, stack) memory of each work-item */
  uint32_t registers_per_thread;     /* 0 where the backend has no registers to count (host) */
  uint32_t preferred_block_multiple; /* warp / wavefront: a block of a multiple of it leaves no lane idle */
} gpuhal_kernel_attributes_t;

/* ---- Rectangular copies (ABI 1.10) --------------------------------------- */
/* A 3-D region on each side of a copy (cuMemcpy3D's, with the offsets folded
 * into the addresses): `depth` slices of `height` rows of `width_bytes`
 * bytes. A side's row r of slice z starts at
 *   base + z * slice_pitch + r * pitch
 * where base is dst or src (a host address for the host side of H2D / D2H,
 * as memcpy_sync takes it). The caller sets abi_version and struct_size; a
 * plugin refuses a struct_size shorter than this struct with
 * GPUHAL_ERROR_INVALID_VALUE (every member is needed).
 * Rules every plugin checks (GPUHAL_ERROR_INVALID_VALUE, naming the member):
 * width_bytes, height or depth 0 copies nothing and succeeds; otherwise a
 * side's rows may not overlap each other (pitch >= width_bytes when height >
 * 1) nor its slices (slice_pitch >= (height - 1) * pitch + width_bytes when
 * depth > 1). The two regions must not overlap each other (as memcpy). */
typedef struct gpuhal_copy_rect {
  uint32_t abi_version;
  uint32_t struct_size;
  gpuhal_deviceptr_t dst;
  gpuhal_deviceptr_t src;
  uint64_t dst_pitch;
  uint64_t dst_slice_pitch;
  uint64_t src_pitch;
  uint64_t src_slice_pitch;
  uint64_t width_bytes;
  uint64_t height;
  uint64_t depth;
} gpuhal_copy_rect_t;

/* ---- Managed-memory prefetch and advice (ABI 1.10) ----------------------- */
/* A location: a device ordinal of the plugin (0 ..), or the host. */
#define GPUHAL_LOCATION_HOST (-1)
/* mem_advise's advice (CUDA's CUmem_advise values). */
#define GPUHAL_ADVISE_SET_READ_MOSTLY 1u
#define GPUHAL_ADVISE_UNSET_READ_MOSTLY 2u
#define GPUHAL_ADVISE_SET_PREFERRED_LOCATION 3u
#define GPUHAL_ADVISE_UNSET_PREFERRED_LOCATION 4u
#define GPUHAL_ADVISE_SET_ACCESSED_BY 5u
#define GPUHAL_ADVISE_UNSET_ACCESSED_BY 6u

/* ---- Virtual memory (ABI 1.10) --------------------------------------------- */
/* vm_set_access's access (CUDA's CUmemAccess_flags values). */
#define GPUHAL_VM_ACCESS_NONE 0u
#define GPUHAL_VM_ACCESS_READ 1u
#define GPUHAL_VM_ACCESS_READ_WRITE 3u

/* ---- Context limits (ABI 1.11) --------------------------------------------- */
/* context_set_limit / context_get_limit's limits, in bytes. */
#define GPUHAL_LIMIT_PRINTF_BUFFER_BYTES 1u /* the device printf's buffer (CU_LIMIT_PRINTF_FIFO_SIZE) */
#define GPUHAL_LIMIT_STACK_BYTES 2u         /* each work-item's stack (CU_LIMIT_STACK_SIZE) */

/* ---- Memory pools as objects (ABI 1.16) ------------------------------------ */
/* mem_pool_get_attribute / mem_pool_set_attribute's attributes, in bytes
 * (CUDA's CUmemPool_attribute meanings). Settable: the release threshold
 * (any value), and the two high watermarks (to 0 only: a reset). */
#define GPUHAL_MEM_POOL_RELEASE_THRESHOLD 1u /* idle bytes kept at a synchronisation */
#define GPUHAL_MEM_POOL_RESERVED_CURRENT 2u  /* held from the device: used + idle */
#define GPUHAL_MEM_POOL_RESERVED_HIGH 3u     /* the highest reserved since creation or a reset */
#define GPUHAL_MEM_POOL_USED_CURRENT 4u      /* handed out and not yet freed */
#define GPUHAL_MEM_POOL_USED_HIGH 5u         /* the highest used since creation or a reset */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GPUHAL_PLUGIN_TYPES_H */
