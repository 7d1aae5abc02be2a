#!/usr/bin/env python3
"""The keys of a schema table of builder/recipe/schema.c, read from the C
source, for the tests that enumerate a feature surface (issue 41).

    schema_keys.py SCHEMA_C TABLE

prints one line per leaf key reachable from TABLE: its path
("registry[].key", "artifacts.*.unpack.into"), a tab, its type (S_STR,
...) and a tab, then its flags as written ("S_WIN(WINOBJ_REGKEY)", or
"0"). A map-valued key (S_MAP, S_MAPOF, S_LISTOF) prints no line of its
own: its sub-table's keys do.
"""
import re
import sys

ROW = re.compile(r'\{\s*"([^"]+)"\s*,\s*(S_[A-Z]+)\s*,\s*([A-Za-z_0-9]+)\s*,'
                 r'\s*(NULL|"[^"]*")\s*,\s*([^}]*?)\s*\}')


def tables(src):
    out = {}
    for m in re.finditer(r'struct schema_key\s+(\w+)\[\]\s*=\s*\{(.*?)\n\};', src, re.S):
        body = re.sub(r'/\*.*?\*/', '', m.group(2), flags=re.S)
        out[m.group(1)] = [r.groups() for r in ROW.finditer(body)]
    return out


def walk(tabs, name, prefix, seen=()):
    if name in seen:
        return
    for key, typ, sub, _enums, flags in tabs[name]:
        if typ in ('S_MAP', 'S_MAPOF', 'S_LISTOF') and sub != 'NULL':
            sep = {'S_MAP': '.', 'S_MAPOF': '.*.', 'S_LISTOF': '[].'}[typ]
            yield from walk(tabs, sub, prefix + key + sep, seen + (name,))
        else:
            yield prefix + key, typ, flags


def main():
    src = open(sys.argv[1], encoding='utf-8').read()
    tabs = tables(src)
    if sys.argv[2] not in tabs:
        sys.exit('no table %s in %s' % (sys.argv[2], sys.argv[1]))
    for path, typ, flags in walk(tabs, sys.argv[2], ''):
        print('%s\t%s\t%s' % (path, typ, flags))


if __name__ == '__main__':
    main()
