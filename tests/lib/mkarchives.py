#!/usr/bin/env python3
"""Make the archives stage.bats serves, at test time, into DIR.

good/  shaped like the real upstream assets (small fake content):
  containerd-<v>-windows-amd64.tar.gz   bin/*.exe (strip 1)
  cni-plugins-windows-amd64-v<v>.tgz    flat, entries "./win-bridge.exe" (1.9.1, 1.7.1)
  crictl-v<v>-windows-amd64.tar.gz      crictl.exe at the root (1.36.0, 1.33.0)
  windows-container-networking-cni-amd64-v0.3.3.zip  flat zip
  nssm-2.24.zip                         nssm-2.24/{win32,win64}/nssm.exe
  csi-proxy-v<v>.tar.gz                 bin/csi-proxy.exe (strip 1)
  CloudbaseInitSetup_1_1_6_x64.msi      OLE compound-file magic + bytes
  kubelet.exe ... kube-log-runner.exe   "MZ" + bytes
hostile/  one archive per attack (see HOSTILE below).
"""
import io
import os
import random
import sys
import tarfile
import zipfile

rng = random.Random(4)


def blob(n, magic=b""):
    return magic + bytes(rng.getrandbits(8) for _ in range(n))


def exe(n=3000):
    return blob(n, b"MZ\x90\x00")


def tar(path, entries, mode="w:gz"):
    """entries: (name, bytes) or (name, TarInfo-adjuster)."""
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT) as t:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime = 1700000000
            ti.uname = ti.gname = "builder"
            if callable(data):
                data(ti)
                t.addfile(ti)
            else:
                ti.size = len(data)
                ti.mode = 0o755 if name.endswith(".exe") else 0o644
                t.addfile(ti, io.BytesIO(data))


def zipf(path, entries):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, (2023, 11, 14, 22, 13, 20))
            zi.compress_type = zipfile.ZIP_DEFLATED
            if isinstance(data, tuple):      # (bytes, external_attr)
                zi.external_attr = data[1]
                data = data[0]
            z.writestr(zi, data)


