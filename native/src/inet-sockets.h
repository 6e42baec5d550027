#pragma once
#include <napi.h>

// TCP and UDP sockets for a pod: made inside its netns, with the options in-pod capture needs.
namespace amesh {

// tcpListenInNetns(netns, host, port, {transparent?, mark?, reusePort? (default true), backlog?}) -> fd of a
// listening socket.
Napi::Value TcpListenInNetns(const Napi::CallbackInfo& info);
// udpBindInNetns(netns, host, port, {transparent?, mark?, reusePort? (default true)}) -> fd of a bound UDP socket
// (no SO_REUSEADDR: only reusePort shares its port).
Napi::Value UdpBindInNetns(const Napi::CallbackInfo& info);
// tcpSocketInNetns(netns, family 4|6, {transparent?, freebind?, mark?}) -> fd of an unconnected TCP socket.
Napi::Value TcpSocketInNetns(const Napi::CallbackInfo& info);
// setMark(fd, mark): SO_MARK.
Napi::Value SetMark(const Napi::CallbackInfo& info);
// setTransparent(fd): IP_TRANSPARENT or IPV6_TRANSPARENT, by the socket's own family.
Napi::Value SetTransparent(const Napi::CallbackInfo& info);
// originalDst(fd) -> {address, port, family}: where the client sent it before an iptables REDIRECT.
Napi::Value OriginalDst(const Napi::CallbackInfo& info);

}  // namespace amesh
