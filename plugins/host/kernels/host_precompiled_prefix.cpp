// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_precompiled_prefix.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "plugin_support.hpp"

namespace gpuhal::host {

namespace {

// Part of the name's hash: a change here makes every old header unused.
constexpr const char *kFormat = "precompiled prefix 1\n";

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

SourceSplit split_at_shared_prefix(const std::string &source) {
  static const std::string kMarker = "#line 1 \"kernel\"\n";
  static const std::string kConstant = "\nGPUHAL_CONSTANT ";
  SourceSplit s;
  const size_t marker = source.find(kMarker);
  if (marker == std::string::npos || marker == 0 || source[marker - 1] != '\n') return s;
  size_t cut = marker;
  const size_t constant = source.find(kConstant);
  if (constant != std::string::npos && constant < marker) cut = constant + 1;
  s.ok = true;
  s.prefix = source.substr(0, cut);
  s.rest = source.substr(cut);
  return s;
}

PrecompiledPrefix::PrecompiledPrefix(const std::string &dir, const std::string &identity,
                                     const std::vector<std::string> &flags, const std::string &prefix)
    : dir_(dir), prefix_(prefix), flags_(flags) {
  std::string key = kFormat + identity;
  for (const auto &f : flags) key += f + "\n";
  key += prefix;
  name_ = "pch-" + hashed_name(key);
}

PrecompiledPrefix::~PrecompiledPrefix() {
  if (building_) finish_build();
}

bool PrecompiledPrefix::ready() const {
  const std::string pch = dir_ + "/" + name_ + ".pch";
  if (!exists(pch) || !exists(dir_ + "/" + name_ + ".h")) return false;
  ::utimensat(AT_FDCWD, pch.c_str(), nullptr, 0);  // used now: the last to evict
  return true;
}

std::vector<std::string> PrecompiledPrefix::use_arguments() const {
  return {"-include-pch", dir_ + "/" + name_ + ".pch"};
}

void PrecompiledPrefix::start_build(const std::string &compiler) {
  // The text goes to its final name first: the header records that path,
  // and clang reads it again when a compile loads the header. Another
  // process may publish the same text at the same time; either copy serves.
  const std::string tag = unique_tag();
  const std::string header = dir_ + "/" + name_ + ".h";
  tmp_h_ = dir_ + "/" + name_ + "." + tag + ".h.tmp";
  tmp_pch_ = dir_ + "/" + name_ + "." + tag + ".pch.tmp";
  log_ = dir_ + "/" + name_ + "." + tag + ".log";
  {
    std::ofstream f(tmp_h_, std::ios::binary);
    f << prefix_;
    if (!f) {
      ::unlink(tmp_h_.c_str());
      return;
    }
  }
  if (::rename(tmp_h_.c_str(), header.c_str()) != 0) {
    ::unlink(tmp_h_.c_str());
    return;
  }
  std::vector<std::string> argv;
  for (const auto &f : flags_)
    if (f != "-shared") argv.push_back(f);
  // Without a timestamp: the header's text, not its file time, is what the
  // name stands for (a rewrite of the same text by another process must
  // not invalidate it).
  for (const char *a : {"-Xclang", "-fno-pch-timestamp", "-x", "c++-header", "-o"}) argv.push_back(a);
  argv.push_back(tmp_pch_);
  argv.push_back(header);
  build_ = start_compiler(compiler, argv, log_);
  building_ = build_.spawn_error == 0;
  if (!building_) ::unlink(log_.c_str());
}

void PrecompiledPrefix::finish_build() {
  if (!building_) return;
  building_ = false;
  const int status = finish_compiler(build_);
  ::unlink(log_.c_str());
  if (!compiler_succeeded(status) || ::rename(tmp_pch_.c_str(), (dir_ + "/" + name_ + ".pch").c_str()) != 0) {
    ::unlink(tmp_pch_.c_str());
    plugin::log(GPUHAL_LOG_DEBUG, "host: the precompiled prefix " + name_ + " was not built (" +
                                      compiler_failure(status) + "); modules compile from their whole source");
    return;
  }
  plugin::log(GPUHAL_LOG_DEBUG, "host: precompiled prefix " + name_ + ".pch built for later modules");
}

void PrecompiledPrefix::discard() {
  ::unlink((dir_ + "/" + name_ + ".pch").c_str());
  ::unlink((dir_ + "/" + name_ + ".h").c_str());
}

bool PrecompiledPrefix::blamed(const std::string &output) {
  for (const char *s : {"precompiled header", "PCH file", "AST file"})
    if (output.find(s) != std::string::npos) return true;
  return false;
}

}  // namespace gpuhal::host
