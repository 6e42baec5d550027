#!/usr/bin/python3
"""An HBONE peer on Python's ssl + the h2 library (not Node's HTTP/2 stack), for interoperability tests.

client: CONNECT through an HBONE server, send a payload, half-close, print JSON {status, echoed}.
server: accept mTLS + HTTP/2 CONNECT, answer 200 and echo the stream's bytes, print the client's cert SAN.
"""
import json
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events


def tls_context(server, cert, key, root):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(root)
    ctx.verify_mode = ssl.CERT_REQUIRED
    if not server:
        ctx.check_hostname = False
    ctx.set_alpn_protocols(["h2"])
    return ctx


def listen_tls(host, port, cert, key, root):
    """A listening socket on HOST:PORT (printing "listening" once it is) and the server's TLS context."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(8)
    print("listening", flush=True)
    return ls, tls_context(True, cert, key, root)


def client(host, port, authority, payload, cert, key, root, local_ip):
    sock = socket.create_connection((host, port), source_address=(local_ip, 0))
    tls = tls_context(False, cert, key, root).wrap_socket(sock)
    assert tls.selected_alpn_protocol() == "h2", tls.selected_alpn_protocol()
    # RFC 9113 §8.5: CONNECT carries no :scheme or :path; h2 4.1 rejects that unless validation is off.
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, validate_outbound_headers=False))
    conn.initiate_connection()
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "CONNECT"), (":authority", authority)])
    tls.sendall(conn.data_to_send())
    status, echoed, sent = None, b"", False
    while True:
        data = tls.recv(65536)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                status = dict(ev.headers)[b":status"].decode()
                if status == "200" and not sent:
                    conn.send_data(sid, payload.encode(), end_stream=True)
                    sent = True
                else:
                    print(json.dumps({"status": status, "echoed": ""}))
                    return
            elif isinstance(ev, h2.events.DataReceived):
                echoed += ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, sid)
            elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                tls.sendall(conn.data_to_send())
                print(json.dumps({"status": status, "echoed": echoed.decode()}))
                return
        tls.sendall(conn.data_to_send())
    print(json.dumps({"status": status, "echoed": echoed.decode()}))


def server(host, port, cert, key, root):
    ls, ctx = listen_tls(host, port, cert, key, root)
    while True:
        raw, _ = ls.accept()
        try:
            tls = ctx.wrap_socket(raw, server_side=True)
        except ssl.SSLError as e:
            print("tls error", e, flush=True)
            continue
        peer = tls.getpeercert()
        sans = [v for (k, v) in peer.get("subjectAltName", ()) if k == "URI"]
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, validate_inbound_headers=False))
        conn.initiate_connection()
        tls.sendall(conn.data_to_send())
        while True:
            data = tls.recv(65536)
            if not data:
                break
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.RequestReceived):
                    h = dict(ev.headers)
                    print(json.dumps({"method": h[b":method"].decode(), "authority": h[b":authority"].decode(), "peer": sans}), flush=True)
                    conn.send_headers(ev.stream_id, [(":status", "200")])
                elif isinstance(ev, h2.events.DataReceived):
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    conn.send_data(ev.stream_id, ev.data)
                elif isinstance(ev, h2.events.StreamEnded):
                    conn.end_stream(ev.stream_id)
            tls.sendall(conn.data_to_send())
        tls.close()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "client":
        client(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9])
    else:
        server(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6])
