#pragma once
#include <napi.h>

// TCP and UDP sockets for a pod, made inside its netns with the options in-pod capture needs, and connecting
// sockets of the host that bind an address before they connect.
namespace amesh {

// tcpListenInNetns(netns, host, port, {transparent?, mark?, reusePort? (default true), backlog?}) -> fd of a
// listening socket.
Napi::Value TcpListenInNetns(const Napi::CallbackInfo& info);
// udpBindInNetns(netns, host, port, {transparent?, mark?, reusePort? (default true)}) -> fd of a bound UDP socket
// (no SO_REUSEADDR: only reusePort shares its port).
Napi::Value UdpBindInNetns(const Napi::CallbackInfo& info);
// tcpSocketInNetns(netns, family 4|6, {transparent?, freebind?, mark?}) -> fd of an unconnected TCP socket whose
// port, if it is bound to an address first, is chosen at connect (IP_BIND_ADDRESS_NO_PORT).
Napi::Value TcpSocketInNetns(const Napi::CallbackInfo& info);
// tcpSocket(family 4|6) -> the same in this process's own netns.
Napi::Value TcpSocket(const Napi::CallbackInfo& info);
// setMark(fd, mark): SO_MARK.
Napi::Value SetMark(const Napi::CallbackInfo& info);
// setTransparent(fd): IP_TRANSPARENT or IPV6_TRANSPARENT, by the socket's own family.
Napi::Value SetTransparent(const Napi::CallbackInfo& info);
// originalDst(fd) -> {address, port, family}: where the client sent it before an iptables REDIRECT.
Napi::Value OriginalDst(const Napi::CallbackInfo& info);

}  // namespace amesh
