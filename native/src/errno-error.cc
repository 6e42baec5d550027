#include "errno-error.h"

#include <uv.h>

#include <cstring>

namespace amesh {

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& detail) {
  // libuv's error codes are the negated errno values on Linux, so it names them for us.
  const char* code = uv_err_name(-err);
  std::string message = std::string(syscall) + " " + code + ": " + std::strerror(err);
  if (!detail.empty()) message += " " + detail;
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  e.Set("errno", Napi::Number::New(env, -err));
  e.Set("syscall", Napi::String::New(env, syscall));
  return e;
}

void ThrowErrno(Napi::Env env, int err, const char* syscall, const std::string& detail) {
  throw ErrnoError(env, err, syscall, detail);
}

}  // namespace amesh
