#pragma once
#include <napi.h>
#include <uv.h>

#include <memory>

namespace amesh {

// new FdWatcher(fd, onEvent): a libuv poll watcher on an fd that Node's own handles cannot wrap (SEQPACKET).
// watch(readable, writable) sets what to wait for (both false stops); onEvent(err, readable, writable) runs on
// Node's event loop; a socket's error condition (POLLERR, which libuv reports as EBADF) comes as its pending
// error (SO_ERROR), e.g. ECONNRESET. close() stops it for good. The watcher never closes the fd: its owner does, after close().
// While it watches, the watcher keeps itself (and so its callback) from being collected, as an active
// net.Socket is.
class FdWatcher : public Napi::ObjectWrap<FdWatcher> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit FdWatcher(const Napi::CallbackInfo& info);
  ~FdWatcher() override;

 private:
  Napi::Value Watch(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  static void OnPoll(uv_poll_t* handle, int status, int events);
  void SetPinned(bool pinned);
  void CloseHandle();

  // Heap-allocated: libuv frees it only after the close callback, which can come after this object is gone.
  uv_poll_t* handle_ = nullptr;
  int fd_ = -1;
  Napi::FunctionReference callback_;
  std::unique_ptr<Napi::AsyncContext> context_;
  bool pinned_ = false;
};

}  // namespace amesh
