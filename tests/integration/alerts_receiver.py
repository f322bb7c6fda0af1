#!/usr/bin/env python3
"""A webhook receiver for the alert tests: every POST is appended to LOG as
one JSON line {"auth": Authorization header, "body": the parsed body, "ok":
whether it was accepted}; the first FAIL_FIRST posts get HTTP 500 (a sink
that is down), the rest 200.  Usage: alerts_receiver.py PORT LOG FAIL_FIRST"""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

PORT, LOG, FAIL_FIRST = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
seen = 0


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global seen
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        seen += 1
        ok = seen > FAIL_FIRST
        with open(LOG, "a") as f:
            f.write(json.dumps({"auth": self.headers.get("Authorization", ""),
                                "body": json.loads(body), "ok": ok}) + "\n")
        self.send_response(200 if ok else 500)
        self.end_headers()

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
