#!/usr/bin/python3
"""A delta ADS server on Debian's python3-grpcio that is not amesh's istiod: it serves ztunnel the Address
resources described in a JSON file, encoded by hand from the field numbers of ztunnel `proto/workload.proto` and
`proto/xds.proto`, the waypoint's own amesh.waypoint.v1.Waypoint resources by name, gateway certificates by name
(Envoy's envoy.extensions.transport_sockets.tls.v3.Secret, encoded by hand from its field numbers), and an empty set
of every other type. Prints "listening PORT", then one JSON line per request it receives (type_url, nonce, whether it carried an
error, the error's message, the names it subscribes to) and one per Waypoint response it sends ("sent": the names).

usage: xds_server_grpcio.py HOST CERT KEY RESOURCES_JSON [WAYPOINT_PB_DIR]

RESOURCES_JSON: a list of {"workload": {...}}, {"service": {...}} and {"authorization": {...}} objects with the
fields workload(), service() and authorization() read, and of {"waypoint": {"name": "<ns>/<gateway>", "message":
{...}}}, the message being a Waypoint in proto3 JSON, and of {"secret": {"name": ..., "cert": PEM, "key": PEM}} (a
certificate and key) or {"secret": {"name": ..., "ca": PEM}} (a CA to verify clients against). Those are encoded with python3-protobuf from the modules protoc
compiled from amesh's proto/amesh/waypoint/v1/waypoint.proto into WAYPOINT_PB_DIR (needed only when there are any).
"""
import json
import socket
import sys
import threading
import uuid
from concurrent import futures

import grpc

from pbwire import field, fields, varint

ADDRESS_TYPE = "type.googleapis.com/istio.workload.Address"
AUTHORIZATION_TYPE = "type.googleapis.com/istio.security.Authorization"
WAYPOINT_TYPE = "type.googleapis.com/amesh.waypoint.v1.Waypoint"
SECRET_TYPE = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"


def ld(num, payload):
    return field(num, 2, payload)


def st(num, s):
    return ld(num, s.encode()) if s else b""


def uint(num, v):
    return field(num, 0, varint(v)) if v else b""


def ip_bytes(ip):
    return socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)


def network_address(ip, network=""):
    return st(1, network) + ld(2, ip_bytes(ip))  # NetworkAddress: network = 1, address = 2


def gateway_address(g):
    """GatewayAddress: hostname = 1 (NamespacedHostname: namespace = 1, hostname = 2), address = 2, hbone_mtls_port = 3."""
    if "hostname" in g:
        dest = ld(1, st(1, g["namespace"]) + st(2, g["hostname"]))
    else:
        dest = ld(2, network_address(g["address"]))
    return dest + uint(3, g.get("hbone_mtls_port", 15008))


def port(p):
    """Port: service_port = 1, target_port = 2, app_protocol = 3 (a third element, when given)."""
    return uint(1, p[0]) + uint(2, p[1]) + (uint(3, p[2]) if len(p) > 2 else b"")


def workload(w):
    out = st(20, w["uid"]) + st(1, w["name"]) + st(2, w["namespace"])
    for ip in w.get("addresses", []):
        out += ld(3, ip_bytes(ip))
    out += uint(5, 1)  # tunnel_protocol = HBONE
    out += st(7, w.get("service_account", "")) + st(9, w.get("node", ""))
    if "waypoint" in w:
        out += ld(8, gateway_address(w["waypoint"]))
    for key, ports in w.get("services", {}).items():  # map<string, PortList> services = 22
        plist = b"".join(ld(1, port(p)) for p in ports)
        out += ld(22, st(1, key) + ld(2, plist))
    out += uint(17, 1 if w.get("unhealthy") else 0)  # status
    return out


def service(s):
    out = st(1, s["name"]) + st(2, s["namespace"]) + st(3, s["hostname"])
    for vip in s.get("vips", []):
        out += ld(4, network_address(vip))
    for p in s.get("ports", []):
        out += ld(5, port(p))
    if "waypoint" in s:
        out += ld(7, gateway_address(s["waypoint"]))
    return out


def authorization(a):
    """Authorization (ztunnel `proto/authorization.proto`): one rule, one clause, one match of exact principals."""
    match = b"".join(ld(3, st(1, p)) for p in a.get("principals", []))  # Match.principals = 3, StringMatch.exact = 1
    rule = ld(1, ld(2, match))  # Rule.clauses = 1, Clause.matches = 2
    return st(1, a["name"]) + st(2, a["namespace"]) + uint(3, a.get("scope", 1)) + uint(4, a.get("action", 0)) + ld(5, rule)


def resource(name, type_url, value):
    return ld(1, b"1") + ld(2, st(1, type_url) + ld(2, value)) + st(3, name)  # Resource: version, resource, name


