#!/usr/bin/env python3
"""List every bare "! cmd" line of the bats files under ROOT (tests/cli,
tests/lib): bash's errexit ignores a status inverted with "!", so such a
line never fails a test (unless it is the test's last command). A line is
fine when it ends in "|| false" or an explicit failure ("|| { ...; return
1; }", "|| exit"), or continues into a condition. Exit 1 if any is found.
usage: bangcheck.py ROOT   (tests/cli/runner.bats)"""
import glob
import os
import re
import sys

root = sys.argv[1]
bad = []
for f in sorted(glob.glob(root + "/tests/cli/*.bats") + glob.glob(root + "/tests/cli/*.bash") +
                glob.glob(root + "/tests/lib/*.bash")):
    lines = open(f).read().split("\n")
    i, heredoc = 0, None
    while i < len(lines):
        line = lines[i]
        if heredoc:
            if line.strip() == heredoc:
                heredoc = None
            i += 1
            continue
        m = re.search(r"<<-?\s*'?\"?(\w+)'?\"?\s*$", line)
        if m and not line.lstrip().startswith("#"):
            heredoc = m.group(1)
        elif re.match(r"^\s*! ", line):
            j = i
            while lines[j].rstrip().endswith("\\"):
                j += 1
            logical = " ".join(lines[i:j + 1]).rstrip()
            ok = (re.search(r"\|\|\s*(\{|return|false|exit)", logical) or
                  logical.endswith(("{", "(", "|", "&&", "then", "do")))
            if not ok:
                bad.append("%s:%d: %s" % (os.path.relpath(f, root), i + 1, line.strip()))
            i = j
        i += 1
print("\n".join(bad))
sys.exit(1 if bad else 0)
