/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* Compiles plugin.h as C99 and checks the frozen parts of the ABI. */
#include <stddef.h>
#include <stdio.h>

#include "gpuhal/memory_manager.h"
#include "gpuhal/plugin.h"

#define CHECK(cond)                           \
  do {                                        \
    if (!(cond)) {                            \
      fprintf(stderr, "FAILED: %s\n", #cond); \
      return 1;                               \
    }                                         \
  } while (0)

int main(void) {
  CHECK(offsetof(gpuhal_plugin_table_t, abi_version) == 0);
  CHECK(offsetof(gpuhal_plugin_table_t, struct_size) == 4);
  CHECK(offsetof(gpuhal_init_args_t, struct_size) == 4);
  CHECK(offsetof(gpuhal_device_properties_t, struct_size) == 4);
  CHECK(sizeof(gpuhal_status_t) == 4);
  CHECK(offsetof(gpuhal_memory_manager_table_t, struct_size) == 4);
  CHECK(offsetof(gpuhal_mm_backend_t, struct_size) == 4);
  CHECK(sizeof(gpuhal_ipc_handle_t) == GPUHAL_IPC_HANDLE_SIZE);
  /* 1.1 appended the IPC entries after the 1.0 table. */
  CHECK(offsetof(gpuhal_plugin_table_t, ipc_get_handle) > offsetof(gpuhal_plugin_table_t, host_get_device_pointer));
  CHECK(GPUHAL_VERSION_MAJOR(GPUHAL_ABI_VERSION) == 1);
  {
    /* plugin_entries.def lists every entry of the table, in table order, each
       arriving in a minor the core knows: the one list stays whole as the
       table grows. */
    size_t listed = 0, next = offsetof(gpuhal_plugin_table_t, init);
    int in_order = 1, minors_known = 1;
#define GPUHAL_PLUGIN_ENTRY(name, group, minor)                              \
  in_order &= offsetof(gpuhal_plugin_table_t, name) == next;                  \
  next = offsetof(gpuhal_plugin_table_t, name) + sizeof(void *);              \
  minors_known &= (minor) <= GPUHAL_VERSION_MINOR(GPUHAL_ABI_VERSION);        \
  ++listed;
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
    CHECK(in_order);
    CHECK(minors_known);
    CHECK(next == sizeof(gpuhal_plugin_table_t));
    CHECK(listed == (sizeof(gpuhal_plugin_table_t) - offsetof(gpuhal_plugin_table_t, init)) / sizeof(void *));
  }
  CHECK(GPUHAL_SUCCESS == 0 && GPUHAL_NOT_READY == 1 && GPUHAL_ERROR_UNKNOWN == 99);
  printf("plugin.h compiles as C99; ABI %u.%u\n", (unsigned)GPUHAL_VERSION_MAJOR(GPUHAL_ABI_VERSION),
         (unsigned)GPUHAL_VERSION_MINOR(GPUHAL_ABI_VERSION));
  return 0;
}
