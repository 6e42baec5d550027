"""An admission webhook server written against the AdmissionReview v1 contract alone (Python's http.server and
ssl), as the independent peer of the API server's webhook admission tests.

Usage: admission_webhook.py CERT KEY. It listens on 127.0.0.1 with a kernel-chosen port over TLS, prints
`port N` when ready, and answers:
- /validate: refuses an object labelled `deny: "yes"` with a message naming it, allows anything else, and
  echoes the request's dryRun as a warning;
- /mutate: allows, with a JSONPatch that adds the label `mutated: "yes"`;
- /slow: answers after 3 s, for timeouts;
- /bad-uid: answers with another uid.
"""

import base64
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer(review, response):
    return {
        "apiVersion": review.get("apiVersion"),
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], **response},
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        review = json.loads(self.rfile.read(length))
        req = review["request"]
        obj = req.get("object") or req.get("oldObject") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        path = self.path.split("?", 1)[0]
        if path == "/validate":
            if labels.get("deny") == "yes":
                out = answer(review, {"allowed": False, "status": {"message": "label deny=yes is refused"}})
            else:
                out = answer(review, {"allowed": True, "warnings": [f"dryRun={str(req.get('dryRun')).lower()}"]})
        elif path == "/mutate":
            op = "replace" if "labels" in (obj.get("metadata") or {}) else "add"
            patch = (
                [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
                if op == "replace"
                else [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
            )
            out = answer(
                review,
                {
                    "allowed": True,
                    "patchType": "JSONPatch",
                    "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
                },
            )
        elif path == "/slow":
            time.sleep(3)
            out = answer(review, {"allowed": True})
        elif path == "/bad-uid":
            out = answer(review, {"allowed": True})
            out["response"]["uid"] = "not-the-request"
        else:
            self.send_error(404)
            return
        body = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    cert, key = sys.argv[1], sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(f"port {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # Exit when the test closes stdin (or dies).
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
