"""A counting HTTP proxy between an SDK and moto, for make bench-idempotency.

Every request is forwarded unchanged to the upstream (moto) and logged with its
`X-Amz-Target` (DynamoDB_20120810.PutItem, ...), its status and when it started and ended
(monotonic seconds), so that the runner can tell the calls of each path and which of them
overlap. A peer marks where a path starts and ends with `GET /__bench/mark?name=...` (not
forwarded, logged as a mark); `GET /__bench/log` returns the whole log as JSON.

Usage: python proxy.py LISTEN_PORT UPSTREAM_PORT (both on 127.0.0.1). Standard library only.
"""

import http.client
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

LOG = []
LOCK = threading.Lock()
UPSTREAM = ("127.0.0.1", int(sys.argv[2]))
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _reply(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self):
        start = time.monotonic()
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlparse(self.path)
        if url.path.startswith("/__bench/"):
            if url.path == "/__bench/mark":
                name = parse_qs(url.query).get("name", [""])[0]
                with LOCK:
                    LOG.append({"mark": name, "t": start})
                return self._reply(200, b"{}")
            if url.path == "/__bench/log":
                with LOCK:
                    data = json.dumps(LOG).encode()
                return self._reply(200, data, [("content-type", "application/json")])
            return self._reply(404, b"")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        conn = http.client.HTTPConnection(*UPSTREAM, timeout=60)
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        end = time.monotonic()
        consistent = None
        if body[:1] == b"{":
            try:
                consistent = json.loads(body).get("ConsistentRead")
            except ValueError:
                pass
        with LOCK:
            LOG.append(
                {
                    "target": self.headers.get("x-amz-target", self.command + " " + url.path),
                    "status": resp.status,
                    "start": start,
                    "end": end,
                    "request_bytes": len(body),
                    "consistent_read": consistent,
                }
            )
        out = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP | {"content-length"}]
        conn.close()
        self._reply(resp.status, data, out)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    print("proxy listening", flush=True)
    server.serve_forever()
