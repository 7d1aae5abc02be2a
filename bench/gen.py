#!/usr/bin/env python3
"""Deterministic synthetic artifacts for bench/run, shaped like a real
Windows node: Go-like executables (repetitive code/rodata mixed with
incompressible segments, gzip ratio about 2.5x), a containerd-like tar.gz
(bin/*.exe), a flat CNI tgz, an MSI-like file (mostly compressed cabinets).

    gen.py OUTDIR [big]     big: also OUTDIR/big.bin, 1 GiB, for the RSS run

BENCH_GEN_SCALE=N divides every size by N (the smoke test in
tests/cli/bench.bats runs the whole bench on a set 1000 times smaller).

Same seeds, same bytes, every time: the files are reused across runs.
"""
import gzip
import io
import os
import random
import sys
import tarfile

MB = 1000 * 1000 // int(os.environ.get("BENCH_GEN_SCALE", "1"))


def vocabulary(rng, size=1 << 20):
    """A block that deflate compresses well: tokens from a small set."""
    tokens = [rng.randbytes(rng.randint(4, 24)) for _ in range(768)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(tokens)
    return bytes(out[:size])


def go_binary(seed, size, random_share=0.17):
    """SIZE bytes: slices of a repetitive vocabulary interleaved with random
    segments (RANDOM_SHARE of the bytes)."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    out = bytearray(b"MZ\x90\x00" + bytes(60))
    while len(out) < size:
        if rng.random() < random_share:
            out += rng.randbytes(rng.randint(512, 8192))
        else:
            n = rng.randint(512, 8192)
            off = rng.randrange(0, len(vocab) - n)
            out += vocab[off:off + n]
    return bytes(out[:size])


def write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def tgz(path, members, seed):
    """A deterministic tar.gz of (name, bytes) members."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tf:
        dirs = sorted({m[0].rsplit("/", 1)[0] for m in members if "/" in m[0]})
        for d in dirs:
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 1700000000
            tf.addfile(ti)
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), 0o755, 1700000000
            tf.addfile(ti, io.BytesIO(data))
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", compresslevel=6, mtime=0) as g:
        g.write(raw.getvalue())
    write(path, gz.getvalue())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if len(sys.argv) > 2 and sys.argv[2] == "big":
        rng = random.Random(1000)
        tmp = os.path.join(out, "big.bin.tmp")
        with open(tmp, "wb") as f:
            for _ in range(1024):
                f.write(rng.randbytes(1 << 20))
        os.replace(tmp, os.path.join(out, "big.bin"))
        return
    exes = [("kubelet.exe", 120), ("kubeadm.exe", 50), ("kubectl.exe", 55),
            ("kube-proxy.exe", 50), ("crictl.exe", 25)]
    for i, (name, mb) in enumerate(exes):
        write(os.path.join(out, name), go_binary(10 + i, mb * MB))
    tgz(os.path.join(out, "containerd-2.1.4-windows-amd64.tar.gz"),
        [("bin/containerd.exe", go_binary(20, 55 * MB)),
         ("bin/ctr.exe", go_binary(21, 25 * MB)),
         ("bin/containerd-shim-runhcs-v1.exe", go_binary(22, 15 * MB)),
         ("bin/containerd-stress.exe", go_binary(23, 10 * MB))], 2)
    tgz(os.path.join(out, "cni-plugins-windows-amd64-v1.6.2.tgz"),
        [(n, go_binary(30 + i, 5 * MB)) for i, n in
         enumerate(["host-local.exe", "win-bridge.exe", "win-overlay.exe",
                    "flannel.exe"])], 3)
    # MSI: compound file header, then cabinets (already compressed)
    rng = random.Random(40)
    msi = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + go_binary(41, 4 * MB)[8:] + \
        rng.randbytes(36 * MB)
    write(os.path.join(out, "CloudbaseInitSetup_1_1_6_x64.msi"), msi)


if __name__ == "__main__":
    main()
