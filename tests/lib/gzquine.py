#!/usr/bin/env python3
"""Write a gzip quine: a .gz file that decompresses to itself.

Used by tests/cli/redteam_archives.bats to check that stage refuses a
recursive gzip quickly and with bounded memory (libarchive before 3.7.7
stacks a gzip filter on every layer it finds). Built here from first
principles, never copied:

The DEFLATE stream is a program of byte-aligned ops, all W bytes long:
  Lit(n)  a stored block of n bytes (preceded by empty stored blocks to
          make the op W bytes), that outputs the n bytes that follow it;
  Rep(n)  fixed-Huffman block(s) copying the last n output bytes (distance
          n), padded with end-of-block-only fixed blocks and realigned by
          an empty stored block, W bytes in all.
The classic self-reproducing program (prefix P = the gzip header, suffix
S = the gzip trailer, lengths in bytes, w = W):
  Lit(p+w) P Lit(p+w); Rep(p+w); Lit(w) Rep(p+w); Lit(w) Lit(w);
  Lit(4w) Rep(p+w) Lit(w) Lit(w) Lit(4w); Rep(4w);
  Lit(4w) Rep(4w) Lit(4w) Rep(4w) Lit(4w); Rep(4w);
  Lit(4w) Rep(4w) Lit(0) Lit(0) Lit(s+w); Rep(4w); Lit(0); Lit(0);
  Lit(s+w) Rep(s+w) S; Rep(s+w)  (the final block)
The trailer holds the CRC-32 of the output, which is the file itself:
CRC-32 is affine over GF(2), so the fixed point is found by solving a
32x32 linear system (the MTIME field is varied until it is solvable).

usage: gzquine.py OUT.gz      (checks the result with Python's gzip)
"""
import gzip
import struct
import sys
import zlib

W = 10  # bytes per op: two 5-byte stored-block headers for Lit


class Bits:
    def __init__(self):
        self.out, self.acc, self.n = bytearray(), 0, 0

    def put(self, value, nbits):      # LSB-first fields
        for i in range(nbits):
            self.acc |= ((value >> i) & 1) << self.n
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                self.acc, self.n = 0, 0

    def huff(self, code, nbits):      # Huffman codes go MSB-first
        for i in reversed(range(nbits)):
            self.put((code >> i) & 1, 1)

    def nbits(self):
        return len(self.out) * 8 + self.n

    def align(self):
        if self.n:
            self.out.append(self.acc)
            self.acc, self.n = 0, 0


def fixed_litlen(b, sym):
    if sym < 144:
        b.huff(0x30 + sym, 8)
    elif sym < 256:
        b.huff(0x190 + sym - 144, 9)
    elif sym < 280:
        b.huff(sym - 256, 7)
    else:
        b.huff(0xC0 + sym - 280, 8)


LEN_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43,
            51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
LEN_EXTRA = [0] * 8 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4 + [5] * 4 + [0]
DIST_BASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193]
DIST_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]


def copy(b, length, dist):
    i = max(k for k in range(len(LEN_BASE)) if LEN_BASE[k] <= length)
    if length == 258:
        i = 28
    fixed_litlen(b, 257 + i)
    b.put(length - LEN_BASE[i], LEN_EXTRA[i])
    j = max(k for k in range(len(DIST_BASE)) if DIST_BASE[k] <= dist)
    b.huff(j, 5)
    b.put(dist - DIST_BASE[j], DIST_EXTRA[j])


def empty_stored(final=0):
    return bytes([final]) + b"\x00\x00\xff\xff"


def lit(n):
    assert n < 65536
    return empty_stored() + bytes([0]) + struct.pack("<HH", n, n ^ 0xFFFF)


def rep(n, final=0):
    """W bytes copying the last n bytes; None if no layout fits."""
    for parts in range(1, 4):
        chunks = [n // parts + (1 if k < n % parts else 0) for k in range(parts)]
        if min(chunks) < 3 or max(chunks) > 258:
            continue
        for fill in range(0, 4):
            b = Bits()
            b.put(0, 1)
            b.put(1, 2)               # fixed Huffman
            for c in chunks:
                copy(b, c, n)
            fixed_litlen(b, 256)
            for _ in range(fill):     # empty fixed blocks as bit padding
                b.put(0, 1)
                b.put(1, 2)
                fixed_litlen(b, 256)
            b.put(final, 1)
            b.put(0, 2)               # stored block: realign
            b.align()
            out = bytes(b.out) + b"\x00\x00\xff\xff"
            if len(out) == W:
                return out
    return None


def build(mtime):
    header = b"\x1f\x8b\x08\x00" + struct.pack("<I", mtime) + b"\x00\xff"
    p, s, w = len(header), 8, W
    L = lit
    R = rep
    Rp, R4, Rs = R(p + w), R(4 * w), R(s + w, final=1)
    if None in (Rp, R4, Rs):
        return None

    def program(trailer):
        ops = [L(p + w), header, L(p + w), Rp, L(w), Rp, L(w), L(w),
               L(4 * w), Rp, L(w), L(w), L(4 * w), R4,
               L(4 * w), R4, L(4 * w), R4, L(4 * w), R4,
               L(4 * w), R4, L(0), L(0), L(s + w), R4, L(0), L(0),
               L(s + w), Rs, trailer, Rs]
        return b"".join(ops)

    size = len(header) + len(program(bytes(8))) + 8

    def whole(crc):
        t = struct.pack("<II", crc, size)
        return header + program(t) + t

    base = zlib.crc32(whole(0))
    cols = [zlib.crc32(whole(1 << i)) ^ base for i in range(32)]
    # solve (A + I) x = base over GF(2): rows of the augmented matrix
    rows = []
    for r in range(32):
        bits = 0
        for c in range(32):
            if ((cols[c] >> r) & 1) ^ (1 if r == c else 0):
                bits |= 1 << c
        rows.append([bits, (base >> r) & 1])
    piv = []
    rank = 0
    for c in range(32):
        k = next((i for i in range(rank, 32) if (rows[i][0] >> c) & 1), None)
        if k is None:
            continue
        rows[rank], rows[k] = rows[k], rows[rank]
        for i in range(32):
            if i != rank and (rows[i][0] >> c) & 1:
                rows[i][0] ^= rows[rank][0]
                rows[i][1] ^= rows[rank][1]
        piv.append(c)
        rank += 1
    if any(rows[i][1] for i in range(rank, 32)):
        return None
    x = 0
    for i, c in enumerate(piv):
        if rows[i][1]:
            x |= 1 << c
    data = whole(x)
    return data if zlib.crc32(data) == x else None


def main():
    for mtime in range(1, 1000):
        data = build(mtime)
        if data is not None:
            break
    else:
        sys.exit("gzquine: no fixed point found")
    if gzip.decompress(data) != data:
        sys.exit("gzquine: not a quine")
    with open(sys.argv[1], "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
