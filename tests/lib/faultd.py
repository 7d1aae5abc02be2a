#!/usr/bin/env python3
"""faultd: a small fault-injecting HTTP/1.1 server for winbuild's tests.

Python 3 standard library only. Serves the files under --root; a fault is
chosen by the first path segment (the "prefix"), the rest of the path names
the file under --root.

Usage:
  faultd.py --root DIR [--port 0] [--port-file F] [--log F]
            [--bind 127.0.0.1|::1] [--timeout 600]

  --port 0       pick a free port; the port is written to --port-file
                 (atomically: write + rename, so a reader that sees the file
                 sees the whole number).
  --bind         127.0.0.1 (default) or ::1. Never binds anything else
                 unless told to.
  --timeout S    hard self-timeout: the process exits after S seconds no
                 matter what (default 600), so nothing leaks.
  --log F        one line per request (appended, flushed at once):
                   "METHOD TARGET VERSION" STATUS "RANGE" FAULT
                 e.g.  "GET /reset/a.bin HTTP/1.1" 200 "-" reset
                       "GET /reset/a.bin HTTP/1.1" 206 "bytes=512-" -
                 RANGE is the Range request header or -, FAULT the fault
                 actually injected on this request or -. The line is
                 written when the status line is sent, before the body.

Paths (FILE is a path under --root; ".." is refused with 400):
  /FILE                 plain: 200 with Content-Length, keep-alive, Range
                        honoured (bytes=N-, bytes=N-M, bytes=-N -> 206;
                        unsatisfiable -> 416). Missing file -> 404.
  /reset/FILE           the FIRST request for this target: headers (status
                        and Content-Length as a normal response, Range
                        honoured) and half the body, then a TCP RST
                        (SO_LINGER 0 + close). Later requests for the same
                        target are served normally, Range honoured - this is
                        how a client's resume is tested: the first GET fails
                        mid-body, a "Range: bytes=N-" retry succeeds (206).
  /reset-N/FILE         as /reset/ but the first N requests are reset.
  /truncate/FILE        full Content-Length, half the body, then a clean
                        close (FIN). Every time. "Connection: close".
  /closeearly/FILE      "Connection: keep-alive" and full Content-Length, all
                        but the last byte of the body, then a clean close.
                        Every time.
  /badlength/FILE       Content-Length = real size + 1000, the whole body,
                        then a clean close. Every time.
  /500then200/FILE      the first request for this target gets 500, later
                        ones are served normally (same as /5xx-1/).
  /5xx-N/FILE           the first N requests for this target get 500.
  /always500/FILE       500, every time.
  /404/FILE             404, every time (whether FILE exists or not).
  /401/FILE, /403/FILE  401 (with a WWW-Authenticate challenge) or 403,
                        every time: a server that wants credentials.
  /slow/FILE            200 with full Content-Length; the first 64 bytes at
                        once, then 1 byte per second.
  /hold/FILE            200 with full Content-Length; half the body, then
                        nothing until the file FILE.release exists under
                        --root (checked every 50 ms), then the rest. For
                        "while this download waits, that work goes on".
  /redirect/REST        302 to /REST (so /redirect/reset/a.bin chains).
  /redirloop/X          302 to /redirloop/X?hop=N+1, forever.
  /hugeheaders/FILE     200 with a 4 MiB "X-Huge" response header, then the
                        file.
  /endless/FILE         200, no Content-Length, "Connection: close": the
                        file's bytes (or "x" if empty/missing) repeated
                        forever until the client goes away.
  /endless-chunked/FILE the same, Transfer-Encoding: chunked, never ending.

"Per target" counters (reset, 5xx) key on the whole request target including
any query string, so a test can get a fresh counter with "?t=unique"; the
query string is otherwise ignored.

HEAD is answered like GET without a body (and without faults that need one).
Nothing is printed on stdout; unexpected errors go to stderr.
"""

import argparse
import errno
import http.server
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse

COUNTS = {}
COUNTS_LOCK = threading.Lock()
LOG_LOCK = threading.Lock()
LOG = None
ROOT = None

HUGE_HEADER = 4 * 1024 * 1024
SLOW_HEAD = 64


def bump(key):
    """Return how many times KEY was seen before this call (0 the first time)."""
    with COUNTS_LOCK:
        n = COUNTS.get(key, 0)
        COUNTS[key] = n + 1
        return n


