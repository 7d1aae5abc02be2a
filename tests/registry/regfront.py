#!/usr/bin/env python3
"""A registry front for tests/cli/images.bats (issue 33), over a real
docker-registry (distribution) behind it.

Two TLS listeners on loopback:
  front  (https://127.0.0.1:FRONT): the registry API as a client sees it.
         --token: every /v2/ request needs "Authorization: Bearer <token>",
         else 401 with a Bearer challenge whose realm is FRONT/token
         (distribution's token spec); /token hands out the token for the
         scope asked. Manifests are proxied to the registry; blobs are
         answered with a 307 to the blob store.
  blobs  (https://localhost:BLOBS, another origin): serves /b/REPO/DIGEST
         from the registry, and /foreign/NAME from --foreign-dir.
         --corrupt: one byte of every blob body changed.
         --corrupt-manifests: a space added to every manifest (still JSON,
         another digest).
         --flaky: the first request for each path on either listener is a 503.
         --grow: one byte more on every blob body (longer than its descriptor).
         --http-redirect: blobs redirect to the blob store over plain http.
         --leak-token: blobs redirect to a blob-store path that ends with
         the token (a store that echoes it), where nothing is found: the
         client's 404 message names that URL.
--plain: both listeners plain http (a mirror over http wanting a token).
--basic USER:PASS: every /v2/ request on front needs Basic USER:PASS, else
         401 with `WWW-Authenticate: Basic realm="test"` (a site's mirror).
--realm: a third listener, realm (https://127.0.0.1:REALM, another
         origin; --realm-plain: plain http), is the token realm instead
         of FRONT/token. --token-basic USER:PASS: the token endpoint wants
         Basic USER:PASS first (401 Basic otherwise), as Docker Hub's does
         for a private repository.
Every request is logged: "LISTENER METHOD PATH auth=yes|no|basic:USER STATUS"
(yes: a Bearer token; basic:USER, with ok or bad for the password).
The port file holds "FRONT BLOBS" (and " REALM" with --realm).
"""
import argparse
import base64
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--registry", required=True)
ap.add_argument("--cafile", required=True)
ap.add_argument("--cert", required=True)
ap.add_argument("--key", required=True)
ap.add_argument("--port-file", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--foreign-dir", default="")
ap.add_argument("--token", action="store_true")
ap.add_argument("--corrupt", action="store_true")
ap.add_argument("--corrupt-manifests", action="store_true")
ap.add_argument("--flaky", action="store_true")
ap.add_argument("--grow", action="store_true")
ap.add_argument("--http-redirect", action="store_true")
ap.add_argument("--leak-token", action="store_true")
ap.add_argument("--plain", action="store_true")
ap.add_argument("--basic", default="")
ap.add_argument("--token-basic", default="")
ap.add_argument("--realm", action="store_true")
ap.add_argument("--realm-plain", action="store_true")
ap.add_argument("--timeout", type=int, default=600)
A = ap.parse_args()

TOKEN = "tok-" + os.urandom(8).hex()
UPCTX = ssl.create_default_context(cafile=A.cafile)
LOCK = threading.Lock()
PORTS = {}
SEEN = set()


def flaky(handler):
    """--flaky: a 503 the first time a path is asked for."""
    if not A.flaky or handler.path in SEEN:
        return False
    SEEN.add(handler.path)
    handler.answer(503, b"try again")
    return True


def log(line):
    with LOCK, open(A.log, "a") as f:
        f.write(line + "\n")


def upstream(path, accept=None):
    h = {"Accept": accept} if accept else {}
    r = urllib.request.Request(A.registry + path, headers=h)
    try:
        with urllib.request.urlopen(r, context=UPCTX) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class Base(BaseHTTPRequestHandler):
    name = "?"

    def log_message(self, *a):
        pass

    def answer(self, status, body=b"", headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        log(f"{self.name} GET {self.path} auth={auth_shown(self)} {status}")

    def basic_ok(self, want):
        return self.headers.get("Authorization") == \
            "Basic " + base64.b64encode(want.encode()).decode()

    def token(self):
        """/token: the token for the scope asked (after Basic with --token-basic)."""
        u = urllib.parse.urlsplit(self.path)
        if A.token_basic and not self.basic_ok(A.token_basic):
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                               {"WWW-Authenticate": 'Basic realm="token"'})
        q = urllib.parse.parse_qs(u.query)
        scope = q.get("scope", [""])[0]
        if not scope.startswith("repository:") or not scope.endswith(":pull"):
            return self.answer(400, b'{"errors":[{"code":"DENIED"}]}')
        return self.answer(200, json.dumps({"token": TOKEN}).encode(),
                           {"Content-Type": "application/json"})


def auth_shown(h):
    a = h.headers.get("Authorization") or ""
    if a.startswith("Basic "):
        try:
            user, _, pw = base64.b64decode(a[6:]).decode().partition(":")
        except Exception:
            return "basic:?"
        ok = any(w == f"{user}:{pw}" for w in (A.basic, A.token_basic) if w)
        return f"basic:{user}:{'ok' if ok else 'bad'}"
    return "yes" if a else "no"


class Front(Base):
    name = "front"

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if flaky(self):
            return
        if u.path == "/token" and not A.realm:
            return self.token()
        if not u.path.startswith("/v2/"):
            return self.answer(404)
        if A.basic and not self.basic_ok(A.basic):
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                               {"WWW-Authenticate": 'Basic realm="test-registry"'})
        if A.token and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            repo = u.path[4:].rsplit("/", 2)[0]
            realm = f"https://127.0.0.1:{PORTS['front']}/token"
            if A.realm:
                realm = f"{'http' if A.realm_plain else 'https'}://127.0.0.1:" \
                        f"{PORTS['realm']}/token"
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}', {
                "WWW-Authenticate": f'Bearer realm="{realm}",service="test-registry",'
                                    f'scope="repository:{repo}:pull"'})
        parts = u.path[4:].rsplit("/", 2)
        if len(parts) == 3 and parts[1] == "blobs":
            scheme = "http" if A.http_redirect else "https"
            leak = f"/{TOKEN}" if A.leak_token else ""
            return self.answer(307, b"", {
                "Location": f"{scheme}://localhost:{PORTS['blobs']}/b/{parts[0]}/{parts[2]}{leak}"})
        st, hd, body = upstream(u.path, self.headers.get("Accept"))
        if A.corrupt_manifests and st == 200:
            body = body + b" "
        keep = {k: v for k, v in hd.items()
                if k.lower() in ("content-type", "docker-content-digest")}
        return self.answer(st, body, keep)


