// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The descriptor channel (plugins/common/descriptor_channel.hpp): a
// published descriptor and its bytes reach another process that knows the
// token, a withdrawn or unknown token is refused, a process without a server
// is named, and nothing waits forever.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "catch_compat.hpp"
#include "descriptor_channel.hpp"

namespace ch = gpuhal::plugin;

namespace {

uint64_t inode_of(int fd) {
  struct stat st {};
  REQUIRE(fstat(fd, &st) == 0);
  return uint64_t(st.st_ino);
}

// The process's open descriptors, at their fewest over a few samples: the
// server thread holds one or two for a moment while it answers, a leak
// holds one for good.
size_t settled_descriptor_count() {
  size_t fewest = SIZE_MAX;
  for (int sample = 0; sample < 20; ++sample) {
    size_t n = 0;
    if (DIR *d = opendir("/proc/self/fd")) {
      while (readdir(d)) ++n;
      closedir(d);
    }
    fewest = std::min(fewest, n);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fewest;
}

int make_memfd(const char *text) {
  const int fd = memfd_create("descriptor-channel-test", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text, std::strlen(text)) == ssize_t(std::strlen(text)));
  return fd;
}

}  // namespace

TEST_CASE("descriptor channel: a published descriptor and its bytes reach a fetch of the token", "[channel]") {
  ch::DescriptorServer &server = ch::DescriptorServer::of("kit-test");
  const int fd = make_memfd("shared");
  const char payload[] = "export data";
  uint64_t token = 0;
  std::string error;
  REQUIRE(server.publish(fd, payload, sizeof payload, &token, &error));
  CHECK(token != 0);
  const size_t before = server.published();

  SECTION("in this process: a new descriptor of the same file") {
    int got = -1;
    char bytes[64] = {};
    size_t n = 0;
    REQUIRE(ch::fetch_descriptor("kit-test", uint32_t(getpid()), token, &got, bytes, sizeof bytes, &n, &error));
    CHECK(got != fd);
    CHECK(inode_of(got) == inode_of(fd));
    CHECK(n == sizeof payload);
    CHECK(std::string(bytes) == "export data");
    CHECK((fcntl(got, F_GETFD) & FD_CLOEXEC) != 0);
    close(got);
  }
  SECTION("in a child process: it reads and writes the same file") {
    const pid_t parent = getpid();
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      int got = -1;
      char bytes[64] = {};
      size_t n = 0;
      std::string e;
      if (!ch::fetch_descriptor("kit-test", uint32_t(parent), token, &got, bytes, sizeof bytes, &n, &e)) _exit(2);
      char text[7] = {};
      if (pread(got, text, 6, 0) != 6 || std::string(text) != "shared" || std::string(bytes) != "export data")
        _exit(3);
      if (pwrite(got, "CHILD!", 6, 0) != 6) _exit(4);
      _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    char text[7] = {};
    REQUIRE(pread(fd, text, 6, 0) == 6);
    CHECK(std::string(text) == "CHILD!");
  }
  SECTION("a withdrawn token is refused, and nothing is received") {
    server.withdraw(token);
    CHECK(server.published() == before - 1);
    int got = -1;
    char bytes[64];
    size_t n = 0;
    CHECK_FALSE(ch::fetch_descriptor("kit-test", uint32_t(getpid()), token, &got, bytes, sizeof bytes, &n, &error));
    CHECK(error.find("no longer shares") != std::string::npos);
    CHECK(got == -1);
  }
  SECTION("a fetch with too little room for the bytes is refused and leaks no descriptor") {
    int got = -1;
    char bytes[4];
    size_t n = 0;
    const size_t before_fetch = settled_descriptor_count();
    CHECK_FALSE(ch::fetch_descriptor("kit-test", uint32_t(getpid()), token, &got, bytes, sizeof bytes, &n, &error));
    CHECK(settled_descriptor_count() == before_fetch);  // the received descriptor was closed
  }
  server.withdraw(token);
  close(fd);
}

TEST_CASE("descriptor channel: an unknown service or process is named, and bad arguments are refused", "[channel]") {
  std::string error;
  int got = -1;
  char bytes[8];
  size_t n = 0;
  // A process that has ended (its pid is free until reused).
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  CHECK_FALSE(ch::fetch_descriptor("kit-test", uint32_t(child), 1, &got, bytes, sizeof bytes, &n, &error));
  CHECK(error.find("process " + std::to_string(child)) != std::string::npos);
  CHECK(error.find("ended") != std::string::npos);
  // A service this process never started.
  CHECK_FALSE(ch::fetch_descriptor("kit-never", uint32_t(getpid()), 1, &got, bytes, sizeof bytes, &n, &error));
  CHECK(got == -1);

  ch::DescriptorServer &server = ch::DescriptorServer::of("kit-test");
  uint64_t token = 0;
  char big[ch::kDescriptorBytesMax + 1] = {};
  CHECK_FALSE(server.publish(-1, nullptr, 0, &token, &error));
  CHECK_FALSE(server.publish(0, big, sizeof big, &token, &error));
  CHECK(error.find("at most") != std::string::npos);
  CHECK_FALSE(server.publish(0, nullptr, 4, &token, &error));
}

TEST_CASE("descriptor channel: a client that connects and says nothing does not hold the server", "[channel]") {
  ch::DescriptorServer &server = ch::DescriptorServer::of("kit-test");
  const int fd = make_memfd("x");
  uint64_t token = 0;
  std::string error;
  REQUIRE(server.publish(fd, nullptr, 0, &token, &error));
  // A silent client: connected, no request. The server drops it after
  // kClientSilenceLimit; a real fetch queued behind it is answered then,
  // within its own kRequestTimeout.
  const int silent = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(silent >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "gpuhal-kit-test-" + std::to_string(getpid());
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  REQUIRE(connect(silent, reinterpret_cast<sockaddr *>(&addr),
                  socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0);
  int got = -1;
  char bytes[8];
  size_t n = 0;
  CHECK(ch::fetch_descriptor("kit-test", uint32_t(getpid()), token, &got, bytes, sizeof bytes, &n, &error));
  CHECK(n == 0);
  if (got >= 0) close(got);
  close(silent);
  server.withdraw(token);
  close(fd);
}

TEST_CASE("descriptor channel: fetches, publishes and withdrawals from many threads at once", "[channel]") {
  ch::DescriptorServer &server = ch::DescriptorServer::of("kit-test");
  const int fd = make_memfd("many");
  const uint64_t inode = inode_of(fd);
  const size_t before = server.published();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        uint64_t token = 0;
        std::string error;
        const uint32_t mine = uint32_t(t * 1000 + i);
        if (!server.publish(fd, &mine, sizeof mine, &token, &error)) {
          ++failures;
          continue;
        }
        int got = -1;
        uint32_t back = 0;
        size_t n = 0;
        struct stat st {};
        if (!ch::fetch_descriptor("kit-test", uint32_t(getpid()), token, &got, &back, sizeof back, &n, &error) ||
            n != sizeof back || back != mine || fstat(got, &st) != 0 || uint64_t(st.st_ino) != inode)
          ++failures;
        if (got >= 0) close(got);
        server.withdraw(token);
      }
    });
  for (auto &t : threads) t.join();
  CHECK(failures.load() == 0);
  CHECK(server.published() == before);
  close(fd);
}
