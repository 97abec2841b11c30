// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Descriptors over SCM_RIGHTS on request (descriptor_channel.hpp).
#include "descriptor_channel.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "fork_thread_gate.hpp"

namespace gpuhal::plugin {
namespace {

constexpr uint32_t kRequestMagic = 0x67686452;  // "Rdhg"
constexpr uint32_t kReplyMagic = 0x67686441;    // "Adhg"
enum ReplyStatus : uint32_t { kFound = 0, kUnknownToken = 1, kOtherUser = 2, kBadRequest = 3 };

struct Request {
  uint32_t magic;
  uint32_t reserved;
  uint64_t token;
};
struct Reply {
  uint32_t magic;
  uint32_t status;
  uint32_t n;
  uint32_t reserved;
  unsigned char bytes[kDescriptorBytesMax];
};

std::string errno_text(const std::string &what) {
  return what + ": " + std::strerror(errno);
}

// "\0gpuhal-<service>-<pid>": Linux's abstract namespace (sun_path[0] == 0).
socklen_t socket_address(const std::string &service, uint32_t pid, sockaddr_un *addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  const std::string name = "gpuhal-" + service + "-" + std::to_string(pid);
  const size_t n = std::min(name.size(), sizeof addr->sun_path - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);
  return socklen_t(offsetof(sockaddr_un, sun_path) + 1 + n);
}

void bound_waits(int fd, std::chrono::milliseconds limit) {
  timeval tv{};
  tv.tv_sec = limit.count() / 1000;
  tv.tv_usec = (limit.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Reads or writes exactly n bytes (false on error, timeout or end of stream).
bool read_all(int fd, void *buf, size_t n) {
  auto *p = static_cast<char *>(buf);
  while (n > 0) {
    const ssize_t got = recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= size_t(got);
  }
  return true;
}

bool peer_is(int fd, uint32_t *pid, uid_t *uid) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  *pid = uint32_t(cred.pid);
  *uid = cred.uid;
  return true;
}

// Sends `reply`, with `fd` attached when it is >= 0.
bool send_reply(int conn, const Reply &reply, int fd) {
  iovec iov{const_cast<Reply *>(&reply), sizeof reply};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t sent;
  do {
    sent = sendmsg(conn, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == ssize_t(sizeof reply);
}

}  // namespace

struct DescriptorServer::State {
  struct Entry {
    int fd;
    std::string bytes;
  };
  std::string service;
  mutable std::mutex mu;  // guards everything below
  std::map<uint64_t, Entry> entries;
  std::mt19937_64 tokens{std::random_device{}()};
  int listen_fd = -1;
  pid_t owner = 0;  // the process that started the server (a forked child starts its own)

  // Starts the listening socket and its thread (mu held).
  bool start(std::string *error);
  void serve_forever(int listener);
  void serve_one(int conn);
};

bool DescriptorServer::State::start(std::string *error) {
  const pid_t me = getpid();
  if (listen_fd >= 0 && owner == me) return true;
  if (listen_fd >= 0) {
    // A forked child: the socket is the parent's, and so are the entries.
    close(listen_fd);
    listen_fd = -1;
    entries.clear();
  }
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    *error = errno_text("socket");
    return false;
  }
  sockaddr_un addr;
  const socklen_t len = socket_address(service, uint32_t(me), &addr);
  if (bind(s, reinterpret_cast<sockaddr *>(&addr), len) != 0 || listen(s, 16) != 0) {
    *error = errno_text("bind/listen on the abstract socket gpuhal-" + service + "-" + std::to_string(me));
    close(s);
    return false;
  }
  try {
    start_thread([this, s] { serve_forever(s); }).detach();
  } catch (const std::exception &e) {
    *error = std::string("starting the descriptor server's thread: ") + e.what();
    close(s);
    return false;
  }
  listen_fd = s;
  owner = me;
  return true;
}

void DescriptorServer::State::serve_forever(int listener) {
  for (;;) {
    const int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK) return;  // closed (a forked child's copy)
      if (errno != EINTR && errno != ECONNABORTED) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    serve_one(conn);
    close(conn);
  }
}

void DescriptorServer::State::serve_one(int conn) {
  bound_waits(conn, kClientSilenceLimit);
  Reply reply{};
  reply.magic = kReplyMagic;
  uint32_t peer_pid = 0;
  uid_t peer_uid = 0;
  Request req{};
  if (!peer_is(conn, &peer_pid, &peer_uid) || peer_uid != getuid()) {
    reply.status = kOtherUser;
  } else if (!read_all(conn, &req, sizeof req) || req.magic != kRequestMagic) {
    reply.status = kBadRequest;
  } else {
    int copy = -1;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = entries.find(req.token);
      if (it != entries.end()) {
        // A copy, so that a withdraw (which lets the owner close its fd)
        // cannot close what is being sent.
        copy = fcntl(it->second.fd, F_DUPFD_CLOEXEC, 0);
        reply.n = uint32_t(it->second.bytes.size());
        std::memcpy(reply.bytes, it->second.bytes.data(), reply.n);
      }
    }
    reply.status = copy >= 0 ? kFound : kUnknownToken;
    if (copy < 0) reply.n = 0;
    send_reply(conn, reply, copy);
    if (copy >= 0) close(copy);
    return;
  }
  send_reply(conn, reply, -1);
}

DescriptorServer::DescriptorServer(std::string service) : state_(new State) {
  state_->service = std::move(service);
}

DescriptorServer &DescriptorServer::of(const std::string &service) {
  static std::mutex mu;
  static auto *servers = new std::map<std::string, DescriptorServer *>;  // never destroyed (the threads use them)
  std::lock_guard<std::mutex> lock(mu);
  DescriptorServer *&s = (*servers)[service];
  if (!s) s = new DescriptorServer(service);
  return *s;
}

bool DescriptorServer::publish(int fd, const void *bytes, size_t n, uint64_t *token, std::string *error) {
  if (fd < 0 || n > kDescriptorBytesMax || (n > 0 && !bytes) || !token) {
    *error = "publish: a descriptor and at most " + std::to_string(kDescriptorBytesMax) + " bytes";
    return false;
  }
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->start(error)) return false;
  uint64_t t;
  do {
    t = state_->tokens();
  } while (t == 0 || state_->entries.count(t));
  state_->entries[t] = State::Entry{fd, std::string(static_cast<const char *>(bytes), n)};
  *token = t;
  return true;
}

