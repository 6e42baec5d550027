#include "netns.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "args.h"
#include "errno-error.h"
#include "unique-fd.h"

namespace amesh {

namespace {

// The netns argument as an fd: a path is opened here and closed when done; a number is the caller's fd.
class NetnsFd {
 public:
  NetnsFd(Napi::Env env, const Napi::Value& netns) {
    if (netns.IsString()) {
      name_ = netns.As<Napi::String>().Utf8Value();
      owned_ = open(name_.c_str(), O_RDONLY | O_CLOEXEC);
      if (owned_ < 0) ThrowErrno(env, errno, "open", name_);
      fd_ = owned_;
    } else if (netns.IsNumber()) {
      fd_ = FdValue(env, netns, "netns fd");
      name_ = "fd " + std::to_string(fd_);
    } else {
      throw Napi::TypeError::New(env, "netns must be a path or an fd");
    }
  }
  ~NetnsFd() {
    if (owned_ >= 0) close(owned_);
  }
  NetnsFd(const NetnsFd&) = delete;
  NetnsFd& operator=(const NetnsFd&) = delete;
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  int owned_ = -1;
  std::string name_;
};

}  // namespace

// setns moves only the calling thread (here Node's main thread), and a socket belongs for life to the netns it
// was created in: bind, listen, connect and setsockopt on it later act there whatever netns the caller is in.
// So only socket() runs inside, and the thread is outside again before anything can throw or call into JS.
int SocketInNetns(Napi::Env env, const Napi::Value& netns, int domain, int type) {
  NetnsFd target(env, netns);
  UniqueFd self(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (self.get() < 0) ThrowErrno(env, errno, "open", "/proc/thread-self/ns/net");
  if (setns(target.fd(), CLONE_NEWNET) != 0) ThrowErrno(env, errno, "setns", target.name());
  int fd = socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int socketErrno = errno;
  if (setns(self.get(), CLONE_NEWNET) != 0) {
    // Staying would make every later socket of this process, the host's included, a socket in that pod.
    std::fprintf(stderr, "amesh native: cannot return to the thread's own netns after entering %s: %s\n",
                 target.name().c_str(), std::strerror(errno));
    std::abort();
  }
  if (fd < 0) ThrowErrno(env, socketErrno, "socket", "in netns " + target.name());
  return fd;
}

Napi::Value NetnsId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  NetnsFd ns(env, info[0]);
  // Any file has a (dev, ino); only an nsfs file of type CLONE_NEWNET is a network namespace.
  int type = ioctl(ns.fd(), NS_GET_NSTYPE);
  if (type < 0 && errno != ENOTTY) ThrowErrno(env, errno, "ioctl", "NS_GET_NSTYPE " + ns.name());
  if (type != CLONE_NEWNET) ThrowErrno(env, EINVAL, "ioctl", ns.name() + " is not a network namespace");
  struct stat st;
  if (fstat(ns.fd(), &st) != 0) ThrowErrno(env, errno, "fstat", ns.name());
  Napi::Object id = Napi::Object::New(env);
  id.Set("dev", Napi::BigInt::New(env, static_cast<uint64_t>(st.st_dev)));
  id.Set("ino", Napi::BigInt::New(env, static_cast<uint64_t>(st.st_ino)));
  return id;
}

}  // namespace amesh
