#!/usr/bin/env python3
"""Mint a private Sigstore world and forgeries of it, for tests/cli/sigstore.bats.

    forge.py OUTDIR
    forge.py --sign OUTDIR IDENTITY ISSUER [--v3] FILE... [--image REF DIGEST...] [--attest IDENTITY ISSUER JSONL FILE...]
    forge.py --image-sigs OUTDIR IDENTITY ISSUER DIGEST OTHER_DIGEST DOCKER_REFERENCE

--sign (make demo, tests/demo/run; tests/cli/upstream_shipped.bats) mints
only the world (OUTDIR/root.json) and signs each FILE the way krel signs the
Kubernetes binaries: FILE.sig (base64 of the DER ECDSA signature) and
FILE.cert (base64 of the PEM Fulcio-like certificate for IDENTITY, an email
or a URI, from the OIDC issuer ISSUER) beside it, and the Rekor v1 API JSON
of its hashedrekord entry as OUTDIR/entries/<FILE's name>.json, for
fakerekor.py to serve. A FILE after --v3 is signed the way cosign v3's
`sign-blob --bundle FILE.sigstore.json` signs them (issue 43): one v0.3
protobuf bundle, FILE.sigstore.json, carrying the certificate, the
signature and the entry (no .sig, no .cert, no entry to serve). With --attest, it also writes JSONL: the build
provenance of the FILEs after it (one DSSE in-toto SLSA v1 bundle, signed as
the workflow IDENTITY), as containerd's release workflow attests its files.
With --image, each container image DIGEST (docker-reference REF) is signed
as --image-sigs signs its "good" case, in the same world, as
OUTDIR/imgsig/<hex of DIGEST>.json (the demo's pause image).

--image-sigs (tests/cli/images.bats) mints the world and signs the container
image DIGEST the way `cosign sign` does (issue 33): a simple-signing payload
naming DIGEST and DOCKER_REFERENCE, signed keyless as IDENTITY from ISSUER,
its hashedrekord entry's SET bundle; each case as OUTDIR/imgsig/<case>.json
({"payload": base64, "annotations": {...}}, one signature layer, for
tests/registry/pushsig.py): good, wrong-identity, wrong-issuer, forged (the
signature by another key), other-digest (a payload naming OTHER_DIGEST),
broken-set (one bit of the SET flipped), no-set, key (signed by the key
OUTDIR/imgsig/cosign.pub).
Otherwise:

Writes, with fresh keys each run (python3-cryptography, not our C code):
  root.json            a trusted root: our Fulcio-like CA (root + intermediate),
                       our CT log, our Rekor v1 log
  artifact, other      the signed file and another one
  <case>.json          bundles (v0.3), and a few trusted-root variants
  detached/...         a cosign sign-blob style signature, certificate and a
                       Rekor v1 API entry, and managed-key signatures
  cases.tsv            name, artifact, bundle, root, policy, expect, oracle
Each bundle is built the way Fulcio, the CT log and Rekor build theirs: an
RFC 6962 precertificate SCT over the TBS certificate, a SET over the canonical
entry, an RFC 6962 inclusion proof, a signed-note checkpoint.
"""
import base64
import datetime
import hashlib
import json
import os
import struct
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SIGN = sys.argv[1:2] == ["--sign"]
IMAGE = sys.argv[1:2] == ["--image-sigs"]
if SIGN and len(sys.argv) < 6:
    sys.exit("usage: forge.py --sign OUTDIR IDENTITY ISSUER FILE...")
if IMAGE and len(sys.argv) != 8:
    sys.exit("usage: forge.py --image-sigs OUTDIR IDENTITY ISSUER DIGEST OTHER_DIGEST REF")
OUT = sys.argv[2] if SIGN or IMAGE else sys.argv[1]
os.makedirs(os.path.join(OUT, "entries" if SIGN else "imgsig" if IMAGE else "detached"),
            exist_ok=True)

T = 1735689600                      # 2025-01-01T00:00:00Z: the signing time
IDENTITY = "https://github.com/winbuild/forge/.github/workflows/release.yml@refs/heads/main"
ISSUER = "https://token.actions.githubusercontent.com"
OID_ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
OID_ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
OID_SCT = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")


def b64(b):
    return base64.b64encode(b).decode()


def dt(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc)


def rfc3339(t):
    return dt(t).strftime("%Y-%m-%dT%H:%M:%SZ")


def spki(key):
    return key.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def ec_key():
    return ec.generate_private_key(ec.SECP256R1())


def write(name, data):
    path = os.path.join(OUT, name)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def der_len(n):
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def der_octets(b):
    return b"\x04" + der_len(len(b)) + b


def der_utf8(s):
    b = s.encode()
    return b"\x0c" + der_len(len(b)) + b


# ---- a CA ----
def ca_cert(key, name, issuer_key=None, issuer_name=None, path_len=None):
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "winbuild.test"),
                         x509.NameAttribute(NameOID.COMMON_NAME, name)])
    b = (x509.CertificateBuilder()
         .subject_name(subject)
         .issuer_name(issuer_name or subject)
         .public_key(key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(dt(T - 365 * 86400))
         .not_valid_after(dt(T + 10 * 365 * 86400))
         .add_extension(x509.BasicConstraints(ca=True, path_length=path_len), critical=True)
         .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                        critical=True)
         .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False))
    return b.sign(issuer_key or key, hashes.SHA256()), subject


