// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// See runner.hpp.
#include "runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace gpuhal {
namespace conformance {

const char *to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::Pass:
      return "pass";
    case Outcome::Fail:
      return "fail";
    case Outcome::Unsupported:
      return "unsupported";
    case Outcome::Skipped:
      return "skipped";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
// Ends the capability an unsupported check's report names (ASCII's unit
// separator: no capability name or message holds it).
constexpr char kNeedsEnd = '\x1f';

// Runs `body` on a freshly loaded plugin in this process. Everything made
// from the plugin is gone when this returns.
Result run_here(const std::string &name, const RunOptions &options, const std::function<std::string(Env &)> &body) {
  Result r;
  r.name = name;
  try {
    Runtime rt = Runtime::load(options.config);
    Env env{rt, rt.device(0).primary_context(), options.self_exe};
    r.detail = body(env);
    r.outcome = Outcome::Pass;
  } catch (const Failure &f) {
    r.outcome = Outcome::Fail;
    r.detail = f.message;
  } catch (const Unsupported &u) {
    r.outcome = Outcome::Unsupported;
    r.detail = u.message;
    r.needs = u.needs;
  } catch (const Error &e) {
    r.outcome = Outcome::Fail;
    r.detail = gpuhal::to_string(e.status()) + ": " + e.what();
  } catch (const std::exception &e) {
    r.outcome = Outcome::Fail;
    r.detail = std::string("exception: ") + e.what();
  }
  return r;
}

void write_all(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += size_t(n);
  }
}

std::string signal_name(int sig) {
  const char *d = strsignal(sig);
  return std::string(d ? d : "signal") + " (signal " + std::to_string(sig) + ")";
}

// Forks; the child runs `body` and writes "<outcome char><detail>" to a
// pipe, then exits through exit() (so sanitizers' exit-time checks run).
Result run_isolated(const std::string &name, const RunOptions &options, const std::function<std::string(Env &)> &body) {
  const auto start = Clock::now();
  Result r;
  r.name = name;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.detail = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::fflush(nullptr);  // nothing buffered twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.detail = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string report;
    {
      const Result here = run_here(name, options, body);
      // The outcome's letter, then (unsupported) the capability needed and
      // a unit separator, then the detail.
      report = std::string(1, "PFUS"[int(here.outcome)]);
      if (here.outcome == Outcome::Unsupported) report += here.needs + kNeedsEnd;
      report += here.detail;
    }
    write_all(fds[1], report);
    ::close(fds[1]);
    std::fflush(nullptr);
    std::exit(0);
  }
  ::close(fds[1]);
  std::string report;
  bool timed_out = false;
  const auto deadline = start + std::chrono::duration<double>(options.timeout_s);
  for (;;) {
    int wait_ms = -1;
    if (options.timeout_s > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = int(left);
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) continue;  // the deadline is checked above
    char buf[4096];
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the child closed its end (reported, or died)
    report.append(buf, size_t(got));
  }
  ::close(fds[0]);
  int status = 0;
  if (!timed_out) {
    // The child reported (or died); it still has to finish its exit, which
    // may hang in teardown: the same deadline holds.
    for (;;) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) break;
      if (options.timeout_s > 0 && Clock::now() >= deadline) {
        timed_out = true;
        break;
      }
      ::usleep(2000);
    }
  }
  if (timed_out) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", options.timeout_s);
    r.outcome = Outcome::Fail;
    r.detail = std::string("did not finish within ") + limit + " s (a hang, or slower than its budget)" +
               (report.empty() ? "" : std::string("; it had reported: ") + report.substr(1));
    return r;
  }
  if (WIFSIGNALED(status)) {
    r.outcome = Outcome::Fail;
    r.detail = "the check's process died of " + signal_name(WTERMSIG(status));
    return r;
  }
  if (report.empty()) {
    r.outcome = Outcome::Fail;
    r.detail = "the check's process exited with status " + std::to_string(WEXITSTATUS(status)) + " without reporting";
    return r;
  }
  const char code = report[0];
  r.outcome = code == 'P' ? Outcome::Pass : code == 'U' ? Outcome::Unsupported : Outcome::Fail;
  r.detail = report.substr(1);
  if (const size_t end = r.detail.find(kNeedsEnd); r.outcome == Outcome::Unsupported && end != std::string::npos) {
    r.needs = r.detail.substr(0, end);
    r.detail = r.detail.substr(end + 1);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    r.outcome = Outcome::Fail;
    r.detail = "exited with status " + std::to_string(WEXITSTATUS(status)) +
               " after reporting (a leak or sanitizer report at exit?)" + (r.detail.empty() ? "" : ": " + r.detail);
  }
  return r;
}

Result run(const std::string &name, const RunOptions &options, const std::function<std::string(Env &)> &body) {
  if (!options.isolate) {
    const auto start = Clock::now();
    Result r = run_here(name, options, body);
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  }
  return run_isolated(name, options, body);
}

}  // namespace

Result run_load(const RunOptions &options) {
  return run("load", options, [](Env &env) {
    const uint32_t abi = env.runtime.plugin_abi_version();
    return env.runtime.backend_name() + " (" + env.runtime.plugin_path() + "), ABI " + std::to_string(abi >> 16) + "." +
           std::to_string(abi & 0xffff) + ", " + std::to_string(env.runtime.device_count()) + " device(s)";
  });
}

Result run_check(const Check &check, const RunOptions &options) {
  RunOptions within = options;
  within.timeout_s = options.timeout_s * (check.budget > 1 ? check.budget : 1);
  Result r = run(check.name, within, [&check](Env &env) {
    check.run(env);
    return std::string();
  });
  if (r.outcome == Outcome::Pass && options.timeout_s > 0 && r.seconds > options.timeout_s) {
    char text[96];
    std::snprintf(text, sizeof text, "slow: %.0f s, past --timeout %g s but within its budget of %g s", r.seconds,
                  options.timeout_s, within.timeout_s);
    r.detail = r.detail.empty() ? text : r.detail + "; " + text;
  }
  return r;
}

}  // namespace conformance
}  // namespace gpuhal
