// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Handing a file descriptor and a few bytes to another process on request.
//
// Some vendor IPC handles are file descriptors: CUDA's exportable memory
// pools (cuMemPoolExportToShareableHandle with
// CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) give one, and cuda.h says only
// that the importer must receive it "through any IPC mechanism". A
// descriptor is meaningful in its own process only; the one way to give it
// to an unrelated process that does not need ptrace rights over the
// exporter (pidfd_getfd does, which Yama's default scope refuses outside a
// process's own descendants) is SCM_RIGHTS over a Unix socket. gpuhal's IPC
// handle is a line of text the user sends any way they like, so the
// exporting process answers requests itself:
//
// - DescriptorServer::publish(token, fd, bytes) makes (fd, bytes) available
//   under a random 64-bit token. The first publish of a process starts one
//   thread that listens on the abstract Unix socket "gpuhal-<service>-<pid>"
//   (Linux's abstract namespace: no file to clean up, gone with the
//   process). withdraw(token) takes it back.
// - fetch_descriptor(service, pid, token, ...) connects to that socket and
//   receives a new descriptor for the same open file, and the bytes.
//
// Who may fetch: a process of the same user (SO_PEERCRED) that knows the
// token, which only the handle carries. Anything else is refused; a request
// that does not arrive within kClientSilenceLimit is dropped, so a stalled
// peer cannot hold the server. The exporting process must be alive and still
// publish the token: otherwise fetch fails with a message saying so. Both
// sides bound every wait (no hang on a dead or stalled peer).
//
// Abstract sockets belong to a network namespace: processes in different
// network namespaces (some container setups) cannot reach each other's.
//
// Thread safety: every function may be called from any thread. After
// fork(), the child starts its own server on its first publish (the
// parent's entries are not its to give).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpuhal::plugin {

constexpr size_t kDescriptorBytesMax = 256;  // bytes published with a descriptor
// The longest a fetch waits for its answer, and the longest the server
// waits for a connected client's request (a real one sends it at once; the
// server serves one client at a time, so a fetch queued behind a silent
// client is answered within kClientSilenceLimit + its own time).
constexpr std::chrono::milliseconds kRequestTimeout{5000};
constexpr std::chrono::milliseconds kClientSilenceLimit{1000};

class DescriptorServer {
 public:
  // The process's server for `service` (a short name of letters, digits and
  // '-'; each service is its own socket). Never destroyed: its thread serves
  // until the process ends (plugins that use it stay loaded).
  static DescriptorServer &of(const std::string &service);

  // Publishes (fd, bytes[0..n)) under a fresh random token, returned in
  // *token. `fd` stays the caller's: it must stay open until withdraw. On
  // failure (the socket or thread could not be made, n too large) returns
  // false with *error set.
  bool publish(int fd, const void *bytes, size_t n, uint64_t *token, std::string *error);
  // Takes a token back (unknown tokens are ignored). A fetch answered after
  // this returns refuses the token.
  void withdraw(uint64_t token);
  // Tokens published and not withdrawn (for tests).
  size_t published() const;

  struct State;  // defined in descriptor_channel.cpp

 private:
  explicit DescriptorServer(std::string service);
  State *state_;
};

// Asks process `pid`'s server for `service` for `token`. On success *fd is a
// new descriptor (O_CLOEXEC, the caller's to close) and bytes[0..*n) the
// published bytes (at most `capacity`). On failure returns false with
// *error naming why (no such process or server, token unknown, another
// user, timeout).
bool fetch_descriptor(const std::string &service, uint32_t pid, uint64_t token, int *fd, void *bytes,
                      size_t capacity, size_t *n, std::string *error);

}  // namespace gpuhal::plugin