# ---- an SCT (RFC 6962 precertificate entry) ----
def sct_list(ct_key, issuer_cert, tbs, ts_ms, extensions=b""):
    log_id = hashlib.sha256(spki(ct_key)).digest()
    ikh = hashlib.sha256(issuer_cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).digest()
    signed = (b"\x00\x00" + struct.pack(">Q", ts_ms) + b"\x00\x01" + ikh +
              len(tbs).to_bytes(3, "big") + tbs + struct.pack(">H", len(extensions)) + extensions)
    sig = ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
    sct = (b"\x00" + log_id + struct.pack(">Q", ts_ms) + struct.pack(">H", len(extensions)) +
           extensions + b"\x04\x03" + struct.pack(">H", len(sig)) + sig)
    lst = struct.pack(">H", len(sct)) + sct
    return der_octets(struct.pack(">H", len(lst)) + lst)


def leaf_cert(key, ca_key, ca, ct_key, identity=IDENTITY, issuer=ISSUER, eku=ExtendedKeyUsageOID.CODE_SIGNING,
              not_before=T - 60, not_after=T + 540, sct=True, sct_over=None, is_ca=False,
              san_der=None):
    b = (x509.CertificateBuilder()
         .subject_name(x509.Name([]))
         .issuer_name(ca.subject)
         .public_key(key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(dt(not_before))
         .not_valid_after(dt(not_after))
         .add_extension(x509.KeyUsage(True, False, False, False, False, is_ca, False, False, False),
                        critical=True))
    if eku:
        b = b.add_extension(x509.ExtendedKeyUsage([eku]), critical=False)
    if is_ca:
        b = b.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    san = x509.RFC822Name(identity) if "@" in identity and "://" not in identity \
        else x509.UniformResourceIdentifier(identity)
    # san_der: the SAN extension's DER as given (an IA5String python would
    # refuse, e.g. with an embedded NUL)
    b = (b.add_extension(x509.UnrecognizedExtension(x509.oid.ExtensionOID.SUBJECT_ALTERNATIVE_NAME,
                                                    san_der), critical=True)
         if san_der else b.add_extension(x509.SubjectAlternativeName([san]), critical=True))
    b = (b
         .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V1, issuer.encode()), critical=False)
         .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V2, der_utf8(issuer)), critical=False))
    if not sct:
        return b.sign(ca_key, hashes.SHA256())
    pre = b.sign(ca_key, hashes.SHA256())
    ext = sct_list(ct_key, ca, sct_over or pre.tbs_certificate_bytes, (not_before + 1) * 1000)
    return b.add_extension(x509.UnrecognizedExtension(OID_SCT, ext), critical=False).sign(
        ca_key, hashes.SHA256())


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


# ---- Rekor v1 ----
def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(l, r):
    return hashlib.sha256(b"\x01" + l + r).digest()


def mth(leaves):
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def path(m, leaves):
    """RFC 6962 PATH(m, D[n])."""
    if len(leaves) == 1:
        return []
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    if m < k:
        return path(m, leaves[:k]) + [mth(leaves[k:])]
    return path(m - k, leaves[k:]) + [mth(leaves[:k])]


class Rekor:
    def __init__(self):
        self.key = ec_key()
        self.log_id = hashlib.sha256(spki(self.key)).digest()
        self.origin = "rekor.winbuild.test - 4242"

    def entry(self, body, integrated_time=T, index=5, size=7):
        """A bundle tlogEntries[] element and the Rekor v1 API form."""
        leaves = [hashlib.sha256(b"other %d" % i).digest() for i in range(size)]
        leaves[index] = leaf_hash(body)
        root = mth(leaves)
        proof = path(index, leaves)
        canon = json.dumps({"body": b64(body), "integratedTime": integrated_time,
                            "logID": self.log_id.hex(), "logIndex": index},
                           sort_keys=True, separators=(",", ":")).encode()
        set_sig = self.key.sign(canon, ec.ECDSA(hashes.SHA256()))
        note = "%s\n%d\n%s\n" % (self.origin, size, b64(root))
        nsig = self.key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        checkpoint = note + "\n\u2014 %s %s\n" % (self.origin.split(" ")[0],
                                                  b64(self.log_id[:4] + nsig))
        bundle_entry = {
            "logIndex": str(index),
            "logId": {"keyId": b64(self.log_id)},
            "kindVersion": {"kind": json.loads(body)["kind"],
                            "version": json.loads(body)["apiVersion"]},
            "integratedTime": str(integrated_time),
            "inclusionPromise": {"signedEntryTimestamp": b64(set_sig)},
            "inclusionProof": {"logIndex": str(index), "rootHash": b64(root),
                               "treeSize": str(size), "hashes": [b64(h) for h in proof],
                               "checkpoint": {"envelope": checkpoint}},
            "canonicalizedBody": b64(body),
        }
        api = {hashlib.sha256(body).hexdigest(): {
            "body": b64(body), "integratedTime": integrated_time,
            "logID": self.log_id.hex(), "logIndex": index,
            "verification": {"signedEntryTimestamp": b64(set_sig),
                             "inclusionProof": {"logIndex": index, "rootHash": root.hex(),
                                                "treeSize": size,
                                                "hashes": [h.hex() for h in proof],
                                                "checkpoint": checkpoint}}}}
        return bundle_entry, api


def hashedrekord(digest, sig, pub_pem, alg="sha256"):
    return json.dumps({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
        "data": {"hash": {"algorithm": alg, "value": digest.hex()}},
        "signature": {"content": b64(sig), "publicKey": {"content": b64(pub_pem)}}}},
        sort_keys=True, separators=(",", ":")).encode()


