#!/usr/bin/env python3
"""check-attrs.py TEMPLATE.pkr.hcl PLUGIN-ATTRS.json

Every attribute and block each `source "<builder>" "node"` of TEMPLATE uses
must be declared by the pinned plugin (tests/packer/plugin-attrs.json,
written by hcl2spec-attrs.py from the plugin's *.hcl2spec.go). Prints one
line per unknown name and exits 1; prints the count checked otherwise.
"""
import json
import re
import sys


def balance(line):
    line = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line)
    return sum(line.count(c) for c in "{[(") - sum(line.count(c) for c in "}])")


def walk(lines, i, spec, where, bad, count):
    """Check the block body starting at lines[i] against SPEC; return the
    index after its closing brace."""
    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        i += 1
        if not s or s.startswith("#"):
            continue
        if s == "}":
            return i
        m = re.match(r'dynamic\s+"(\w+)"\s*\{$', s) or re.match(r'(\w+)\s*\{$', s)
        if m:
            name = m.group(1)
            dyn = s.startswith("dynamic")
            sub = (spec["blocks"].get(name) if spec and spec.get("blocks") is not None else None)
            count[0] += 1
            if spec is not None and sub is None:
                bad.append("%s: block '%s' is not declared" % (where, name))
            if dyn:
                # for_each, then content { ... }
                while i < len(lines):
                    t = lines[i].strip()
                    i += 1
                    if re.match(r'content\s*\{$', t):
                        i = walk(lines, i, sub if sub and sub.get("attrs") is not None else None,
                                 where + "." + name, bad, count)
                    elif t == "}":
                        break
            else:
                i = walk(lines, i, sub if sub and sub.get("attrs") is not None else None,
                         where + "." + name, bad, count)
            continue
        m = re.match(r'([A-Za-z_][A-Za-z0-9_]*)\s*=', s)
        if not m:
            bad.append("%s: cannot read line '%s'" % (where, s))
            continue
        count[0] += 1
        if spec is not None and m.group(1) not in spec["attrs"]:
            bad.append("%s: attribute '%s' is not declared" % (where, m.group(1)))
        depth = balance(s)
        while depth > 0 and i < len(lines):
            depth += balance(lines[i])
            i += 1
    return i


def main():
    lines = open(sys.argv[1]).read().split("\n")
    attrs = json.load(open(sys.argv[2]))
    bad, count, sources = [], [0], 0
    i = 0
    while i < len(lines):
        m = re.match(r'source "([^"]+)" "node" \{$', lines[i])
        i += 1
        if not m:
            continue
        b = m.group(1)
        if b not in attrs:
            bad.append("builder '%s' has no recorded attributes" % b)
            continue
        sources += 1
        i = walk(lines, i, attrs[b], b, bad, count)
    for x in bad:
        print(x)
    if bad or not sources:
        sys.exit(1)
    print("%d sources, %d names declared by their plugins" % (sources, count[0]))


if __name__ == "__main__":
    main()
