// The addon's entry point: the syscalls Node lacks, one function each (see src/native/native.ts for the typed API).
#include <napi.h>

#include "fd-watcher.h"
#include "inet-sockets.h"
#include "netns.h"
#include "seqpacket.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("netnsId", Napi::Function::New<amesh::NetnsId>(env, "netnsId"));
  exports.Set("tcpListenInNetns", Napi::Function::New<amesh::TcpListenInNetns>(env, "tcpListenInNetns"));
  exports.Set("udpBindInNetns", Napi::Function::New<amesh::UdpBindInNetns>(env, "udpBindInNetns"));
  exports.Set("tcpSocketInNetns", Napi::Function::New<amesh::TcpSocketInNetns>(env, "tcpSocketInNetns"));
  exports.Set("tcpSocket", Napi::Function::New<amesh::TcpSocket>(env, "tcpSocket"));
  exports.Set("setMark", Napi::Function::New<amesh::SetMark>(env, "setMark"));
  exports.Set("setTransparent", Napi::Function::New<amesh::SetTransparent>(env, "setTransparent"));
  exports.Set("originalDst", Napi::Function::New<amesh::OriginalDst>(env, "originalDst"));
  exports.Set("seqpacketListen", Napi::Function::New<amesh::SeqpacketListen>(env, "seqpacketListen"));
  exports.Set("seqpacketConnect", Napi::Function::New<amesh::SeqpacketConnect>(env, "seqpacketConnect"));
  exports.Set("seqpacketAccept", Napi::Function::New<amesh::SeqpacketAccept>(env, "seqpacketAccept"));
  exports.Set("seqpacketSend", Napi::Function::New<amesh::SeqpacketSend>(env, "seqpacketSend"));
  exports.Set("seqpacketRecv", Napi::Function::New<amesh::SeqpacketRecv>(env, "seqpacketRecv"));
  exports.Set("FdWatcher", amesh::FdWatcher::Define(env));
  return exports;
}

}  // namespace

NODE_API_MODULE(amesh_native, Init)
