#include "inet-sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "args.h"
#include "errno-error.h"
#include "netns.h"
#include "unique-fd.h"

// From <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h>, whose includes clash with glibc's
// <netinet/in.h>: the getsockopt names under which conntrack reports a connection's pre-NAT destination.
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#define IP6T_SO_ORIGINAL_DST 80
// From <linux/in6.h>, which glibc's <netinet/in.h> does not define before 2.38.
#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78
#endif
// From <linux/in.h> (Linux 4.2); honoured by IPv6 sockets too.
#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

namespace amesh {

namespace {

struct InetAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = 0;
  std::string text;
};

InetAddress ParseInetAddress(Napi::Env env, const std::string& host, uint16_t port) {
  InetAddress a;
  a.text = host + " port " + std::to_string(port);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.length = sizeof(sockaddr_in6);
  } else {
    throw Napi::TypeError::New(env, "host must be an IPv4 or IPv6 address, got '" + host + "'");
  }
  a.family = a.storage.ss_family;
  return a;
}

struct InetOptions {
  bool transparent = false;
  bool freebind = false;
  std::optional<uint32_t> mark;
};

InetOptions ParseInetOptions(const Napi::Object& options) {
  return InetOptions{BoolOption(options, "transparent"), BoolOption(options, "freebind"), Uint32Option(options, "mark")};
}

void SetIntOption(Napi::Env env, int fd, int level, int name, int value, const char* what) {
  if (setsockopt(fd, level, name, &value, sizeof value) != 0) ThrowErrno(env, errno, "setsockopt", what);
}

int SocketFamily(Napi::Env env, int fd) {
  int family = 0;
  socklen_t length = sizeof family;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &length) != 0) ThrowErrno(env, errno, "getsockopt", "SO_DOMAIN");
  return family;
}

void ApplyTransparent(Napi::Env env, int fd, int family) {
  if (family == AF_INET) {
    SetIntOption(env, fd, SOL_IP, IP_TRANSPARENT, 1, "IP_TRANSPARENT");
  } else if (family == AF_INET6) {
    SetIntOption(env, fd, SOL_IPV6, IPV6_TRANSPARENT, 1, "IPV6_TRANSPARENT");
  } else {
    ThrowErrno(env, EAFNOSUPPORT, "setsockopt", "IP_TRANSPARENT needs an IPv4 or IPv6 socket");
  }
}

void ApplyFreebind(Napi::Env env, int fd, int family) {
  if (family == AF_INET) {
    SetIntOption(env, fd, SOL_IP, IP_FREEBIND, 1, "IP_FREEBIND");
  } else {
    SetIntOption(env, fd, SOL_IPV6, IPV6_FREEBIND, 1, "IPV6_FREEBIND");
  }
}

void ApplyMark(Napi::Env env, int fd, uint32_t mark) {
  if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof mark) != 0) ThrowErrno(env, errno, "setsockopt", "SO_MARK");
}

void ApplyOptions(Napi::Env env, int fd, int family, const InetOptions& options) {
  if (options.transparent) ApplyTransparent(env, fd, family);
  if (options.freebind) ApplyFreebind(env, fd, family);
  if (options.mark) ApplyMark(env, fd, *options.mark);
}

// A socket in `netns` bound to host:port with the options every in-pod listener shares: SO_REUSEPORT (unless
// options.reusePort is false) so that a new ztunnel can bind beside the old one and take over, and for TCP
// SO_REUSEADDR (a port whose old connections linger in TIME_WAIT can be bound again). Not for UDP: there
// SO_REUSEADDR lets any other socket with it bind the same port, the sharing reusePort=false turns off. IPv6
// sockets are IPv6-only, so 0.0.0.0:P and [::]:P can both be bound, one per family, as in a dual-stack
// pod.
UniqueFd BoundSocketInNetns(const Napi::CallbackInfo& info, int type) {
  Napi::Env env = info.Env();
  InetAddress address = ParseInetAddress(env, StringArg(info, 1, "host"), Uint32Arg(info, 2, "port", 65535));
  Napi::Object raw = OptionsArg(info, 3);
  InetOptions options = ParseInetOptions(raw);
  bool reusePort = raw.Get("reusePort").IsUndefined() || BoolOption(raw, "reusePort");
  UniqueFd fd(SocketInNetns(env, info[0], address.family, type));
  if (type == SOCK_STREAM) SetIntOption(env, fd.get(), SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
  if (reusePort) SetIntOption(env, fd.get(), SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT");
  if (address.family == AF_INET6) SetIntOption(env, fd.get(), SOL_IPV6, IPV6_V6ONLY, 1, "IPV6_V6ONLY");
  ApplyOptions(env, fd.get(), address.family, options);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&address.storage), address.length) != 0) {
    ThrowErrno(env, errno, "bind", address.text);
  }
  return fd;
}

}  // namespace

