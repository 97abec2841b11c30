/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * gpuhal plugin ABI, version 1.
 *
 * This is the only contract between libgpuhal (the core) and a backend plugin.
 * It is pure C (it compiles as C99) so that plugins can be written in any
 * language and built with any compiler. No C++ type, exception or STL object
 * ever crosses it.
 *
 * History: 1.0 the first table; 1.1 appended the IPC, stream-ordered memory
 * and peer-access entries; 1.2 appended device-code lowering, modules and
 * kernel launch; 1.3 appended native_handle and the device's driver_version;
 * 1.4 appended mem_alloc_managed and context_adopt; 1.5 appended the device's
 * recovers_from_faults; 1.6 the device's exclusive_contexts; 1.7 kernel
 * attributes and occupancy; 1.8 stream capture and graphs; 1.9 stream
 * priorities; 1.10 rectangular copies, managed-memory prefetch and advice,
 * virtual memory; 1.11 context limits; 1.12 the device's uuid; 1.13 the
 * device's module_loads_wait; 1.14 the device's
 * synchronize_waits_for_all_work; 1.15 context_waits_for_stream; 1.16 memory
 * pools as objects; 1.17 host-addressed memory kept past its context.
 *
 * Compatibility rules (frozen):
 *  - Every table and descriptor struct starts with {abi_version, struct_size}.
 *    That prefix never changes.
 *  - A version is (major << 16 | minor). A major change may break anything; the
 *    core refuses a plugin whose major differs from its own.
 *  - A minor version only appends members at the end of structs. A reader uses
 *    min(struct_size, sizeof(what it knows)) bytes and treats members beyond the
 *    writer's struct_size as absent (NULL / zero). So a newer-minor plugin works
 *    with an older core and vice versa.
 *  - Enums crossing the ABI are int32_t / uint32_t, never C enum types.
 *
 * Negotiation: the plugin exports exactly one symbol, gpuhal_plugin_negotiate.
 * The core calls it with the highest ABI version it speaks; the plugin answers
 * with a pointer to its table (whose abi_version is the version it speaks) or
 * refuses with GPUHAL_ERROR_ABI_MISMATCH. The table must stay valid until the
 * library is unloaded.
 *
 * Entries are REQUIRED or OPTIONAL (marked below). An optional entry left NULL
 * means "unsupported": the core reports it through its capability query and a
 * clear GPUHAL_ERROR_NOT_SUPPORTED error, never by faking success.
 *
 * Errors: every entry returns a gpuhal_status_t. When an entry fails, the
 * plugin leaves a message for the calling thread, readable with last_error(),
 * that names the failing vendor call and the vendor's own error text.
 *
 * Threading: unless stated otherwise every entry may be called concurrently
 * from several threads. Stream and event handles may be used from any thread.
 *
 * Handles: every handle a plugin gives out (context, stream, event, module,
 * kernel, graph, graph exec, physical memory) differs from every other live
 * handle of its kind, and every allocation's range from every other live
 * allocation's; a destroyed one's value may come back. The layers
 * (docs/layers.md) and tools key their records on handles.
 *
 * Checks: the core refuses what the public API can be given wrongly (null
 * handles, sizes that overflow, shapes, another context's objects, grid and
 * block against the device's limits) before it calls a plugin, and the
 * validation layer (GPUHAL_LAYERS=validation) checks every entry's rules
 * (plugin_entries.def's GPUHAL_ENTRY_RULES lines) on the way in. A plugin
 * may rely on neither: it can be called without the layer, by a core of
 * another version, or by a test. It must still refuse, by itself, what its
 * entry's comment says is refused (a NULL output pointer, an unknown copy
 * kind, a size of 0 where one is required, ranges and handles it does not
 * know), with the status the comment names; it need not re-check what only
 * a caller breaking the table's contract could get wrong (an event of
 * another context, an entry called inside a stream callback), which the
 * layer reports. The in-tree plugins get the rules that need only the
 * arguments from their kit (support/entry_rules.hpp, applied before every
 * entry by plugins/common/plugin_table_fill.inc), so they check by hand
 * only what needs their own objects.
 */
#ifndef GPUHAL_PLUGIN_H
#define GPUHAL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "gpuhal/abi_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUHAL_ABI_MAJOR 1
#define GPUHAL_ABI_MINOR 17
#define GPUHAL_ABI_VERSION GPUHAL_MAKE_VERSION(GPUHAL_ABI_MAJOR, GPUHAL_ABI_MINOR)

/* The one symbol a plugin exports. */
#define GPUHAL_PLUGIN_ENTRY_NAME "gpuhal_plugin_negotiate"

