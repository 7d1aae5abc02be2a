#!/usr/bin/env python3
"""Craft PE certificate tables for the Authenticode tests (test data only).

  pe_certs.py append A B OUT   OUT = A with B's certificate-table entries
                               appended as further WIN_CERTIFICATE entries
                               (8-byte aligned; the directory size updated).
                               osslsigncode cannot write a second entry
                               (it nests instead), so the tests craft one.
  pe_certs.py flip-tail A OUT N
                               OUT = A with the byte N bytes before the end
                               of its first entry's PKCS#7 changed: inside
                               the last signer's signature value, i.e. the
                               nested signature's when A has one.
"""
import struct
import sys


def table(d):
    lf = struct.unpack_from('<I', d, 0x3c)[0]
    opt = lf + 24
    magic = struct.unpack_from('<H', d, opt)[0]
    dd = opt + (112 if magic == 0x20b else 96) + 4 * 8
    off, size = struct.unpack_from('<II', d, dd)
    return dd, off, size


def main():
    cmd = sys.argv[1]
    a = bytearray(open(sys.argv[2], 'rb').read())
    dd, off, size = table(a)
    if not off or off + size != len(a):
        sys.exit('pe_certs.py: %s: certificate table does not end the file' % sys.argv[2])
    if cmd == 'append':
        b = open(sys.argv[3], 'rb').read()
        _, boff, bsize = table(b)
        out = sys.argv[4]
        a += b'\0' * (-len(a) % 8)
        a += b[boff:boff + bsize]
        struct.pack_into('<I', a, dd + 4, len(a) - off)
    elif cmd == 'flip-tail':
        out = sys.argv[3]
        n = int(sys.argv[4])
        dwlen = struct.unpack_from('<I', a, off)[0]
        a[off + dwlen - n] ^= 1
    else:
        sys.exit('pe_certs.py: unknown command ' + cmd)
    open(out, 'wb').write(a)


main()
