#!/usr/bin/env python3
"""forge_timestamp.py IN.exe OUT.exe CERT.pem KEY.pem [--no-ess] [--sha1-imprint]

OUT is IN (a PE whose Authenticode signature carries an RFC 3161
timestamp) with the timestamp token re-signed by CERT/KEY: the same
TSTInfo (so its imprint still matches the signature), a new CMS SignedData
made by `openssl cms -sign -cades` (with the ESS signing-certificate
attribute RFC 3161 2.4.1 requires). No TSA tool will issue a token from a
certificate without the time-stamping EKU (osslsigncode and `openssl ts`
refuse), so this is how a test gets one. With the real TSA's certificate
and key the output verifies (the control).
  --no-ess        sign without the ESS signing-certificate attribute
  --sha1-imprint  the TSTInfo's message imprint made SHA-1 (over the same
                  signature value, so it still matches)
  --attr-cert     no re-signing (CERT and KEY unused): the token as it is,
                  with an attribute certificate ([1], RFC 5652
                  CertificateChoices) added to its certificates, as
                  Microsoft's time-stamping service sends them; outside the
                  signed attributes, so the token still verifies
  --ess-attr-cert the token re-signed by CERT/KEY with an attribute
                  certificate among its certificates and, as Microsoft's
                  time-stamping service does, the ESS signing-certificate
                  (v2) attribute listing CERT's ID and then the attribute
                  certificate's (OpenSSL's TS verifier alone refuses it)
  --ess-attr-cert-first  the same with the two IDs the other way round: the
                  first no longer names the signer
  --ess-attr-cert-badsig  as --ess-attr-cert, the token's signature value
                  with one bit changed
"""
import hashlib, struct, subprocess, sys

def tlv(b, o=0):
    tag = b[o]; l = b[o + 1]; h = 2
    if l & 0x80:
        n = l & 0x7f
        l = int.from_bytes(b[o + 2:o + 2 + n], "big"); h += n
    return tag, o + h, l          # tag, content offset, content length

def children(b):
    tag, c, l = tlv(b)
    out, o = [], c
    while o < c + l:
        _, cc, cl = tlv(b, o)
        out.append(b[o:cc + cl]); o = cc + cl
    return tag, out

