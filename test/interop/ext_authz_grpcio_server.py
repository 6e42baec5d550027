#!/usr/bin/python3
"""An ext_authz provider that is not amesh's, in two modes, deciding by one header: a request carrying
`x-py-authz: yes` is allowed, any other is denied.

grpc: Envoy's /envoy.service.auth.v3.Authorization/Check served with Debian's python3-grpcio (plaintext HTTP/2) through
a generic handler that sees the raw bytes: each CheckRequest is decoded and each CheckResponse encoded by hand from
the field numbers of Envoy's api/envoy/service/auth/v3/external_auth.proto and attribute_context.proto (with
config/core/v3/base.proto, type/v3/http_status.proto and googleapis google/rpc/status.proto), without amesh's
.proto files. Allowed: status OK and an ok_response adding `x-py-checked: <the path it saw>` to the request sent
upstream and `x-py-verdict: allowed` to the response. Denied: status PERMISSION_DENIED (7) and a denied_response of
418 with `x-py-verdict: denied` and the body `python says no`.

http: Envoy's HTTP ext_authz API, served with the standard library's http.server. Allowed: 200 with
`x-py-checked: <path>` (and `x-py-verdict: allowed`, which a provider config may or may not pass on). Denied: 403 with
`x-py-verdict: denied` and the body `python http says no`.

usage: ext_authz_grpcio_server.py grpc|http HOST PORT
Prints "listening PORT", then one JSON line per check it receives: what it saw of the request (for grpc the
source principal too) and its verdict.
"""
import json
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pbwire import field, fields, varint

ALLOW_HEADER, ALLOW_VALUE = "x-py-authz", "yes"
OK, PERMISSION_DENIED = 0, 7

_print_lock = threading.Lock()


def log(line):
    with _print_lock:
        print(json.dumps(line), flush=True)


def ld(num, payload):
    return field(num, 2, payload)


def text(msg, num):
    """The last occurrence of string field `num` of a decoded message, as proto3 reads a repeated scalar."""
    values = msg.get(num, [])
    return values[-1].decode() if values else ""


def sub(msg, num):
    """Sub-message field `num`, decoded; an absent one reads as the empty message."""
    values = msg.get(num, [])
    return fields(values[-1]) if values else {}


def read_check_request(raw):
    """What the Check saw: CheckRequest.attributes = 1; AttributeContext.source = 1 (Peer.principal = 4), request = 4
    (Request.http = 2: HttpRequest id = 1, method = 2, headers = 3 as map entries of key = 1 and value = 2,
    path = 4, host = 5)."""
    attributes = sub(fields(raw), 1)
    source = sub(attributes, 1)
    http = sub(sub(attributes, 4), 2)
    headers = {}
    for entry in http.get(3, []):
        kv = fields(entry)
        headers[text(kv, 1)] = text(kv, 2)
    return {"principal": text(source, 4), "id": text(http, 1), "method": text(http, 2), "path": text(http, 4),
            "host": text(http, 5), "headers": headers}


def header_option(key, value):
    """config.core.v3.HeaderValueOption: header = 1 (HeaderValue: key = 1, value = 2)."""
    return ld(1, ld(1, key.encode()) + ld(2, value.encode()))


def rpc_status(code, message=""):
    """google.rpc.Status: code = 1, message = 2 (proto3: defaults left out)."""
    return (field(1, 0, varint(code)) if code else b"") + (ld(2, message.encode()) if message else b"")


def check_response(seen):
    """CheckResponse: status = 1, denied_response = 2 (status = 1 as type.v3.HttpStatus code = 1, headers = 2,
    body = 3), ok_response = 3 (headers = 2, response_headers_to_add = 6)."""
    if seen["headers"].get(ALLOW_HEADER) == ALLOW_VALUE:
        ok = ld(2, header_option("x-py-checked", seen["path"])) + ld(6, header_option("x-py-verdict", "allowed"))
        return "allowed", ld(1, rpc_status(OK)) + ld(3, ok)
    denied = (ld(1, field(1, 0, varint(418))) + ld(2, header_option("x-py-verdict", "denied"))
              + ld(3, b"python says no"))
    return "denied", ld(1, rpc_status(PERMISSION_DENIED, "no x-py-authz: yes")) + ld(2, denied)


def check(raw, _context):
    seen = read_check_request(raw)
    verdict, answer = check_response(seen)
    log(dict(seen, verdict=verdict))
    return answer


def serve_grpc(host, port):
    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    # No (de)serializers: the handler is given the request's bytes and returns the response's.
    handler = grpc.method_handlers_generic_handler(
        "envoy.service.auth.v3.Authorization", {"Check": grpc.unary_unary_rpc_method_handler(check)})
    server.add_generic_rpc_handlers((handler,))
    bound = server.add_insecure_port("%s:%d" % (host, port))
    if not bound:
        sys.exit("cannot listen on %s:%d" % (host, port))
    server.start()
    print("listening %d" % bound, flush=True)
    server.wait_for_termination()


class HttpCheck(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def decide(self):
        if self.headers.get("content-length", "0") != "0":
            self.rfile.read(int(self.headers["content-length"]))
        headers = {k.lower(): v for k, v in self.headers.items()}
        allowed = headers.get(ALLOW_HEADER) == ALLOW_VALUE
        log({"method": self.command, "path": self.path, "headers": headers,
             "verdict": "allowed" if allowed else "denied"})
        body = b"" if allowed else b"python http says no"
        self.send_response(200 if allowed else 403)
        if allowed:
            self.send_header("x-py-checked", self.path)
        self.send_header("x-py-verdict", "allowed" if allowed else "denied")
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = decide

    def log_message(self, *_args):
        pass  # one JSON line per check is all it prints


def serve_http(host, port):
    server = ThreadingHTTPServer((host, port), HttpCheck)
    print("listening %d" % server.server_address[1], flush=True)
    server.serve_forever()


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    {"grpc": serve_grpc, "http": serve_http}[mode](host, port)


if __name__ == "__main__":
    main()
