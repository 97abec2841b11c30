// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "trace_layer.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>

#include "gpuhal/error.hpp"
#include "json_text.hpp"

namespace gpuhal::detail::layers {

// The trace-event file of one path, shared by every chain of the process
// that traces to it and kept open until the process ends: each chain's end
// writes the closing brackets (so the file is valid JSON between runtimes),
// and the next event writes over them. "%p" in the path is the process id
// (as LLVM_PROFILE_FILE has it), so that the processes of a program -- a
// test runner's children -- each keep their own file; without it a later
// process's file replaces an earlier one's. A child of fork() that inherited
// an open file traces into "<path>.<pid>" instead (stdio buffers are flushed
// before every fork, so the child never writes the parent's bytes).
class TraceFile {
 public:
  static std::shared_ptr<TraceFile> open(const std::string &path, std::string *error) {
    Registry &registry = files();
    std::lock_guard<std::mutex> lock(registry.mu);
    auto &slot = registry.files[path];
    if (slot) return slot;
    FILE *f = std::fopen(expand(path).c_str(), "w");
    if (!f) {
      *error = std::strerror(errno);
      return nullptr;
    }
    slot = std::shared_ptr<TraceFile>(new TraceFile(f, path));
    return slot;
  }

  void write(const TracedCall &c, const std::string &backend) {
    std::lock_guard<std::mutex> lock(mu_);
    if (::getpid() != pid_ && !start_in_child()) return;
    reopen_array();
    const uint64_t tid = static_cast<uint64_t>(::syscall(SYS_gettid));
    if (threads_.insert(tid).second) metadata(tid, "thread " + std::to_string(tid));
    event(c, backend, tid);
    if (c.has_stream) {
      auto it = streams_.find(c.stream);
      if (it == streams_.end()) {
        it = streams_.emplace(c.stream, kStreamTrackBase + streams_.size()).first;
        metadata(it->second, stream_name(c.stream) + " (" + backend + ")");
      }
      event(c, backend, it->second);
    }
  }

  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (::getpid() != pid_ || tail_ >= 0) return;  // a child that wrote nothing has nothing to end
    tail_ = std::ftell(f_);
    std::fputs("\n]}\n", f_);
    std::fflush(f_);
  }

 private:
  struct Registry {
    std::mutex mu;
    std::map<std::string, std::shared_ptr<TraceFile>> files;
  };
  static constexpr uint64_t kStreamTrackBase = 1u << 30;  // above any thread id

  static Registry &files() {
    static auto *registry = [] {
      auto *r = new Registry();  // never destroyed: chains may end in static destructors
      ::pthread_atfork(&before_fork, &after_fork, &after_fork);
      return r;
    }();
    return *registry;
  }
  // Every file's buffer is written out before a fork, so that no child
  // inherits (and later writes) its parent's buffered events.
  static void before_fork() {
    Registry &r = files();
    r.mu.lock();
    for (auto &kv : r.files) {
      kv.second->mu_.lock();
      std::fflush(kv.second->f_);
    }
  }
  static void after_fork() {
    Registry &r = files();
    for (auto &kv : r.files) kv.second->mu_.unlock();
    r.mu.unlock();
  }