def enc(tag, content):
    n = len(content)
    if n < 0x80:
        ln = bytes([n])
    else:
        nb = n.to_bytes((n.bit_length() + 7) // 8, "big")
        ln = bytes([0x80 | len(nb)]) + nb
    return bytes([tag]) + ln + content

def rewrite(b, old, new):
    if b == old:
        return new
    if not b[0] & 0x20:
        return b
    tag, kids = children(b)
    return enc(tag, b"".join(rewrite(k, old, new) for k in kids))

TS_OID = bytes.fromhex("060a2b0601040182370303 01".replace(" ", ""))

def find_token(b):
    """The value of the RFC 3161 timestamp attribute (a ContentInfo)."""
    if not b[0] & 0x20:
        return None
    tag, kids = children(b)
    if tag == 0x30 and len(kids) == 2 and kids[0] == TS_OID:
        return children(kids[1])[1][0]
    for k in kids:
        t = find_token(k)
        if t:
            return t
    return None

def ess_signed(tst, cert_path, key_path, attr_first, bad_sig):
    """A CMS SignedData over TST by CERT/KEY, built by hand: its
    signing-certificate-v2 attribute lists CERT and an attribute
    certificate (also among the certificates), in that order or reversed."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding
    crt = x509.load_pem_x509_certificate(open(cert_path, "rb").read())
    key = serialization.load_pem_private_key(open(key_path, "rb").read(), None)
    cder = crt.public_bytes(serialization.Encoding.DER)
    ac = enc(0xa1, enc(0x02, b"\x01") + enc(0x30, enc(0x02, b"\x2a")))
    ac_id = enc(0x30, enc(0x04, hashlib.sha256(b"\x30" + ac[1:]).digest()))
    crt_id = enc(0x30, enc(0x04, hashlib.sha256(cder).digest()))
    ids = [ac_id, crt_id] if attr_first else [crt_id, ac_id]
    sha256 = bytes.fromhex("300d06096086480165030402010500")
    tst_oid = bytes.fromhex("060b2a864886f70d0109100104")
    attrs = sorted([
        enc(0x30, bytes.fromhex("06092a864886f70d010903") + enc(0x31, tst_oid)),
        enc(0x30, bytes.fromhex("06092a864886f70d010904") +
            enc(0x31, enc(0x04, hashlib.sha256(tst).digest()))),
        enc(0x30, bytes.fromhex("060b2a864886f70d010910022f") +
            enc(0x31, enc(0x30, enc(0x30, b"".join(ids))))),
    ])
    sig = key.sign(enc(0x31, b"".join(attrs)), padding.PKCS1v15(), hashes.SHA256())
    if bad_sig:
        sig = sig[:-1] + bytes([sig[-1] ^ 1])
    serial = crt.serial_number.to_bytes((crt.serial_number.bit_length() + 8) // 8, "big")
    si = enc(0x30, enc(0x02, b"\x01") +
             enc(0x30, crt.issuer.public_bytes() + enc(0x02, serial)) + sha256 +
             enc(0xa0, b"".join(attrs)) +
             bytes.fromhex("300d06092a864886f70d0101010500") + enc(0x04, sig))
    sd = enc(0x30, enc(0x02, b"\x03") + enc(0x31, sha256) +
             enc(0x30, tst_oid + enc(0xa0, enc(0x04, tst))) +
             enc(0xa0, cder + ac) + enc(0x31, si))
    return enc(0x30, bytes.fromhex("06092a864886f70d010702") + enc(0xa0, sd))

src, dst, cert, key = sys.argv[1:5]
flags = sys.argv[5:]
assert set(flags) <= {"--no-ess", "--sha1-imprint", "--attr-cert", "--ess-attr-cert",
                      "--ess-attr-cert-first", "--ess-attr-cert-badsig"}, flags
d = bytearray(open(src, "rb").read())
pe = struct.unpack_from("<I", d, 0x3c)[0]
magic = struct.unpack_from("<H", d, pe + 24)[0]
dd = pe + 24 + (96 if magic == 0x10b else 112) + 4 * 8
off, size = struct.unpack_from("<II", d, dd)
p7 = bytes(d[off + 8:off + struct.unpack_from("<I", d, off)[0]])
tok = find_token(p7)
assert tok, "no timestamp"
sd = children(children(tok)[1][1])[1][0]          # ContentInfo [0] -> SignedData
eci = children(sd)[1][2]                            # encapContentInfo
octet = children(children(eci)[1][1])[1][0]         # [0] -> OCTET STRING
_, c, l = tlv(octet)
tst = octet[c:c + l]
if "--sha1-imprint" in flags:
    # the signature value the token countersigns: the outer SignerInfo's
    # encryptedDigest (its first OCTET STRING)
    si = children(children(children(p7)[1][1])[1][0])[1][-1]
    si = children(si)[1][0]
    enc_digest = next(k for k in children(si)[1] if k[0] == 0x04)
    _, c, l = tlv(enc_digest)
    sha1_alg = bytes.fromhex("300906052b0e03021a0500")
    imprint = enc(0x30, sha1_alg + enc(0x04, hashlib.sha1(enc_digest[c:c + l]).digest()))
    _, kids = children(tst)
    tst = enc(0x30, b"".join(kids[:2] + [imprint] + kids[3:]))
if "--attr-cert" in flags:
    ci_tag, ci = children(tok)
    x_tag, (sd,) = children(ci[1])
    sd_tag, sd_kids = children(sd)
    assert sd_kids[3][0] == 0xa0, "the token carries no certificates"
    ac = enc(0xa1, enc(0x02, b"\x01") + enc(0x30, enc(0x02, b"\x2a")))
    c_tag, certs = children(sd_kids[3])
    sd_kids[3] = enc(c_tag, b"".join(certs + [ac]))
    new_tok = enc(ci_tag, ci[0] + enc(x_tag, enc(sd_tag, b"".join(sd_kids))))
elif {"--ess-attr-cert", "--ess-attr-cert-first", "--ess-attr-cert-badsig"} & set(flags):
    new_tok = ess_signed(tst, cert, key, "--ess-attr-cert-first" in flags,
                         "--ess-attr-cert-badsig" in flags)
else:
  new_tok = subprocess.run(
      ["openssl", "cms", "-sign", "-binary", "-nodetach", "-nosmimecap", "-md", "sha256"] +
      ([] if "--no-ess" in flags else ["-cades"]) +
      ["-econtent_type", "1.2.840.113549.1.9.16.1.4", "-signer", cert, "-inkey", key,
       "-outform", "DER"], input=tst, capture_output=True, check=True).stdout
p7 = rewrite(p7, tok, new_tok)
wc = struct.pack("<IHH", 8 + len(p7), 0x0200, 2) + p7
wc += b"\0" * (-len(wc) % 8)
d = d[:off] + wc
struct.pack_into("<II", d, dd, off, len(wc))
open(dst, "wb").write(d)
