#!/usr/bin/env bats
# The shipped recipes verify what upstream signs (issue 17 item 4): the
# Kubernetes binaries by their cosign signatures (krel's identity, Google's
# issuer) plus the .sha256 file, containerd by its release workflow's build
# provenance plus the .sha256sum file, both under the Sigstore production
# trusted root shipped in recipes/trust/sigstore/ (README.md there: its
# provenance, its sha256 and tools/update-trusted-root, tested here).
load helpers

R="$WB_SRC/recipes"
O="$WB_SRC/overrides"
IMAGES="windows-2019-containerd windows-2022-containerd windows-2025-containerd"
ROOT="$R/trust/sigstore/trusted_root.json"
VEC="$WB_SRC/tests/vectors/sigstore"
GHA="https://token.actions.githubusercontent.com"
CTRD_ID="https://github.com/containerd/containerd/.github/workflows/release.yml@refs/tags/v"

setup() {
	common_setup
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256"
}

@test "the shipped trusted root is the production root of the vectors, byte for byte, with the README's sha256" {
	cmp "$ROOT" "$VEC/trusted_root/production-sigstore-python.json"
	sum=$(sha256sum "$ROOT" | cut -d' ' -f1)
	grep -qx "sha256: $sum" "$R/trust/sigstore/README.md"
	# the README's provenance is the vectors' record of the file
	python3 - "$VEC/sources.json" "$R/trust/sigstore/README.md" "$sum" <<-'PY'
		import json, sys
		s = [x for x in json.load(open(sys.argv[1]))
		     if x["file"] == "trusted_root/production-sigstore-python.json"][0]
		readme = open(sys.argv[2]).read()
		assert s["sha256"] == sys.argv[3], s
		for k in ("repo", "commit", "path"):
		    assert s[k] in readme, (k, s[k])
		r = json.load(open(sys.argv[1].replace("sources.json", s["file"])))
		assert [t["baseUrl"] for t in r["tlogs"]][0] == "https://rekor.sigstore.dev", r["tlogs"]
	PY
}

@test "containerd: the release workflow's attestation plus the .sha256sum file, in every shipped image (text and --json)" {
	for img in $IMAGES; do
		wb plan "$R/$img.yaml"
		assert_status 0
		assert_output_has "sha256 from checksum file https://github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-windows-amd64.tar.gz.sha256sum"
		assert_output_has "build provenance attestation https://github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-attestation.intoto.jsonl"
		assert_output_has "identity ${CTRD_ID}2.3.5"
		assert_output_has "issuer $GHA"
		wb plan --json "$R/$img.yaml"
		assert_status 0
		printf '%s' "$output" >p.json
		python3 - "$ROOT" "${CTRD_ID}2.3.5" "$GHA" <<-'PY'
			import json, os, sys
			root, ident, iss = sys.argv[1:4]
			a = [a for a in json.load(open("p.json"))["artifacts"] if a["name"] == "containerd"][0]
			v = a["verify"]
			assert v["sha256_urls"] == [a["url"] + ".sha256sum"], v
			at = v["attestation"]
			assert at["urls"] == [a["url"].replace("windows-amd64.tar.gz", "attestation.intoto.jsonl")], at
			assert at["identity"] == ident and at["issuer"] == iss, at
			assert os.path.samefile(at["trusted_root"], root), at
		PY
	done
	# the version moves the identity with it
	wb plan --json "$R/windows-2022-containerd.yaml" --set components.containerd.version=2.0.6
	assert_status 0
	grep -qF "\"identity\": \"${CTRD_ID}2.0.6\"" <<<"$output"
}

@test "containerd 1.7 (no provenance upstream) is a plan-time error naming the fix; overrides/containerd-1.7.yaml says what it gives up" {
	for v in 1.7.28 1.6.0; do
		wb plan "$R/windows-2022-containerd.yaml" --set components.containerd.version=$v
		assert_status 2
		assert_output_has "winbuild: --set #1: containerd $v publishes no build provenance"
		assert_output_has "artifact 'containerd' requires it (verify.attestation, "
		assert_output_has "components/containerd.yaml:"
		assert_output_has "use containerd 2.0 or later, or -O overrides/containerd-1.7.yaml"
	done
	# from a layer (WINBUILD_SET) too, named as such
	WINBUILD_SET="$WINBUILD_SET;components.containerd.version=1.7.27" wb plan "$R/windows-2022-containerd.yaml"
	assert_status 2
	assert_output_has "containerd 1.7.27 publishes no build provenance"
	# the override: 1.7.28, the checksum file alone, nothing else dropped
	# (stdout only: the plan warns that Kubernetes 1.36 wants containerd 2)
	"$WINBUILD" plan --json "$R/windows-2022-containerd.yaml" -O "$O/containerd-1.7.yaml" >p.json 2>err
	grep -qF "Kubernetes 1.35 was the last release to support containerd 1.x" err
	python3 - <<-'PY'
		import json, sys
		p = json.load(open("p.json"))
		a = {a["name"]: a for a in p["artifacts"]}
		c = a["containerd"]
		assert c["version"] == "1.7.28", c
		assert c["url"] == "https://github.com/containerd/containerd/releases/download/v1.7.28/containerd-1.7.28-windows-amd64.tar.gz", c
		assert c["verify"]["sha256_urls"] == [c["url"] + ".sha256sum"], c["verify"]
		assert c["verify"]["attestation"] is None, c["verify"]
		for n, x in a.items():
		    if n != "containerd":
		        assert not x["replaced"], n
	PY
	grep -qi "gives up" "$O/containerd-1.7.yaml"
	# another 1.7 through the override
	wb plan "$R/windows-2022-containerd.yaml" -O "$O/containerd-1.7.yaml" --set components.containerd.version=1.7.27
	assert_status 0
	assert_output_has "containerd-1.7.27-windows-amd64.tar.gz.sha256sum"
	# a fixture-style replace with its own verify needs no override
	printf 'kind: override\nreplace:\n  containerd: {url: "https://example.test/c.tgz", verify: {sha256: %s}}\n' \
		"$TEST_ISO_SHA256" >r.yaml
	wb plan "$R/windows-2022-containerd.yaml" -O r.yaml --set components.containerd.version=1.7.28
	assert_status 0
}

