#pragma once
#include <napi.h>

namespace amesh {

// Creates a socket (SOCK_CLOEXEC | SOCK_NONBLOCK) inside the network namespace `netns` names: a path such as
// /var/run/netns/NAME or /proc/PID/ns/net, or an fd on one that the caller keeps (as ZDS hands them over).
int SocketInNetns(Napi::Env env, const Napi::Value& netns, int domain, int type);

// netnsId(netns) -> {dev, ino} as bigints: a network namespace's identity, the same through every path and fd.
Napi::Value NetnsId(const Napi::CallbackInfo& info);

}  // namespace amesh
