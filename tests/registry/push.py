#!/usr/bin/env python3
"""Push Windows-shaped test images to a registry over the distribution API.

Made at test time for tests/cli/images.bats (issue 33): each image is a
manifest list (Docker schema 2 list) whose entries are windows/amd64 image
manifests for several Windows builds (platform.os.version), plus a linux one,
each with a config naming its os.version and layers shaped like Windows
layers (Files/, Hives/). Prints a JSON summary of every digest it pushed.

usage: push.py REGISTRY_URL CAFILE FOREIGN_BASE FOREIGN_DIR > digests.json
  FOREIGN_BASE: the https URL foreign layers are listed under (their bytes
  are written to FOREIGN_DIR, not pushed: a foreign layer is not in the
  registry).

       push.py --sig REGISTRY_URL CAFILE REPO DIGEST CASE.json...
  pushes a cosign signature manifest for the image DIGEST of REPO, as
  `cosign sign` stores one: an OCI image manifest under the tag
  sha256-<hex>.sig, one layer per CASE.json (tests/sigstore/forge.py
  --image-sigs: {"payload": base64, "annotations": {...}}), the
  simple-signing payload with the signature, certificate, chain and Rekor
  bundle as the layer's annotations. Prints the manifest's digest.
"""
import base64
import gzip
import hashlib
import io
import json
import os
import ssl
import sys
import tarfile
import urllib.parse
import urllib.request

SIG = sys.argv[1:2] == ["--sig"]
if SIG:
    REG, CAFILE, SIG_REPO, SIG_DIGEST = sys.argv[2:6]
else:
    REG, CAFILE, FOREIGN_BASE, FOREIGN_DIR = sys.argv[1:5]
CTX = ssl.create_default_context(cafile=CAFILE)

MT_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MT_MAN = "application/vnd.docker.distribution.manifest.v2+json"
MT_CFG = "application/vnd.docker.container.image.v1+json"
MT_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
MT_FOREIGN = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
# the OCI media types (an image `skopeo copy --preserve-digests` can write
# to an OCI layout unchanged: it converts Docker's, changing the digests)
OCI = {"list": "application/vnd.oci.image.index.v1+json",
       "man": "application/vnd.oci.image.manifest.v1+json",
       "cfg": "application/vnd.oci.image.config.v1+json",
       "layer": "application/vnd.oci.image.layer.v1.tar+gzip"}
DOCKER = {"list": MT_LIST, "man": MT_MAN, "cfg": MT_CFG, "layer": MT_LAYER}


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def req(method, url, body=None, headers=None):
    r = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    return urllib.request.urlopen(r, context=CTX)


def push_blob(repo, data):
    d = sha(data)
    with req("POST", f"{REG}/v2/{repo}/blobs/uploads/") as r:
        loc = r.headers["Location"]
    loc = urllib.parse.urljoin(REG, loc)
    sep = "&" if "?" in loc else "?"
    with req("PUT", f"{loc}{sep}digest={urllib.parse.quote(d)}", data,
             {"Content-Type": "application/octet-stream"}):
        pass
    return d


def push_manifest(repo, ref, mt, body):
    with req("PUT", f"{REG}/v2/{repo}/manifests/{ref}", body, {"Content-Type": mt}):
        pass
    return sha(body)


