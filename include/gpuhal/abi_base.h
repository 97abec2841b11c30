/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/*
 * What gpuhal's two C ABIs share: the plugin ABI (plugin.h) and the
 * memory-manager ABI (memory_manager.h). Version numbers, the one list of
 * status codes and the device address type. Pure C (C99); nothing here
 * changes within a major version.
 */
#ifndef GPUHAL_ABI_BASE_H
#define GPUHAL_ABI_BASE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A version is (major << 16 | minor). */
#define GPUHAL_MAKE_VERSION(major, minor) ((((uint32_t)(major)) << 16) | ((uint32_t)(minor)&0xffffu))
#define GPUHAL_VERSION_MAJOR(v) (((uint32_t)(v)) >> 16)
#define GPUHAL_VERSION_MINOR(v) (((uint32_t)(v)) & 0xffffu)

/* ---- Status codes: one X-macro list (status.def) ------------------------ */
typedef int32_t gpuhal_status_t;
enum gpuhal_status_code {
#define GPUHAL_STATUS(name, value, text) GPUHAL_##name = (value),
#include "status.def"
#undef GPUHAL_STATUS
  GPUHAL_STATUS_FORCE_32BIT = 0x7fffffff
};

/* A device address. On backends with unified addressing it may equal a host
 * address; the core never dereferences it. */
typedef uint64_t gpuhal_deviceptr_t;

#ifdef __cplusplus
}
#endif

#endif /* GPUHAL_ABI_BASE_H */
