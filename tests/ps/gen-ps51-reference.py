#!/usr/bin/env python3
"""Build tests/ps/ps51-reference.json, the rule data of lint51.cjs, from
Windows PowerShell 5.1's own cmdlet reference.

Source: the PowerShell-Docs repository (MicrosoftDocs/PowerShell-Docs),
reference/5.1/<Module>/<Cmdlet>.md: one page per cmdlet, each parameter a
"### -Name" heading followed by a fenced yaml block. Two block shapes occur
(both read here):
  old:  Type / Parameter Sets / Aliases / Accepted values / Position
  new:  Type / Aliases: [] / ParameterSets: [{Name, Position,
        ValueFromRemainingArguments}] / AcceptedValues: []
reference/7.6 is read for cmdlet names only: a cmdlet PowerShell 7.6 has and
5.1 does not is something a script tested under pwsh 7 can use by mistake.

usage: gen-ps51-reference.py GIT_DIR [COMMIT] > tests/ps/ps51-reference.json
GIT_DIR is a clone of PowerShell-Docs (the search tool's fetch gives a bare
one); nothing is read from the network. Re-run it when the docs move and
commit the output with the commit it names.
"""
import json
import re
import subprocess
import sys

import yaml

COMMON = ["Verbose", "Debug", "ErrorAction", "WarningAction", "InformationAction",
          "ErrorVariable", "WarningVariable", "InformationVariable", "OutVariable",
          "OutBuffer", "PipelineVariable"]
# about_CommonParameters (reference/5.1/Microsoft.PowerShell.Core/About/
# about_CommonParameters.md) names these aliases
COMMON_ALIASES = {"vb": "Verbose", "db": "Debug", "ea": "ErrorAction",
                  "wa": "WarningAction", "infa": "InformationAction",
                  "ev": "ErrorVariable", "wv": "WarningVariable",
                  "iv": "InformationVariable", "ov": "OutVariable",
                  "ob": "OutBuffer", "pv": "PipelineVariable"}


def git(gd, *args):
    return subprocess.run(["git", "--git-dir", gd, *args], check=True,
                          capture_output=True).stdout


def pages(gd, commit, ver):
    names = git(gd, "ls-tree", "-r", "--name-only", commit,
                f"reference/{ver}").decode().splitlines()
    for n in names:
        parts = n.split("/")
        if len(parts) == 4 and n.endswith(".md") and parts[3] != parts[2] + ".md":
            yield n


def listify(v):
    if v is None or v == "":
        return []
    if isinstance(v, list):
        return [str(x) for x in v]
    return [s.strip() for s in str(v).split(",") if s.strip()]


def parse_page(text):
    """{param: {switch, aliases, accepted, sets: {set: {pos, rest}}}}"""
    params = {}
    text = text.replace("\r\n", "\n")
    body = text.split("\n## PARAMETERS", 1)
    if len(body) < 2:
        return params
    body = body[1].split("\n## INPUTS", 1)[0]
    for m in re.finditer(r"^### -(\w+)\s*$(.*?)(?=^### |\Z)", body, re.M | re.S):
        name, sect = m.group(1), m.group(2)
        y = re.search(r"```yaml\n(.*?)```", sect, re.S)
        if not y:
            continue
        try:
            d = yaml.safe_load(y.group(1)) or {}
        except yaml.YAMLError:
            continue
        p = params.setdefault(name, {"switch": False, "aliases": [], "accepted": [],
                                     "sets": {}})
        t = str(d.get("Type", ""))
        p["switch"] = p["switch"] or t.endswith("SwitchParameter")
        p["aliases"] = sorted(set(p["aliases"]) | set(listify(d.get("Aliases"))))
        acc = listify(d.get("Accepted values")) or listify(d.get("AcceptedValues"))
        p["accepted"] = sorted(set(p["accepted"]) | set(acc))
        if "ParameterSets" in d and isinstance(d["ParameterSets"], list):
            for s in d["ParameterSets"]:
                pos = s.get("Position")
                p["sets"][str(s.get("Name"))] = {
                    "pos": pos if isinstance(pos, int) else None,
                    "rest": bool(s.get("ValueFromRemainingArguments"))}
        else:
            pos = d.get("Position")
            for s in listify(d.get("Parameter Sets")) or ["(All)"]:
                p["sets"][s] = {"pos": pos if isinstance(pos, int) else None,
                                "rest": False}
    return params


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: gen-ps51-reference.py GIT_DIR [COMMIT]")
    gd = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else \
        git(gd, "rev-parse", "HEAD").decode().strip()
    date = git(gd, "log", "-1", "--format=%cs", commit).decode().strip()
    cmdlets = {}
    for path in pages(gd, commit, "5.1"):
        name = path.rsplit("/", 1)[1][:-3]
        params = parse_page(git(gd, "show", f"{commit}:{path}").decode("utf-8", "replace"))
        if not params and "## PARAMETERS" not in git(gd, "show", f"{commit}:{path}").decode(
                "utf-8", "replace"):
            continue
        cmdlets[name.lower()] = {"name": name, "page": path, "params": params}
    # 5.1's built-in functions (about_Built-in_Functions.md: Clear-Host,
    # Get-Verb, ...) exist in 5.1 though no cmdlet page names them
    funcs = set(re.findall(r"^## `([\w-]+)`", git(gd, "show", f"{commit}:reference/5.1/"
                           "Microsoft.PowerShell.Core/About/about_Built-in_Functions.md")
                           .decode("utf-8", "replace").replace("\r\n", "\n"), re.M))
    only7 = sorted({p.rsplit("/", 1)[1][:-3] for p in pages(gd, commit, "7.6")}
                   - {c["name"] for c in cmdlets.values()} - funcs, key=str.lower)
    # variables: the automatic and preference variables each version's
    # about_ pages define; one only 7.6 defines reads as $null in 5.1
    # ($IsWindows), or is set there to no effect
    # ($PSNativeCommandUseErrorActionPreference)
    def variables(ver):
        out = set()
        for page in ("about_Automatic_Variables", "about_Preference_Variables"):
            t = git(gd, "show", f"{commit}:reference/{ver}/Microsoft.PowerShell.Core/"
                    f"About/{page}.md").decode("utf-8", "replace").replace("\r\n", "\n")
            out |= {v.lower() for v in re.findall(r"^##+ `?\$(\w+)`?\s*$", t, re.M)}
        return out
    vars7 = sorted(variables("7.6") - variables("5.1"))
    json.dump({"source": {"repo": "MicrosoftDocs/PowerShell-Docs", "commit": commit,
                          "date": date, "generator": "tests/ps/gen-ps51-reference.py"},
               "common": COMMON, "common_aliases": COMMON_ALIASES,
               "cmdlets": cmdlets, "only_in_7": only7,
               "variables_only_in_7": vars7},
              sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