def layer(seed):
    """A gzip'd tar shaped like a Windows layer, deterministic per seed."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in ((f"Files/Windows/System32/{seed}.dll", os.urandom(4096)),
                           ("Hives/DefaultUser_Delta", seed.encode() * 64)):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 0
            t.addfile(ti, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0), hashlib.sha256(raw.getvalue()).hexdigest()


def image(repo, os_, ver, seed, foreign=False, config_ver=None, arch="amd64", mt=DOCKER):
    layers, diff_ids, descs = [], [], []
    for i in range(2):
        blob, diff = layer(f"{seed}-{i}")
        diff_ids.append("sha256:" + diff)
        if foreign and i == 0:
            d = sha(blob)
            with open(os.path.join(FOREIGN_DIR, d.split(":")[1]), "wb") as f:
                f.write(blob)
            descs.append({"mediaType": MT_FOREIGN, "size": len(blob), "digest": d,
                          "urls": [f"{FOREIGN_BASE}/{d.split(':')[1]}"]})
        else:
            descs.append({"mediaType": mt["layer"], "size": len(blob),
                          "digest": push_blob(repo, blob)})
        layers.append(blob)
    cfg = {"architecture": arch, "os": os_,
           "rootfs": {"type": "layers", "diff_ids": diff_ids},
           "config": {"Cmd": ["c:\\windows\\system32\\cmd.exe"]}}
    if config_ver or ver:
        cfg["os.version"] = config_ver or ver
    cfgb = json.dumps(cfg, sort_keys=True).encode()
    cd = push_blob(repo, cfgb)
    man = {"schemaVersion": 2, "mediaType": mt["man"],
           "config": {"mediaType": mt["cfg"], "size": len(cfgb), "digest": cd},
           "layers": descs}
    mb = json.dumps(man, indent=3).encode()
    md = push_manifest(repo, sha(mb), mt["man"], mb)
    plat = {"architecture": arch, "os": os_}
    if ver:
        plat["os.version"] = ver
    return {"mediaType": mt["man"], "size": len(mb), "digest": md, "platform": plat}, {
        "manifest": md, "config": cd, "layers": [x["digest"] for x in descs]}


def push_list(repo, tag, entries, mt=DOCKER):
    lst = {"schemaVersion": 2, "mediaType": mt["list"], "manifests": [e[0] for e in entries]}
    b = json.dumps(lst, indent=3).encode()
    push_manifest(repo, tag, mt["list"], b)
    return {"list": sha(b), "entries": {e[0]["platform"].get("os.version", e[0]["platform"]["os"]): e[1]
                                        for e in entries}}


if SIG:
    MT_OCI = "application/vnd.oci.image.manifest.v1+json"
    layers = []
    for case in sys.argv[6:]:
        c = json.load(open(case))
        data = base64.b64decode(c["payload"])
        layers.append({"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                       "size": len(data), "digest": push_blob(SIG_REPO, data),
                       "annotations": c["annotations"]})
    cfgb = json.dumps({"architecture": "", "os": "", "config": {},
                       "rootfs": {"type": "layers", "diff_ids": [x["digest"] for x in layers]}},
                      sort_keys=True).encode()
    man = {"schemaVersion": 2, "mediaType": MT_OCI,
           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                      "size": len(cfgb), "digest": push_blob(SIG_REPO, cfgb)},
           "layers": layers}
    body = json.dumps(man).encode()
    print(push_manifest(SIG_REPO, "sha256-%s.sig" % SIG_DIGEST.split(":")[1], MT_OCI, body))
    sys.exit(0)

out = {}
# pause: 2019 and 2022 builds and a linux entry; no 2025 build
out["pause"] = push_list("pause", "3.10", [
    image("pause", "windows", "10.0.17763.6893", "p2019"),
    image("pause", "windows", "10.0.20348.3207", "p2022"),
    image("pause", "linux", None, "plinux"),
])
# nanoserver: a 2019 entry whose base layer is foreign (urls)
out["nanoserver"] = push_list("windows/nanoserver", "1809", [
    image("windows/nanoserver", "windows", "10.0.17763.1", "n2019", foreign=True),
])
# liar: the list says 2022, the config says 2019
out["liar"] = push_list("liar", "1", [
    image("liar", "windows", "10.0.20348.1", "liar", config_ver="10.0.17763.1"),
])
# servercore: one entry per shipped Windows build (the engine tier's second
# image, tests/cli/images_node.bats)
out["servercore"] = push_list("windows/servercore", "ltsc", [
    image("windows/servercore", "windows", "10.0.17763.1", "s2019"),
    image("windows/servercore", "windows", "10.0.20348.1", "s2022"),
    image("windows/servercore", "windows", "10.0.26100.1", "s2025"),
])
# signed: a 2022 image whose tests push its cosign signature (--sig)
out["signed"] = push_list("signed", "1", [
    image("signed", "windows", "10.0.20348.3207", "s2022"),
])
# armfirst: a 2022 list whose windows/arm64 entry comes before its
# windows/amd64 one (the build host's pick is the amd64 entry; entries keeps
# the amd64 one, listed last)
out["armfirst"] = push_list("armfirst", "1", [
    image("armfirst", "windows", "10.0.20348.3207", "a2022arm", arch="arm64"),
    image("armfirst", "windows", "10.0.20348.3207", "a2022"),
])
# ocisigned: signed's shape in OCI media types, for an OCI layout made by
# skopeo with its digests kept (tests/cli/imgsource_layout.bats)
out["ocisigned"] = push_list("ocisigned", "1", [
    image("ocisigned", "windows", "10.0.20348.3207", "o2022", mt=OCI),
    image("ocisigned", "windows", "10.0.17763.6893", "o2019", mt=OCI),
], mt=OCI)
json.dump(out, sys.stdout, indent=1)
