#!/usr/bin/python3
"""Subscribes to istiod's delta ADS with Debian's python3-grpcio, encoding the request and decoding the response by
hand from field numbers (ztunnel `proto/xds.proto`, `proto/workload.proto`), without amesh's .proto files. Prints what it decoded as JSON.

usage: ads_grpcio.py ADDRESS ROOT_PEM TOKEN
"""
import json
import sys

import grpc

from pbwire import field, fields


def ld(num, payload):
    return field(num, 2, payload)


def s(v):
    return v.decode()


def main():
    address, root, token = sys.argv[1:4]
    creds = grpc.ssl_channel_credentials(root_certificates=open(root, "rb").read())
    ch = grpc.secure_channel(address, creds, options=[("grpc.ssl_target_name_override", "istiod.istio-system.svc")])
    call = ch.stream_stream("/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
                            request_serializer=lambda x: x, response_deserializer=lambda x: x)
    node = ld(1, b"ztunnel~1.1.1.1~py.istio-system~istio-system.svc.cluster.local")
    req = ld(1, node) + ld(2, b"type.googleapis.com/istio.workload.Address")  # node = 1, type_url = 2
    responses = call(iter([req]), metadata=[("authorization", "Bearer " + token)], timeout=10)
    resp = fields(next(responses))
    out = {"type_url": s(resp[4][0]), "nonce_set": len(resp.get(5, [b""])[0]) > 0, "workloads": [], "services": []}
    for raw in resp.get(2, []):  # resources = 2
        r = fields(raw)
        anyf = fields(r[2][0])  # Resource.resource = 2 (Any: type_url = 1, value = 2)
        item = {"name": s(r[3][0]), "version": s(r[1][0]), "any_type": s(anyf[1][0])}
        addr = fields(anyf[2][0])
        if 1 in addr:  # Address.workload = 1
            w = fields(addr[1][0])
            # proto3 leaves empty strings off the wire (an EndpointSlice's workload has no account or node).
            item.update(uid=s(w[20][0]), name_field=s(w[1][0]), namespace=s(w[2][0]),
                        addresses=[list(a) for a in w.get(3, [])], tunnel_protocol=w.get(5, [0])[0],
                        service_account=s(w.get(7, [b""])[0]), node=s(w.get(9, [b""])[0]),
                        services={s(fields(e)[1][0]): [[fields(p).get(1, [0])[0], fields(p).get(2, [0])[0]] for p in fields(fields(e)[2][0]).get(1, [])] for e in w.get(22, [])})
            out["workloads"].append(item)
        else:  # Address.service = 2
            sv = fields(addr[2][0])
            item.update(svc_name=s(sv[1][0]), namespace=s(sv[2][0]), hostname=s(sv[3][0]),
                        vips=[list(fields(a)[2][0]) for a in sv.get(4, [])],
                        ports=[[fields(p).get(1, [0])[0], fields(p).get(2, [0])[0]] for p in sv.get(5, [])])
            app = [fields(p).get(3, [0])[0] for p in sv.get(5, [])]  # Port.app_protocol = 3
            if any(app):
                item.update(app_protocols=app)
            if 7 in sv:  # waypoint: GatewayAddress (hostname = 1: namespace = 1, hostname = 2; hbone_mtls_port = 3)
                gw = fields(sv[7][0])
                host = fields(gw[1][0])
                item.update(waypoint={"namespace": s(host[1][0]), "hostname": s(host[2][0]),
                                      "hbone_mtls_port": gw[3][0]})
            out["services"].append(item)
    print(json.dumps(out))
    responses.cancel()


main()
