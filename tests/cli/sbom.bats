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
		d["components"][0]["hashes"][0]["alg"] = "SHA-999"
		d["serialNumber"] = "urn:uuid:not-a-uuid"
		json.dump(d, open(p, "w"))
	PY
	run node "$v" "$(O)/sbom.cdx.json"
	assert_status 1
	assert_output_has "serialNumber"
}

@test "the SBOM names every artifact with purl, its SHA-256, URL, install path, and every file" {
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
		    # pinned by sha256 only: no digest trust did not compute
		    assert sorted(h) == ["SHA-256"], h
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
	[ -f windows-2022-containerd.lock ]
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

# trust_override: fixtures.yaml, but kubelet verified only by a minisign
# signature (a key made here), kubeadm pinned only by its SHA-512, and
# kubectl only by a sha512sum checksum file
trust_override() {
	minisign -G -W -p "$WORK/k.pub" -s "$WORK/k.key" </dev/null >/dev/null
	minisign -S -s "$WORK/k.key" -m "$WWW/good/kubelet.exe" </dev/null >/dev/null
	local pub s512
	pub=$(tail -n1 "$WORK/k.pub")
	s512=$(sha512sum "$WWW/good/kubeadm.exe" | cut -d' ' -f1)
	(cd "$WWW/good" && sha512sum kubectl.exe >kubectl.exe.sha512)
	fixture_override | sed \
		-e "/^  kubelet:/,+2 s|verify: .*|verify: {minisign: {keys: [{key: $pub}]}}|" \
		-e "/^  kubeadm:/,+2 s|verify: .*|verify: {sha512: $s512}|" \
		-e "/^  kubectl:/,+2 s|verify: .*|verify: {sha512_url: $(H)/good/kubectl.exe.sha512}|" \
		>"$WORK/trust.yaml"
	grep -q "minisign" "$WORK/trust.yaml" && grep -q "sha512: $s512" "$WORK/trust.yaml"
}

# sbom_hashes SBOM WWW: checks each artifact's hashes against hashlib: the
# minisign-only kubelet has SHA-256 + BLAKE2b-512, the sha512-pinned
# kubeadm and the sha512_url-checked kubectl SHA-256 + SHA-512, every other
# one SHA-256 alone
sbom_hashes() {
	python3 - "$1" "$2" <<-'PY'
		import hashlib, json, sys
		sbom = json.load(open(sys.argv[1])); www = sys.argv[2]
		comps = {c["name"]: c for c in sbom["components"] if c["type"] == "application"}
		want = {"kubelet": ["BLAKE2b-512", "SHA-256"], "kubeadm": ["SHA-256", "SHA-512"],
		        "kubectl": ["SHA-256", "SHA-512"]}
		fn = {"BLAKE2b-512": lambda d: hashlib.blake2b(d, digest_size=64).hexdigest(),
		      "SHA-256": lambda d: hashlib.sha256(d).hexdigest(),
		      "SHA-512": lambda d: hashlib.sha512(d).hexdigest()}
		for name, c in comps.items():
		    h = {x["alg"]: x["content"] for x in c["hashes"]}
		    assert sorted(h) == want.get(name, ["SHA-256"]), (name, h)
		    url = [r["url"] for r in c["externalReferences"] if r["type"] == "distribution"][0]
		    data = open(f"{www}/good/{url.rsplit('/', 1)[1]}", "rb").read()
		    for alg, v in h.items():
		        assert v == fn[alg](data), (name, alg)
		print("ok", len(comps))
	PY
}

@test "the SBOM lists the digests trust computed: minisign gives BLAKE2b-512, a sha512 pin or checksum file SHA-512, no other SHA-512; it validates" {
	need_dep test -d "$WB_SRC/tests/sbom/node_modules/ajv-formats" -- "run make deps (npm ci in tests/sbom)"
	trust_override
	wb stage "$RECIPE" -O trust.yaml --no-progress
	assert_status 0
	run sbom_hashes "$(O)/sbom.cdx.json" "$WWW"
	assert_status 0
	assert_output_has "ok 10"
	run node "$(validator)" "$(O)/sbom.cdx.json"
	assert_status 0
	assert_output_has "valid CycloneDX 1.5"
	# the cache refs keep what was computed, and no SHA-512 for the SBOM
	run python3 - "$WINBUILD_CACHE/refs" <<-'PY'
		import json, os, sys
		refs = [json.load(open(os.path.join(sys.argv[1], f))) for f in os.listdir(sys.argv[1])]
		by = {r["artifact"]: r for r in refs}
		assert "blake2b512" in by["kubelet"] and "sha512" not in by["kubelet"], by["kubelet"]
		assert "sha512" in by["kubeadm"] and "blake2b512" not in by["kubeadm"]
		assert "sha512" in by["kubectl"] and "blake2b512" not in by["kubectl"]
		assert "sha512" not in by["containerd"] and "blake2b512" not in by["containerd"]
		print("refs ok")
	PY
	assert_status 0
	assert_output_has "refs ok"
}

@test "a stage from the cache gives the same SBOM, also from refs an older winbuild wrote with sha512 for every artifact" {
	trust_override
	wb stage "$RECIPE" -O trust.yaml --no-progress
	assert_status 0
	cp "$(O)/sbom.cdx.json" first.json
	rm -rf out
	wb stage "$RECIPE" -O trust.yaml --no-progress
	assert_status 0
	cmp first.json "$(O)/sbom.cdx.json"
	# an older ref: sha512 for everything, no blake2b512
	python3 - "$WINBUILD_CACHE/refs" "$WWW" <<-'PY'
		import hashlib, json, os, sys
		d = sys.argv[1]
		for f in os.listdir(d):
		    p = os.path.join(d, f); r = json.load(open(p))
		    url = r["url"]; data = open(f"{sys.argv[2]}/good/{url.rsplit('/', 1)[1]}", "rb").read()
		    r["sha512"] = hashlib.sha512(data).hexdigest()
		    r.pop("blake2b512", None)
		    json.dump(r, open(p, "w"))
	PY
	rm -rf out
	wb stage "$RECIPE" -O trust.yaml --no-progress
	assert_status 0
	cmp first.json "$(O)/sbom.cdx.json"
	run sbom_hashes "$(O)/sbom.cdx.json" "$WWW"
	assert_status 0
}
