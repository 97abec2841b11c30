// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's code-object reader (plugins/hsa/codegen/hsa_code_object.cpp) over
// any bytes: an ELF whose notes hold the AMDGPU metadata (MessagePack), as
// amd_comgr writes it, or garbage. It must neither crash nor read out of
// bounds, and a refusal always says why.
#include <cstdint>
#include <string>
#include <vector>

#include "hsa_code_object.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A copy of exactly `size` bytes, so that ASan sees any read past them.
  std::vector<uint8_t> bytes(data, data + size);
  gpuhal::hsa::CodeObjectMetadata md;
  std::string why;
  const bool ok = gpuhal::hsa::read_code_object_metadata(bytes.data(), bytes.size(), &md, &why);
  if (!ok && why.empty()) __builtin_trap();  // a refusal says why
  if (ok)
    for (const auto &k : md.kernels)
      for (const auto &a : k.args)
        if (uint64_t(a.offset) + a.size > k.kernarg_size && k.kernarg_size != 0 && a.value_kind.rfind("hidden", 0) != 0)
          __builtin_trap();  // an explicit argument past the kernarg segment was accepted
  return 0;
}
