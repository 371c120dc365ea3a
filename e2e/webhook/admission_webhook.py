#!/usr/bin/env python3
"""A real HTTPS admission webhook server for e2e/tests/admission_webhooks.rs.

Speaks AdmissionReview admission.k8s.io/v1 over TLS (its certificate and
key are given on the command line, signed by a CA the test generated).
Binds 127.0.0.1 on a free port and prints the port on stdout.

Paths:
  /validate      denies an object labelled deny=yes (403 Forbidden, as
                 controller-runtime's admission.Denied, with a message),
                 allows anything else with a warning
  /mutate        adds the label mutated=yes (a JSONPatch)
  /mutate-second adds the label second=yes (a JSONPatch)
  /slow/SECONDS  sleeps, then allows
  /reject-all    denies everything (no code: kube makes it 400)

Every AdmissionReview received is appended (one JSON line) to --log.
"""

import argparse
import base64
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_LOCK = threading.Lock()


def review_response(request, allowed, status=None, patch=None, warnings=None):
    response = {"uid": request.get("uid", ""), "allowed": allowed}
    if status is not None:
        response["status"] = status
    if patch is not None:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    if warnings:
        response["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def labels_of(obj):
    if not isinstance(obj, dict):
        return {}
    return (obj.get("metadata") or {}).get("labels") or {}


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
        obj = request.get("object") or request.get("oldObject")
        if path == "/validate":
            if labels_of(obj).get("deny") == "yes":
                answer = review_response(
                    request,
                    False,
                    status={
                        "code": 403,
                        "reason": "Forbidden",
                        "message": "the label deny=yes is not allowed here",
                    },
                )
            else:
                answer = review_response(request, True, warnings=["checked by the test webhook"])
        elif path == "/mutate":
            if "labels" in ((request.get("object") or {}).get("metadata") or {}):
                patch = [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
            else:
                patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
            answer = review_response(request, True, patch=patch)
        elif path == "/mutate-second":
            patch = [{"op": "add", "path": "/metadata/labels/second", "value": "yes"}]
            answer = review_response(request, True, patch=patch)
        elif path.startswith("/slow/"):
            time.sleep(float(path.rsplit("/", 1)[1]))
            answer = review_response(request, True)
        elif path == "/reject-all":
            answer = review_response(request, False, status={"message": "nothing passes"})
        else:
            self.send_response(404)
            self.end_headers()
            return
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
    args = parser.parse_args()
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
