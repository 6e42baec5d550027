#!/usr/bin/python3
"""Calls istiod's CreateCertificate with Debian's python3-grpcio. The request is encoded and the response decoded
by hand from the field numbers in ztunnel `src/identity/caclient.rs` (csr=1, validity_duration=3, metadata=4; cert_chain=1), so this does
not share amesh's .proto files: it checks the wire format itself.

usage: ca_grpcio.py ADDRESS ROOT_PEM TOKEN CSR_FILE [IMPERSONATE_URI]
prints JSON: {"code": <grpc status name>, "details": ..., "chain": [pem, ...]}
"""
import json
import sys

import grpc

from pbwire import field, fields, varint


def request(csr, ttl, impersonate):
    body = field(1, 2, csr.encode()) + field(3, 0, varint(ttl))
    if impersonate:
        value = field(3, 2, impersonate.encode())  # google.protobuf.Value.string_value = 3
        entry = field(1, 2, b"ImpersonatedIdentity") + field(2, 2, value)  # map entry: key = 1, value = 2
        body += field(4, 2, field(1, 2, entry))  # Struct.fields = 1
    return body


def decode_chain(b):
    return [v.decode() for v in fields(b).get(1, [])]  # cert_chain = 1


def main():
    address, root, token, csr_file = sys.argv[1:5]
    impersonate = sys.argv[5] if len(sys.argv) > 5 else None
    creds = grpc.ssl_channel_credentials(root_certificates=open(root, "rb").read())
    channel = grpc.secure_channel(address, creds, options=[("grpc.ssl_target_name_override", "istiod.istio-system.svc")])
    call = channel.unary_unary("/istio.v1.auth.IstioCertificateService/CreateCertificate",
                               request_serializer=lambda x: x, response_deserializer=lambda x: x)
    try:
        raw = call(request(open(csr_file).read(), 3600, impersonate), timeout=10,
                   metadata=[("authorization", "Bearer " + token), ("clusterid", "Kubernetes")])
        print(json.dumps({"code": "OK", "details": "", "chain": decode_chain(raw)}))
    except grpc.RpcError as e:
        print(json.dumps({"code": e.code().name, "details": e.details(), "chain": []}))


main()
