// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_compiler.hpp"

#include "host_kernel.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "host_compiler_process.hpp"
#include "host_precompiled_prefix.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {
namespace {

using plugin::fail;

std::mutex g_private_mu;
std::string g_private_dir;  // made by mkdtemp when no usable cache exists

// Writes `text` to `path` atomically (a temporary file renamed over it).
void publish(const std::string &path, const std::string &tmp, const std::string &text) {
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

// The compiler's file: `cxx` itself when it has a slash, else the first
// executable of that name in PATH ("" when none).
std::string resolve(const std::string &cxx) {
  if (cxx.find('/') != std::string::npos) return cxx;
  const char *path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::string f = dir + "/" + cxx;
    if (::access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

bool make_dirs(const std::string &path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    cur += part + "/";
    if (part.empty()) continue;
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return true;
}

// A directory we may load code from: ours, not writable by group or others.
bool safe_dir(const std::string &dir) {
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::string cache_dir(const CompilerSettings &s) {
  std::string dir = s.cache_dir == "off" ? std::string() : s.cache_dir;
  if (dir.empty() && s.cache_dir != "off") {
    if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
      dir = std::string(x) + "/gpuhal/kernels";
    else if (const char *h = std::getenv("HOME"); h && *h == '/')
      dir = std::string(h) + "/.cache/gpuhal/kernels";
  }
  if (!dir.empty() && make_dirs(dir) && safe_dir(dir)) return dir;
  // "off", no home, or an unusable directory: a private one, removed at exit.
  if (!dir.empty())
    plugin::log(GPUHAL_LOG_WARN, "host: kernel cache '" + dir +
                                     "' cannot be created or is writable by others; using a private temporary one");
  std::lock_guard<std::mutex> lock(g_private_mu);
  if (g_private_dir.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/gpuhal-kernels-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) return "";
    g_private_dir = buf.data();
  }
  return g_private_dir;
}

// GPUHAL_KERNEL_CACHE_MAX: removes the entries (<name>.so with its .key and
// .stack; pch-<hash>.pch with its .h) used least recently (the .so's or
// .pch's modification time, renewed at each use) until the directory's entries hold at most `max` bytes; `keep`
// (the entry just made) stays even when it alone is larger. Safe against
// other processes: a module is read into memory before it is loaded, and
// an entry removed under a reader is compiled again by the next one.
void evict_least_recent(const std::string &dir, uint64_t max, const std::string &keep) {
  struct Entry {
    std::string name;
    uint64_t bytes = 0;
    timespec used{};
  };
  std::map<std::string, Entry> entries;
  DIR *d = ::opendir(dir.c_str());
  if (!d) return;
  while (struct dirent *e = ::readdir(d)) {
    const std::string n = e->d_name;
    const size_t dot = n.find('.');
    if (dot == std::string::npos) continue;
    const std::string base = n.substr(0, dot), rest = n.substr(dot);
    // A module (.so with its .key and .stack) or a precompiled prefix (.pch
    // with its .h); not the temporaries of a compile.
    if (rest != ".so" && rest != ".so.key" && rest != ".so.stack" && rest != ".pch" && rest != ".h") continue;
    struct stat st;
    if (::stat((dir + "/" + n).c_str(), &st) != 0) continue;
    Entry &entry = entries[base];
    entry.name = base;
    entry.bytes += uint64_t(st.st_size);
    if (rest == ".so" || rest == ".pch") entry.used = st.st_mtim;
  }
  ::closedir(d);
  uint64_t total = 0;
  std::vector<Entry> order;
  for (const auto &kv : entries) {
    total += kv.second.bytes;
    order.push_back(kv.second);
  }
  std::sort(order.begin(), order.end(), [](const Entry &a, const Entry &b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
  });
  for (const Entry &e : order) {
    if (total <= max) break;
    if (e.name == keep) continue;
    for (const char *suffix : {".so", ".so.key", ".so.stack", ".pch", ".h"})
      ::unlink((dir + "/" + e.name + suffix).c_str());
    total -= e.bytes;
    plugin::log(GPUHAL_LOG_DEBUG, "host: kernel cache over GPUHAL_KERNEL_CACHE_MAX: removed " + e.name);
  }
}


bool is_elf(const std::vector<unsigned char> &b) {
  return b.size() > 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

// The CPU kernels are built for. On x86-64 they are compiled with
// -march=native, so that the compiler uses every instruction this machine
// has (AVX2, FMA, AVX-512 ...), as OpenCL's CPU drivers do; the cache key
// then names the CPU (its model and feature flags), so that a cache shared
// with another machine (a network home directory) never hands out code that
// machine cannot run.
const std::string &cpu_identity() {
  static const std::string id = [] {
    std::ifstream f("/proc/cpuinfo");
    std::string line, model, flags;
    while ((model.empty() || flags.empty()) && std::getline(f, line)) {
      if (model.empty() && line.rfind("model name", 0) == 0) model = line;
      if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
    }
    return model + "\n" + flags + "\n";
  }();
  return id;
}

// One compile of `text` into `out`: the source written to <stem>.cpp, the
// compiler's output read back from <stem>.log (both removed after).
struct CompileRun {
  int spawn_error = 0;
  int status = -1;
  std::string output;
  bool ok() const { return spawn_error == 0 && compiler_succeeded(status); }
};
CompileRun run_compile(const std::string &compiler, std::vector<std::string> argv, const std::string &text,
                       const std::string &stem, const std::string &out) {
  CompileRun run;
  const std::string src = stem + ".cpp", log = stem + ".log";
  {
    std::ofstream f(src, std::ios::binary);
    f << text;
    if (!f) {
      ::unlink(src.c_str());
      run.output = "host: cannot write " + src;
      return run;
    }
  }
  argv.push_back("-o");
  argv.push_back(out);
  argv.push_back(src);
  const CompilerProcess p = start_compiler(compiler, argv, log);
  run.spawn_error = p.spawn_error;
  run.status = finish_compiler(p);
  std::vector<unsigned char> bytes;
  read_whole_file(log, &bytes);
  run.output.assign(bytes.begin(), bytes.end());
  ::unlink(src.c_str());
  ::unlink(log.c_str());
  return run;
}

// The compiler's arguments for a module: C++17, optimised, position
// independent, the host's CPU; then the module's own options, which win.
std::vector<std::string> compiler_arguments(const std::string &compiler, bool gcc, const std::string &options) {
  std::vector<std::string> argv = {compiler, "-std=c++17", "-O3", "-fPIC", "-shared", "-w"};
#if defined(__x86_64__)
  argv.push_back("-march=native");  // options given with the module come later and win
  // With AVX-512, LLVM still picks 256-bit vectors and interleaves two of
  // them: a work-item loop over a 16-wide block then has too few
  // iterations for its vector body and runs scalar. One 512-bit vector per
  // iteration fits such blocks (a block reduction 1.9 -> 1.5 ms, the tiled
  // matmul 55 -> 51 ms at N=1000; saxpy unchanged).
  const std::string &cpu = cpu_identity();
  if (!gcc && (cpu.find(" avx512f ") != std::string::npos || cpu.find(" avx512f\n") != std::string::npos)) {
    argv.push_back("-mprefer-vector-width=512");
    argv.push_back("-mllvm");
    argv.push_back("-force-vector-interleave=1");
  }
#endif
  // GCC writes each function's frame and calls next to the output: the
  // stack a kernel's work-item needs (host_stack_usage.cpp). Clang has no
  // such output: its kernels' stack needs stay unknown.
  if (gcc) argv.push_back("-fcallgraph-info=su");
  // LLVM's linker when it is installed: a module's link 40 -> 30 ms of a
  // compile that takes 120 ms and more (GNU ld reads libstdc++'s symbols).
  if (!gcc && compiler_available("ld.lld")) argv.push_back("-fuse-ld=lld");
  {
    std::stringstream ss(options);
    std::string o;
    while (ss >> o) argv.push_back(o);
  }
  return argv;
}

// The cache's module for `key` at `so` into *image (with its stack usage
// appended), marked used now: true. False when there is none, or another
// key's (then *taken: this compile must not replace it).
bool read_cached(const std::string &so, const std::string &key, std::vector<unsigned char> *image, bool *taken) {
  if (!read_whole_file(so, image) || !is_elf(*image)) {
    image->clear();
    return false;
  }
  std::vector<unsigned char> stored;
  const bool has_key = read_whole_file(so + ".key", &stored);
  if (has_key && stored.size() == key.size() && std::equal(stored.begin(), stored.end(), key.begin())) {
    ::utimensat(AT_FDCWD, so.c_str(), nullptr, 0);  // used now: the last to evict
    std::vector<unsigned char> stack;
    if (read_whole_file(so + ".stack", &stack)) append_stack_usage(image, std::string(stack.begin(), stack.end()));
    return true;
  }
  *taken = has_key;  // without a key file: an entry of an older cache format, replaced
  image->clear();
  return false;
}

// Compiles `source` to `out_so` (intermediate files named after `out_base`)
// with the precompiled shared prefix (host_precompiled_prefix.hpp) when it
// is built, starting its build beside this compile when it is not; a
// prefix the compiler refuses is removed and the whole source compiled.
// Clang without module options only.
CompileRun compile_with_prefix(const std::string &compiler, const std::vector<std::string> &argv, bool gcc,
                               const std::string &options, const std::string &source, const std::string &dir,
                               const std::string &stamp, const std::string &out_base, const std::string &out_so) {
  std::unique_ptr<PrecompiledPrefix> prefix;
  std::string text = source;
  std::vector<std::string> flags = argv;
  if (!gcc && options.empty()) {
    const SourceSplit split = split_at_shared_prefix(source);
    if (split.ok) {
      prefix = std::make_unique<PrecompiledPrefix>(dir, compiler + "\n" + stamp + cpu_identity(), argv, split.prefix);
      if (prefix->ready()) {
        text = split.rest;
        for (const auto &a : prefix->use_arguments()) flags.push_back(a);
        plugin::log(GPUHAL_LOG_DEBUG, "host: compiling with the precompiled prefix " + prefix->name());
      } else {
        prefix->start_build(compiler);
      }
    }
  }
  CompileRun run = run_compile(compiler, flags, text, out_base, out_so);
  if (prefix) prefix->finish_build();
  if (!run.ok() && text.size() != source.size() && PrecompiledPrefix::blamed(run.output)) {
    plugin::log(GPUHAL_LOG_DEBUG, "host: the compiler refused the precompiled prefix; removed, compiling the whole source");
    prefix->discard();
    run = run_compile(compiler, argv, source, out_base, out_so);
  }
  return run;
}

}  // namespace

bool compiler_available(const std::string &cxx) {
  return !cxx.empty() && !resolve(cxx).empty();
}

gpuhal_status_t compile_host_module(const CompilerSettings &settings, const std::string &source,
                                    const std::string &options, std::vector<unsigned char> *image) {
  const std::string compiler = resolve(settings.cxx);
  if (compiler.empty())
    return fail(GPUHAL_ERROR_COMPILATION_FAILED,
                "host: no C++ compiler '" + settings.cxx + "' in PATH (set GPUHAL_HOST_CXX to one)");
  struct stat cst {};
  if (::stat(compiler.c_str(), &cst) != 0)
    return fail(GPUHAL_ERROR_COMPILATION_FAILED,
                "host: the C++ compiler '" + compiler + "' cannot be used: " + std::strerror(errno));

  char real[PATH_MAX];
  const bool gcc = ::realpath(compiler.c_str(), real) && std::strstr(real, "clang") == nullptr;
  const std::vector<std::string> argv = compiler_arguments(compiler, gcc, options);
  const std::string stamp = std::to_string(cst.st_size) + ":" + std::to_string(cst.st_mtim.tv_sec) + "." +
                            std::to_string(cst.st_mtim.tv_nsec) + "\n";
  std::string key = stamp;
  for (const auto &a : argv) key += a + "\n";
  key += cpu_identity();
  key += "stack usage 2\n";  // the format of the <module>.stack file kept beside it
  key += source;
  const std::string name = hashed_name(key);

  const std::string dir = cache_dir(settings);
  if (dir.empty())
    return fail(GPUHAL_ERROR_COMPILATION_FAILED, "host: no directory for compiled kernels could be made");
  const std::string so = dir + "/" + name + ".so";
  // Another key's entry under this name: compiled here, never published.
  bool taken = false;
  if (read_cached(so, key, image, &taken)) return GPUHAL_SUCCESS;

  const std::string tag = unique_tag();
  const std::string tmp_so = dir + "/" + name + "." + tag + ".so";
  CompileRun run = compile_with_prefix(compiler, argv, gcc, options, source, dir, stamp,
                                       dir + "/" + name + "." + tag, tmp_so);
  if (run.spawn_error != 0) {
    ::unlink(tmp_so.c_str());
    return fail(GPUHAL_ERROR_COMPILATION_FAILED, "host: cannot run " + compiler + ": " + std::strerror(run.spawn_error));
  }
  if (!run.ok()) {
    ::unlink(tmp_so.c_str());
    std::string msg = run.output;
    if (msg.size() > 16384) msg = msg.substr(0, 16384) + "\n[... cut]";
    return fail(GPUHAL_ERROR_COMPILATION_FAILED,
                "host: " + compiler + " failed (" + compiler_failure(run.status) + "):\n" + msg);
  }
  if (!read_whole_file(tmp_so, image) || !is_elf(*image)) {
    ::unlink(tmp_so.c_str());
    return fail(GPUHAL_ERROR_COMPILATION_FAILED, "host: " + compiler + " produced no shared object");
  }
  std::string stack_text;
  if (gcc) {
    const std::string ci = tmp_so + "-" + name + "." + tag + ".ci";
    std::vector<unsigned char> graph;
    if (read_whole_file(ci, &graph)) stack_text = stack_usage_from_callgraph(std::string(graph.begin(), graph.end()));
    ::unlink(ci.c_str());
  }
  if (taken) {
    ::unlink(tmp_so.c_str());
    plugin::log(GPUHAL_LOG_WARN, "host: kernel cache entry " + so + " holds another key: compiled without caching");
  } else {
    // The key and the stack usage are published before the module: a
    // reader that finds the module finds them. Each step is atomic; another
    // process compiling the same key may win.
    publish(so + ".key", tmp_so + ".key", key);
    if (gcc) publish(so + ".stack", tmp_so + ".stack", stack_text);
    if (::rename(tmp_so.c_str(), so.c_str()) != 0) ::unlink(tmp_so.c_str());
    if (settings.cache_max) evict_least_recent(dir, settings.cache_max, name);
  }
  append_stack_usage(image, stack_text);
  return GPUHAL_SUCCESS;
}

void forget_private_cache_after_fork() {
  new (&g_private_mu) std::mutex();
  new (&g_private_dir) std::string();  // the parent's string is abandoned, not freed
}

void remove_private_cache() {
  std::lock_guard<std::mutex> lock(g_private_mu);
  if (g_private_dir.empty()) return;
  // Only files this plugin wrote (<hash>.so): remove them, then the dir.
  const std::string cmd_dir = g_private_dir;
  if (DIR *d = ::opendir(cmd_dir.c_str())) {
    while (struct dirent *e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      ::unlink((cmd_dir + "/" + n).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(cmd_dir.c_str());
  g_private_dir.clear();
}

}  // namespace gpuhal::host
