// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// IPC handle text (IpcArrayHandle::deserialize) and opening what it
// describes in a host-backend context: any text. Every refusal is a
// gpuhal::Error; a handle that parses serialises back to text that parses
// to the same handle; opening a hostile handle maps nothing it should not.
#include <cstdint>
#include <string>

#include "fuzz_host_context.hpp"
#include "fuzz_input.hpp"
#include "gpuhal/gpuhal.hpp"

using namespace gpuhal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Context &ctx = fuzz::host_context();
  if (size > 4096) return 0;
  const std::string text(reinterpret_cast<const char *>(data), size);
  IpcArrayHandle h;
  try {
    h = IpcArrayHandle::deserialize(text);
  } catch (const Error &) {
    return 0;
  }
  const std::string again = h.serialize();
  try {
    if (IpcArrayHandle::deserialize(again).serialize() != again) __builtin_trap();  // not a fixed point
  } catch (const Error &) {
    __builtin_trap();  // its own text was refused
  }
  try {
    IpcArray opened = open_ipc_array(ctx, h);
    opened.close();
  } catch (const Error &) {
  }
  ctx.flush_deallocations();
  return 0;
}
