// fork(): a child process that touches its parent's gpuhal objects gets a
// clear error (their streams' threads and the plugin's state stay in the
// parent: it used to hang), dropping them does not hang either, and a
// runtime loaded in the child works. The child reports through its exit
// status; a child that hangs is killed after 20 s and fails the test.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

// Runs `child` in a forked process; its exit status (128 + signal if killed,
// 255 after 20 s).
template <class F>
int in_child(F child) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 1;
    try {
      code = child();
    } catch (...) {
      code = 2;
    }
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return 255;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// True when fn throws ERROR_NOT_PERMITTED saying fork().
template <class F>
bool refused_after_fork(F fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.status() == Status::ERROR_NOT_PERMITTED && std::string(e.what()).find("fork()") != std::string::npos;
  }
  return false;
}

}  // namespace

TEST_CASE("fork: the child's use of its parent's objects is refused, dropping them returns, a new runtime works") {
  Context current = Context::current();  // the process runtime, loaded in the parent
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();
  std::vector<float> v(1000, 1.0f);
  DeviceArray d = to_device(ctx, HostView::of(v), s);
  Event e = s.record();
  s.synchronize();
  const int status = in_child([&]() -> int {
    int bad = 0;
    bad |= refused_after_fork([&] { d.memset(1, s); }) ? 0 : 1 << 0;
    bad |= refused_after_fork([&] { s.synchronize(); }) ? 0 : 1 << 1;
    bad |= refused_after_fork([&] { e.synchronize(); }) ? 0 : 1 << 2;
    bad |= refused_after_fork([&] { d.copy_to_host(); }) ? 0 : 1 << 3;
    bad |= refused_after_fork([&] { ctx.create_stream(); }) ? 0 : 1 << 4;
    // Dropping the inherited handles must not wait for the parent's threads.
    d = DeviceArray();
    s = Stream(nullptr);
    e = Event(nullptr);
    ctx = Context(nullptr);
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer ends a child of a multi-threaded process that starts
    // threads (die_after_fork): the new runtime's part is not run under it.
    return bad;
#endif
    // A runtime of the child's own works, streams included.
    Context mine = test::host_context();
    Stream t = mine.create_stream();
    DeviceArray x = to_device(mine, HostView::of(v), t);
    x.memset(0, t);
    t.synchronize();
    bad |= x.copy_to_host().to_vector<float>() == std::vector<float>(1000, 0.0f) ? 0 : 1 << 5;
    // Context::current() in the child is a context of the child's own.
    bad |= refused_after_fork([&] { current.create_stream(); }) ? 0 : 1 << 6;
    Context fresh = Context::current();
    bad |= fresh != current ? 0 : 1 << 7;
    DeviceArray y = to_device(fresh, HostView::of(v), fresh.create_stream());
    fresh.synchronize();
    bad |= y.copy_to_host().to_vector<float>() == v ? 0 : 1 << 8;
    return bad;
  });
  CHECK(status == 0);
  // The parent's objects are untouched.
  d.memset(0, s);
  s.synchronize();
  CHECK(d.copy_to_host().to_vector<float>() == std::vector<float>(1000, 0.0f));
}
