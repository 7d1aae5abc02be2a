#!/usr/bin/env python3
"""Measure the two ways a cloud build VM gets winbuild's payload, on loopback.

usage: payload-transfer.py [FILE | --size MiB]

upload  what Packer's `file` provisioner does over WinRM (packer-community/
        winrmcp): the file is base64-encoded and appended to a temp file in
        chunks, one `echo <chunk> >> file` command per chunk (cmd.exe's 8191
        character limit: about 8000 base64 characters, 6000 bytes, a chunk),
        each command a WS-Management Command request and a Receive request
        with SOAP envelopes, then decoded. Here a local HTTP server plays the
        WinRM endpoint: same number of round trips, same bytes on the wire,
        none of Windows' per-command cost (a cmd.exe per chunk), so the real
        upload is slower than this.
pull    what `packer.payload: pull` does: one HTTP GET of payload.zip from the
        user's storage, streamed to disk.

Prints bytes, requests and seconds of each, and the ratio. Numbers go into
docs/packer.md ("Getting the payload into a cloud build VM").
"""
import base64
import hashlib
import http.client
import http.server
import os
import socket
import sys
import tempfile
import threading
import time

CHUNK_B64 = 8000                     # base64 characters per echo command
ENVELOPE = 2400                      # bytes of SOAP around each request

SOAP = b"<s:Envelope>" + b"x" * (ENVELOPE - 25) + b"</s:Envelope>"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # as Go's net/http (Packer) does
    sink = None
    payload = None

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/wsman/command":
            # the echo command's argument is the chunk between the markers
            start = body.index(b"<rsp:Arguments>") + len(b"<rsp:Arguments>")
            end = body.index(b"</rsp:Arguments>")
            Handler.sink.write(body[start:end])
        self.send_response(200)
        self.send_header("Content-Length", str(len(SOAP)))
        self.end_headers()
        self.wfile.write(SOAP)

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(os.path.getsize(Handler.payload)))
        self.end_headers()
        with open(Handler.payload, "rb") as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                self.wfile.write(b)


def connect(port):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def upload(port, path, tmp):
    conn = connect(port)
    requests = 0
    sent = 0
    with open(tmp, "wb") as Handler.sink:
        data = base64.b64encode(open(path, "rb").read())
        for i in range(0, len(data), CHUNK_B64):
            chunk = data[i:i + CHUNK_B64]
            body = SOAP[:ENVELOPE // 2] + b"<rsp:Arguments>" + chunk + b"</rsp:Arguments>" + SOAP[:ENVELOPE // 2]
            for kind, b in (("command", body), ("receive", SOAP)):
                conn.request("POST", "/wsman/" + kind, body=b)
                r = conn.getresponse()
                r.read()
                requests += 1
                sent += len(b)
    decoded = base64.b64decode(open(tmp, "rb").read())
    assert hashlib.sha256(decoded).digest() == hashlib.sha256(open(path, "rb").read()).digest()
    return requests, sent


def pull(port, path, out):
    conn = connect(port)
    conn.request("GET", "/payload.zip")
    r = conn.getresponse()
    n = 0
    with open(out, "wb") as f:
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            f.write(b)
            n += len(b)
    assert n == os.path.getsize(path)
    return 1, n


def main():
    tmpdir = tempfile.mkdtemp(prefix="wb-bench-")
    if len(sys.argv) > 1 and sys.argv[1] != "--size":
        path = sys.argv[1]
    else:
        mib = int(sys.argv[2]) if len(sys.argv) > 2 else 64
        path = os.path.join(tmpdir, "payload.zip")
        with open(path, "wb") as f:
            f.write(os.urandom(mib << 20))
    Handler.payload = path
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    size = os.path.getsize(path)
    res = {}
    for name, fn in (("upload", upload), ("pull", pull)):
        t = time.monotonic()
        reqs, wire = fn(port, path, os.path.join(tmpdir, name + ".out"))
        res[name] = time.monotonic() - t
        print(f"{name:6} {size / 2**20:8.1f} MiB payload  {reqs:7d} requests  "
              f"{wire / 2**20:8.1f} MiB on the wire  {res[name]:8.2f} s  "
              f"{size / 2**20 / res[name]:8.1f} MiB/s")
    print(f"pull is {res['upload'] / res['pull']:.0f}x faster on loopback")
    srv.shutdown()
    for f in os.listdir(tmpdir):
        os.unlink(os.path.join(tmpdir, f))
    os.rmdir(tmpdir)


if __name__ == "__main__":
    main()
