#pragma once
#include <napi.h>

#include <cstdint>
#include <optional>
#include <string>

// Argument checks for the exported functions: a wrong type or range throws a TypeError or RangeError into JS
// before any syscall runs, never a crash or a half-made socket.
namespace amesh {

int FdValue(Napi::Env env, const Napi::Value& v, const char* name);
int FdArg(const Napi::CallbackInfo& info, size_t i);
std::string StringArg(const Napi::CallbackInfo& info, size_t i, const char* name);
uint32_t Uint32Arg(const Napi::CallbackInfo& info, size_t i, const char* name, uint32_t max = UINT32_MAX);
// An optional object of options: undefined stands for {}.
Napi::Object OptionsArg(const Napi::CallbackInfo& info, size_t i);
bool BoolOption(const Napi::Object& options, const char* name);
std::optional<uint32_t> Uint32Option(const Napi::Object& options, const char* name, uint32_t max = UINT32_MAX);

}  // namespace amesh
