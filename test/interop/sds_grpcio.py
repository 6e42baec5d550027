#!/usr/bin/python3
"""Subscribes by name to gateway certificates (type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret)
on istiod's delta ADS with Debian's python3-grpcio, as an Istio gateway fetches its credentials over SDS. Request and
reply are encoded and decoded by hand from Envoy's field numbers (discovery.proto; secret.proto: Secret.name = 1,
tls_certificate = 2, validation_context = 4; common.proto: TlsCertificate.certificate_chain = 1, private_key = 2,
CertificateValidationContext.trusted_ca = 1; base.proto: DataSource.inline_bytes = 2), not from amesh's .proto
files. Each certificate and key is loaded with python3-cryptography, which checks that they are a pair. Prints the
first response as JSON: per resource its name, the Any's type, the Secret's own name, and the certificate's DNS names
and whether the key matches, or for a CA (validation context) the CA certificate's DNS names.

usage: sds_grpcio.py ADDRESS ROOT_PEM TOKEN NAME...
"""
import json
import sys
import threading

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pbwire import field, fields

TYPE = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"


def ld(num, payload):
    return field(num, 2, payload)


def main():
    address, root, token, *names = sys.argv[1:]
    creds = grpc.ssl_channel_credentials(root_certificates=open(root, "rb").read())
    ch = grpc.secure_channel(address, creds, options=[("grpc.ssl_target_name_override", "istiod.istio-system.svc")])
    call = ch.stream_stream("/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
                            request_serializer=lambda x: x, response_deserializer=lambda x: x)
    node = ld(1, b"router~10.1.0.9~gw-istio-0.ingress~ingress.svc.cluster.local")
    req = ld(1, node) + ld(2, TYPE.encode()) + b"".join(ld(3, n.encode()) for n in names)
    answered = threading.Event()

    def requests():
        # The stream stays open until istiod answers, as a gateway's does: istiod may answer only after it asked the
        # API server (a SubjectAccessReview), and a client that half-closes first ends the stream.
        yield req
        answered.wait(10)

    responses = call(requests(), metadata=[("authorization", "Bearer " + token)], timeout=10)
    resp = fields(next(responses))
    answered.set()
    out = {"type_url": resp[4][0].decode(), "resources": []}
    for raw in resp.get(2, []):  # Resource: version = 1, resource = 2 (Any: type_url = 1, value = 2), name = 3
        r = fields(raw)
        anyf = fields(r[2][0])
        secret = fields(anyf[2][0])
        if 4 in secret:  # validation_context: CertificateValidationContext.trusted_ca = 1
            ca = x509.load_pem_x509_certificate(fields(fields(secret[4][0])[1][0])[2][0])
            san = ca.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            out["resources"].append({
                "name": r[3][0].decode(),
                "any_type": anyf[1][0].decode(),
                "secret_name": secret[1][0].decode(),
                "ca_dns_names": san.get_values_for_type(x509.DNSName),
            })
            continue
        tls = fields(secret[2][0])
        chain = fields(tls[1][0])[2][0]
        key_pem = fields(tls[2][0])[2][0]
        cert = x509.load_pem_x509_certificate(chain)
        key = serialization.load_pem_private_key(key_pem, password=None)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        out["resources"].append({
            "name": r[3][0].decode(),
            "any_type": anyf[1][0].decode(),
            "secret_name": secret[1][0].decode(),
            "dns_names": san.get_values_for_type(x509.DNSName),
            "key_matches": key.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
            == cert.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo),
        })
    print(json.dumps(out))
    ch.close()


if __name__ == "__main__":
    main()
