#!/usr/bin/env python3
"""Record the HCL attributes each pinned Packer plugin declares.

Usage: hcl2spec-attrs.py MIRROR_ROOT > tests/packer/plugin-attrs.json

MIRROR_ROOT holds a git clone (bare or not) per plugin repository, named as
the `fetch` tool names them (hashicorp+packer-plugin-azure/repo, ...). For
each builder of the platform table (builder/lib/platform.c: its plugin
source and exact version), the script reads the plugin's generated
`*.hcl2spec.go` files at the release tag `v<version>` and writes every
attribute of the builder's FlatConfig HCL2Spec(), with the attributes of
each nested block (hcldec.BlockSpec / BlockListSpec, followed into the
Flat type they name), and where they came from (repository, tag, commit,
file). tests/cli/platform.bats checks that every attribute the emitted
templates use is declared here, so a renamed or removed attribute fails a
test. The generated files are the plugins' own record of their schema
(`packer-sdc mapstructure-to-hcl2`), the way tests/node/keytables.py
records containerd's keys.
"""
import json
import os
import re
import subprocess
import sys

# builder -> (repository as `fetch` names it, its FlatConfig file)
PLUGINS = {
    "azure-arm": ("hashicorp+packer-plugin-azure", "builder/azure/arm/config.hcl2spec.go"),
    "vsphere-iso": ("hashicorp+packer-plugin-vsphere", "builder/vsphere/iso/config.hcl2spec.go"),
    "qemu": ("hashicorp+packer-plugin-qemu", "builder/qemu/config.hcl2spec.go"),
    "hyperv-iso": ("hashicorp+packer-plugin-hyperv", "builder/hyperv/iso/builder.hcl2spec.go"),
    "amazon-ebs": ("hashicorp+packer-plugin-amazon", "builder/ebs/builder.hcl2spec.go"),
    "oracle-oci": ("hashicorp+packer-plugin-oracle", "builder/oci/config.hcl2spec.go"),
}

FUNC = re.compile(r'func \(\*(Flat\w+)\) HCL2Spec\(\) map\[string\]hcldec\.Spec \{\n(.*?)\n\treturn s\n\}', re.S)
ATTR = re.compile(r'^\t\t"([a-zA-Z0-9_]+)":\s+&hcldec\.(\w+)\{(.*)\},?$', re.M)
NESTED = re.compile(r'\(\*(?:\w+\.)?(Flat\w+)\)\(nil\)')


def table_versions(table):
    src = open(table).read()
    out = {}
    for m in re.finditer(r'\.name = "([^"]+)".*?\.plugin_source = "([^"]+)",\s*\.plugin_version = "([^"]+)"', src, re.S):
        out[m.group(1)] = (m.group(2), m.group(3))
    return out


def git(repo, *args):
    return subprocess.run(["git", "-C", repo] + list(args), check=True,
                          capture_output=True, text=True).stdout


def main():
    root = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    versions = table_versions(os.path.join(here, "../../builder/lib/platform.c"))
    out = {}
    for builder, (name, cfg) in sorted(PLUGINS.items()):
        source, version = versions[builder]
        repo = os.path.join(root, name, "repo")
        tag = "v" + version
        commit = git(repo, "rev-list", "-n1", tag).strip()
        files = [f for f in git(repo, "ls-tree", "-r", "--name-only", tag).split("\n")
                 if f.endswith(".hcl2spec.go")]
        specs = {}   # (file, type) -> {attr: nested type or None}
        for f in files:
            text = git(repo, "show", "%s:%s" % (tag, f))
            for m in FUNC.finditer(text):
                attrs = {}
                for a in ATTR.finditer(m.group(2)):
                    n = NESTED.search(a.group(3)) if "Block" in a.group(2) else None
                    attrs[a.group(1)] = n.group(1) if n else None
                specs[(f, m.group(1))] = attrs

        def find(ftype, near):
            same = [k for k in specs if k[1] == ftype and os.path.dirname(k[0]) == os.path.dirname(near)]
            anyk = [k for k in specs if k[1] == ftype]
            return (same or anyk or [None])[0]

        def expand(key):
            res = {"attrs": sorted(specs[key]), "blocks": {}}
            for a, nested in specs[key].items():
                if nested:
                    k = find(nested, key[0])
                    # a type of packer-plugin-sdk: its attributes are not
                    # in this repository, so none is checked
                    res["blocks"][a] = expand(k) if k else {"attrs": None, "type": nested}
            return res

        entry = expand((cfg, "FlatConfig"))
        entry.update({"source": source, "version": version,
                      "repository": "github.com/" + name.replace("+", "/"),
                      "tag": tag, "commit": commit, "file": cfg})
        out[builder] = entry
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
