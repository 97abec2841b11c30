// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_compiler_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>

#include <xxhash.h>

extern char **environ;

namespace gpuhal::host {

CompilerProcess start_compiler(const std::string &compiler, const std::vector<std::string> &argv,
                               const std::string &log) {
  std::vector<std::string> args = argv;  // posix_spawn takes char *const[]
  std::vector<char *> cargv;
  for (auto &a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  CompilerProcess p;
  p.spawn_error = posix_spawn(&p.pid, compiler.c_str(), &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return p;
}

int finish_compiler(const CompilerProcess &process) {
  if (process.spawn_error != 0) return -1;
  int status = 0;
  while (::waitpid(process.pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

bool compiler_succeeded(int status) {
  return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string compiler_failure(int status) {
  if (status < 0) return "not run";
  return WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                           : "signal " + std::to_string(WTERMSIG(status));
}

std::string hashed_name(const std::string &key) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::string unique_tag() {
  std::random_device rd;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%ld-%08x%08x", long(::getpid()), unsigned(rd()), unsigned(rd()));
  return buf;
}

bool read_whole_file(const std::string &path, std::vector<unsigned char> *out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace gpuhal::host
