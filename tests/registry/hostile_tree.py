#!/usr/bin/env python3
"""A static registry tree (nginx serves it) for one Windows-shaped image
whose build manifest carries a chosen mediaType (issue 41 item 4).

  hostile_tree.py ROOT REPO MEDIA_TYPE
      ROOT/v2/REPO/manifests/{1,<list digest>,<manifest digest>},
      ROOT/v2/REPO/blobs/<digest>, ROOT/locations.conf (the /v2/ answer
      and the manifests' Content-Type); prints the list's digest.

The list is a Docker manifest list (a media type winbuild knows), its one
entry the image manifest whose "mediaType" is MEDIA_TYPE: the bytes are
pinned by digest, so a hostile publisher, not the transport, chose it.
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

root, repo, mt = sys.argv[1], sys.argv[2], sys.argv[3]
MT_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MT_CFG = "application/vnd.docker.container.image.v1+json"
MT_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
VER = "10.0.20348.3207"


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def put(kind, name, b):
    d = os.path.join(root, "v2", repo, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(b)


raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
    data = b"hostile layer\n" * 64
    ti = tarfile.TarInfo("Files/Windows/System32/hostile.dll")
    ti.size = len(data)
    ti.mtime = 0
    t.addfile(ti, io.BytesIO(data))
blob = gzip.compress(raw.getvalue(), mtime=0)
put("blobs", sha(blob), blob)
cfg = json.dumps({"architecture": "amd64", "os": "windows", "os.version": VER,
                  "rootfs": {"type": "layers",
                             "diff_ids": [sha(raw.getvalue())]}}, sort_keys=True).encode()
put("blobs", sha(cfg), cfg)
man = json.dumps({"schemaVersion": 2, "mediaType": mt,
                  "config": {"mediaType": MT_CFG, "size": len(cfg), "digest": sha(cfg)},
                  "layers": [{"mediaType": MT_LAYER, "size": len(blob),
                              "digest": sha(blob)}]}, indent=3).encode()
put("manifests", sha(man), man)
lst = json.dumps({"schemaVersion": 2, "mediaType": MT_LIST, "manifests": [
    {"mediaType": "application/vnd.docker.distribution.manifest.v2+json",
     "size": len(man), "digest": sha(man),
     "platform": {"architecture": "amd64", "os": "windows", "os.version": VER}}]},
                 indent=3).encode()
put("manifests", sha(lst), lst)
put("manifests", "1", lst)
with open(os.path.join(root, "locations.conf"), "w") as f:
    f.write("location = /v2/ { default_type application/json; return 200 '{}'; }\n"
            f"location /v2/{repo}/manifests/ {{ default_type {MT_LIST}; }}\n")
print(sha(lst))
