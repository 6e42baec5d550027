#!/usr/bin/python3
"""An HTTP/1.1 upstream that is not amesh's (the standard library's http.server), failing on request, for the
waypoint's retries and mirrors.

Paths (anywhere in the path):
  fail/KEY/N   the first N requests with that KEY are answered 503, later ones 200;
  hang/KEY/N   the first N requests with that KEY get no answer for 10 s (then 200), later ones 200 at once;
  anything else 200.
A 200's body is JSON: the request's path, how many requests with its KEY came so far, and the body's length.

usage: flaky_http_server.py HOST PORT
Prints "listening PORT", then one JSON line per request it receives: method, path, Host, the body's length.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_lock = threading.Lock()
_seen = {}


def _count(key):
    with _lock:
        _seen[key] = _seen.get(key, 0) + 1
        return _seen[key]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _serve(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        with _lock:
            print(
                json.dumps(
                    {"method": self.command, "path": self.path, "host": self.headers.get("host"), "body": len(body)}
                ),
                flush=True,
            )
        parts = self.path.split("?")[0].split("/")
        attempt = 0
        for i in range(len(parts) - 2):
            if parts[i] in ("fail", "hang") and parts[i + 2].isdigit():
                attempt = _count("/".join(parts[i : i + 2]))
                if attempt <= int(parts[i + 2]):
                    if parts[i] == "fail":
                        self._answer(503, b"failing")
                        return
                    time.sleep(10)
                break
        self._answer(200, json.dumps({"path": self.path, "attempt": attempt, "body": len(body)}).encode())

    def _answer(self, status, payload):
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the proxy gave up on this attempt

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def log_message(self, *args):
        pass  # one JSON line per request is all it prints


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    print("listening %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
