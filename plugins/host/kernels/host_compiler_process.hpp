// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// One run of the system compiler for the host backend: started with
// posix_spawn (no shell, stdin from /dev/null), its stdout and stderr into a
// log file, waited for by the thread that started it. Several may run at
// once (a module and its precompiled prefix). Thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpuhal::host {

struct CompilerProcess {
  pid_t pid = 0;
  int spawn_error = 0;  // errno of posix_spawn; 0 when the compiler started
};

// Starts `compiler` with argv (argv[0] included); output goes to `log`.
CompilerProcess start_compiler(const std::string &compiler, const std::vector<std::string> &argv,
                               const std::string &log);

// Waits for it (retrying on EINTR); its wait status, or -1 when it never
// started.
int finish_compiler(const CompilerProcess &process);

// True for the wait status of a run that exited with status 0.
bool compiler_succeeded(int status);

// "exit status N" or "signal N" for a failed run's wait status.
std::string compiler_failure(int status);

// A cache file's name for `key`: 32 hex digits of its XXH3-128. The key is
// kept beside what it names and compared on every use, so that a collision,
// or a file planted under the name, is never taken for the entry.
std::string hashed_name(const std::string &key);

// A tag no other process or call uses (pid and 64 random bits), for the
// names of temporary files published by rename.
std::string unique_tag();

// The whole of a file, or false when it cannot be read.
bool read_whole_file(const std::string &path, std::vector<unsigned char> *out);

}  // namespace gpuhal::host
