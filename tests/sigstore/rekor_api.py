#!/usr/bin/env python3
"""Turn a Sigstore bundle's message signature into cosign's detached files and
its tlog entry into the Rekor v1 API's JSON for that entry, as Rekor serves it
at GET /api/v1/log/entries/<uuid> (for tests/sigstore/fakerekor.py).

    rekor_api.py BUNDLE OUTDIR    -> OUTDIR/{artifact.sig, cert.b64, entry.json}

The SET, the inclusion proof and the checkpoint are the bundle's own bytes:
re-encoded (base64 -> hex where the API uses hex), never re-signed, so a
real bundle's entry still checks against the real Rekor key.
"""
import base64
import hashlib
import json
import os
import sys

bundle = json.load(open(sys.argv[1]))
out = sys.argv[2]
os.makedirs(out, exist_ok=True)


def hexof(b64):
    return base64.b64decode(b64).hex()


mat = bundle["verificationMaterial"]
der = (mat["certificate"]["rawBytes"] if "certificate" in mat
       else mat["x509CertificateChain"]["certificates"][0]["rawBytes"])
pem = "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n" % "\n".join(
    der[i:i + 64] for i in range(0, len(der), 64))
t = mat["tlogEntries"][0]
body = base64.b64decode(t["canonicalizedBody"])
ver = {"signedEntryTimestamp": t["inclusionPromise"]["signedEntryTimestamp"]}
if "inclusionProof" in t:
    p = t["inclusionProof"]
    ver["inclusionProof"] = {"logIndex": int(p["logIndex"]), "rootHash": hexof(p["rootHash"]),
                             "treeSize": int(p["treeSize"]),
                             "hashes": [hexof(h) for h in p["hashes"]],
                             "checkpoint": p["checkpoint"]["envelope"]}
uuid = hashlib.sha256(b"\0" + body).hexdigest()
entry = {uuid: {"body": t["canonicalizedBody"], "integratedTime": int(t["integratedTime"]),
                "logID": hexof(t["logId"]["keyId"]), "logIndex": int(t["logIndex"]),
                "verification": ver}}
with open(os.path.join(out, "entry.json"), "w") as f:
    json.dump(entry, f, indent=1)
with open(os.path.join(out, "artifact.sig"), "w") as f:
    f.write(bundle["messageSignature"]["signature"] + "\n")
with open(os.path.join(out, "cert.b64"), "w") as f:
    f.write(base64.b64encode(pem.encode()).decode() + "\n")