void DescriptorServer::withdraw(uint64_t token) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->entries.erase(token);
}

size_t DescriptorServer::published() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->entries.size();
}

bool fetch_descriptor(const std::string &service, uint32_t pid, uint64_t token, int *fd, void *bytes,
                      size_t capacity, size_t *n, std::string *error) {
  const std::string who = "process " + std::to_string(pid);
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    *error = errno_text("socket");
    return false;
  }
  std::unique_ptr<int, void (*)(int *)> closer(new int(s), [](int *p) {
    close(*p);
    delete p;
  });
  bound_waits(s, kRequestTimeout);
  sockaddr_un addr;
  const socklen_t len = socket_address(service, pid, &addr);
  if (connect(s, reinterpret_cast<sockaddr *>(&addr), len) != 0) {
    *error = errno == ECONNREFUSED || errno == ENOENT
                 ? who + " does not share " + service + " memory (it has ended, or never exported any)"
                 : errno_text("connect to " + who);
    return false;
  }
  uint32_t peer_pid = 0;
  uid_t peer_uid = 0;
  // Anyone can bind an abstract name: the answer counts only from the
  // process the handle names, run by this user.
  if (!peer_is(s, &peer_pid, &peer_uid) || peer_pid != pid || peer_uid != getuid()) {
    *error = "the socket for " + who + " belongs to another process or user";
    return false;
  }
  const Request req{kRequestMagic, 0, token};
  if (send(s, &req, sizeof req, MSG_NOSIGNAL) != ssize_t(sizeof req)) {
    *error = errno_text("sending the request to " + who);
    return false;
  }
  Reply reply{};
  iovec iov{&reply, sizeof reply};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = recvmsg(s, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  } while (got < 0 && errno == EINTR);
  int received = -1;
  for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
      std::memcpy(&received, CMSG_DATA(c), sizeof received);
  if (got != ssize_t(sizeof reply) || reply.magic != kReplyMagic) {
    if (received >= 0) close(received);
    *error = got < 0 ? errno_text("waiting for " + who) : "a malformed answer from " + who;
    return false;
  }
  if (reply.status != kFound || received < 0 || reply.n > capacity || reply.n > kDescriptorBytesMax) {
    if (received >= 0) close(received);
    *error = reply.status == kUnknownToken ? who + " no longer shares this memory (freed, or its context destroyed)"
             : reply.status == kOtherUser  ? who + " refused: another user's process"
                                           : "a refused or malformed answer from " + who;
    return false;
  }
  std::memcpy(bytes, reply.bytes, reply.n);
  *n = reply.n;
  *fd = received;
  return true;
}

}  // namespace gpuhal::plugin
