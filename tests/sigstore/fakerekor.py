#!/usr/bin/env python3
# @where `make demo` and `make demo-serve` (the demo mirror and fake Rekor;
#   `out/demo/demo.env`) -- its Rekor
"""A fake Rekor v1 API on loopback, for tests/cli/upstream_k8s.bats and make demo.

    fakerekor.py --port-file F [--port N] [--redirect URL] [--redirect-entries URL]
                 [--status N] [--index-answer JSON] [--release-on-index PATH]
                 [--hold-index-until LOG REGEX [--hold-timeout S]]
                 [ENTRY.json[=SHA256HEX] ...]

Each ENTRY.json is one entry in the Rekor API's JSON ({"<uuid>": {"body",
"integratedTime", "logID", "logIndex", "verification"}}). It is indexed under
the SHA-256 its hashedrekord body records, or under SHA256HEX when given
(an entry listed for another artifact). Serves what the openapi.yaml of
sigstore/rekor says a client uses:
  POST /api/v1/index/retrieve        {"hash": "sha256:<hex>"} -> [uuid, ...]
  GET  /api/v1/log/entries/<uuid>    -> the entry
  POST /api/v1/log/entries/retrieve  {"entryUUIDs": [...]} -> [entry, ...]
Every request is logged to stderr. --redirect answers everything with a 302;
--redirect-entries only the GET of an entry (to URL + the path; "self"
means this server's /moved, under which it serves the same entries);
--status N answers every request with HTTP status N (a failing log);
--index-answer makes the index answer JSON, whatever is asked (a hostile log;
@FILE: the JSON in FILE, for answers longer than an argument may be).
--release-on-index creates PATH when the index is asked (faultd's /hold/ waits
for such a file); --hold-index-until holds the index answer until a line of
LOG matches REGEX (another server's access log: "the client asked that
meanwhile"), at most S seconds (default 10), and logs which ended the hold:
"index held: released by LOG" or "index held: timed out".
"""
import argparse
import base64
import http.server
import json
import os
import re
import time

ap = argparse.ArgumentParser()
ap.add_argument("--port-file", required=True)
ap.add_argument("--port", type=int, default=0)
ap.add_argument("--redirect")
ap.add_argument("--redirect-entries")
ap.add_argument("--status", type=int)
ap.add_argument("--index-answer")
ap.add_argument("--release-on-index")
ap.add_argument("--hold-index-until", nargs=2, metavar=("LOG", "REGEX"))
ap.add_argument("--hold-timeout", type=float, default=10)
ap.add_argument("entries", nargs="*")
args = ap.parse_args()
if args.index_answer and args.index_answer.startswith("@"):
    with open(args.index_answer[1:]) as f:
        args.index_answer = f.read()

ENTRIES = {}   # uuid -> entry object ({uuid: {...}})
INDEX = {}     # "sha256:<hex>" -> [uuid]
for spec in args.entries:
    path, _, forced = spec.partition("=")
    with open(path) as f:
        entry = json.load(f)
    uuid, val = next(iter(entry.items()))
    ENTRIES[uuid] = entry
    if forced:
        digest = forced
    else:
        body = json.loads(base64.b64decode(val["body"]))
        digest = body["spec"]["data"]["hash"]["value"]
    if uuid not in INDEX.setdefault("sha256:" + digest, []):
        INDEX["sha256:" + digest].append(uuid)


class H(http.server.BaseHTTPRequestHandler):
    def answer(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def redirected(self):
        if args.status:
            self.answer(args.status, {"code": args.status, "message": "failing"})
            return True
        if not args.redirect:
            return False
        self.send_response(302)
        self.send_header("Location", args.redirect + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def hold_index(self):
        if args.release_on_index:
            open(args.release_on_index, "w").close()
        if not args.hold_index_until:
            return
        log, pattern = args.hold_index_until
        end = time.monotonic() + args.hold_timeout
        while time.monotonic() < end:
            if os.path.exists(log):
                with open(log, errors="replace") as f:
                    if any(re.search(pattern, line) for line in f):
                        self.log_message("index held: released by %s", log)
                        return
            time.sleep(0.02)
        self.log_message("index held: timed out")

    def do_GET(self):
        if self.redirected():
            return
        prefix = "/api/v1/log/entries/"
        if args.redirect_entries and self.path.startswith(prefix):
            self.send_response(302)
            to = args.redirect_entries
            if to == "self":
                to = "http://127.0.0.1:%d/moved" % self.server.server_address[1]
            self.send_header("Location", to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/moved" + prefix):
            prefix = "/moved" + prefix
        if self.path.startswith(prefix) and self.path[len(prefix):] in ENTRIES:
            return self.answer(200, ENTRIES[self.path[len(prefix):]])
        self.answer(404, {"code": 404, "message": "not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        if self.redirected():
            return
        if self.path == "/api/v1/index/retrieve":
            self.hold_index()
        if self.path == "/api/v1/index/retrieve" and args.index_answer is not None:
            return self.answer(200, json.loads(args.index_answer))
        if self.path == "/api/v1/index/retrieve":
            return self.answer(200, INDEX.get(req.get("hash", "").lower(), []))
        if self.path == "/api/v1/log/entries/retrieve":
            return self.answer(200, [ENTRIES[u] for u in req.get("entryUUIDs", [])
                                     if u in ENTRIES])
        self.answer(404, {"code": 404, "message": "not found"})


srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), H)
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
srv.serve_forever()