class Blobs(Base):
    name = "blobs"

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if flaky(self):
            return
        if u.path.startswith("/foreign/") and A.foreign_dir:
            p = os.path.join(A.foreign_dir, os.path.basename(u.path))
            if not os.path.isfile(p):
                return self.answer(404)
            with open(p, "rb") as f:
                body = f.read()
        elif u.path.startswith("/b/"):
            repo, digest = u.path[3:].rsplit("/", 1)
            st, _, body = upstream(f"/v2/{repo}/blobs/{digest}")
            if st != 200:
                return self.answer(st, body)
        else:
            return self.answer(404)
        if A.corrupt and body:
            body = body[:-1] + bytes([body[-1] ^ 1])
        if A.grow:
            body = body + b"!"
        return self.answer(200, body, {"Content-Type": "application/octet-stream"})


class Realm(Base):
    name = "realm"

    def do_GET(self):
        if urllib.parse.urlsplit(self.path).path != "/token":
            return self.answer(404)
        return self.token()


def serve(cls, host, plain=None):
    srv = ThreadingHTTPServer((host, 0), cls)
    if not (A.plain if plain is None else plain):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(A.cert, A.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


PORTS["front"] = serve(Front, "127.0.0.1")
PORTS["blobs"] = serve(Blobs, "127.0.0.1")
if A.realm:
    PORTS["realm"] = serve(Realm, "127.0.0.1", A.realm_plain)
with open(A.port_file + ".tmp", "w") as f:
    f.write(f"{PORTS['front']} {PORTS['blobs']}" +
            (f" {PORTS['realm']}" if A.realm else "") + "\n")
os.rename(A.port_file + ".tmp", A.port_file)
time.sleep(A.timeout)
sys.exit(0)
