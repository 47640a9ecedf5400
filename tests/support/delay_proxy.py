#!/usr/bin/env python3
"""A TCP proxy on loopback that adds latency: stands in for a distant HTTP server (these machines
have no `tc netem`) in front of nginx, for packfs's remote tests and bench/bench_remote.py.

Usage: delay_proxy.py [--delay-ms MS] [--log PATH] [--counts] UPSTREAM_PORT PORT_FILE
Binds 127.0.0.1 on a free port, writes the port to PORT_FILE (renamed into place, so a reader
never sees half a number), and forwards every connection to 127.0.0.1:UPSTREAM_PORT.

Each chunk travelling client -> server is held until MS milliseconds after it arrived, then
forwarded (chunks keep their order; a chunk arriving while another is held waits only its own
MS). So every HTTP request, whose head is one such chunk, reaches the server MS later: one
request round trip costs MS more, as on a link with an MS round-trip time. Server -> client
bytes are not delayed and are moved with splice(2) through a pipe (kernel to kernel, 1 MiB at a
time) so the proxy is not what limits throughput.

--log PATH: one line per forwarded client chunk, written just before it is forwarded:
  conn=N bytes=B held_ms=H head=FIRST LINE
H is the time the chunk really spent held (measured, never less than MS unless the connection
was closing), FIRST LINE the chunk's first line when it looks like an HTTP request head ("-"
otherwise). Tests read it to check that the delay was applied to each request.

--counts: answers each line read on stdin with the totals so far, one JSON object on one line
of stdout:
  {"connections": C, "chunks": K, "chunk_bytes": B, "response_bytes": R,
   "heads": {"GET": G, "HEAD": H, ...}}
K the client chunks held and forwarded (one per HTTP request; for SSH, the packets the client
sent together), "heads" those chunks by HTTP method, R the bytes that went back to clients.
bench/bench_shared.py asks before and after each pass: the difference is what the pass cost in
requests, whatever the protocol. (A question on a pipe, not a signal: with busy connections
this proxy's SIGUSR1 handler missed 5-18 of 2,000-3,000 signals, even with the signal blocked
in every thread but the one Python runs handlers in, and the bench once waited 44 minutes on
answers lost that way.)

One thread per direction per connection plus one per held-chunk queue; it runs until killed.
"""
import argparse
import collections
import fcntl
import itertools
import json
import os
import socket
import sys
import threading
import time

CHUNK = 1 << 20
F_SETPIPE_SZ = 1031
METHODS = (b"GET ", b"HEAD ", b"PUT ", b"POST ", b"DELETE ", b"OPTIONS ")


class Log:
    """Line-buffered, lock-protected log file shared by all connections (None: no log)."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else None
        self.lock = threading.Lock()

    def write(self, line):
        if self.f:
            with self.lock:
                self.f.write(line + "\n")


class Counts:
    """Totals over all connections, for --count; thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.connections = self.chunks = self.chunk_bytes = self.response_bytes = 0
        self.heads = collections.Counter()

    def connection(self):
        with self.lock:
            self.connections += 1

    def chunk(self, size, method):
        with self.lock:
            self.chunks += 1
            self.chunk_bytes += size
            if method:
                self.heads[method] += 1

    def response(self, size):
        with self.lock:
            self.response_bytes += size

    def totals(self):
        with self.lock:
            return {"connections": self.connections, "chunks": self.chunks,
                    "chunk_bytes": self.chunk_bytes, "response_bytes": self.response_bytes,
                    "heads": dict(self.heads)}

    def answer(self, questions, answers):
        """One JSON line on `answers` for every line on `questions`, until it closes."""
        for _ in questions:
            answers.write(json.dumps(self.totals()) + "\n")
            answers.flush()


def close_quietly(*socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


def pump_fast(src, dst, counts):
    """server -> client at full speed: splice through a pipe, falling back to a 1 MiB buffer
    where splice is not available. Ends at EOF or on an error, then half-closes dst."""
    try:
        if hasattr(os, "splice"):
            r, w = os.pipe()
            try:
                try:
                    fcntl.fcntl(w, F_SETPIPE_SZ, CHUNK)
                except OSError:
                    pass
                while True:
                    n = os.splice(src.fileno(), w, CHUNK)
                    if n == 0:
                        break
                    counts.response(n)
                    while n:
                        n -= os.splice(r, dst.fileno(), n)
            finally:
                os.close(r)
                os.close(w)
        else:
            buf = memoryview(bytearray(CHUNK))
            while True:
                n = src.recv_into(buf)
                if n == 0:
                    break
                counts.response(n)
                dst.sendall(buf[:n])
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        close_quietly(src, dst)


def pump_delayed(conn_id, src, dst, delay, log, counts):
    """client -> server: every chunk is queued with its arrival time and forwarded by a second
    thread once `delay` seconds have passed since then."""
    queue = collections.deque()
    cv = threading.Condition()
    done = [False]

    def forward():
        try:
            while True:
                with cv:
                    while not queue and not done[0]:
                        cv.wait()
                    if not queue:
                        break
                    arrived, data = queue.popleft()
                wait = arrived + delay - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                # Logged before it is sent, so the line is there by the time the server
                # answers (a test reading the log after its request finished sees it).
                held = (time.monotonic() - arrived) * 1000
                head = "-"
                method = None
                if data.startswith(METHODS):
                    head = data.split(b"\r\n", 1)[0].decode("latin-1")
                    method = head.split(" ", 1)[0]
                counts.chunk(len(data), method)
                log.write(f"conn={conn_id} bytes={len(data)} held_ms={held:.3f} head={head}")
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            close_quietly(src, dst)

    t = threading.Thread(target=forward, daemon=True)
    t.start()
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            with cv:
                queue.append((time.monotonic(), data))
                cv.notify()
    except OSError:
        pass
    with cv:
        done[0] = True
        cv.notify()


def handle(conn_id, client, upstream_port, delay, log, counts):
    try:
        server = socket.create_connection(("127.0.0.1", upstream_port))
    except OSError:
        close_quietly(client)
        return
    counts.connection()
    for s in (client, server):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    back = threading.Thread(target=pump_fast, args=(server, client, counts), daemon=True)
    back.start()
    pump_delayed(conn_id, client, server, delay, log, counts)
    back.join()
    close_quietly(client, server)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delay-ms", type=float, default=20.0,
                    help="milliseconds each client->server chunk is held (default 20)")
    ap.add_argument("--log", help="log one line per forwarded client chunk here")
    ap.add_argument("--counts", action="store_true",
                    help="answer each line on stdin with the totals so far (JSON on stdout)")
    ap.add_argument("upstream_port", type=int)
    ap.add_argument("port_file")
    args = ap.parse_args()
    log = Log(args.log)
    counts = Counts()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.rename(tmp, args.port_file)
    if args.counts:
        threading.Thread(target=counts.answer, args=(sys.stdin, sys.stdout), daemon=True).start()
    for conn_id in itertools.count(1):
        client, _ = listener.accept()
        threading.Thread(target=handle, daemon=True,
                         args=(conn_id, client, args.upstream_port, args.delay_ms / 1000, log,
                               counts)
                         ).start()


if __name__ == "__main__":
    main()
