#!/usr/bin/python3
"""Reads the TCP options of a socket held by another process, as the kernel has them (not as Node reports them).

Usage: socket_options.py PID FD. Takes a duplicate of the process's FD with pidfd_getfd(2) (Linux 5.6; needs
ptrace access to PID, so root for a parent process) and prints JSON: nodelay, keepalive, keepidle (s), keepintvl (s),
keepcnt.
"""
import ctypes
import json
import os
import socket
import sys

SYS_PIDFD_GETFD = 438  # x86_64 and aarch64 alike


def main():
    pid, fd = int(sys.argv[1]), int(sys.argv[2])
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    dup = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
    if dup < 0:
        err = ctypes.get_errno()
        sys.exit(f"pidfd_getfd({pid}, {fd}): {os.strerror(err)}")
    s = socket.socket(fileno=dup)
    try:
        tcp = socket.IPPROTO_TCP
        print(json.dumps({
            "nodelay": s.getsockopt(tcp, socket.TCP_NODELAY),
            "keepalive": s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
            "keepidle": s.getsockopt(tcp, socket.TCP_KEEPIDLE),
            "keepintvl": s.getsockopt(tcp, socket.TCP_KEEPINTVL),
            "keepcnt": s.getsockopt(tcp, socket.TCP_KEEPCNT),
        }))
    finally:
        s.close()
        os.close(pidfd)


if __name__ == "__main__":
    main()
