#pragma once
#include <napi.h>

// AF_UNIX SOCK_SEQPACKET sockets (ZDS): Node's net module cannot wrap them, so the datagrams and the fds that
// ride on them (SCM_RIGHTS) are sent and received here, on non-blocking fds watched by an FdWatcher.
namespace amesh {

// seqpacketListen(path, backlog) -> fd of a listening socket bound at path.
Napi::Value SeqpacketListen(const Napi::CallbackInfo& info);
// seqpacketConnect(path) -> fd of a connected socket; EAGAIN when the listener's backlog is full.
Napi::Value SeqpacketConnect(const Napi::CallbackInfo& info);
// seqpacketAccept(fd) -> fd of the next connection, or null when none is waiting.
Napi::Value SeqpacketAccept(const Napi::CallbackInfo& info);
// seqpacketSend(fd, data, fds) -> true when sent, false when the socket is full (EAGAIN: nothing was sent).
Napi::Value SeqpacketSend(const Napi::CallbackInfo& info);
// seqpacketRecv(fd) -> {data, fds} for one datagram, or null when none is waiting; empty data means the peer
// closed. The fds (close-on-exec) now belong to the caller.
Napi::Value SeqpacketRecv(const Napi::CallbackInfo& info);

}  // namespace amesh
