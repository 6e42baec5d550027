#pragma once
#include <napi.h>

#include <string>

namespace amesh {

// A JS Error shaped like Node's own system errors, so callers test `err.code === 'EPERM'` as they do with
// node:net: message "<syscall> <CODE>: <strerror> <detail>", code (the errno name), errno (negative, as
// Node's are) and syscall.
Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& detail = "");

// Throws ErrnoError; node-addon-api turns the C++ exception into a JS throw when the call returns.
[[noreturn]] void ThrowErrno(Napi::Env env, int err, const char* syscall, const std::string& detail = "");

}  // namespace amesh
