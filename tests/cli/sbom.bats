#!/usr/bin/env bats
# OUT/<name>/sbom.cdx.json (docs/provenance.md): CycloneDX 1.5, checked
# against the schema of npm @cyclonedx/cyclonedx-library (tests/sbom), its
# content against the served files, determinism, and lock replay.
load helpers
load ../lib/servers
load stage_fixtures

setup() { fixture_setup; }

O() { echo "$WORK/out/$NAME"; }

validator() {
	echo "$WB_SRC/tests/sbom/validate.cjs"
}

@test "build writes an SBOM that validates against the CycloneDX 1.5 schema" {
	need_dep test -d "$WB_SRC/tests/sbom/node_modules/ajv-formats" -- "run make deps (npm ci in tests/sbom)"
	v=$(validator)
	wb build "$RECIPE" -O fixtures.yaml --no-progress --builder qemu
	assert_status 0
	run node "$v" "$(O)/sbom.cdx.json"
	assert_status 0
	assert_output_has "valid CycloneDX 1.5"
}

@test "the schema check rejects a broken SBOM (the validator is not a no-op)" {
	need_dep test -d "$WB_SRC/tests/sbom/node_modules/ajv-formats" -- "run make deps (npm ci in tests/sbom)"
	v=$(validator)
	wb build "$RECIPE" -O fixtures.yaml --no-progress --builder qemu
	assert_status 0
	python3 - "$(O)/sbom.cdx.json" <<-'PY'
		import json, sys
		p = sys.argv[1]; d = json.load(open(p))
		d["components"][0]["hashes"][1]["alg"] = "SHA-999"
		d["serialNumber"] = "urn:uuid:not-a-uuid"
		json.dump(d, open(p, "w"))
	PY
	run node "$v" "$(O)/sbom.cdx.json"
	assert_status 1
	assert_output_has "serialNumber"
}

@test "the SBOM names every artifact with purl, both digests, URL, install path, and every file" {
	wb build "$RECIPE" -O fixtures.yaml --no-progress --builder qemu
	assert_status 0
	python3 - "$(O)/sbom.cdx.json" "$(O)/manifest.json" "$WWW/good" <<-'PY'
		import hashlib, json, sys
		sbom = json.load(open(sys.argv[1])); man = json.load(open(sys.argv[2])); www = sys.argv[3]
		assert sbom["bomFormat"] == "CycloneDX" and sbom["specVersion"] == "1.5"
		assert sbom["metadata"]["timestamp"] == "2023-11-14T22:13:20Z"
		comps = {c["name"]: c for c in sbom["components"] if c["type"] == "application"}
		assert sorted(comps) == sorted(a["name"] for a in man["artifacts"]), comps.keys()
		assert comps["containerd"]["purl"] == "pkg:github/containerd/containerd@v2.3.5"
		assert comps["kubelet"]["purl"] == "pkg:github/kubernetes/kubernetes@v1.36.4"
		for a in man["artifacts"]:
		    c = comps[a["name"]]
		    fn = a["url"].rsplit("/", 1)[1]
		    data = open(f"{www}/{fn}", "rb").read()
		    h = {x["alg"]: x["content"] for x in c["hashes"]}
		    assert h["SHA-256"] == hashlib.sha256(data).hexdigest() == a["sha256"]
		    assert h["SHA-512"] == hashlib.sha512(data).hexdigest()
		    assert {"type": "distribution", "url": a["url"]} in c["externalReferences"]
		    props = {p["name"]: p["value"] for p in c["properties"]}
		    assert props["winbuild:install_path"] == a["destination"]
		    assert props["winbuild:verified_by"] == "pinned sha256"
		files = [f for c in comps.values() for f in c.get("components", [])]
		files += [c for c in sbom["components"] if c["type"] == "file"]
		got = sorted((f["name"], f["hashes"][0]["content"]) for f in files)
		want = sorted((f["path"], f["sha256"]) for f in man["files"])
		assert got == want, (got, want)
		refs = [c["bom-ref"] for c in comps.values()] + [f["bom-ref"] for f in files]
		assert len(refs) == len(set(refs))
	PY
}

@test "the SBOM is deterministic; its serial number follows its content" {
	wb build "$RECIPE" -O fixtures.yaml --no-progress --builder qemu
	assert_status 0
	cp "$(O)/sbom.cdx.json" first.json
	rm -rf out
	wb build "$RECIPE" -O fixtures.yaml --no-progress --builder qemu
	assert_status 0
	cmp first.json "$(O)/sbom.cdx.json"
	SOURCE_DATE_EPOCH=1700000001 wb build "$RECIPE" -O fixtures.yaml --no-progress --builder qemu
	assert_status 0
	a=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["serialNumber"])' first.json)
	b=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["serialNumber"])' "$(O)/sbom.cdx.json")
	[ "$a" != "$b" ]
}

@test "lock replay: build --locked --offline reproduces tree, Packer inputs and SBOM byte for byte" {
	wb build "$RECIPE" -O fixtures.yaml --no-progress
	assert_status 0
	wb lock "$RECIPE" -O fixtures.yaml --no-progress -q
	assert_status 0
	[ -f winbuild.lock ]
	cp -a "$(O)" first
	rm -rf out
	wb build "$RECIPE" -O fixtures.yaml --locked --offline --no-progress
	assert_status 0
	# the answer files' one-off password is new each emit, nothing else
	mask_iso_password first/packer
	mask_iso_password "$(O)/packer"
	diff -r -x .stage-stamp first "$(O)"
	cmp first/sbom.cdx.json "$(O)/sbom.cdx.json"
}
