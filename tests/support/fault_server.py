#!/usr/bin/env python3
"""A misbehaving HTTP file server for packfs's remote-source tests (loopback only).

Usage: fault_server.py ROOT PORT_FILE
Binds 127.0.0.1 on a free port, writes the port to PORT_FILE, serves files under ROOT with
HEAD/GET and single byte ranges. A path's leading segments choose a fault, then name the file:
  /NAME                  normal (206 for a Range request)
  /norange/NAME          ignores Range: 200 with the whole body
  /fail503/N/NAME        answers 503 to the first N requests for this path, then normally
  /drop/N/NAME           for the first N requests, announces the full length, sends half, closes
  /delay/MS/NAME         waits MS milliseconds before answering
  /_count/ANY/PATH       GET: how many requests PATH (everything after /_count) has received
"""
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = ""
COUNTS = {}
LOCK = threading.Lock()


def bump(path):
    with LOCK:
        COUNTS[path] = COUNTS.get(path, 0) + 1
        return COUNTS[path]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def do_HEAD(self):
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def plain(self, code, text):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def serve(self, head):
        path = self.path.split("?", 1)[0]
        if path.startswith("/_count/"):
            with LOCK:
                n = COUNTS.get(path[len("/_count"):], 0)
            return self.plain(200, str(n))
        n = bump(path)
        parts = path.lstrip("/").split("/")
        mode, arg = "normal", 0
        if parts[0] == "norange":
            mode, parts = "norange", parts[1:]
        elif parts[0] in ("fail503", "drop", "delay") and len(parts) > 2:
            mode, arg, parts = parts[0], int(parts[1]), parts[2:]
        if mode == "delay":
            time.sleep(arg / 1000.0)
        if mode == "fail503" and n <= arg:
            return self.plain(503, "try again later")
        name = os.path.normpath("/".join(parts))
        full = os.path.join(ROOT, name)
        if name.startswith("..") or not os.path.isfile(full):
            return self.plain(404, "no such file: " + name)
        with open(full, "rb") as f:
            data = f.read()
        size = len(data)
        start, end, code = 0, size - 1, 200
        rng = self.headers.get("Range")
        if rng and mode != "norange":
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not m:
                return self.plain(400, "bad range")
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            code = 206
        body = data[start:end + 1]
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", '"%x-%x"' % (size, int(os.path.getmtime(full))))
        if mode != "norange":
            self.send_header("Accept-Ranges", "bytes")
        if code == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        if head:
            return
        if mode == "drop" and n <= arg:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


def main():
    global ROOT
    ROOT = os.path.abspath(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, sys.argv[2])
    server.serve_forever()


if __name__ == "__main__":
    main()
