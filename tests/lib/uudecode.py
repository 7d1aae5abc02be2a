#!/usr/bin/env python3
"""uudecode.py SRC.uu... -o DIR: decode libarchive's test archives (the
.uu files of its source tree) into DIR, each named without ".uu"."""
import binascii
import os
import sys


def decode(src):
    out = bytearray()
    started = False
    with open(src, "rb") as f:
        for line in f:
            if not started:
                started = line.startswith(b"begin ")
                continue
            if line.strip() == b"end":
                break
            if not line.strip():
                continue
            try:
                out += binascii.a2b_uu(line)
            except binascii.Error:   # trailing garbage some encoders leave
                n = (((line[0] - 32) & 63) * 4 + 5) // 3
                out += binascii.a2b_uu(line[:n])
    return bytes(out)


def main():
    args = sys.argv[1:]
    dest = args[args.index("-o") + 1]
    srcs = [a for i, a in enumerate(args) if a != "-o" and (i == 0 or args[i - 1] != "-o")]
    os.makedirs(dest, exist_ok=True)
    for s in srcs:
        name = os.path.basename(s)[:-3]
        with open(os.path.join(dest, name), "wb") as f:
            f.write(decode(s))


if __name__ == "__main__":
    main()
