#!/usr/bin/python3
"""Subscribes by name to a waypoint's resource (type.googleapis.com/amesh.waypoint.v1.Waypoint) on istiod's delta
ADS with Debian's python3-grpcio, as a waypoint does, and decodes it with python3-protobuf from modules protoc
compiled from the .proto (not with amesh's generated TypeScript). The request is encoded by hand from envoy
`discovery.proto`'s field numbers. Prints the first response as JSON: its resources (name, version, the Waypoint
as proto3 JSON) and removed names.

usage: waypoint_ads_grpcio.py ADDRESS ROOT_PEM TOKEN PYTHON_OUT_DIR NAME...
"""
import json
import sys

import grpc

from pbwire import field, fields

TYPE = "type.googleapis.com/amesh.waypoint.v1.Waypoint"


def ld(num, payload):
    return field(num, 2, payload)


def main():
    address, root, token, pydir, *names = sys.argv[1:]
    sys.path.insert(0, pydir)
    from google.protobuf import json_format
    from amesh.waypoint.v1 import waypoint_pb2

    creds = grpc.ssl_channel_credentials(root_certificates=open(root, "rb").read())
    ch = grpc.secure_channel(address, creds, options=[("grpc.ssl_target_name_override", "istiod.istio-system.svc")])
    call = ch.stream_stream("/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
                            request_serializer=lambda x: x, response_deserializer=lambda x: x)
    node = ld(1, b"waypoint~10.1.0.9~waypoint-0.backend~backend.svc.cluster.local")
    # node = 1, type_url = 2, resource_names_subscribe = 3
    req = ld(1, node) + ld(2, TYPE.encode()) + b"".join(ld(3, n.encode()) for n in names)
    responses = call(iter([req]), metadata=[("authorization", "Bearer " + token)], timeout=10)
    resp = fields(next(responses))
    out = {"type_url": resp[4][0].decode(), "resources": [], "removed": [r.decode() for r in resp.get(6, [])]}
    for raw in resp.get(2, []):  # resources = 2: version = 1, resource = 2 (Any: type_url = 1, value = 2), name = 3
        r = fields(raw)
        anyf = fields(r[2][0])
        msg = waypoint_pb2.Waypoint.FromString(anyf[2][0])
        out["resources"].append({
            "name": r[3][0].decode(),
            "any_type": anyf[1][0].decode(),
            "waypoint": json_format.MessageToDict(msg),
        })
    print(json.dumps(out))
    ch.close()


if __name__ == "__main__":
    main()