@test "tools/update-trusted-root: accepts a production root (and records its sha256), refuses broken ones writing nothing" {
	need_dep python3 -c 'import json' -- python3
	mkdir -p t
	cp "$ROOT" "$R/trust/sigstore/README.md" t/
	export TRUST_DIR="$WORK/t"
	# the shipped one passes --check and changes nothing
	run "$WB_SRC/tools/update-trusted-root" --check "$ROOT"
	assert_status 0
	assert_output_has "sha256: $(sha256sum "$ROOT" | cut -d' ' -f1)"
	cmp t/trusted_root.json "$ROOT"
	# broken roots: each refused (exit 1), nothing written
	printf '{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1", ' >trunc.json
	python3 - "$ROOT" <<-'PY'
		import base64, json, sys
		r = json.load(open(sys.argv[1]))
		def save(name, x):
		    json.dump(x, open(name, "w"))
		x = json.loads(json.dumps(r)); x["tlogs"] = []; save("notlog.json", x)
		# Rekor v1's key replaced by the Rekor v2 log's: parses, proves nothing
		x = json.loads(json.dumps(r))
		x["tlogs"][0]["publicKey"]["rawBytes"] = x["ctlogs"][1]["publicKey"]["rawBytes"]
		save("rekorkey.json", x)
		# Fulcio's chain swapped for the other (expired) one
		x = json.loads(json.dumps(r))
		x["certificateAuthorities"][1]["certChain"] = x["certificateAuthorities"][0]["certChain"]
		save("fulcio.json", x)
		# the CT logs' keys swapped: SCTs no longer verify
		x = json.loads(json.dumps(r))
		a, b = x["ctlogs"][0]["publicKey"]["rawBytes"], x["ctlogs"][1]["publicKey"]["rawBytes"]
		x["ctlogs"][0]["publicKey"]["rawBytes"], x["ctlogs"][1]["publicKey"]["rawBytes"] = b, a
		save("ctkeys.json", x)
		x = json.loads(json.dumps(r)); x["mediaType"] = "application/json"; save("media.json", x)
	PY
	bad="trunc notlog rekorkey fulcio media"
	# CT keys swapped between entries: winbuild takes a CT log's id from its
	# key (OpenSSL's CT store) and its window from the entry's logId, so only
	# the independent verifier's check refuses this one
	[ -d "$WB_SRC/tests/sigstore/node_modules/@sigstore/verify" ] && bad="$bad ctkeys"
	for f in $bad; do
		run "$WB_SRC/tools/update-trusted-root" "$f.json"
		echo "$f: $output"
		assert_status 1
		assert_output_has "rejected"
		cmp t/trusted_root.json "$ROOT"
		cmp t/README.md "$R/trust/sigstore/README.md"
	done
	run "$WB_SRC/tools/update-trusted-root" "$WORK/rekorkey.json"
	assert_output_has "winbuild does not verify the conformance case 'happy-path-v0.1'"
	# a valid root (sigstore-go's copy) is installed and its sha256 recorded
	new="$VEC/trusted_root/public-good.json"
	run "$WB_SRC/tools/update-trusted-root" "$new"
	assert_status 0
	sum=$(sha256sum "$new" | cut -d' ' -f1)
	assert_output_has "sha256: $sum"
	cmp t/trusted_root.json "$new"
	grep -qx "sha256: $sum" t/README.md
	[ "$(diff t/README.md "$R/trust/sigstore/README.md" | grep -c '^[<>]')" = 2 ]
	# usage
	run "$WB_SRC/tools/update-trusted-root"
	assert_status 2
	run "$WB_SRC/tools/update-trusted-root" no-such.json
	assert_status 2
}
