// amd_comgr (AMD's code object manager), loaded at run time, for the hsa
// backend: compiles lowered kernel sources (OpenCL C 1.2) into AMDGPU code
// objects for an ISA such as "amdgcn-amd-amdhsa--gfx90a", and disassembles
// them (what the tests read the barrier lowering from).
//
// The library is GPUHAL_AMD_COMGR or libamd_comgr.so.2 (Debian's
// libamd-comgr2 works without a GPU). Do not load it in a process that also
// loads PoCL: their LLVMs clash. Thread-safe (one mutex around the library).
#pragma once

#include <string>
#include <vector>

namespace gpuhal::hsa {

class Comgr {
 public:
  // Loads the library; on failure ok() is false and why() says what failed.
  explicit Comgr(const std::string &library = "");
  ~Comgr();
  Comgr(const Comgr &) = delete;
  Comgr &operator=(const Comgr &) = delete;
  bool ok() const { return handle_ != nullptr && why_.empty(); }
  const std::string &why() const { return why_; }

  // Source -> bitcode -> relocatable -> executable code object. On failure
  // returns false and `log` holds the compiler's messages.
  bool compile(const std::string &source, const std::string &isa, const std::vector<std::string> &options,
               std::vector<char> *code_object, std::string *log) const;
  // The code object's instructions as text.
  bool disassemble(const std::vector<char> &code_object, const std::string &isa, std::string *text,
                   std::string *log) const;

  struct Api;  // the resolved entry points (defined in hsa_comgr.cpp)

 private:
  void *handle_ = nullptr;
  Api *api_ = nullptr;
  std::string why_;
};

}  // namespace gpuhal::hsa
