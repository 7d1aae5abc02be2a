#!/usr/bin/env python3
"""An S3-style HTTPS server on loopback for tests/cli/creds.bats (issue 31).

Serves the files under --root only to a request signed with AWS Signature
Version 4 by --access-key/--secret-key (and --session-token, when given)
for --region and --service. The signature is not checked by code written
here: botocore's own SigV4Auth (Debian python3-botocore) recomputes it from
the request as received (method, path, query, the headers the request says
it signed, its X-Amz-Date) and the two must be equal. Anything else is 403.

Every request is logged to --log as one line:
  METHOD PATH STATUS auth=<present|absent> token=<present|absent> why
Usage: s3d.py --root DIR --port-file F --log F --cert C --key K
              --access-key A --secret-key S [--session-token T]
              --region R --service S [--timeout SECONDS]
"""
import argparse
import datetime
import http.server
import os
import ssl
import sys
import threading
import urllib.parse

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def parse_auth(value):
    if not value.startswith("AWS4-HMAC-SHA256 "):
        return None
    fields = {}
    for part in value[len("AWS4-HMAC-SHA256 "):].split(","):
        k, _, v = part.strip().partition("=")
        fields[k] = v
    return fields


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def record(self, status, why):
        with open(self.server.args.log, "a") as f:
            f.write("%s %s %d auth=%s token=%s %s\n" % (
                self.command, self.path, status,
                "present" if self.headers.get("Authorization") else "absent",
                "present" if self.headers.get("X-Amz-Security-Token") else "absent",
                why))

    def verdict(self):
        a = self.server.args
        auth = self.headers.get("Authorization")
        if not auth:
            return "no Authorization"
        f = parse_auth(auth)
        if not f or not {"Credential", "SignedHeaders", "Signature"} <= f.keys():
            return "not an AWS4-HMAC-SHA256 Authorization"
        scope = f["Credential"].split("/")
        if len(scope) != 5 or scope[0] != a.access_key or scope[2] != a.region \
                or scope[3] != a.service or scope[4] != "aws4_request":
            return "wrong credential scope %s" % f["Credential"]
        amz_date = self.headers.get("X-Amz-Date", "")
        try:
            when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
        except ValueError:
            return "no X-Amz-Date"
        if abs((datetime.datetime.utcnow() - when).total_seconds()) > 900:
            return "X-Amz-Date too far from now"
        signed = f["SignedHeaders"].split(";")
        if "host" not in signed:
            return "host not signed"
        if a.session_token and "x-amz-security-token" not in signed:
            return "session token not signed"
        headers = {}
        for h in signed:
            v = self.headers.get(h)
            if v is None:
                return "signed header %s missing" % h
            headers[h] = v
        url = "https://%s%s" % (self.headers["Host"], self.path)
        req = AWSRequest(method=self.command, url=url, headers=headers, data=b"")
        req.context["timestamp"] = amz_date
        signer = SigV4Auth(Credentials(a.access_key, a.secret_key, a.session_token or None),
                           a.service, a.region)
        # botocore's canonical request lists every header it is given;
        # it was given exactly the signed ones
        canonical = signer.canonical_request(req)
        want = signer.signature(signer.string_to_sign(req, canonical), req)
        if want != f["Signature"]:
            return "signature mismatch"
        return None

    def serve(self, body):
        why = self.verdict()
        if why:
            self.record(403, why.replace(" ", "_"))
            msg = b"<Error><Code>SignatureDoesNotMatch</Code></Error>"
            self.send_response(403)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            if body:
                self.wfile.write(msg)
            return
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        full = os.path.realpath(os.path.join(self.server.args.root, path.lstrip("/")))
        if not full.startswith(os.path.realpath(self.server.args.root) + "/") or \
                not os.path.isfile(full):
            self.record(404, "no_such_key")
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(full, "rb") as fh:
            data = fh.read()
        self.record(200, "ok")
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self):
        self.serve(True)

    def do_HEAD(self):
        self.serve(False)


def main():
    p = argparse.ArgumentParser()
    for k in ("root", "port-file", "log", "cert", "key", "access-key", "secret-key",
              "region", "service"):
        p.add_argument("--" + k, required=True)
    p.add_argument("--session-token", default="")
    p.add_argument("--timeout", type=int, default=600)
    a = p.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.args = a
    threading.Timer(a.timeout, srv.shutdown).start()
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