Napi::Value TcpListenInNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // Node's own default backlog.
  int backlog = static_cast<int>(Uint32Option(OptionsArg(info, 3), "backlog", 65535).value_or(511));
  UniqueFd fd = BoundSocketInNetns(info, SOCK_STREAM);
  if (listen(fd.get(), backlog) != 0) ThrowErrno(env, errno, "listen");
  return Napi::Number::New(env, fd.release());
}

Napi::Value UdpBindInNetns(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), BoundSocketInNetns(info, SOCK_DGRAM).release());
}

namespace {

int FamilyArg(const Napi::CallbackInfo& info, size_t index) {
  uint32_t version = Uint32Arg(info, index, "family", 6);
  if (version != 4 && version != 6) throw Napi::RangeError::New(info.Env(), "family must be 4 or 6");
  return version == 4 ? AF_INET : AF_INET6;
}

// A socket that will connect, perhaps from a chosen address (Node binds it to port 0 first): with
// IP_BIND_ADDRESS_NO_PORT the kernel picks the port at connect, for the whole 4-tuple. Picked at bind, a port
// must be free for every destination, so ports in TIME_WAIT from one source address soon leave bind() few
// to choose from, and slow it down until it fails.
Napi::Value ConnectingSocket(Napi::Env env, int rawFd, int family, const InetOptions& options) {
  UniqueFd fd(rawFd);
  ApplyOptions(env, fd.get(), family, options);
  SetIntOption(env, fd.get(), SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1, "IP_BIND_ADDRESS_NO_PORT");
  return Napi::Number::New(env, fd.release());
}

}  // namespace

Napi::Value TcpSocketInNetns(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int family = FamilyArg(info, 1);
  InetOptions options = ParseInetOptions(OptionsArg(info, 2));
  return ConnectingSocket(env, SocketInNetns(env, info[0], family, SOCK_STREAM), family, options);
}

Napi::Value TcpSocket(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int family = FamilyArg(info, 0);
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) ThrowErrno(env, errno, "socket");
  return ConnectingSocket(env, fd, family, InetOptions{});
}

Napi::Value SetMark(const Napi::CallbackInfo& info) {
  ApplyMark(info.Env(), FdArg(info, 0), Uint32Arg(info, 1, "mark"));
  return info.Env().Undefined();
}

Napi::Value SetTransparent(const Napi::CallbackInfo& info) {
  int fd = FdArg(info, 0);
  ApplyTransparent(info.Env(), fd, SocketFamily(info.Env(), fd));
  return info.Env().Undefined();
}

Napi::Value OriginalDst(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(info, 0);
  int family = SocketFamily(env, fd);
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  int rc;
  if (family == AF_INET) {
    rc = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &storage, &length);
  } else if (family == AF_INET6) {
    rc = getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &storage, &length);
  } else {
    ThrowErrno(env, EAFNOSUPPORT, "getsockopt", "SO_ORIGINAL_DST needs an IPv4 or IPv6 socket");
  }
  // ENOENT: conntrack holds no entry for this connection (nothing in its netns uses NAT or conntrack).
  if (rc != 0) ThrowErrno(env, errno, "getsockopt", "SO_ORIGINAL_DST");
  char text[INET6_ADDRSTRLEN];
  uint16_t port;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("address", text);
  result.Set("port", port);
  result.Set("family", family == AF_INET ? 4 : 6);
  return result;
}

}  // namespace amesh
