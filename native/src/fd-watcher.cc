#include "fd-watcher.h"

#include <node_api.h>
#include <sys/socket.h>

#include <cerrno>

#include "args.h"
#include "errno-error.h"

namespace amesh {

namespace {

// libuv reports POLLERR as UV_EBADF whatever the cause (unix/poll.c). On a socket the cause is its pending
// error: SO_ERROR names it (and clears it). EBADF stays when the fd has none (not a socket, or truly bad).
Napi::Error PollError(Napi::Env env, int fd, int err) {
  if (err == EBADF) {
    int pending = 0;
    socklen_t length = sizeof pending;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length) == 0 && pending != 0) {
      return ErrnoError(env, pending, "uv_poll", "(the socket's pending error, SO_ERROR)");
    }
  }
  return ErrnoError(env, err, "uv_poll");
}

}  // namespace

Napi::Function FdWatcher::Define(Napi::Env env) {
  return DefineClass(env, "FdWatcher",
                     {InstanceMethod<&FdWatcher::Watch>("watch"), InstanceMethod<&FdWatcher::Close>("close")});
}

FdWatcher::FdWatcher(const Napi::CallbackInfo& info) : Napi::ObjectWrap<FdWatcher>(info) {
  Napi::Env env = info.Env();
  int fd = FdArg(info, 0);
  if (!info[1].IsFunction()) throw Napi::TypeError::New(env, "onEvent must be a function");
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) throw Napi::Error::New(env, "no libuv loop");
  auto* handle = new uv_poll_t;
  // uv_poll_init_socket fails on an fd that is not open (EBADF) or cannot be polled (EPERM for regular files).
  int rc = uv_poll_init(loop, handle, fd);
  if (rc != 0) {
    delete handle;
    throw ErrnoError(env, -rc, "uv_poll_init");
  }
  handle->data = this;
  handle_ = handle;
  fd_ = fd;
  callback_ = Napi::Persistent(info[1].As<Napi::Function>());
  context_ = std::make_unique<Napi::AsyncContext>(env, "AmeshFdWatcher", info.This().As<Napi::Object>());
}

FdWatcher::~FdWatcher() { CloseHandle(); }

Napi::Value FdWatcher::Watch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (handle_ == nullptr) throw Napi::Error::New(env, "FdWatcher is closed");
  if (!info[0].IsBoolean() || !info[1].IsBoolean()) throw Napi::TypeError::New(env, "watch(readable, writable) takes booleans");
  int events = (info[0].As<Napi::Boolean>().Value() ? UV_READABLE : 0) |
               (info[1].As<Napi::Boolean>().Value() ? UV_WRITABLE : 0);
  int rc = events == 0 ? uv_poll_stop(handle_) : uv_poll_start(handle_, events, OnPoll);
  if (rc != 0) throw ErrnoError(env, -rc, "uv_poll_start");
  SetPinned(events != 0);
  return env.Undefined();
}

Napi::Value FdWatcher::Close(const Napi::CallbackInfo& info) {
  CloseHandle();
  SetPinned(false);
  return info.Env().Undefined();
}

void FdWatcher::OnPoll(uv_poll_t* handle, int status, int events) {
  auto* self = static_cast<FdWatcher*>(handle->data);
  Napi::Env env = self->Env();
  Napi::HandleScope scope(env);
  Napi::Value err = status < 0 ? PollError(env, self->fd_, -status).Value() : env.Null();
  try {
    self->callback_.MakeCallback(
        self->Value(),
        {err, Napi::Boolean::New(env, (events & UV_READABLE) != 0), Napi::Boolean::New(env, (events & UV_WRITABLE) != 0)},
        *self->context_);
  } catch (const Napi::Error& e) {
    // A listener threw: nothing in JS is on the stack to catch it, so it goes where Node sends an exception
    // thrown by a 'data' listener, to 'uncaughtException'.
    napi_fatal_exception(env, e.Value());
  }
}

void FdWatcher::SetPinned(bool pinned) {
  if (pinned == pinned_) return;
  pinned_ = pinned;
  if (pinned) {
    Ref();
  } else {
    Unref();
  }
}

void FdWatcher::CloseHandle() {
  if (handle_ == nullptr) return;
  // uv_close stops the poll at once, so the fd may be closed right after; the memory goes in the callback.
  uv_close(reinterpret_cast<uv_handle_t*>(handle_), [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
  handle_ = nullptr;
}

}  // namespace amesh
