#include "args.h"

#include <cmath>
#include <climits>

namespace amesh {

namespace {

// A JS number that is a whole number in [0, max], else a RangeError/TypeError naming `name`.
uint32_t ToUint32(Napi::Env env, const Napi::Value& v, const std::string& name, uint32_t max) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, name + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d != std::floor(d) || d < 0 || d > max) {
    throw Napi::RangeError::New(env, name + " must be an integer from 0 to " + std::to_string(max));
  }
  return static_cast<uint32_t>(d);
}

}  // namespace

int FdValue(Napi::Env env, const Napi::Value& v, const char* name) {
  return static_cast<int>(ToUint32(env, v, name, INT_MAX));
}

int FdArg(const Napi::CallbackInfo& info, size_t i) { return FdValue(info.Env(), info[i], "fd"); }

std::string StringArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsString()) throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

uint32_t Uint32Arg(const Napi::CallbackInfo& info, size_t i, const char* name, uint32_t max) {
  return ToUint32(info.Env(), info[i], name, max);
}

Napi::Object OptionsArg(const Napi::CallbackInfo& info, size_t i) {
  if (info[i].IsUndefined()) return Napi::Object::New(info.Env());
  if (!info[i].IsObject()) throw Napi::TypeError::New(info.Env(), "options must be an object");
  return info[i].As<Napi::Object>();
}

bool BoolOption(const Napi::Object& options, const char* name) {
  Napi::Value v = options.Get(name);
  if (v.IsUndefined()) return false;
  if (!v.IsBoolean()) throw Napi::TypeError::New(options.Env(), std::string("options.") + name + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

std::optional<uint32_t> Uint32Option(const Napi::Object& options, const char* name, uint32_t max) {
  Napi::Value v = options.Get(name);
  if (v.IsUndefined()) return std::nullopt;
  return ToUint32(options.Env(), v, std::string("options.") + name, max);
}

}  // namespace amesh