def dsse_body(payload_type, payload, sig, pub_pem):
    env = {"payload": b64(payload), "payloadType": payload_type,
           "signatures": [{"sig": b64(sig)}]}
    return json.dumps({"apiVersion": "0.0.1", "kind": "dsse", "spec": {
        "envelopeHash": {"algorithm": "sha256",
                         "value": hashlib.sha256(json.dumps(env, separators=(",", ":")).encode()).hexdigest()},
        "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(payload).hexdigest()},
        "signatures": [{"signature": b64(sig), "verifier": b64(pub_pem)}]}},
        sort_keys=True, separators=(",", ":")).encode()


def pae(payload_type, payload):
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type.encode(),
                                    len(payload), payload)


def trusted_root(ca_chain, ct_key, rekor, ca_window=(T - 365 * 86400, None),
                 tlog_window=(T - 365 * 86400, None), ct_window=(T - 365 * 86400, None),
                 more_rekors=()):
    def window(w):
        d = {"start": rfc3339(w[0])}
        if w[1] is not None:
            d["end"] = rfc3339(w[1])
        return d
    return json.dumps({
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [{"baseUrl": "https://%s" % r.origin.split(" ")[0], "hashAlgorithm": "SHA2_256",
                   "publicKey": {"rawBytes": b64(spki(r.key)),
                                 "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                                 "validFor": window(tlog_window)},
                   "logId": {"keyId": b64(r.log_id)}} for r in (rekor,) + tuple(more_rekors)],
        "certificateAuthorities": [{
            "subject": {"organization": "winbuild.test", "commonName": "forge"},
            "uri": "https://fulcio.winbuild.test",
            "certChain": {"certificates": [
                {"rawBytes": b64(c.public_bytes(serialization.Encoding.DER))} for c in ca_chain]},
            "validFor": window(ca_window)}],
        "ctlogs": [{"baseUrl": "https://ctfe.winbuild.test", "hashAlgorithm": "SHA2_256",
                    "publicKey": {"rawBytes": b64(spki(ct_key)),
                                  "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                                  "validFor": window(ct_window)},
                    "logId": {"keyId": b64(hashlib.sha256(spki(ct_key)).digest())}}],
        "timestampAuthorities": [],
    }, indent=1)


def bundle(material, entries, content):
    b = {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
         "verificationMaterial": dict(material, tlogEntries=entries)}
    b.update(content)
    return json.dumps(b, indent=1)


# ---- the world ----
root_key, int_key, ct_key = ec_key(), ec_key(), ec_key()
root_ca, root_name = ca_cert(root_key, "forge-root")
int_ca, _ = ca_cert(int_key, "forge-intermediate", root_key, root_name, path_len=0)
rekor = Rekor()
write("root.json", trusted_root([int_ca, root_ca], ct_key, rekor))

def image_payload(d, ref):
    return json.dumps({"critical": {"identity": {"docker-reference": ref},
                                    "image": {"docker-manifest-digest": d},
                                    "type": "cosign container image signature"},
                       "optional": None}, separators=(",", ":")).encode()


def image_sig(name, d, ref, identity, issuer, sign_key=None, key=None, mutate_set=None,
              index=0):
    """One signature layer as cosign writes it: the payload naming image D
    (docker-reference REF), and its signature, certificate and Rekor bundle
    as annotations; OUT/imgsig/NAME.json."""
    data = image_payload(d, ref)
    k = key or ec_key()
    cert = None if key else leaf_cert(k, int_key, int_ca, ct_key, identity=identity,
                                      issuer=issuer)
    sig = (sign_key or k).sign(data, ec.ECDSA(hashes.SHA256()))
    pub = pem(cert) if cert else k.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    _, api = rekor.entry(hashedrekord(hashlib.sha256(data).digest(), sig, pub),
                         index=index, size=max(8, index + 1))
    (e,) = api.values()
    set_ = base64.b64decode(e["verification"]["signedEntryTimestamp"])
    if mutate_set:
        set_ = mutate_set(set_)
    bundle_ = {"Payload": {"body": e["body"], "integratedTime": e["integratedTime"],
                           "logIndex": e["logIndex"], "logID": e["logID"]}}
    if set_ is not None:
        bundle_["SignedEntryTimestamp"] = b64(set_)
    ann = {"dev.cosignproject.cosign/signature": b64(sig),
           "dev.sigstore.cosign/bundle": json.dumps(bundle_, separators=(",", ":"))}
    if cert:
        ann["dev.sigstore.cosign/certificate"] = pem(cert).decode()
        ann["dev.sigstore.cosign/chain"] = (pem(int_ca) + pem(root_ca)).decode()
    os.makedirs(os.path.join(OUT, "imgsig"), exist_ok=True)
    write(os.path.join("imgsig", name + ".json"),
          json.dumps({"payload": b64(data), "annotations": ann}, indent=1))


if IMAGE:
    ident, iss, digest_, other_, ref = sys.argv[3:8]

    def one(name, d=digest_, identity=ident, issuer=iss, **kw):
        image_sig(name, d, ref, identity, issuer, **kw)

    def flip(b):
        b = bytearray(b)
        b[len(b) // 2] ^= 0x01
        return bytes(b)

    one("good")
    one("wrong-identity", identity="evil@example.com", index=1)
    one("wrong-issuer", issuer="https://evil.example", index=2)
    one("forged", sign_key=ec_key(), index=3)
    one("other-digest", d=other_, index=4)
    one("broken-set", mutate_set=flip, index=5)
    one("no-set", mutate_set=lambda b: None, index=6)
    ck = ec_key()
    write(os.path.join("imgsig", "cosign.pub"), ck.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    one("key", key=ck, index=7)
    sys.exit(0)

if SIGN:
    # --sign OUTDIR IDENTITY ISSUER FILE... [--attest IDENTITY ISSUER JSONL FILE...]
    rest = sys.argv[5:]
    attest = rest[rest.index("--attest") + 1:] if "--attest" in rest else []
    files = rest[:rest.index("--attest")] if attest else rest
    # --image REF DIGEST...: container images signed as `cosign sign`
    # signs them, as IDENTITY from ISSUER, in the same world:
    # OUTDIR/imgsig/<hex of DIGEST>.json (the demo's pause image)
    images = files[files.index("--image") + 1:] if "--image" in files else []
    files = files[:files.index("--image")] if images else files
    # --v3 FILE: that one file signed the cosign v3 way (the rest keep
    # their order, so their log indexes do not move)
    v3 = {files[k + 1] for k in range(len(files) - 1) if files[k] == "--v3"}
    files = [f for f in files if f != "--v3"]
    n = len(files) + (1 if attest else 0) + 1
    for k, d in enumerate(images[1:]):
        image_sig(d.split(":")[1], d, images[0], sys.argv[3], sys.argv[4], index=n + k)
    for i, f in enumerate(files):
        with open(f, "rb") as fh:
            data = fh.read()
        key = ec_key()
        cert = leaf_cert(key, int_key, int_ca, ct_key, identity=sys.argv[3], issuer=sys.argv[4])
        sig = key.sign(data, ec.ECDSA(hashes.SHA256()))
        entry, api = rekor.entry(hashedrekord(hashlib.sha256(data).digest(), sig, pem(cert)),
                                 index=i, size=n)
        if f in v3:
            with open(f + ".sigstore.json", "w") as fh:
                fh.write(bundle(
                    {"certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))}},
                    [entry], {"messageSignature": {
                        "messageDigest": {"algorithm": "SHA2_256",
                                          "digest": b64(hashlib.sha256(data).digest())},
                        "signature": b64(sig)}}))
            continue
        with open(f + ".sig", "w") as fh:
            fh.write(b64(sig) + "\n")
        with open(f + ".cert", "w") as fh:
            fh.write(b64(pem(cert)) + "\n")
        write(os.path.join("entries", os.path.basename(f) + ".json"), json.dumps(api, indent=1))
    if attest:
        # build provenance as actions/attest-build-provenance writes it: one
        # bundle (a DSSE in-toto SLSA v1 statement naming each FILE by its
        # sha256) as the one line of JSONL, signed by the workflow IDENTITY
        # (https://github.com/OWNER/REPO/.github/workflows/W.yml@REF)
        ident, iss, jsonl, subjects = attest[0], attest[1], attest[2], attest[3:]
        wf, _, ref = ident.partition("@")
        repo, _, wf_path = wf.partition("/.github/")
        subj = []
        for f in subjects:
            with open(f, "rb") as fh:
                subj.append({"name": os.path.basename(f),
                             "digest": {"sha256": hashlib.sha256(fh.read()).hexdigest()}})
        stmt = json.dumps({"_type": "https://in-toto.io/Statement/v1", "subject": subj,
                           "predicateType": "https://slsa.dev/provenance/v1",
                           "predicate": {"buildDefinition": {
                               "buildType": "https://actions.github.io/buildtypes/workflow/v1",
                               "externalParameters": {"workflow": {
                                   "ref": ref, "repository": repo, "path": ".github/" + wf_path}}},
                               "runDetails": {"builder": {"id": ident}}}}).encode()
        pt = "application/vnd.in-toto+json"
        key = ec_key()
        cert = leaf_cert(key, int_key, int_ca, ct_key, identity=ident, issuer=iss)
        dsig = key.sign(pae(pt, stmt), ec.ECDSA(hashes.SHA256()))
        entry, _ = rekor.entry(dsse_body(pt, stmt, dsig, pem(cert)), index=n - 2, size=n)
        line = bundle({"certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))}},
                      [entry], {"dsseEnvelope": {"payload": b64(stmt), "payloadType": pt,
                                                 "signatures": [{"sig": b64(dsig), "keyid": ""}]}})
        with open(jsonl, "w") as fh:
            fh.write(json.dumps(json.loads(line), separators=(",", ":")) + "\n")
    sys.exit(0)

artifact = b"winbuild sigstore forge artifact\n"
other = b"winbuild sigstore forge: another artifact\n"
write("artifact", artifact)
write("other", other)
digest = hashlib.sha256(artifact).digest()

cases = []


def case(name, bundle_file, expect, oracle, artifact_file="artifact", root="root.json",
         policy="identity"):
    cases.append((name, artifact_file, bundle_file, root, policy, expect, oracle))


def keyless(name, cert, signer, entry_body=None, integrated_time=T, mutate=None,
            content=None, body=None):
    sig = signer.sign(artifact, ec.ECDSA(hashes.SHA256()))
    body = body or hashedrekord(digest, sig, pem(cert))
    entry, api = rekor.entry(body, integrated_time)
    if mutate:
        mutate(entry)
    content = content or {"messageSignature": {
        "messageDigest": {"algorithm": "SHA2_256", "digest": b64(digest)},
        "signature": b64(sig)}}
    mat = {"certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))}}
    write(name + ".json", bundle(mat, [entry], content))
    return sig, api


signer = ec_key()
good = leaf_cert(signer, int_key, int_ca, ct_key)
sig, api = keyless("good", good, signer)
case("good", "good.json", "pass", "pass")
case("identity-mismatch", "good.json", "fail", "fail",
     policy="identity=https://github.com/winbuild/forge/.github/workflows/evil.yml@refs/heads/main")
case("issuer-mismatch", "good.json", "fail", "fail",
     policy="issuer=https://accounts.google.com")
case("another-artifact", "good.json", "fail", "fail", artifact_file="other")
case("wrong-trusted-root", "good.json", "fail", "fail", root="PRODUCTION")

# detached: cosign sign-blob --bundle-less output, with and without the entry
write("detached/artifact.sig", b64(sig) + "\n")
write("detached/cert.pem", pem(good))
write("detached/cert.b64", b64(pem(good)) + "\n")
write("detached/entry.json", json.dumps(api, indent=1))

# online lookups (tests/cli/upstream_k8s.bats, a fake Rekor serves these):
# another artifact's entry, the artifact's entry integrated an hour after
# the certificate expired, its entry in a log that is not pinned, and one
# signed with another key under the pinned log's ID
osig = signer.sign(other, ec.ECDSA(hashes.SHA256()))
write("detached/other.sig", b64(osig) + "\n")
_, api_x = rekor.entry(hashedrekord(hashlib.sha256(other).digest(), osig, pem(good)), index=6)
write("detached/entry-other.json", json.dumps(api_x, indent=1))
_, api_x = rekor.entry(hashedrekord(digest, sig, pem(good)), integrated_time=T + 3600)
write("detached/entry-late.json", json.dumps(api_x, indent=1))
_, api_x = Rekor().entry(hashedrekord(digest, sig, pem(good)))
write("detached/entry-unknown-log.json", json.dumps(api_x, indent=1))
impostor = Rekor()                    # claims our log's ID, signs with its own key
impostor.log_id, impostor.origin = rekor.log_id, rekor.origin
_, api_x = impostor.entry(hashedrekord(digest, sig, pem(good)))
write("detached/entry-wrong-key.json", json.dumps(api_x, indent=1))

# a tampered SET: one bit of the signature flipped
def flip_set(entry):
    s = bytearray(base64.b64decode(entry["inclusionPromise"]["signedEntryTimestamp"]))
    s[len(s) // 2] ^= 0x01
    entry["inclusionPromise"]["signedEntryTimestamp"] = b64(bytes(s))
keyless("tampered-set", good, signer, mutate=flip_set)
case("tampered-set", "tampered-set.json", "fail", "fail")

# a truncated inclusion proof: the last hash dropped
def truncate_proof(entry):
    entry["inclusionProof"]["hashes"] = entry["inclusionProof"]["hashes"][:-1]
keyless("truncated-proof", good, signer, mutate=truncate_proof)
case("truncated-proof", "truncated-proof.json", "fail", "fail")

# expired trusted-root windows: the CA's, then the log's, end before T
write("root-ca-expired.json", trusted_root([int_ca, root_ca], ct_key, rekor,
                                           ca_window=(T - 365 * 86400, T - 3600)))
case("ca-window-expired", "good.json", "fail", "fail", root="root-ca-expired.json")
write("root-tlog-expired.json", trusted_root([int_ca, root_ca], ct_key, rekor,
                                             tlog_window=(T - 365 * 86400, T - 3600)))
case("tlog-window-expired", "good.json", "fail", "fail", root="root-tlog-expired.json")
# ...and inclusive at its end: a window ending exactly at T holds
write("root-ca-ends-at-t.json", trusted_root([int_ca, root_ca], ct_key, rekor,
                                             ca_window=(T - 365 * 86400, T)))
case("ca-window-ends-at-signing", "good.json", "pass", "pass", root="root-ca-ends-at-t.json")

# the chain comes from the trusted root only: a root that pins only the
# root CA is not completed by the intermediate a bundle carries
write("root-no-intermediate.json", trusted_root([root_ca], ct_key, rekor))
cb = json.loads(open(os.path.join(OUT, "good.json")).read())
cb["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.2"
cb["verificationMaterial"]["x509CertificateChain"] = {"certificates": [
    cb["verificationMaterial"].pop("certificate"),
    {"rawBytes": b64(int_ca.public_bytes(serialization.Encoding.DER))}]}
write("chain-v02.json", json.dumps(cb, indent=1))
case("chain-v02", "chain-v02.json", "pass", "pass")
case("intermediate-from-bundle", "chain-v02.json", "fail", "fail", root="root-no-intermediate.json")

# an entry with an inclusion proof but no SET: its integrated time is not
# signed, so a keyless signature has no verified time
def drop_set(entry):
    del entry["inclusionPromise"]
keyless("no-set", good, signer, mutate=drop_set)
case("no-set-no-time", "no-set.json", "fail", "fail")

# a leaf without the code-signing EKU
s2 = ec_key()
keyless("no-codesign-eku", leaf_cert(s2, int_key, int_ca, ct_key, eku=None), s2)
# the oracle does not check the EKU (Fulcio always sets it): it passes
case("no-codesign-eku", "no-codesign-eku.json", "fail", "pass-no-eku-check")

# a leaf whose EKU is another one (TLS server)
s8 = ec_key()
keyless("server-auth-eku", leaf_cert(s8, int_key, int_ca, ct_key,
                                     eku=ExtendedKeyUsageOID.SERVER_AUTH), s8)
case("server-auth-eku", "server-auth-eku.json", "fail", "pass-no-eku-check")

# a chain to a CA the root does not hold (same names, other keys)
evil_root_key, evil_int_key = ec_key(), ec_key()
evil_root, evil_root_name = ca_cert(evil_root_key, "forge-root")
evil_int, _ = ca_cert(evil_int_key, "forge-intermediate", evil_root_key, evil_root_name, 0)
s3 = ec_key()
keyless("untrusted-ca", leaf_cert(s3, evil_int_key, evil_int, ct_key), s3)
case("untrusted-ca", "untrusted-ca.json", "fail", "fail")

# an SCT from a CT log the root does not hold
s4 = ec_key()
keyless("unknown-ct-log", leaf_cert(s4, int_key, int_ca, ec_key()), s4)
case("unknown-ct-log", "unknown-ct-log.json", "fail", "fail")

# an SCT from our CT log, but signed over another certificate
s7 = ec_key()
keyless("sct-bad-signature", leaf_cert(s7, int_key, int_ca, ct_key,
                                       sct_over=good.tbs_certificate_bytes), s7)
case("sct-bad-signature", "sct-bad-signature.json", "fail", "fail")

# no SCT at all
s5 = ec_key()
keyless("no-sct", leaf_cert(s5, int_key, int_ca, ct_key, sct=False), s5)
case("no-sct", "no-sct.json", "fail", "fail")

# the integrated time after the certificate expired
s6 = ec_key()
keyless("time-outside-cert", leaf_cert(s6, int_key, int_ca, ct_key), s6,
        integrated_time=T + 3600)
case("time-outside-cert", "time-outside-cert.json", "fail", "fail")

# P-384 Fulcio leaves (issue 25): the message signature's hash is the one
# messageDigest.algorithm declares, not the one the key's size suggests.
# sigstore-python 1.x signed SHA-256 under P-384: verifies. The same
# signature with the field claiming SHA2_384 (and the artifact's SHA-384,
# logged so), and a SHA-384 signature claiming SHA2_256: refused.
def p384_case(name, sig_hash, alg, md_name, md):
    s = ec.generate_private_key(ec.SECP384R1())
    cert = leaf_cert(s, int_key, int_ca, ct_key)
    sig = s.sign(artifact, ec.ECDSA(sig_hash))
    d = md(artifact).digest()
    keyless(name, cert, s, body=hashedrekord(d, sig, pem(cert), alg),
            content={"messageSignature": {"messageDigest": {"algorithm": md_name,
                                                             "digest": b64(d)},
                                          "signature": b64(sig)}})
p384_case("p384-sha256", hashes.SHA256(), "sha256", "SHA2_256", hashlib.sha256)
case("p384-sha256", "p384-sha256.json", "pass", "pass")
p384_case("p384-sha384", hashes.SHA384(), "sha384", "SHA2_384", hashlib.sha384)
case("p384-sha384", "p384-sha384.json", "pass", "pass")
p384_case("p384-sha256-says-sha384", hashes.SHA256(), "sha384", "SHA2_384", hashlib.sha384)
case("p384-sha256-says-sha384", "p384-sha256-says-sha384.json", "fail", "fail")
p384_case("p384-sha384-says-sha256", hashes.SHA384(), "sha256", "SHA2_256", hashlib.sha256)
case("p384-sha384-says-sha256", "p384-sha384-says-sha256.json", "fail", "fail")

# issue 25 class 10: what the trust code must refuse, each a one-line
# bug that once survived the suite. A leaf that is itself a CA (CA:TRUE,
# keyCertSign), otherwise a good keyless signature:
s10 = ec_key()
keyless("leaf-is-ca", leaf_cert(s10, int_key, int_ca, ct_key, is_ca=True), s10)
# @sigstore/verify 2.x accepts it (it does not look at basicConstraints)
case("leaf-is-ca", "leaf-is-ca.json", "fail", "pass-no-ca-check")
# a SAN URI with an embedded NUL: the pinned identity, then "\0.evil"
nul_uri = IDENTITY.encode() + b"\x00.evil.example"
gn = b"\x86" + der_len(len(nul_uri)) + nul_uri
s11 = ec_key()
keyless("san-nul", leaf_cert(s11, int_key, int_ca, ct_key,
                             san_der=b"\x30" + der_len(len(gn)) + gn), s11)
# @sigstore/verify 2.x accepts it as the pinned identity: its SAN match
# stops at the NUL (a finding about the oracle, not our code)
case("san-nul", "san-nul.json", "fail", "pass-no-nul-check")
# the CT log's window in the trusted root ended before the SCT was issued
write("root-ct-expired.json", trusted_root([int_ca, root_ca], ct_key, rekor,
                                           ct_window=(T - 365 * 86400, T - 3600)))
case("sct-outside-ct-window", "good.json", "fail", "fail", root="root-ct-expired.json")

# no transparency-log entry at all: no signing time
nb = json.loads(open(os.path.join(OUT, "good.json")).read())
nb["verificationMaterial"]["tlogEntries"] = []
write("no-tlog.json", json.dumps(nb, indent=1))
case("no-tlog-entry", "no-tlog.json", "fail", "fail")

# DSSE: a good in-toto statement about the artifact, and one about another
def dsse(name, subject_digest, identity=IDENTITY, predicate=None, subjects=None):
    stmt = json.dumps({"_type": "https://in-toto.io/Statement/v1",
                       "subject": subjects or [{"name": "artifact",
                                                "digest": {"sha256": subject_digest.hex()}}],
                       "predicateType": "https://slsa.dev/provenance/v1",
                       "predicate": predicate or {}}).encode()
    pt = "application/vnd.in-toto+json"
    s = ec_key()
    cert = leaf_cert(s, int_key, int_ca, ct_key, identity=identity)
    dsig = s.sign(pae(pt, stmt), ec.ECDSA(hashes.SHA256()))
    body = dsse_body(pt, stmt, dsig, pem(cert))
    content = {"dsseEnvelope": {"payload": b64(stmt), "payloadType": pt,
                                "signatures": [{"sig": b64(dsig), "keyid": ""}]}}
    keyless(name, cert, s, content=content, body=body)
dsse("dsse-good", digest)
case("dsse-good", "dsse-good.json", "pass", "pass")
dsse("dsse-subject-mismatch", hashlib.sha256(other).digest())
# the oracle's Verifier.verify does not match in-toto subjects: it passes
case("dsse-subject-mismatch", "dsse-subject-mismatch.json", "fail", "pass-no-subject-check")

# a DSSE subject that shares the artifact's first 32 hex digits only
dsse("dsse-subject-prefix", digest[:16] + hashlib.sha256(other).digest()[16:])
case("dsse-subject-prefix", "dsse-subject-prefix.json", "fail", "pass-no-subject-check")
# a DSSE envelope signed and logged as it is, whose payload type is not
# in-toto's (the statement inside names the artifact)
def dsse_pt(name, pt):
    stmt = json.dumps({"_type": "https://in-toto.io/Statement/v1",
                       "subject": [{"name": "artifact", "digest": {"sha256": digest.hex()}}],
                       "predicateType": "https://slsa.dev/provenance/v1",
                       "predicate": {}}).encode()
    s = ec_key()
    cert = leaf_cert(s, int_key, int_ca, ct_key)
    dsig = s.sign(pae(pt, stmt), ec.ECDSA(hashes.SHA256()))
    keyless(name, cert, s, body=dsse_body(pt, stmt, dsig, pem(cert)),
            content={"dsseEnvelope": {"payload": b64(stmt), "payloadType": pt,
                                      "signatures": [{"sig": b64(dsig), "keyid": ""}]}})
dsse_pt("dsse-payload-type", "text/plain")
# @sigstore/verify does not look at the payload type
case("dsse-payload-type", "dsse-payload-type.json", "fail", "pass-no-payload-type-check")

# containerd-style build provenance (tests/cli/upstream_containerd.bats): an
# .intoto.jsonl whose lines are bundles of SLSA v1 statements, as
# actions/attest-build-provenance writes them in containerd's release
# workflow; the tarball is one subject among several
os.makedirs(os.path.join(OUT, "attest"), exist_ok=True)
CTRD_V = "2.0.0"
CTRD_ID = ("https://github.com/containerd/containerd/.github/workflows/release.yml"
           "@refs/tags/v" + CTRD_V)
tarball = b"containerd " + CTRD_V.encode() + b" windows amd64 tarball\n"
write("attest/containerd-%s-windows-amd64.tar.gz" % CTRD_V, tarball)
write("attest/identity", CTRD_ID)
slsa = {"buildDefinition": {
            "buildType": "https://actions.github.io/buildtypes/workflow/v1",
            "externalParameters": {"workflow": {
                "ref": "refs/tags/v" + CTRD_V,
                "repository": "https://github.com/containerd/containerd",
                "path": ".github/workflows/release.yml"}}},
        "runDetails": {"builder": {
            "id": "https://github.com/containerd/containerd/.github/workflows/release.yml"
                  "@refs/tags/v" + CTRD_V}}}


def subj(name, data):
    return {"name": name, "digest": {"sha256": hashlib.sha256(data).hexdigest()}}


def jsonl_line(name):
    return json.dumps(json.load(open(os.path.join(OUT, name + ".json"))),
                      separators=(",", ":"))


dsse("attest/line-good", None, CTRD_ID, slsa,
     [subj("containerd-%s-linux-amd64.tar.gz" % CTRD_V, other),
      subj("containerd-%s-windows-amd64.tar.gz" % CTRD_V, tarball)])
dsse("attest/line-other", None, CTRD_ID, slsa,
     [subj("containerd-%s-linux-amd64.tar.gz" % CTRD_V, other)])
dsse("attest/line-wrong-workflow", None, CTRD_ID.replace("release.yml", "evil.yml"), slsa,
     [subj("containerd-%s-windows-amd64.tar.gz" % CTRD_V, tarball)])
write("attest/good.intoto.jsonl", jsonl_line("attest/line-other") + "\n" +
      jsonl_line("attest/line-good") + "\n")
write("attest/other.intoto.jsonl", jsonl_line("attest/line-other") + "\n")
write("attest/wrong-workflow.intoto.jsonl", jsonl_line("attest/line-wrong-workflow") + "\n")
# a line that is a plain message signature over the tarball, by the right
# workflow: a signature, not build provenance (issue 25 class 10)
sm = ec_key()
cm = leaf_cert(sm, int_key, int_ca, ct_key, identity=CTRD_ID)
msg_sig = sm.sign(tarball, ec.ECDSA(hashes.SHA256()))
keyless("attest/line-message", cm, sm,
        body=hashedrekord(hashlib.sha256(tarball).digest(), msg_sig, pem(cm)),
        content={"messageSignature": {"messageDigest": {
            "algorithm": "SHA2_256", "digest": b64(hashlib.sha256(tarball).digest())},
            "signature": b64(msg_sig)}})
write("attest/message.intoto.jsonl", jsonl_line("attest/line-message") + "\n")

# managed keys: a bundle whose material is a public key
mk = ec_key()
mk_pem = mk.public_key().public_bytes(serialization.Encoding.PEM,
                                      serialization.PublicFormat.SubjectPublicKeyInfo)
write("detached/ecdsa.pub", mk_pem)
msig = mk.sign(artifact, ec.ECDSA(hashes.SHA256()))
entry, _ = rekor.entry(hashedrekord(digest, msig, mk_pem))
write("managed-key.json", bundle({"publicKey": {"hint": b64(hashlib.sha256(spki(mk)).digest())}},
                                 [entry], {"messageSignature": {
                                     "messageDigest": {"algorithm": "SHA2_256", "digest": b64(digest)},
                                     "signature": b64(msig)}}))
case("managed-key", "managed-key.json", "pass", "pass", policy="key=detached/ecdsa.pub")
other_key = ec_key()
write("detached/other.pub", other_key.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
case("managed-key-wrong-key", "managed-key.json", "fail", "fail", policy="key=detached/other.pub")
case("managed-key-no-key", "managed-key.json", "fail", "fail", policy="identity")

# cosign sign-blob --key style detached signatures: ECDSA P-256 and Ed25519
write("detached/ecdsa.sig", b64(msig) + "\n")
ed = ed25519.Ed25519PrivateKey.generate()
write("detached/ed25519.pub", ed.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
write("detached/ed25519.sig", b64(ed.sign(artifact)) + "\n")

# issue 41 item 6 (sigstore-go's 2026 fixes), tests/cli/sigstore_fixes.bats.
# 1. Detached P-384 signatures: the hash is the one the hashedrekord entry
# logs (spec.data.hash.algorithm), as sigstore-python 1.x's staging vector
# (bundle.txt.sig + .crt + its Rekor entry: ECDSA P-384 over SHA-256, the
# entry says "sha256"). Each NAME: detached/NAME.sig and NAME.entry.json,
# under detached/p384.cert.
p384 = ec.generate_private_key(ec.SECP384R1())
p384_cert = leaf_cert(p384, int_key, int_ca, ct_key)
write("detached/p384.cert", b64(pem(p384_cert)) + "\n")
p384_s256 = p384.sign(artifact, ec.ECDSA(hashes.SHA256()))
p384_s384 = p384.sign(artifact, ec.ECDSA(hashes.SHA384()))
d384 = hashlib.sha384(artifact).digest()
for name, psig, d, alg in (("p384-sha256", p384_s256, digest, "sha256"),
                           ("p384-sha384", p384_s384, d384, "sha384"),
                           # a SHA-384 signature logged as sha256: the log's
                           # hash is not the one the signature is over
                           ("p384-sha384-logged-sha256", p384_s384, digest, "sha256"),
                           ("p384-sha256-logged-sha384", p384_s256, d384, "sha384")):
    write("detached/%s.sig" % name, b64(psig) + "\n")
    _, api_x = rekor.entry(hashedrekord(d, psig, pem(p384_cert), alg), index=3)
    write("detached/%s.entry.json" % name, json.dumps(api_x, indent=1))

# 3. Media types that would lower the inclusion-proof requirement: the good
# v0.3 bundle without its inclusion proof, labelled v0.1 (v0.1 needs only
# the promise) in both spellings; a v0.3 label on a certificate chain
g = json.loads(open(os.path.join(OUT, "good.json")).read())
del g["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]
for name, mt in (("relabel-v01", "application/vnd.dev.sigstore.bundle+json;version=0.1"),
                 ("relabel-v01-new", "application/vnd.dev.sigstore.bundle.v0.1+json"),
                 ("no-proof-v03", "application/vnd.dev.sigstore.bundle.v0.3+json")):
    g["mediaType"] = mt
    write(name + ".json", json.dumps(g, indent=1))
cb = json.loads(open(os.path.join(OUT, "chain-v02.json")).read())
cb["mediaType"] = "application/vnd.dev.sigstore.bundle.v0.3+json"
write("chain-v03.json", json.dumps(cb, indent=1))

# 4. Thresholds of distinct logs: a second trusted log; the good signature
# in both logs, twice in one log (two indexes), the same entry twice
rekor_b = Rekor()
rekor_b.origin = "rekor-b.winbuild.test - 4343"
write("root-two-logs.json", trusted_root([int_ca, root_ca], ct_key, rekor,
                                         more_rekors=(rekor_b,)))
gbody = hashedrekord(digest, sig, pem(good))
e_a5, _ = rekor.entry(gbody, index=5)
e_a6, _ = rekor.entry(gbody, integrated_time=T + 1, index=6)   # another time: no duplicate timestamp
e_b, _ = rekor_b.entry(gbody, index=2)
mat = {"certificate": {"rawBytes": b64(good.public_bytes(serialization.Encoding.DER))}}
gcontent = {"messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(digest)},
                                 "signature": b64(sig)}}
write("two-logs.json", bundle(mat, [e_a5, e_b], gcontent))
write("one-log-twice.json", bundle(mat, [e_a5, e_a6], gcontent))
write("same-entry-twice.json", bundle(mat, [e_a5, e_a5], gcontent))

with open(os.path.join(OUT, "cases.tsv"), "w") as f:
    f.write("# name\tartifact\tbundle\troot\tpolicy\texpect\toracle\n")
    for c in cases:
        f.write("\t".join(c) + "\n")
write("identity", IDENTITY + "\n")
write("issuer", ISSUER + "\n")