  TraceFile(FILE *f, const std::string &path) : f_(f), path_(path), pid_(::getpid()) { header(); }
  // The path with every "%p" replaced by this process's id.
  static std::string expand(std::string path) {
    const std::string pid = std::to_string(::getpid());
    for (size_t at = path.find("%p"); at != std::string::npos; at = path.find("%p", at + pid.size()))
      path.replace(at, 2, pid);
    return path;
  }
  void header() {
    std::fprintf(f_, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    std::fprintf(f_, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"gpuhal\"}}",
                 pid_);
  }
  // In a child of fork(): a file of its own, "<path>.<pid>". The parent's
  // FILE is left as it is (closing it would write nothing now, but it is the
  // parent's). False when that file cannot be made.
  bool start_in_child() {
    const int pid = ::getpid();
    const std::string own = path_.find("%p") != std::string::npos ? expand(path_) : path_ + "." + std::to_string(pid);
    FILE *f = std::fopen(own.c_str(), "w");
    if (!f) return false;
    f_ = f;
    pid_ = pid;
    tail_ = -1;
    threads_.clear();
    streams_.clear();
    header();
    return true;
  }
  void reopen_array() {
    if (tail_ < 0) return;
    std::fseek(f_, tail_, SEEK_SET);
    tail_ = -1;
  }
  static std::string stream_name(uint64_t s) {
    if (s == 0) return "default stream";
    if (s == 1) return "legacy default stream";
    if (s == 2) return "per-thread default stream";
    char buf[40];
    std::snprintf(buf, sizeof buf, "stream 0x%" PRIx64, s);
    return buf;
  }
  void metadata(uint64_t tid, const std::string &name) {
    std::fprintf(f_, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%" PRIu64 ",\"args\":{\"name\":%s}}",
                 pid_, tid, support::json_string(name).c_str());
  }
  void event(const TracedCall &c, const std::string &backend, uint64_t tid) {
    std::string args = "{\"call\":" + std::to_string(c.number);
    if (!c.args_json.empty()) args += "," + c.args_json;
    if (c.has_status) args += ",\"status\":\"" + to_string(static_cast<Status>(c.status)) + "\"";
    if (!c.message.empty()) args += ",\"message\":" + support::json_string(c.message);
    args += "}";
    std::fprintf(f_,
                 ",\n{\"name\":\"%s\",\"cat\":%s,\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%" PRIu64
                 ",\"args\":%s}",
                 c.entry, support::json_string(backend).c_str(), c.start_us, c.duration_us, pid_, tid, args.c_str());
  }

  std::mutex mu_;
  FILE *f_;
  std::string path_;
  int pid_;
  long tail_ = -1;  // where the closing brackets start, while they are written
  std::set<uint64_t> threads_;
  std::map<uint64_t, uint64_t> streams_;  // stream handle -> its track
};

namespace {

std::atomic<uint64_t> g_calls{0};

double micros(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

}  // namespace

TraceLayer::TraceLayer(const std::string &backend, const std::string &file, const Logger &logger)
    : backend_(backend), logger_(logger.enabled(LogLevel::Info) ? logger : Logger(LogLevel::Info)) {
  if (!file.empty()) {
    std::string error;
    file_ = TraceFile::open(file, &error);
    if (!file_)
      throw Error(Status::ERROR_INVALID_CONFIG, "GPUHAL_TRACE_FILE: cannot write '" + file + "': " + error);
  }
  // Vendor timelines, where their library loads (never required).
  const char *library = backend == "cuda" ? "libnvToolsExt.so.1" : backend == "hsa" ? "libroctx64.so" : nullptr;
  const char *push = backend == "cuda" ? "nvtxRangePushA" : "roctxRangePushA";
  const char *pop = backend == "cuda" ? "nvtxRangePop" : "roctxRangePop";
  if (library && (vendor_library_ = dlopen(library, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
    void *p = dlsym(vendor_library_, push), *q = dlsym(vendor_library_, pop);
    if (p && q) {
      std::memcpy(&range_push_, &p, sizeof p);
      std::memcpy(&range_pop_, &q, sizeof q);
      logger_.write(LogLevel::Info, std::string("trace: calls are also ranges of ") + library);
    } else {
      dlclose(vendor_library_);
      vendor_library_ = nullptr;
    }
  }
}

TraceLayer::~TraceLayer() {
  if (vendor_library_) dlclose(vendor_library_);
}

uint64_t TraceLayer::next_number() { return ++g_calls; }

std::string TraceLayer::json_quoted(const std::string &s) { return support::json_string(s); }

void TraceLayer::range_push(const char *entry) {
  if (range_push_) range_push_((std::string("gpuhal:") + entry).c_str());
}

void TraceLayer::finish(TracedCall *c, std::chrono::steady_clock::time_point t0) {
  const auto t1 = std::chrono::steady_clock::now();
  if (range_pop_) range_pop_();
  c->start_us = micros(t0);
  c->duration_us = micros(t1) - c->start_us;
  if (file_) {
    file_->write(*c, backend_);
    return;
  }
  char took[32];
  std::snprintf(took, sizeof took, "%.1f us", c->duration_us);
  std::string line = "trace #" + std::to_string(c->number) + " " + backend_ + ": " + c->entry + "(" + c->args_text + ")";
  if (c->has_status) line += " -> " + to_string(static_cast<Status>(c->status));
  if (!c->message.empty()) line += ": " + c->message;
  logger_.write(LogLevel::Info, line + " [" + took + "]");
}

void TraceLayer::flush() {
  if (file_) file_->finish();
}

}  // namespace gpuhal::detail::layers