#if defined(__GNUC__)
#define GPUHAL_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define GPUHAL_PLUGIN_EXPORT
#endif

/* Handles, enumerations and the descriptor structs the table's entries take
 * (everything but the table): gpuhal/plugin_types.h, part of this contract. */
#include "gpuhal/plugin_types.h"

/* ---- The plugin table -------------------------------------------------- */
typedef struct gpuhal_plugin_table {
  uint32_t abi_version;
  uint32_t struct_size;
  /* REQUIRED. Short backend name, e.g. "host". Static storage. */
  const char *name;

  /* -- Lifecycle and devices (all REQUIRED) -- */
  /* Called once after negotiation, before anything else. A failure leaves a
   * message saying why (e.g. the vendor driver is missing). */
  gpuhal_status_t (*init)(const gpuhal_init_args_t *args);
  /* Called once before unloading, after every context was destroyed. */
  void (*shutdown)(void);
  /* The calling thread's message for its last failed call; never NULL. */
  const char *(*last_error)(void);
  /* A plugin whose vendor runtime loaded but reaches no device (hsa_init
   * failing without /dev/kfd, cuInit's CUDA_ERROR_NO_DEVICE) answers 0 and
   * may leave the reason as its last_error() message: the core shows it. */
  gpuhal_status_t (*device_count)(int32_t *count);
  /* `props->struct_size` is set by the caller: fill at most that much. */
  gpuhal_status_t (*device_properties)(int32_t ordinal, gpuhal_device_properties_t *props);

  /* -- Contexts (all REQUIRED) -- */
  /* Retain the device's primary context. Destroy releases it, together with
   * every allocation, stream and event made in it. The handle is gone once
   * context_destroy returns, whatever it returns: a failure is a report (the
   * first of what it released failed; the rest was still released). */
  gpuhal_status_t (*context_create)(int32_t ordinal, gpuhal_context_t *out);
  gpuhal_status_t (*context_destroy)(gpuhal_context_t ctx);
  /* Block until all work on every stream of ctx has completed. */
  gpuhal_status_t (*context_synchronize)(gpuhal_context_t ctx);
  gpuhal_status_t (*memory_info)(gpuhal_context_t ctx, uint64_t *free_bytes, uint64_t *total_bytes);

  /* -- Device memory (all REQUIRED) -- */
  /* bytes > 0. Out of memory returns GPUHAL_ERROR_OUT_OF_MEMORY. */
  gpuhal_status_t (*mem_alloc)(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out);
  /* Frees immediately; the caller guarantees no pending work uses it. */
  gpuhal_status_t (*mem_free)(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr);

  /* -- Transfers (all REQUIRED) -- */
  /* Synchronous: ordered on the default stream, returns when done. */
  gpuhal_status_t (*memcpy_sync)(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                                 uint64_t bytes);
  /* Asynchronous on `stream`; host memory must stay valid until it ran. */
  gpuhal_status_t (*memcpy_async)(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                                  uint64_t bytes, gpuhal_stream_t stream);
  gpuhal_status_t (*memset_sync)(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes);
  gpuhal_status_t (*memset_async)(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes,
                                  gpuhal_stream_t stream);

  /* -- Streams and events (all REQUIRED) -- */
  gpuhal_status_t (*stream_create)(gpuhal_context_t ctx, uint32_t flags, gpuhal_stream_t *out);
  /* Pending work still completes; the handle is invalid afterwards. */
  gpuhal_status_t (*stream_destroy)(gpuhal_context_t ctx, gpuhal_stream_t stream);
  gpuhal_status_t (*stream_synchronize)(gpuhal_context_t ctx, gpuhal_stream_t stream);
  /* GPUHAL_SUCCESS when idle, GPUHAL_NOT_READY when work is pending. */
  gpuhal_status_t (*stream_query)(gpuhal_context_t ctx, gpuhal_stream_t stream);
  /* Later work on `stream` waits for the event's most recent record at the
   * time of this call (no-op for a never-recorded event). */
  gpuhal_status_t (*stream_wait_event)(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_event_t event);
  gpuhal_status_t (*stream_add_callback)(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_host_fn fn, void *user);
  gpuhal_status_t (*event_create)(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out);
  gpuhal_status_t (*event_destroy)(gpuhal_context_t ctx, gpuhal_event_t event);
  gpuhal_status_t (*event_record)(gpuhal_context_t ctx, gpuhal_event_t event, gpuhal_stream_t stream);
  gpuhal_status_t (*event_synchronize)(gpuhal_context_t ctx, gpuhal_event_t event);
  /* GPUHAL_SUCCESS when the recorded work completed (or never recorded),
   * GPUHAL_NOT_READY otherwise. */
  gpuhal_status_t (*event_query)(gpuhal_context_t ctx, gpuhal_event_t event);
  /* Both recorded, completed and timing-enabled, else an error. */
  gpuhal_status_t (*event_elapsed_ms)(gpuhal_context_t ctx, gpuhal_event_t start, gpuhal_event_t end, float *ms);

  /* -- Stream-barrier lowering (OPTIONAL) --
   * Make later work on `stream` wait for all `events` (and, with
   * GPUHAL_BARRIER_ALL_PRIOR_WORK, for all work submitted to the context so
   * far) in one operation: CUDA events + cuStreamWaitEvent, HSA barrier-AND
   * packets, a host dependency wait. When NULL the core falls back to one
   * stream_wait_event per event and reports ALL_PRIOR_WORK as unsupported. */
  gpuhal_status_t (*stream_barrier)(gpuhal_context_t ctx, gpuhal_stream_t stream, const gpuhal_event_t *events,
                                    uint32_t count, uint32_t flags);

  /* -- Host memory (OPTIONAL, all or none) -- */
  /* Page-locked host memory with GPUHAL_HOST_ALLOC_* flags. */
  gpuhal_status_t (*host_alloc)(gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out);
  gpuhal_status_t (*host_free)(gpuhal_context_t ctx, void *ptr);
  /* Page-lock an existing range. Registering a range that overlaps a
   * registered one fails with GPUHAL_ERROR_ALREADY_REGISTERED; a range with
   * a page that is not mapped in the process with GPUHAL_ERROR_INVALID_VALUE
   * (a driver cannot page-lock it; a backend that pins nothing checks it
   * anyway); unregistering an unknown pointer with GPUHAL_ERROR_NOT_REGISTERED. */
  gpuhal_status_t (*host_register)(gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags);
  gpuhal_status_t (*host_unregister)(gpuhal_context_t ctx, void *ptr);
  /* Device address of mapped / registered-with-MAPPED host memory. */
  gpuhal_status_t (*host_get_device_pointer)(gpuhal_context_t ctx, void *host_ptr, gpuhal_deviceptr_t *out);

  /* -- Inter-process memory (OPTIONAL, all or none; ABI 1.1) --
   * ipc_get_handle: a handle for the allocation that contains `ptr` (any
   * address inside a mem_alloc allocation), plus that allocation's base and
   * size, so the core can carry ptr - base as an offset (CUDA's
   * cuIpcGetMemHandle + cuMemGetAddressRange). The handle is plain bytes,
   * meaningful to another process on the same machine.
   * ipc_open: maps the memory of a handle made by another process (or this
   * one, where the backend allows it) into `ctx`; *out is the base, *bytes
   * the allocation's size. ipc_close unmaps it; mem_free must not be used on
   * it. Opened memory stays valid until ipc_close or context_destroy. */
  gpuhal_status_t (*ipc_get_handle)(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_ipc_handle_t *out,
                                    gpuhal_deviceptr_t *base, uint64_t *bytes);
  gpuhal_status_t (*ipc_open)(gpuhal_context_t ctx, const gpuhal_ipc_handle_t *handle, gpuhal_deviceptr_t *out,
                              uint64_t *bytes);
  gpuhal_status_t (*ipc_close)(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr);

  /* -- Stream-ordered device memory (OPTIONAL, both or neither; ABI 1.1) --
   * CUDA's cuMemAllocAsync / cuMemFreeAsync. mem_alloc_async: memory usable
   * by work submitted to `stream` after the call (other streams must be
   * ordered after it). mem_free_async: freed once the work submitted to
   * `stream` before the call has completed; the pointer is invalid for new
   * work at once. context_destroy frees what is still allocated. */
  gpuhal_status_t (*mem_alloc_async)(gpuhal_context_t ctx, uint64_t bytes, gpuhal_stream_t stream,
                                     gpuhal_deviceptr_t *out);
  gpuhal_status_t (*mem_free_async)(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_stream_t stream);

  /* -- Peer access (OPTIONAL, both or neither; ABI 1.1) --
   * device_can_access_peer: *out = 1 when device `ordinal` can address the
   * memory of device `peer` directly (0 for the same device).
   * context_enable_peer_access: lets ctx's work address peer's memory;
   * enabling it again succeeds. */
  gpuhal_status_t (*device_can_access_peer)(int32_t ordinal, int32_t peer, int32_t *out);
  gpuhal_status_t (*context_enable_peer_access)(gpuhal_context_t ctx, gpuhal_context_t peer);

  /* -- Device code: lowering, modules and launch (OPTIONAL, all or none;
   *    ABI 1.2) --
   * lower_builtin: the text that defines one builtin of the portable kernel
   * dialect for this backend's compiler (`builtin` is a name from
   * kernel_builtins.def, or "" for the prologue: includes and helpers that
   * come first). *text is static storage: a complete definition (usually a
   * #define line). An unknown name fails with GPUHAL_ERROR_NOT_FOUND. An
   * optional builtin the backend cannot provide (gpuhal_printf, ABI 1.7)
   * fails with GPUHAL_ERROR_NOT_SUPPORTED and still sets *text, to a
   * definition that makes any use of it a compile error naming it; the core
   * answers Capability::KernelPrintf from this.
   * module_compile: compiles a lowered source into an image the plugin
   * allocates (*image, *bytes, *format) and image_free releases. A compiler
   * error fails with GPUHAL_ERROR_COMPILATION_FAILED and the compiler's
   * messages as the last error.
   * module_load: loads an image (copied or consumed during the call: the
   * caller may free it afterwards); an image of a format the backend cannot
   * load fails with GPUHAL_ERROR_INVALID_IMAGE. module_unload: the module's
   * kernels must have no pending launches (the core synchronises first).
   * module_get_kernel: GPUHAL_ERROR_NOT_FOUND for an unknown name; the handle
   * lives as long as its module.
   * launch: enqueues the kernel on `stream` with args[i] pointing at the value
   * of parameter i (device pointers as gpuhal_deviceptr_t), as in
   * cuLaunchKernel. A launch the device cannot run (block too large, too much
   * shared memory, wrong argument count) fails with GPUHAL_ERROR_INVALID_VALUE
   * before anything is queued. A kernel that fails while running reports
   * GPUHAL_ERROR_LAUNCH_FAILED from the next synchronising call. */
  gpuhal_status_t (*lower_builtin)(const char *builtin, const char **text);
  gpuhal_status_t (*module_compile)(gpuhal_context_t ctx, const gpuhal_compile_args_t *args, void **image,
                                    uint64_t *bytes, uint32_t *format);
  void (*image_free)(void *image);
  gpuhal_status_t (*module_load)(gpuhal_context_t ctx, const void *image, uint64_t bytes, uint32_t format,
                                 gpuhal_module_t *out);
  gpuhal_status_t (*module_unload)(gpuhal_context_t ctx, gpuhal_module_t module);
  gpuhal_status_t (*module_get_kernel)(gpuhal_context_t ctx, gpuhal_module_t module, const char *name,
                                       gpuhal_kernel_t *out);
  gpuhal_status_t (*launch)(gpuhal_context_t ctx, gpuhal_kernel_t kernel, const gpuhal_launch_config_t *config,
                            void *const *args, uint32_t arg_count, gpuhal_stream_t stream);

  /* -- Native handles (OPTIONAL; ABI 1.3) --
   * native_handle: the vendor runtime's own handle behind ctx, so that vendor
   * libraries (cuBLAS, rocBLAS) can work on gpuhal's memory and streams.
   * `kind` is a GPUHAL_NATIVE_* value; *out receives the handle's bits (a
   * pointer converted to uint64_t, an integer, or a struct's one member; see
   * the kinds). A kind the backend has no handle for fails with
   * GPUHAL_ERROR_NOT_SUPPORTED. The handle lives as long as ctx. */
  gpuhal_status_t (*native_handle)(gpuhal_context_t ctx, int32_t kind, uint64_t *out);

  /* -- Managed memory (OPTIONAL; ABI 1.4) --
   * mem_alloc_managed: `bytes` (> 0) that the host and ctx's device both
   * address at the same pointer (CUDA's cuMemAllocManaged with
   * CU_MEM_ATTACH_GLOBAL; ROCr's fine-grained system memory the agent may
   * access; the host backend's own memory). Freed with mem_free. A device
   * that cannot have it fails with GPUHAL_ERROR_NOT_SUPPORTED (the entry
   * says what the backend can do, the error what this device can); out of
   * memory is GPUHAL_ERROR_OUT_OF_MEMORY. The host may touch the memory
   * while no work of the context that uses it is in flight. */
  gpuhal_status_t (*mem_alloc_managed)(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out);

  /* -- Adopted contexts (OPTIONAL; ABI 1.4) --
   * context_adopt: a context of device `ordinal` over the vendor's own
   * context `native` (GPUHAL_NATIVE_CONTEXT's kind: a CUcontext), made and
   * owned by another library. Everything else behaves as for context_create,
   * but the plugin never destroys, releases or resets `native`:
   * context_destroy frees what was made through the returned context and
   * leaves `native` as it found it. GPUHAL_ERROR_INVALID_VALUE when `native`
   * is not a live context of that device. */
  gpuhal_status_t (*context_adopt)(int32_t ordinal, uint64_t native, gpuhal_context_t *out);

  /* -- Kernel attributes and occupancy (OPTIONAL; ABI 1.7) --
   * kernel_attributes: fills *out (the caller sets abi_version and
   * struct_size; a plugin writes no more than struct_size bytes) for a
   * kernel of ctx (cuFuncGetAttribute; the code object's metadata).
   * kernel_max_active_blocks: how many blocks of `block_threads` work-items
   * with `dynamic_shared_bytes` of dynamic shared memory can be resident at
   * once on one compute unit (a multiprocessor, a CU, a host worker), as
   * cuOccupancyMaxActiveBlocksPerMultiprocessor answers: 0 when such a block
   * cannot launch at all (too many work-items or too much shared memory for
   * this kernel). block_threads 0 is GPUHAL_ERROR_INVALID_VALUE. */
  gpuhal_status_t (*kernel_attributes)(gpuhal_context_t ctx, gpuhal_kernel_t kernel,
                                       gpuhal_kernel_attributes_t *out);
  gpuhal_status_t (*kernel_max_active_blocks)(gpuhal_context_t ctx, gpuhal_kernel_t kernel, uint32_t block_threads,
                                              uint32_t dynamic_shared_bytes, uint32_t *out);
  /* -- Stream capture and graphs (OPTIONAL, all or none; ABI 1.8) --
   * CUDA's stream capture (cuStreamBeginCapture in relaxed mode ...
   * cuStreamEndCapture, cuGraphInstantiate, cuGraphLaunch,
   * cuGraphExecKernelNodeSetParams). Rules every plugin keeps, as the CUDA
   * driver does (the core relies on them and adds none of its own below the
   * API):
   *  - stream_begin_capture: work submitted to `stream` afterwards is
   *    recorded, not run. The default streams (NULL, GPUHAL_STREAM_LEGACY,
   *    GPUHAL_STREAM_PER_THREAD) and a stream already capturing are refused
   *    with GPUHAL_ERROR_CAPTURE_UNSUPPORTED.
   *  - Recorded: launch, memcpy_async, memset_async, event_record,
   *    stream_wait_event, stream_barrier with events, stream_add_callback
   *    (and mem_alloc_async / mem_free_async where the backend records
   *    them; else refused). A stream that waits for an event recorded in a
   *    capture joins it (a fork); the capturing streams must be joined back
   *    into the origin stream (it waits for an event recorded on each)
   *    before stream_end_capture, else GPUHAL_ERROR_CAPTURE_UNJOINED.
   *  - Refused with GPUHAL_ERROR_CAPTURE_UNSUPPORTED, and the capture
   *    invalidated: stream_synchronize and stream_query of a capturing
   *    stream; event_synchronize, event_query and event_elapsed_ms of an
   *    event recorded in a capture; a capturing stream waiting for an event
   *    recorded outside its capture; stream_barrier with
   *    GPUHAL_BARRIER_ALL_PRIOR_WORK; work on the legacy default stream
   *    (memcpy_sync and memset_sync included) while a blocking stream of the
   *    context captures (CUDA's implicit synchronisation rule).
   *  - Once invalidated, further work on the capture's streams fails with
   *    GPUHAL_ERROR_CAPTURE_INVALIDATED, and so does stream_end_capture,
   *    which ends the capture (the streams run their work again) and makes
   *    no graph.
   * stream_end_capture: only on the stream that began the capture
   * (GPUHAL_ERROR_CAPTURE_UNSUPPORTED otherwise, or when it is not
   * capturing). stream_is_capturing: *out 1 or 0. graph_info: counts (the
   * caller sets abi_version and struct_size). graph_instantiate: an
   * executable copy; the graph may be destroyed afterwards.
   * graph_exec_launch: runs the whole graph on `stream` as one operation
   * ordered like any other work on it, and after the exec's previous
   * launch; the memory and kernels it names must still be live (the core
   * keeps them). graph_exec_set_kernel_args: new arguments (as launch takes
   * them) for kernel node `kernel_node`, used by launches made after the
   * call; GPUHAL_ERROR_INDEX_OUT_OF_RANGE for a node that does not exist,
   * GPUHAL_ERROR_INVALID_VALUE for a wrong argument count. Destroying a
   * graph exec waits for nothing: launches already queued finish. */
  gpuhal_status_t (*stream_begin_capture)(gpuhal_context_t ctx, gpuhal_stream_t stream);
  gpuhal_status_t (*stream_end_capture)(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_graph_t *out);
  gpuhal_status_t (*stream_is_capturing)(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out);
  gpuhal_status_t (*graph_info)(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_info_t *out);
  gpuhal_status_t (*graph_destroy)(gpuhal_context_t ctx, gpuhal_graph_t graph);
  gpuhal_status_t (*graph_instantiate)(gpuhal_context_t ctx, gpuhal_graph_t graph, gpuhal_graph_exec_t *out);
  gpuhal_status_t (*graph_exec_destroy)(gpuhal_context_t ctx, gpuhal_graph_exec_t exec);
  gpuhal_status_t (*graph_exec_launch)(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, gpuhal_stream_t stream);
  gpuhal_status_t (*graph_exec_set_kernel_args)(gpuhal_context_t ctx, gpuhal_graph_exec_t exec, uint32_t kernel_node,
                                                void *const *args, uint32_t arg_count);

  /* -- Stream priorities (OPTIONAL, all or none; ABI 1.9) --
   * CUDA's convention: lower numbers are greater priorities.
   * context_stream_priority_range: the meaningful range [*greatest,
   * *least] (cuCtxGetStreamPriorityRange); either pointer may be NULL.
   * stream_create_with_priority: stream_create with a priority, clamped into
   * the range as cuStreamCreateWithPriority clamps it. stream_priority: a
   * stream's priority (the default streams': what the backend gives them).
   * A backend with priorities serves a higher-priority stream's work first
   * where streams compete (it is not queued behind a lower-priority
   * backlog); how, it says in its documentation. */
  gpuhal_status_t (*context_stream_priority_range)(gpuhal_context_t ctx, int32_t *least, int32_t *greatest);
  gpuhal_status_t (*stream_create_with_priority)(gpuhal_context_t ctx, uint32_t flags, int32_t priority,
                                                 gpuhal_stream_t *out);
  gpuhal_status_t (*stream_priority)(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out);

  /* -- Rectangular copies (OPTIONAL, both or none; ABI 1.10) --
   * cuMemcpy3D(Async), hsa_amd_memory_async_copy_rect,
   * clEnqueueCopyBufferRect: the region `rect` describes (see
   * gpuhal_copy_rect_t for its rules), in the direction `kind` (a
   * GPUHAL_COPY_* kind, as memcpy_sync takes it). Every byte of the region
   * and no byte outside it is written. memcpy_rect_sync: ordered on the
   * default stream, returns when done (memcpy_sync's rules). memcpy_rect_async:
   * on `stream`; host memory must stay valid until it ran, and it is
   * recorded in a capture as memcpy_async is. A plugin lowers a region its
   * copy engine refuses (pitch limits, alignment) some other way (pieces,
   * rows), never by failing the call. */
  gpuhal_status_t (*memcpy_rect_sync)(gpuhal_context_t ctx, uint32_t kind, const gpuhal_copy_rect_t *rect);
  gpuhal_status_t (*memcpy_rect_async)(gpuhal_context_t ctx, uint32_t kind, const gpuhal_copy_rect_t *rect,
                                       gpuhal_stream_t stream);

  /* -- Managed-memory prefetch and advice (OPTIONAL, both or none; ABI 1.10) --
   * cuMemPrefetchAsync / cuMemAdvise. [ptr, ptr + bytes) must lie in one
   * allocation of mem_alloc_managed of ctx (GPUHAL_ERROR_INVALID_VALUE
   * otherwise); bytes 0 does nothing and succeeds. `location` is a device
   * ordinal or GPUHAL_LOCATION_HOST (GPUHAL_ERROR_INVALID_VALUE for
   * another). mem_prefetch_async: migrates the range's pages to `location`
   * in stream order, so that later work there does not fault them in; a
   * hint (the memory stays coherent and usable everywhere). mem_advise: one
   * of GPUHAL_ADVISE_* (GPUHAL_ERROR_INVALID_VALUE for another); the
   * location is ignored for the read-mostly and unset-preferred advice.
   * A device that cannot act on the hint (CUDA: no
   * CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) answers
   * GPUHAL_ERROR_NOT_SUPPORTED naming why; where a backend's memory has no
   * migration to do, it says in its documentation what the calls do. */
  gpuhal_status_t (*mem_prefetch_async)(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, uint64_t bytes,
                                        int32_t location, gpuhal_stream_t stream);
  gpuhal_status_t (*mem_advise)(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, uint64_t bytes, uint32_t advice,
                                int32_t location);

  /* -- Virtual memory (OPTIONAL, all or none; ABI 1.10) --
   * CUDA's cuMemAddressReserve / cuMemCreate / cuMemMap / cuMemSetAccess.
   * vm_granularity: the size every reservation, physical allocation,
   * mapping and offset must be a multiple of (*minimum), and the one that
   * performs best (*recommended). vm_reserve: an address range of `bytes`
   * (a multiple of the minimum granularity) aligned to `alignment` (0 or a
   * power of two), with nothing mapped. vm_free: the whole reservation, as
   * reserved, after every mapping in it was unmapped. vm_create: `bytes`
   * (a multiple of the granularity) of physical memory on ctx's device.
   * vm_release: gives the handle up; the memory goes once no mapping uses
   * it either. vm_map: [at, at + bytes) of a reservation that is not mapped
   * yet, onto the physical memory from `offset` (offset + bytes within it);
   * it starts with no access. vm_unmap: exactly one earlier mapping's range.
   * vm_set_access: `access` (GPUHAL_VM_ACCESS_*) for `device` over a range
   * that is mapped in full; only after it may work on the device use the
   * range, and only then do copies, memsets and launches take it as device
   * memory. Every size and address that breaks these rules is
   * GPUHAL_ERROR_INVALID_VALUE naming it. */
  gpuhal_status_t (*vm_granularity)(gpuhal_context_t ctx, uint64_t *minimum, uint64_t *recommended);
  gpuhal_status_t (*vm_reserve)(gpuhal_context_t ctx, uint64_t bytes, uint64_t alignment, gpuhal_deviceptr_t *out);
  gpuhal_status_t (*vm_free)(gpuhal_context_t ctx, gpuhal_deviceptr_t base, uint64_t bytes);
  gpuhal_status_t (*vm_create)(gpuhal_context_t ctx, uint64_t bytes, gpuhal_physical_memory_t *out);
  gpuhal_status_t (*vm_release)(gpuhal_context_t ctx, gpuhal_physical_memory_t memory);
  gpuhal_status_t (*vm_map)(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes,
                            gpuhal_physical_memory_t memory, uint64_t offset);
  gpuhal_status_t (*vm_unmap)(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes);
  gpuhal_status_t (*vm_set_access)(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes, int32_t device,
                                   uint32_t access);

  /* -- Context limits (OPTIONAL, both or none; ABI 1.11) --
   * cuCtxSetLimit / cuCtxGetLimit: `limit` is a GPUHAL_LIMIT_* (the kit
   * and the validation layer refuse another with GPUHAL_ERROR_INVALID_VALUE).
   * A limit the backend has no such resource for is
   * GPUHAL_ERROR_NOT_SUPPORTED, naming it. context_set_limit is a request:
   * the backend may round or clamp it, and context_get_limit says what it
   * became. The backend's own rules stand and are errors, not silence:
   * CUDA refuses a new printf buffer size once a kernel that prints has
   * run in the context (GPUHAL_ERROR_INVALID_VALUE), and a new stack size
   * waits for the context's work to finish. */
  gpuhal_status_t (*context_set_limit)(gpuhal_context_t ctx, uint32_t limit, uint64_t value);
  gpuhal_status_t (*context_get_limit)(gpuhal_context_t ctx, uint32_t limit, uint64_t *out);

  /* -- Whose work a synchronise covers (OPTIONAL; ABI 1.15) --
   * context_waits_for_stream: *out = 1 when context_synchronize of ctx
   * waits for all work queued on `stream`, a handle made outside this
   * context (Context::external_stream: another library's stream, or
   * another runtime's), because the vendor counts it as ctx's own work
   * (cuda: cuStreamGetCtx names ctx's CUcontext); *out = 0 when it may not,
   * or when the plugin cannot tell. The core asks it only where the device's
   * synchronize_waits_for_all_work is 1, and only at the wrapped stream's
   * first use by a call that queues work, never when it is wrapped (a
   * handle may be a dummy that is never used: numba-cuda's own tests wrap
   * 0x12345678; a driver asked about it dereferences it). With 1, memory
   * released while work on that stream may use it can still become a busy
   * block (reused after the flush's synchronise); with 0, or without the
   * entry, busy blocks are off in ctx from then on. A handle that is no
   * stream at all may be answered 0 or refused (GPUHAL_ERROR_INVALID_HANDLE);
   * never answer 1 unless the vendor says so. */
  gpuhal_status_t (*context_waits_for_stream)(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out);

  /* -- Memory pools as objects (OPTIONAL, all or none; ABI 1.16) --
   * CUDA's cuMemPoolCreate / cuMemAllocFromPoolAsync / cuMemPoolTrimTo /
   * cuMemPoolGetAttribute / SetAttribute / cuMemPoolDestroy: a stream-ordered
   * pool of ctx's device's memory that the plugin makes for one caller and
   * shares with nobody (never the device's default pool, never the pool
   * behind mem_alloc_async). A plugin with these entries has the
   * stream_ordered group too: memory from a pool is freed with mem_free_async,
   * on any stream; the pool's reuse follows that stream's order (a block
   * freed on a stream serves another stream only once the freeing stream's
   * work before the free is done).
   * mem_pool_create: flags must be 0; the new pool's release threshold is 0
   * (idle memory goes back at the next synchronisation). mem_pool_alloc_async:
   * bytes > 0, usable by work on `stream` from now on, as mem_alloc_async.
   * mem_pool_trim: gives idle memory back until at most keep_bytes are
   * reserved or nothing idle is left. Attributes: GPUHAL_MEM_POOL_*; an
   * unknown one, or a value a set cannot take, is GPUHAL_ERROR_INVALID_VALUE.
   * mem_pool_destroy: returns at once; memory still allocated from the pool
   * stays valid until freed, and then goes back to the device. A pool is of
   * its context: context_destroy destroys it (and frees its memory), and
   * so does a reset of the context (its handle is invalid after). */
  gpuhal_status_t (*mem_pool_create)(gpuhal_context_t ctx, uint32_t flags, gpuhal_mem_pool_t *out);
  gpuhal_status_t (*mem_pool_destroy)(gpuhal_context_t ctx, gpuhal_mem_pool_t pool);
  gpuhal_status_t (*mem_pool_alloc_async)(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, uint64_t bytes,
                                          gpuhal_stream_t stream, gpuhal_deviceptr_t *out);
  gpuhal_status_t (*mem_pool_trim)(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, uint64_t keep_bytes);
  gpuhal_status_t (*mem_pool_get_attribute)(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, uint32_t attribute,
                                            uint64_t *out);
  gpuhal_status_t (*mem_pool_set_attribute)(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, uint32_t attribute,
                                            uint64_t value);

  /* -- Host-addressed memory kept past its context (OPTIONAL, both or none; ABI 1.17) --
   * For a backend whose allocator keeps freed addresses mapped and hands
   * them out again (ROCr serves small blocks from chunks it keeps). A host
   * array (a NumPy array, a HostView) over managed memory or host_alloc
   * memory must stay valid through Context::reset until it goes. Without
   * these entries the core copies its pages aside before context_destroy
   * and maps the copy back at the same addresses after it, which needs the
   * addresses unmapped; where the allocator keeps them, the next allocation
   * would share the live array's bytes. A backend that can should implement
   * them anyway: between its destroy and the copy's return the pages are
   * unmapped, and another thread touching the array then faults (the host
   * plugin implements them for that reason).
   * mem_keep(ctx, ptr): ptr is the base of ctx's managed memory
   * (mem_alloc_managed) or host memory (host_alloc). From now on
   * context_destroy leaves it allocated, at its address, with its contents,
   * addressable by the host; the device must not use it once its context is
   * destroyed; ctx no longer counts it (memory_info). Another pointer is
   * GPUHAL_ERROR_INVALID_VALUE. mem_free_kept(ptr): frees memory kept so,
   * before or after its context is destroyed (no context needed); a pointer
   * not kept is GPUHAL_ERROR_INVALID_VALUE. The core calls mem_keep during
   * a reset, after the context's work is done and just before
   * context_destroy, for each such allocation a live host array addresses;
   * and mem_free_kept when its last handle goes. Kept memory still
   * allocated at shutdown is the plugin's to free. Thread safety: as every
   * entry (any thread; the plugin locks). */
  gpuhal_status_t (*mem_keep)(gpuhal_context_t ctx, void *ptr);
  gpuhal_status_t (*mem_free_kept)(void *ptr);
} gpuhal_plugin_table_t;

/* The plugin's only export. Returns GPUHAL_SUCCESS and sets *table, or
 * GPUHAL_ERROR_ABI_MISMATCH when it cannot speak core_max_abi's major. */
typedef gpuhal_status_t (*gpuhal_plugin_negotiate_fn)(uint32_t core_max_abi, const gpuhal_plugin_table_t **table);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GPUHAL_PLUGIN_H */
