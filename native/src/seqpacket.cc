#include "seqpacket.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "args.h"
#include "errno-error.h"
#include "unique-fd.h"

namespace amesh {

namespace {

// The kernel's SCM_MAX_FD (not in the uapi headers): the most fds one message can carry. Receiving with room
// for that many means the kernel never has to drop fds for lack of control space.
constexpr size_t kMaxFds = 253;

sockaddr_un UnixAddress(Napi::Env env, const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) ThrowErrno(env, ENAMETOOLONG, "bind", path);
  std::memcpy(a.sun_path, path.data(), path.size());
  return a;
}

UniqueFd NewSeqpacketSocket(Napi::Env env) {
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) ThrowErrno(env, errno, "socket");
  return fd;
}

bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

Napi::Value SeqpacketListen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = StringArg(info, 0, "path");
  int backlog = static_cast<int>(Uint32Arg(info, 1, "backlog", 65535));
  sockaddr_un address = UnixAddress(env, path);
  UniqueFd fd = NewSeqpacketSocket(env);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ThrowErrno(env, errno, "bind", path);
  if (listen(fd.get(), backlog) != 0) ThrowErrno(env, errno, "listen", path);
  return Napi::Number::New(env, fd.release());
}

Napi::Value SeqpacketConnect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = StringArg(info, 0, "path");
  sockaddr_un address = UnixAddress(env, path);
  UniqueFd fd = NewSeqpacketSocket(env);
  // A unix-domain connect completes at once or fails; non-blocking, it fails with EAGAIN instead of waiting on a
  // full backlog with Node's main thread.
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ThrowErrno(env, errno, "connect", path);
  }
  return Napi::Number::New(env, fd.release());
}

Napi::Value SeqpacketAccept(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = accept4(FdArg(info, 0), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    if (WouldBlock(errno)) return env.Null();
    ThrowErrno(env, errno, "accept4");
  }
  return Napi::Number::New(env, fd);
}

Napi::Value SeqpacketSend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(info, 0);
  if (!info[1].IsBuffer()) throw Napi::TypeError::New(env, "data must be a Buffer");
  auto data = info[1].As<Napi::Buffer<uint8_t>>();
  // The peer reads an empty datagram as the end of the connection.
  if (data.Length() == 0) throw Napi::RangeError::New(env, "a SEQPACKET datagram must not be empty");
  if (!info[2].IsArray()) throw Napi::TypeError::New(env, "fds must be an array");
  auto fdArray = info[2].As<Napi::Array>();
  if (fdArray.Length() > kMaxFds) throw Napi::RangeError::New(env, "at most 253 fds fit in one message");
  std::vector<int> fds;
  for (uint32_t i = 0; i < fdArray.Length(); i++) fds.push_back(FdValue(env, fdArray.Get(i), "fds[i]"));

  iovec iov{data.Data(), data.Length()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control;
  if (!fds.empty()) {
    control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  // A SEQPACKET send is all or nothing, so there is no partial write to track. MSG_NOSIGNAL: a closed peer is
  // an EPIPE error here, not a signal.
  if (sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    if (WouldBlock(errno)) return Napi::Boolean::New(env, false);
    ThrowErrno(env, errno, "sendmsg");
  }
  return Napi::Boolean::New(env, true);
}

Napi::Value SeqpacketRecv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(info, 0);
  // Peek at the datagram's full length (MSG_TRUNC) so the buffer fits it exactly and nothing is cut off.
  ssize_t size = recv(fd, nullptr, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  if (size < 0) {
    if (WouldBlock(errno)) return env.Null();
    ThrowErrno(env, errno, "recv");
  }
  auto data = Napi::Buffer<uint8_t>::New(env, static_cast<size_t>(size));
  Napi::Array fds = Napi::Array::New(env);
  Napi::Object result = Napi::Object::New(env);
  result.Set("data", data);
  result.Set("fds", fds);
  if (size == 0) return result;

  iovec iov{data.Data(), data.Length()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxFds));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  if (recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) < 0) ThrowErrno(env, errno, "recvmsg");
  uint32_t n = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.Set(n++, received);
    }
  }
  return result;
}

}  // namespace amesh
