#!/usr/bin/env python3
"""The ctr command lines of an emitted 06-images.ps1, read from the script
itself (so a test follows the script, not a copy of it).

usage: ctrcmd.py SCRIPT      prints {"import": [ARG...], "ls": [ARG...],
                                     "images": [{Key, Name, Digest, Tar}...]}

In "import", the element "{TAR}" stands for $img.Tar. Every other token of
the two command lines must be a single-quoted literal or $Namespace (its
value read from the script), and in the ls line (command mode) a bare
word; anything else exits 1, naming it, so a change
of the script's command line that this reader does not follow fails the
test instead of being tested as something else.
"""
import json
import re
import sys


def lit(s):
    return s[1:-1].replace("''", "'")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    text = open(sys.argv[1], encoding='utf-8-sig').read()
    ns = re.findall(r"^\$Namespace = ('(?:[^']|'')*')$", text, re.M)
    imgs = re.findall(r"^\$Images = @\((.*)\)$", text, re.M)
    imp = re.findall(r"Invoke-Native -FilePath \$ctr -ArgumentList @\(([^)]*)\)", text)
    ls = re.findall(r"^\s*\$listing = & \$ctr (.*)$", text, re.M)
    if len(ns) != 1 or len(imgs) != 1 or len(imp) != 1 or len(ls) != 1:
        sys.exit('ctrcmd: %s: not one $Namespace, $Images, import and ls line each '
                 '(%d, %d, %d, %d)' % (sys.argv[1], len(ns), len(imgs), len(imp), len(ls)))
    namespace = lit(ns[0])

    def token(t, tar_ok, bare_ok=False):
        t = t.strip()
        # command mode (the ls line): a bare word is its own text
        if bare_ok and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9./-]*|-[A-Za-z-]+", t):
            return t
        if re.fullmatch(r"'(?:[^']|'')*'", t):
            return lit(t)
        if t == '$Namespace':
            return namespace
        if t == '$img.Tar' and tar_ok:
            return '{TAR}'
        sys.exit('ctrcmd: %s: a token this reader does not know: %r' % (sys.argv[1], t))

    out = {'import': [token(t, True) for t in imp[0].split(',')],
           'ls': [token(t, False, True) for t in ls[0].split()],
           'images': []}
    for rec in re.findall(r"@\{([^}]*)\}", imgs[0]):
        out['images'].append({k: lit(v) for k, v in
                              re.findall(r"(\w+) = ('(?:[^']|'')*')", rec)})
    json.dump(out, sys.stdout)
    print()


main()