def waypoint_resources(items, pb_dir):
    """name -> the encoded Waypoint, from proto3 JSON through the message protoc compiled from amesh's proto."""
    if not items:
        return {}
    if pb_dir is None:
        sys.exit("waypoint resources need WAYPOINT_PB_DIR, the Python modules protoc compiled from waypoint.proto")
    sys.path.insert(0, pb_dir)
    from google.protobuf import json_format
    from amesh.waypoint.v1 import waypoint_pb2

    out = {}
    for w in items:
        msg = json_format.ParseDict(w["message"], waypoint_pb2.Waypoint())
        out[w["name"]] = msg.SerializeToString()
    return out


def secret(s):
    """Secret: name = 1, tls_certificate = 2 (certificate_chain = 1, private_key = 2), validation_context = 4
    (trusted_ca = 1); each a DataSource with inline_bytes = 2."""
    inline = lambda pem: ld(2, pem.encode())
    if "ca" in s:
        return st(1, s["name"]) + ld(4, ld(1, inline(s["ca"])))
    return st(1, s["name"]) + ld(2, ld(1, inline(s["cert"])) + ld(2, inline(s["key"])))


def address_resource(r):
    if "workload" in r:
        name, addr = r["workload"]["uid"], ld(1, workload(r["workload"]))
    else:
        s = r["service"]
        name, addr = "%s/%s" % (s["namespace"], s["hostname"]), ld(2, service(s))
    return resource(name, ADDRESS_TYPE, addr)


class Ads:
    def __init__(self, resources, pb_dir):
        self.resources = [r for r in resources if "waypoint" not in r and "secret" not in r]
        self.waypoints = waypoint_resources([r["waypoint"] for r in resources if "waypoint" in r], pb_dir)
        self.secrets = {r["secret"]["name"]: secret(r["secret"]) for r in resources if "secret" in r}
        self.lock = threading.Lock()

    def log(self, line):
        with self.lock:
            print(json.dumps(line), flush=True)

    def delta(self, requests, context):
        for raw in requests:
            # DeltaDiscoveryRequest: type_url = 2, resource_names_subscribe = 3, response_nonce = 6, error_detail = 7
            req = fields(raw)
            type_url = req.get(2, [b""])[0].decode()
            nonce = req.get(6, [b""])[0].decode()
            subscribe = [n.decode() for n in req.get(3, [])]
            line = {"type_url": type_url, "nonce": nonce, "error": 7 in req}
            if 7 in req:
                line["detail"] = fields(req[7][0]).get(2, [b""])[0].decode()  # google.rpc.Status: message = 2
            if subscribe:
                line["subscribe"] = subscribe
            self.log(line)
            if type_url in (WAYPOINT_TYPE, SECRET_TYPE):
                if nonce and not subscribe:
                    continue  # an ACK or NACK, subscribing to nothing new
                # Only the names asked for; a name it does not have gets an empty response.
                held = self.waypoints if type_url == WAYPOINT_TYPE else self.secrets
                names = [n for n in subscribe if n in held]
                body = b"".join(ld(2, resource(n, type_url, held[n])) for n in names)
                self.log({"sent": type_url, "names": names})
                yield body + st(4, type_url) + st(5, uuid.uuid4().hex)
                continue
            if nonce:
                continue  # an ACK or NACK of what was sent; nothing changes here
            body = b""
            if type_url == ADDRESS_TYPE:
                body = b"".join(ld(2, address_resource(r)) for r in self.resources if "authorization" not in r)
            elif type_url == AUTHORIZATION_TYPE:
                body = b"".join(ld(2, resource("%s/%s" % (r["authorization"]["namespace"], r["authorization"]["name"]),
                                               AUTHORIZATION_TYPE, authorization(r["authorization"])))
                                for r in self.resources if "authorization" in r)
            # DeltaDiscoveryResponse: resources = 2, type_url = 4, nonce = 5
            yield body + st(4, type_url) + st(5, uuid.uuid4().hex)


def main():
    host, cert, key, resources = sys.argv[1:5]
    ads = Ads(json.load(open(resources)), sys.argv[5] if len(sys.argv) > 5 else None)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handler = grpc.method_handlers_generic_handler(
        "envoy.service.discovery.v3.AggregatedDiscoveryService",
        {"DeltaAggregatedResources": grpc.stream_stream_rpc_method_handler(ads.delta)},
    )
    server.add_generic_rpc_handlers((handler,))
    creds = grpc.ssl_server_credentials([(open(key, "rb").read(), open(cert, "rb").read())])
    bound = server.add_secure_port("%s:0" % host, creds)
    server.start()
    print("listening %d" % bound, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
