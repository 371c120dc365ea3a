#!/usr/bin/env python3
"""A real HTTPS CRD conversion webhook for e2e/tests/crd_conversion_webhook.rs.

Speaks ConversionReview apiextensions.k8s.io/v1 over TLS (its certificate
and key are given on the command line, signed by a CA the test generated).
Binds 127.0.0.1 on --port (a free one when 0) and prints the port on stdout.

Widgets (group example.com):
  v1  spec.size     a string of digits ("3")
  v2  spec.sizeInt  an integer (3)

Paths:
  /convert     converts every object to desiredAPIVersion (and adds the
               label converted-to=<version>, which kube keeps: a webhook may
               change labels and annotations)
  /fail        answers result.status Failure with a message
  /wrong-uid   converts, but answers with another response.uid

Every ConversionReview received is appended (one JSON line) to --log.
"""

import argparse
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_LOCK = threading.Lock()


def convert(obj, desired):
    obj = json.loads(json.dumps(obj))
    version = desired.split("/", 1)[1]
    spec = obj.get("spec") or {}
    if version == "v2" and "size" in spec:
        spec["sizeInt"] = int(spec.pop("size"))
    elif version == "v1" and "sizeInt" in spec:
        spec["size"] = str(spec.pop("sizeInt"))
    obj["spec"] = spec
    obj["apiVersion"] = desired
    labels = (obj.setdefault("metadata", {}).get("labels")) or {}
    labels["converted-to"] = version
    obj["metadata"]["labels"] = labels
    return obj


class Handler(BaseHTTPRequestHandler):
    log_path = None

    def log_message(self, fmt, *args):  # quiet: the test reads --log
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        review = json.loads(self.rfile.read(length) or b"{}")
        request = review.get("request") or {}
        if self.log_path:
            with LOG_LOCK, open(self.log_path, "a") as f:
                f.write(json.dumps({"path": self.path, "review": review}) + "\n")
        path = self.path.split("?", 1)[0]
        response = {"uid": request.get("uid", "")}
        if path == "/convert" or path == "/wrong-uid":
            desired = request.get("desiredAPIVersion", "")
            response["convertedObjects"] = [convert(o, desired) for o in request.get("objects") or []]
            response["result"] = {"status": "Success"}
            if path == "/wrong-uid":
                response["uid"] = "not-" + response["uid"]
        elif path == "/fail":
            response["result"] = {"status": "Failure", "message": "widgets of this size cannot be converted"}
        else:
            self.send_response(404)
            self.end_headers()
            return
        answer = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}
        body = json.dumps(answer).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the caller gave up (its timeout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--log")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    Handler.log_path = args.log
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
