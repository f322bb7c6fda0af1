#!/usr/bin/env python3
"""A remote write endpoint for tests/integration/prometheus_remote_write.sh:
answers POSTs with the statuses given (then 204 for ever), and appends one
JSON line per request to LOG: the status it answered, the headers a remote
write 1.0 sender must send, and the body's length.

usage: rw_receiver.py PORT LOG STATUS...    (e.g. 503 503 400)
"""
import http.server
import json
import sys

port, log, statuses = int(sys.argv[1]), sys.argv[2], [int(s) for s in sys.argv[3:]]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status = statuses.pop(0) if statuses else 204
        with open(log, "a") as f:
            f.write(json.dumps({
                "status": status, "path": self.path, "len": len(body),
                "encoding": self.headers.get("Content-Encoding"),
                "type": self.headers.get("Content-Type"),
                "version": self.headers.get("X-Prometheus-Remote-Write-Version"),
                "auth": self.headers.get("Authorization"),
            }) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
