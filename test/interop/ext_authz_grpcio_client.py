#!/usr/bin/python3
"""Calls an ext_authz server's /envoy.service.auth.v3.Authorization/Check with Debian's python3-grpcio, as Envoy's
ext_authz filter does, encoding each CheckRequest and decoding each CheckResponse by hand from the field numbers of
Envoy's api/envoy/service/auth/v3/external_auth.proto and attribute_context.proto (and config/core/v3/base.proto,
address.proto, type/v3/http_status.proto, googleapis google/rpc/status.proto), without amesh's .proto files.

usage: ext_authz_grpcio_client.py ADDRESS CASES_JSON
CASES_JSON: a list of {"headers": {name: value}, "principal": str, "host": str, "path": str}.
Prints one JSON list: per case, the decoded response.
"""
import json
import sys

import grpc

from pbwire import field, fields, varint


def ld(num, payload):
    return field(num, 2, payload)


def entry(key, value):
    """A map<string, string> entry: key = 1, value = 2."""
    return ld(1, key.encode()) + ld(2, value.encode())


def check_request(case):
    # config.core.v3.Address.socket_address = 1: SocketAddress.address = 2, port_value = 3.
    address = ld(1, ld(2, b"10.0.0.7") + field(3, 0, varint(43210)))
    # AttributeContext.Peer: address = 1, principal = 4.
    source = ld(1, address) + ld(4, case["principal"].encode())
    destination = ld(4, b"spiffe://cluster.local/ns/backend/sa/httpbin")
    # AttributeContext.HttpRequest: id = 1, method = 2, headers = 3 (map), path = 4, host = 5, scheme = 6,
    # size = 9 (int64), protocol = 10.
    http = (ld(1, b"req-1") + ld(2, b"GET")
            + b"".join(ld(3, entry(k, v)) for k, v in case["headers"].items())
            + ld(4, case["path"].encode()) + ld(5, case["host"].encode()) + ld(6, b"http")
            + field(9, 0, varint(0)) + ld(10, b"HTTP/1.1"))
    request = ld(2, http)  # AttributeContext.Request.http = 2
    attributes = (ld(1, source) + ld(2, destination) + ld(4, request)  # source = 1, destination = 2, request = 4
                  + ld(10, entry("virtual_host", "httpbin"))  # context_extensions = 10
                  + ld(12, ld(1, b"httpbin.example")))  # tls_session = 12 (sni = 1): a field a subset may skip
    return ld(1, attributes)  # CheckRequest.attributes = 1


def header_options(opts):
    """repeated config.core.v3.HeaderValueOption: header = 1 (HeaderValue: key = 1, value = 2)."""
    out = []
    for o in opts:
        h = fields(fields(o)[1][0])
        out.append([h.get(1, [b""])[0].decode(), h.get(2, [b""])[0].decode()])
    return out


def decode(raw):
    r = fields(raw)
    status = fields(r.get(1, [b""])[0])  # CheckResponse.status = 1 (google.rpc.Status: code = 1, message = 2)
    out = {"status_code": status.get(1, [0])[0]}
    if 2 in r:  # denied_response = 2: status = 1 (type.v3.HttpStatus: code = 1), headers = 2, body = 3
        d = fields(r[2][0])
        out["denied"] = {"http_status": fields(d.get(1, [b""])[0]).get(1, [0])[0],
                         "headers": header_options(d.get(2, [])),
                         "body": d.get(3, [b""])[0].decode()}
    if 3 in r:  # ok_response = 3: headers = 2
        out["ok"] = {"headers": header_options(fields(r[3][0]).get(2, []))}
    return out


def main():
    address, cases = sys.argv[1], json.loads(sys.argv[2])
    with grpc.insecure_channel(address) as ch:
        check = ch.unary_unary("/envoy.service.auth.v3.Authorization/Check",
                               request_serializer=lambda x: x, response_deserializer=lambda x: x)
        print(json.dumps([decode(check(check_request(c), timeout=10)) for c in cases]))


main()