def parse_range(value, size):
    """Parse a single-range "bytes=" header. Returns (start, end) inclusive,
    None when there is no usable range (serve 200), or "bad" for 416."""
    if not value:
        return None
    m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", value)
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return None  # multi-range or garbage: ignore, like many servers
    if m.group(1) == "":
        n = int(m.group(2))
        if n == 0:
            return "bad"
        return (max(0, size - n), size - 1)
    start = int(m.group(1))
    end = int(m.group(2)) if m.group(2) else size - 1
    if start >= size:
        return "bad"
    return (start, min(end, size - 1))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "faultd/1"
    sys_version = ""

    # --- logging ---------------------------------------------------------
    def log_message(self, fmt, *args):  # quiet: no stderr chatter
        pass

    def log_request(self, code="-", size="-"):
        if LOG is None:
            return
        code = getattr(code, "value", code)
        rng = self.headers.get("Range", "-") if self.headers else "-"
        fault = getattr(self, "fault", None) or "-"
        line = '"%s" %s "%s" %s\n' % (self.requestline, code, rng, fault)
        with LOG_LOCK:
            LOG.write(line)
            LOG.flush()

    # --- helpers ---------------------------------------------------------
    def send_simple(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def resolve(self, rel):
        """Map REL (URL path, no leading slash) to a file under ROOT.
        Returns the path, or None (and sends 400) for a traversal attempt."""
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            self.send_simple(400, b"bad path\n")
            return None
        return os.path.join(ROOT, *parts) if parts else ROOT

    def load(self, rel):
        """Read the file for REL; sends 404/400 and returns None on failure."""
        path = self.resolve(rel)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError,
                PermissionError):
            self.send_simple(404, b"not found\n")
            return None

    def start_body(self, data, extra_headers=(), length=None, allow_range=True):
        """Send status and headers for DATA (200, or 206 for a Range).
        Returns the bytes to send as the body, or None if already answered."""
        size = len(data)
        rng = parse_range(self.headers.get("Range"), size) if allow_range else None
        if rng == "bad":
            self.fault = None
            self.send_simple(416, b"", [("Content-Range", "bytes */%d" % size)])
            return None
        if rng is None:
            self.send_response(200)
            body = data
        else:
            start, end = rng
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
            body = data[start:end + 1]
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(body) if length is None else length(len(body))))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return None
        return body

    def close_clean(self):
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close_reset(self):
        """Abort the connection with a TCP RST."""
        self.close_connection = True
        try:
            self.wfile.flush()
            time.sleep(0.2)  # let the half body reach the client first
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.rfile.close()  # drop makefile()'s reference so close() is real
            self.connection.close()
        except OSError:
            pass

    # --- dispatch --------------------------------------------------------
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.fault = None
        target = self.path
        path = urllib.parse.unquote(urllib.parse.urlsplit(target).path)
        seg, _, rest = path.lstrip("/").partition("/")
        try:
            self.dispatch(target, seg, rest, path)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.EBADF):
                raise
            self.close_connection = True

    def dispatch(self, target, seg, rest, path):
        m = re.fullmatch(r"(reset|5xx)-(\d+)", seg)
        if seg == "reset" or (m and m.group(1) == "reset"):
            limit = int(m.group(2)) if m else 1
            data = self.load(rest)
            if data is None:
                return
            if bump(target) < limit and self.command != "HEAD":
                self.fault = "reset"
                body = self.start_body(data)
                if body is None:
                    return
                self.wfile.write(body[:len(body) // 2])
                self.close_reset()
                return
            body = self.start_body(data)
            if body is not None:
                self.wfile.write(body)
            return

        if seg == "500then200" or (m and m.group(1) == "5xx"):
            limit = int(m.group(2)) if m else 1
            if bump(target) < limit:
                self.fault = "500"
                self.send_simple(500, b"injected 500\n")
                return
            data = self.load(rest)
            if data is not None:
                body = self.start_body(data)
                if body is not None:
                    self.wfile.write(body)
            return

        if seg == "always500":
            self.fault = "500"
            self.send_simple(500, b"injected 500\n")
            return

        if seg == "404":
            self.fault = "404"
            self.send_simple(404, b"injected 404\n")
            return

        if seg in ("401", "403"):
            self.fault = seg
            self.send_simple(int(seg), b"injected %s\n" % seg.encode(),
                             [("WWW-Authenticate", 'Basic realm="mirror"')] if seg == "401" else [])
            return

        if seg == "redirect":
            self.fault = "redirect"
            loc = "/" + urllib.parse.quote(rest)
            self.send_simple(302, b"", [("Location", loc)])
            return

        if seg == "redirloop":
            self.fault = "redirloop"
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
            hop = int(q.get("hop", ["0"])[0] or 0) + 1
            loc = "/redirloop/%s?hop=%d" % (urllib.parse.quote(rest), hop)
            self.send_simple(302, b"", [("Location", loc)])
            return

        if seg == "hold":
            data = self.load(rest)
            if data is None:
                return
            release = self.resolve(rest + ".release")
            self.fault = seg
            body = self.start_body(data, allow_range=False)
            if body is None:
                return
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            while not os.path.exists(release):
                time.sleep(0.05)
            self.wfile.write(body[len(body) // 2:])
            return

        if seg in ("truncate", "closeearly", "badlength", "slow", "hugeheaders"):
            data = self.load(rest)
            if data is None:
                return
            self.fault = seg
            if seg == "truncate":
                body = self.start_body(data, [("Connection", "close")], allow_range=False)
                if body is not None:
                    self.wfile.write(body[:len(body) // 2])
                self.close_clean()
            elif seg == "closeearly":
                body = self.start_body(data, [("Connection", "keep-alive")], allow_range=False)
                if body is not None:
                    self.wfile.write(body[:max(0, len(body) - 1)])
                self.close_clean()
            elif seg == "badlength":
                body = self.start_body(data, [("Connection", "close")],
                                       length=lambda n: n + 1000, allow_range=False)
                if body is not None:
                    self.wfile.write(body)
                self.close_clean()
            elif seg == "slow":
                body = self.start_body(data, allow_range=False)
                if body is None:
                    return
                self.wfile.write(body[:SLOW_HEAD])
                for i in range(SLOW_HEAD, len(body)):
                    time.sleep(1)
                    self.wfile.write(body[i:i + 1])
            elif seg == "hugeheaders":
                body = self.start_body(data, [("X-Huge", "h" * HUGE_HEADER)],
                                       allow_range=False)
                if body is not None:
                    self.wfile.write(body)
            return

        if seg in ("endless", "endless-chunked"):
            path_ = self.resolve(rest)
            if path_ is None:
                return
            try:
                with open(path_, "rb") as f:
                    chunk = f.read()
            except OSError:
                chunk = b""
            if not chunk:
                chunk = b"x"
            while len(chunk) < 65536:
                chunk += chunk
            self.fault = seg
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            chunked = seg == "endless-chunked"
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            if self.command == "HEAD":
                return
            frame = (b"%x\r\n" % len(chunk)) + chunk + b"\r\n" if chunked else chunk
            while True:  # ends when the client hangs up (EPIPE) or on timeout
                self.wfile.write(frame)

        # plain file
        data = self.load(path.lstrip("/"))
        if data is not None:
            body = self.start_body(data)
            if body is not None:
                self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        e = sys.exc_info()[1]
        if isinstance(e, (ConnectionError, BrokenPipeError, TimeoutError)):
            return
        if isinstance(e, OSError) and e.errno in (errno.EBADF, errno.EPIPE,
                                                  errno.ECONNRESET, errno.ENOTCONN):
            return
        super().handle_error(request, client_address)  # traceback to stderr


class Server6(Server):
    address_family = socket.AF_INET6


def main():
    global LOG, ROOT
    ap = argparse.ArgumentParser(description="fault-injecting HTTP test server")
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()

    if a.bind not in ("127.0.0.1", "::1", "localhost"):
        ap.error("--bind must be a loopback address (127.0.0.1 or ::1)")

    # Hard self-timeout first, so even a failed start cannot linger.
    t = threading.Timer(a.timeout, lambda: os._exit(3))
    t.daemon = True
    t.start()

    ROOT = os.path.abspath(a.root)
    if a.log:
        LOG = open(a.log, "a", buffering=1)

    cls = Server6 if ":" in a.bind else Server
    srv = cls((a.bind, a.port), Handler)
    port = srv.server_address[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, a.port_file)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
