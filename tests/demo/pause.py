#!/usr/bin/env python3
# @where `make demo` and `make demo-serve` (the demo mirror and fake Rekor;
#   `out/demo/demo.env`) -- its pause image, a static registry tree
"""The demo's pause image (make demo, tests/demo/run; issue 33 d3).

A Windows-shaped stand-in for registry.k8s.io/pause, written as the static
registry tree `winbuild mirror` exports (docs/provenance.md): ROOT/v2/pause/
manifests/<digest or tag> and blobs/<digest>, and ROOT/nginx-locations.conf
giving each manifest its media type under URL prefix PREFIX. Two manifest
lists, as upstream has them: 3.10 with Windows Server 2019 and 2022 entries,
3.10.2 with 2025 too (and a linux one each). Every byte is a function of
this file, so the lists' digests are constants overrides/demo.yaml pins.

usage: pause.py tree ROOT PREFIX          prints {"TAG": "sha256:LIST", ...}
       pause.py sig ROOT PREFIX DIGEST CASE.json
          the cosign signature manifest of DIGEST under the tag
          sha256-<hex>.sig, one layer from CASE.json (tests/sigstore/forge.py
          --image-sigs: {"payload": base64, "annotations": {...}}), as
          tests/registry/push.py --sig pushes one to a registry
"""
import base64
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

MT_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MT_MAN = "application/vnd.docker.distribution.manifest.v2+json"
MT_CFG = "application/vnd.docker.container.image.v1+json"
MT_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
MT_OCI = "application/vnd.oci.image.manifest.v1+json"
REPO = "pause"

# os.version of each Windows build's entry (the builds registry.k8s.io/pause
# lists: 17763 = 2019, 20348 = 2022, 26100 = 2025)
BUILDS = {"2019": "10.0.17763.6893", "2022": "10.0.20348.3207", "2025": "10.0.26100.3476"}
TAGS = {"3.10": ["2019", "2022"], "3.10.2": ["2019", "2022", "2025"]}

ROOT, PREFIX = sys.argv[2], sys.argv[3].rstrip("/")
MAN_DIR = os.path.join(ROOT, "v2", REPO, "manifests")
BLOB_DIR = os.path.join(ROOT, "v2", REPO, "blobs")
CONF = os.path.join(ROOT, "nginx-locations.conf")


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def put(d, name, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def blob(data):
    d = sha(data)
    put(BLOB_DIR, d, data)
    return d


def manifest(ref, mt, body):
    put(MAN_DIR, ref, body)
    with open(CONF, "a") as f:
        f.write(f"location = {PREFIX}/v2/{REPO}/manifests/{ref} {{ default_type {mt}; }}\n")
    return sha(body)


def layer(seed):
    """A gzip'd tar shaped like a Windows layer; its bytes follow from SEED."""
    raw = io.BytesIO()
    data = b"".join(hashlib.sha256(f"{seed}/{i}".encode()).digest() for i in range(128))
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, body in ((f"Files/Windows/System32/{seed}.dll", data),
                           ("Hives/DefaultUser_Delta", seed.encode() * 64)):
            ti = tarfile.TarInfo(name)
            ti.size = len(body)
            ti.mtime = 0
            t.addfile(ti, io.BytesIO(body))
    return gzip.compress(raw.getvalue(), mtime=0), sha(raw.getvalue())


def image(os_, ver, seed):
    gz, diff = layer(seed)
    cfg = {"architecture": "amd64", "os": os_, "rootfs": {"type": "layers", "diff_ids": [diff]},
           "config": {"Cmd": ["c:\\windows\\system32\\pauseloop.exe" if ver else "/pause"]}}
    if ver:
        cfg["os.version"] = ver
    cfgb = json.dumps(cfg, sort_keys=True).encode()
    man = {"schemaVersion": 2, "mediaType": MT_MAN,
           "config": {"mediaType": MT_CFG, "size": len(cfgb), "digest": blob(cfgb)},
           "layers": [{"mediaType": MT_LAYER, "size": len(gz), "digest": blob(gz)}]}
    mb = json.dumps(man, indent=3).encode()
    plat = {"architecture": "amd64", "os": os_}
    if ver:
        plat["os.version"] = ver
    return {"mediaType": MT_MAN, "size": len(mb), "digest": manifest(sha(mb), MT_MAN, mb),
            "platform": plat}


if sys.argv[1] == "tree":
    os.makedirs(ROOT, exist_ok=True)
    with open(CONF, "w") as f:
        f.write(f"location = {PREFIX}/v2/ {{ default_type application/json; return 200 '{{}}'; }}\n")
    out = {}
    for tag, versions in TAGS.items():
        entries = [image("windows", BUILDS[v], f"pause-{tag}-{v}") for v in versions]
        entries.append(image("linux", None, f"pause-{tag}-linux"))
        lb = json.dumps({"schemaVersion": 2, "mediaType": MT_LIST, "manifests": entries},
                        indent=3).encode()
        out[tag] = manifest(sha(lb), MT_LIST, lb)
        manifest(tag, MT_LIST, lb)
    json.dump(out, sys.stdout)
    print()
elif sys.argv[1] == "sig":
    digest, case = sys.argv[4], json.load(open(sys.argv[5]))
    data = base64.b64decode(case["payload"])
    layers = [{"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
               "size": len(data), "digest": blob(data), "annotations": case["annotations"]}]
    cfgb = json.dumps({"architecture": "", "os": "", "config": {},
                       "rootfs": {"type": "layers", "diff_ids": [x["digest"] for x in layers]}},
                      sort_keys=True).encode()
    man = {"schemaVersion": 2, "mediaType": MT_OCI,
           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                      "size": len(cfgb), "digest": blob(cfgb)},
           "layers": layers}
    print(manifest("sha256-%s.sig" % digest.split(":")[1], MT_OCI, json.dumps(man).encode()))
else:
    sys.exit(__doc__)