def good(d):
    os.makedirs(d, exist_ok=True)
    bins = ["containerd.exe", "ctr.exe", "containerd-shim-runhcs-v1.exe",
            "containerd-stress.exe"]
    for v in ("2.3.5", "2.1.4", "1.7.28"):
        tar(f"{d}/containerd-{v}-windows-amd64.tar.gz",
            [("bin/", lambda ti: setattr(ti, "type", tarfile.DIRTYPE))] +
            [(f"bin/{b}", exe()) for b in bins])
    for v in ("1.9.1", "1.7.1"):
        tar(f"{d}/cni-plugins-windows-amd64-v{v}.tgz",
            [("./", lambda ti: setattr(ti, "type", tarfile.DIRTYPE))] +
            [(f"./{b}.exe", exe()) for b in ("win-bridge", "win-overlay", "host-local")])
    for v in ("1.36.0", "1.33.0"):
        tar(f"{d}/crictl-v{v}-windows-amd64.tar.gz", [("crictl.exe", exe())])
    zipf(f"{d}/windows-container-networking-cni-amd64-v0.3.3.zip",
         [(f"{b}.exe", exe()) for b in ("sdnbridge", "sdnoverlay", "nat")])
    zipf(f"{d}/nssm-2.24.zip",
         [("nssm-2.24/win32/nssm.exe", exe()), ("nssm-2.24/win64/nssm.exe", exe()),
          ("nssm-2.24/src/README.txt", b"nssm\n")])
    tar(f"{d}/csi-proxy-v1.1.2-hotfix.20230807.tar.gz",
        [("bin/", lambda ti: setattr(ti, "type", tarfile.DIRTYPE)),
         ("bin/csi-proxy.exe", exe())])
    with open(f"{d}/CloudbaseInitSetup_1_1_6_x64.msi", "wb") as f:
        f.write(blob(8000, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"))
    for b in ("kubelet", "kubeadm", "kube-proxy", "kubectl", "kube-log-runner"):
        with open(f"{d}/{b}.exe", "wb") as f:
            f.write(exe(5000))
    # a second build of containerd, to show a re-stage replaces the tree
    tar(f"{d}/containerd-next.tar.gz",
        [(f"bin/{b}", exe()) for b in bins + ["containerd-next.exe"]])


def typed(t, **kw):
    def f(ti):
        ti.type = t
        for k, v in kw.items():
            setattr(ti, k, v)
    return f


# name -> (file, entry the error must name)
HOSTILE = {
    "dotdot": ("dotdot.tgz", "../evil-dotdot.exe"),
    "absolute": ("absolute.tgz", "/tmp/evil-absolute.exe"),
    "symlink": ("symlink.tgz", "evil-link"),
    "hardlink": ("hardlink.tgz", "evil-hardlink"),
    "symlink-then-file": ("symdir.tgz", "d"),
    "device": ("device.tgz", "evil-dev"),
    "fifo": ("fifo.tgz", "evil-fifo"),
    "bomb-size": ("bomb-size.tgz", "big.bin"),
    "bomb-entries": ("bomb-entries.tgz", "f"),
    "bomb-ratio": ("bomb-ratio.tgz", "zeros.bin"),
    "invalid-name": ("invalid-name.tgz", "evil|name.exe"),
    "reserved-name": ("reserved-name.zip", "CON.exe"),
    "case-collision": ("case.tgz", "foo.exe"),
    "truncated": ("truncated.tgz", "truncated.tgz"),
    "zip-dotdot": ("zip-dotdot.zip", "../evil-zip.exe"),
    "zip-symlink": ("zip-symlink.zip", "evil-ziplink"),
}


def hostile(d):
    os.makedirs(d, exist_ok=True)
    tar(f"{d}/dotdot.tgz", [("ok.exe", exe()), ("../evil-dotdot.exe", exe())])
    tar(f"{d}/absolute.tgz", [("/tmp/evil-absolute.exe", exe())])
    tar(f"{d}/symlink.tgz", [("evil-link", typed(tarfile.SYMTYPE, linkname="../../../../etc"))])
    tar(f"{d}/hardlink.tgz", [("evil-hardlink", typed(tarfile.LNKTYPE, linkname="../../../outside.txt"))])
    tar(f"{d}/symdir.tgz", [("d", typed(tarfile.SYMTYPE, linkname="/tmp")),
                            ("d/evil-through-link.txt", b"pwned\n")])
    tar(f"{d}/device.tgz", [("evil-dev", typed(tarfile.CHRTYPE, devmajor=1, devminor=3))])
    tar(f"{d}/fifo.tgz", [("evil-fifo", typed(tarfile.FIFOTYPE))])
    tar(f"{d}/bomb-size.tgz", [("big.bin", blob(300000))])
    tar(f"{d}/bomb-entries.tgz", [(f"f{i:03d}.txt", b"x") for i in range(60)])
    tar(f"{d}/bomb-ratio.tgz", [("zeros.bin", bytes(4 << 20))])
    tar(f"{d}/invalid-name.tgz", [("evil|name.exe", exe())])
    zipf(f"{d}/reserved-name.zip", [("CON.exe", exe())])
    tar(f"{d}/case.tgz", [("Foo.exe", exe()), ("foo.exe", exe())])
    tar(f"{d}/full.tgz", [("a.bin", blob(200000))])
    with open(f"{d}/full.tgz", "rb") as f:
        data = f.read()
    with open(f"{d}/truncated.tgz", "wb") as f:
        f.write(data[: len(data) // 2])
    os.unlink(f"{d}/full.tgz")
    zipf(f"{d}/zip-dotdot.zip", [("../evil-zip.exe", exe())])
    zipf(f"{d}/zip-symlink.zip", [("evil-ziplink", (b"/etc/passwd", (0o120777 << 16)))])
    # two artifacts into one directory: same name, and names equal but for case
    tar(f"{d}/one-a.tgz", [("tool.exe", exe())])
    tar(f"{d}/one-b.tgz", [("tool.exe", exe())])
    tar(f"{d}/case-b.tgz", [("TOOL.EXE", exe())])


def tar_raw(path, entries, fmt=tarfile.GNU_FORMAT, mode="w:gz", **kw):
    """entries: (name, bytes) with str names (surrogateescape for raw bytes)."""
    with tarfile.open(path, mode, format=fmt, **kw) as t:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime = 1700000000
            if callable(data):
                data(ti)
                t.addfile(ti)
            else:
                ti.size = len(data)
                ti.mode = 0o644
                t.addfile(ti, io.BytesIO(data))


def raw(b):
    return b.decode("utf-8", "surrogateescape")


def patch_zip(path, out, old, new, which):
    """Copy zip PATH to OUT with OLD replaced by NEW (same length) in the
    local header (which="local", the first occurrence) or in the central
    directory (which="central", the last)."""
    data = open(path, "rb").read()
    i = data.find(old) if which == "local" else data.rfind(old)
    assert i > 0 and len(old) == len(new)
    open(out, "wb").write(data[:i] + new + data[i + len(old):])


def unicode_path_extra(name):
    import zlib
    u = name.encode()
    return (0x7075).to_bytes(2, "little") + (5 + len(u)).to_bytes(2, "little") + \
        b"\x01" + zlib.crc32(name.encode("cp437", "replace")).to_bytes(4, "little") + u


def redteam(d):
    """Archives for tests/cli/redteam_archives.bats (issue 13 class 8)."""
    os.makedirs(d, exist_ok=True)
    tar(f"{d}/good.tgz", [("good.exe", exe())])
    tar(f"{d}/good2.tgz", [("good2.exe", exe())])
    zipf(f"{d}/good.zip", [("good.exe", exe())])
    tar(f"{d}/good.tar.bz2", [("good.exe", exe())], mode="w:bz2")
    # valid UTF-8 names: pax, GNU (raw bytes), zip (UTF-8 flag)
    tar_raw(f"{d}/utf8-pax.tgz", [("café.exe", exe()), ("данные/файл.txt", b"x\n")],
            fmt=tarfile.PAX_FORMAT)
    tar_raw(f"{d}/utf8-gnu.tgz", [("naïve/日本語.txt", b"x\n")])
    zipf(f"{d}/utf8.zip", [("Ünïcødé/ß.txt", b"x\n"), ("中文.exe", exe())])
    # names that are not UTF-8
    tar_raw(f"{d}/latin1.tgz", [("ok.txt", b"x"), ("café.exe", exe())], encoding="latin-1")
    tar_raw(f"{d}/overlong.tgz", [(raw(b"a\xc0\xafb.exe"), exe())])
    tar_raw(f"{d}/surrogate.tgz", [(raw(b"s\xed\xa0\x80.exe"), exe())])
    zipf(f"{d}/cp437-src.zip", [("cXfe.exe", exe())])
    patch_zip(f"{d}/cp437-src.zip", f"{d}/cp437.zip", b"cXfe", b"c\x82fe", "local")
    patch_zip(f"{d}/cp437.zip", f"{d}/cp437.zip", b"cXfe", b"c\x82fe", "central")
    os.unlink(f"{d}/cp437-src.zip")
    # zip: local header and central directory disagree
    zipf(f"{d}/zip-src.zip", [("readme.txt", b"hello\n"), ("good.exe", exe())])
    patch_zip(f"{d}/zip-src.zip", f"{d}/zip-local.zip", b"good.exe", b"evil.exe", "local")
    patch_zip(f"{d}/zip-src.zip", f"{d}/zip-central.zip", b"good.exe", b"evil.exe", "central")
    os.unlink(f"{d}/zip-src.zip")
    with zipfile.ZipFile(f"{d}/zip-upath-src.zip", "w") as z:
        zi = zipfile.ZipInfo("tool.exe", (2023, 11, 14, 22, 13, 20))
        zi.extra = unicode_path_extra("tool.exe")
        z.writestr(zi, exe())
    patch_zip(f"{d}/zip-upath-src.zip", f"{d}/zip-upath.zip",
              b"\x01" + unicode_path_extra("tool.exe")[5:9] + b"tool.exe",
              b"\x01" + unicode_path_extra("tool.exe")[5:9] + b"evil.exe", "local")
    os.unlink(f"{d}/zip-upath-src.zip")
    data = bytearray(open(f"{d}/good.zip", "rb").read())
    assert data[:4] == b"PK\x03\x04"
    data[7] |= 0x08       # general purpose flags, bit 11: UTF-8 (local only)
    open(f"{d}/zip-flag.zip", "wb").write(bytes(data))
    # declared format vs content; nested compression
    with open(f"{d}/good.tgz", "rb") as f:
        import gzip
        open(f"{d}/nested.tgz", "wb").write(gzip.compress(f.read(), mtime=0))
    # data skipped by include still costs: 8 MiB of zeros before the one file
    tar(f"{d}/skipped-bomb.tgz", [("zeros.bin", bytes(8 << 20)), ("small.txt", b"hi\n")])
    # names with terminal escapes and newlines; a hostile link target
    tar_raw(f"{d}/esc-name.tgz", [("\x1b[31mred\x1b[0m.exe", exe())])
    tar_raw(f"{d}/newline-name.tgz", [("ok.exe\nwinbuild: all verified.exe", exe())])
    tar_raw(f"{d}/esc-link.tgz", [("l.exe", typed(tarfile.LNKTYPE, linkname="\x1b]0;pwned\x07"))])
    # a damaged second header (name byte changed, checksum not)
    tar_raw(f"{d}/damaged.tar", [("first.txt", b"x" * 10), ("second.txt", b"y")], mode="w")
    data = bytearray(open(f"{d}/damaged.tar", "rb").read())
    data[1024] ^= 0x01
    os.unlink(f"{d}/damaged.tar")
    import gzip
    open(f"{d}/damaged.tgz", "wb").write(gzip.compress(bytes(data), mtime=0))
    # '..' that strip or include would skip (stage/extract.h promise)
    tar(f"{d}/dotdot-strip.tgz", [("../evil-strip.exe", exe()), ("top/ok.exe", exe())])
    tar(f"{d}/dotdot-include.tgz", [("ok.exe", exe()), ("../evil-inc.exe", exe())])
    tar(f"{d}/dotdot-deep.tgz", [("a/../../evil-deep.exe", exe()), ("a/ok.exe", exe())])


if __name__ == "__main__":
    root = sys.argv[1]
    good(os.path.join(root, "good"))
    hostile(os.path.join(root, "hostile"))
    redteam(os.path.join(root, "redteam"))
    if len(sys.argv) > 2 and sys.argv[2] == "--list-hostile":
        for k, (f, entry) in HOSTILE.items():
            print(f"{k}\t{f}\t{entry}")
