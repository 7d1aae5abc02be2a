#!/usr/bin/env python3
"""Take one certificate out of a public file, pinned by its SHA-256.

  msroots.py FILE SHA256 OUT.pem

FILE is a PEM bundle or any binary holding DER certificates (an OVMF
variable store: its db is a list of EFI_SIGNATURE_LISTs of X.509
certificates). The certificate whose SHA-256 fingerprint is SHA256 is
written to OUT.pem; none such is an error. Sources and fingerprints:
tests/cli/fixtures/msroots/README.md.
"""
import base64
import hashlib
import re
import sys


def candidates(data):
    for m in re.finditer(rb'-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----',
                         data, re.S):
        yield base64.b64decode(b''.join(m.group(1).split()))
    # DER: SEQUENCE (0x30 0x82 len16) { SEQUENCE (0x30 0x82 ...) tbsCertificate ...
    for m in re.finditer(rb'\x30\x82(..)\x30\x82', data, re.S):
        n = int.from_bytes(m.group(1), 'big')
        yield data[m.start():m.start() + 4 + n]


def main():
    path, want, out = sys.argv[1], sys.argv[2].lower().replace(':', ''), sys.argv[3]
    data = open(path, 'rb').read()
    for der in candidates(data):
        if hashlib.sha256(der).hexdigest() == want:
            b64 = base64.b64encode(der).decode()
            with open(out, 'w') as f:
                f.write('-----BEGIN CERTIFICATE-----\n')
                for i in range(0, len(b64), 64):
                    f.write(b64[i:i + 64] + '\n')
                f.write('-----END CERTIFICATE-----\n')
            return
    sys.exit('msroots.py: no certificate with SHA-256 %s in %s' % (want, path))


main()
