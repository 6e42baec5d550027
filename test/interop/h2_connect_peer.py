#!/usr/bin/python3
"""A CONNECT peer on Python's ssl + the h2 library, for interop tests of amesh's own HTTP/2 session (src/h2).

server HOST PORT CERT KEY ROOT: answer each CONNECT with 200 and echo its bytes; END_STREAM after the client's.
client HOST PORT AUTHORITY SIZE CERT KEY ROOT: CONNECT, send SIZE pattern bytes, half-close, read the echo to
    END_STREAM, print JSON {status, authority, received, sha256}.
Both ends honour h2's flow control (sends wait for window; received bytes are acknowledged as consumed).
"""
import hashlib
import json
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events

from h2_hbone import listen_tls, tls_context


def pattern(n, seed):
    return bytes((i * 31 + seed) & 0xFF for i in range(n))


class Sender:
    """Bytes queued per stream, sent as the peer's windows and frame size allow."""

    def __init__(self, conn):
        self.conn = conn
        self.pending = {}
        self.ending = set()

    def send(self, sid, data, end=False):
        self.pending[sid] = self.pending.get(sid, b"") + data
        if end:
            self.ending.add(sid)
        self.flush()

    def flush(self):
        for sid in list(self.pending):
            buf = self.pending[sid]
            while buf:
                n = min(len(buf), self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
                if n <= 0:
                    break
                self.conn.send_data(sid, buf[:n])
                buf = buf[n:]
            self.pending[sid] = buf
            if not buf:
                del self.pending[sid]
                if sid in self.ending:
                    self.ending.discard(sid)
                    self.conn.end_stream(sid)


def client(host, port, authority, size, cert, key, root):
    tls = tls_context(False, cert, key, root).wrap_socket(socket.create_connection((host, port)))
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, validate_outbound_headers=False))
    conn.initiate_connection()
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "CONNECT"), (":authority", authority)])
    tls.sendall(conn.data_to_send())
    sender = Sender(conn)
    status, received, done = None, hashlib.sha256(), False
    count = 0
    while not done:
        data = tls.recv(65536)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                status = dict(ev.headers)[b":status"].decode()
                sender.send(sid, pattern(size, 1), end=True)
            elif isinstance(ev, h2.events.DataReceived):
                received.update(ev.data)
                count += len(ev.data)
                conn.acknowledge_received_data(ev.flow_controlled_length, sid)
            elif isinstance(ev, h2.events.WindowUpdated):
                sender.flush()
            elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                done = True
        tls.sendall(conn.data_to_send())
    print(json.dumps({"status": status, "received": count, "sha256": received.hexdigest()}), flush=True)


def server(host, port, cert, key, root):
    ls, ctx = listen_tls(host, port, cert, key, root)
    while True:
        raw, _ = ls.accept()
        tls = ctx.wrap_socket(raw, server_side=True)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, validate_inbound_headers=False))
        conn.initiate_connection()
        tls.sendall(conn.data_to_send())
        sender = Sender(conn)
        while True:
            try:
                data = tls.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                break
            if not data:
                break
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.RequestReceived):
                    h = dict(ev.headers)
                    print(json.dumps({"method": h[b":method"].decode(), "authority": h[b":authority"].decode(), "scheme": b":scheme" in h, "path": b":path" in h}), flush=True)
                    conn.send_headers(ev.stream_id, [(":status", "200")])
                elif isinstance(ev, h2.events.DataReceived):
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    sender.send(ev.stream_id, ev.data)
                elif isinstance(ev, h2.events.StreamEnded):
                    sender.send(ev.stream_id, b"", end=True)
                elif isinstance(ev, h2.events.WindowUpdated):
                    sender.flush()
            tls.sendall(conn.data_to_send())
        tls.close()


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "client":
        client(a[2], int(a[3]), a[4], int(a[5]), a[6], a[7], a[8])
    else:
        server(a[2], int(a[3]), a[4], a[5], a[6])
