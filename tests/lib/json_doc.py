#!/usr/bin/env python3
"""Check a winbuild --json result against docs/json.md (the oracle is
Python's json module; the field list is the doc's, not winbuild's).

  json_doc.py DOC 'winbuild build --json' MODE < output

DOC's examples each start with a line "// winbuild ... --json"; their
top-level keys are the documented fields. MODE: exact (the output has
exactly those keys), partial (the output's keys are all documented: a
failure or an up-to-date run). Exits 1 with the difference."""
import json
import re
import sys


def example(doc, header):
    text = open(doc, encoding="utf-8").read()
    blocks = re.findall(r"```\n(.*?)```", text, re.S)
    for b in blocks:
        parts = re.split(r"^// (winbuild [^\n]*)\n", b, flags=re.M)
        for i in range(1, len(parts) - 1, 2):
            if parts[i].strip() == header:
                return parts[i + 1]
    sys.exit("no example '%s' in %s" % (header, doc))


def top_keys(src):
    """Keys at depth 1 of a JSON-like example with // comments."""
    src = re.sub(r"(^|\s)//[^\n]*", r"\1", src)
    keys, depth, i, dots = [], 0, 0, False
    while i < len(src):
        c = src[i]
        if c == '"':
            j = src.index('"', i + 1)
            word = src[i + 1:j]
            rest = src[j + 1:].lstrip()
            if depth == 1 and rest.startswith(":"):
                keys.append(word)
            i = j + 1
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        elif depth == 1 and src.startswith("...", i):
            dots = True
        i += 1
    return set(keys), dots


def main():
    doc, header, mode = sys.argv[1:4]
    out = json.load(sys.stdin)          # the oracle: must parse as JSON
    if not isinstance(out, dict):
        sys.exit("not an object")
    documented, dots = top_keys(example(doc, header))
    # the fields every command may carry ("## Every command"): allowed
    # everywhere, required only where the example itself shows them
    text = open(doc, encoding="utf-8").read()
    common = re.search(r"## Every command\n+```\n(.*?)```", text, re.S)
    optional = (top_keys(common.group(1))[0] - documented) if common else set()
    got = set(out)
    undocumented = got - documented - optional
    if undocumented and not dots:
        sys.exit("fields not in %s: %s" % (doc, sorted(undocumented)))
    if mode == "exact" and documented - got:
        sys.exit("documented fields missing: %s" % sorted(documented - got))
    if out.get("schema") != 1 or not isinstance(out.get("errors"), list):
        sys.exit("no schema 1 / errors list")
    if out.get("ok") is not (out.get("exit") == 0):
        sys.exit("ok and exit disagree")


main()
