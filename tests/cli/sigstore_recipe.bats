#!/usr/bin/env bats
# A recipe requires Sigstore (issue 16): verify.sigstore with a pinned
# trusted root and an identity + issuer (keyless) or a PEM key. The real
# sigstore-conformance vectors (tests/vectors/sigstore, byte-exact copies)
# are served on the loopback nginx: a.txt and its bundles. Every refusal
# checks the exit code, the message, and that nothing reached the cache.
load helpers
load ../lib/servers
load fetch_fixtures

V="$BATS_TEST_DIRNAME/../vectors/sigstore"
ROOT="$V/trusted_root/public-good.json"
ID="https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
ISS="https://token.actions.githubusercontent.com"

setup_file() {
	make_fixtures "$BATS_FILE_TMPDIR"
	local w="$WWW/s" c="$V/conformance"
	mkdir -p "$w"
	cp "$c/a.txt" "$w/a.txt"
	cp "$c/happy-path-v0.3/bundle.sigstore.json" "$w/a.txt.sigstore.json"
	# the managed-key case: the same a.txt signed with a pinned key
	cp "$c/managed-key-happy-path/bundle.sigstore.json" "$w/a.txt.key.sigstore.json"
	# a genuine bundle, for another artifact (a DSSE statement whose
	# subject is not a.txt), under its own root and the same identity
	cp "$c/intoto-with-custom-trust-root/bundle.sigstore.json" "$w/a.txt.other.sigstore.json"
	# a.txt with one byte changed, beside the good bundle
	cp "$c/a.txt" "$w/t.txt"
	flip_byte "$w/t.txt" 5
	cp "$c/happy-path-v0.3/bundle.sigstore.json" "$w/t.txt.sigstore.json"
	# m.txt: a.txt, whose bundle the server does not have
	cp "$c/a.txt" "$w/m.txt"
	start_nginx "$WWW"
	export WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() { stop_servers; }

# sig [EXTRA]: the keyless requirement (identity $ID, issuer $ISS)
sig() {
	echo "sigstore: {trusted_root: \"$ROOT\", identity: \"${1:-$ID}\", issuer: \"$ISS\"${2:+, $2}}"
}

# untouched NAME: nothing was cached as verified for NAME
untouched() {
	! grep -qs "\"artifact\": \"$1\"" "$WINBUILD_CACHE"/refs/* &&
		[ "$(tmp_files)" -eq 0 ] && [ "$(cache_files)" -eq 0 ]
}

@test "sigstore recipe: keyless identity + issuer verifies a.txt; fetch, lock, plan and --explain show it" {
	art a.txt "$(H)/s/a.txt" "$(sig)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "sigstore $ID ($ISS), log index"
	[ "$(nginx_requests /s/a.txt.sigstore.json)" -ge 1 ]
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - t.lock "$ID" "$ISS" "$(H)" <<-'PY'
		import json, sys
		s = json.load(open(sys.argv[1]))["artifacts"]["a.txt"]["verified_by"]["sigstore"]
		assert s["identity"] == sys.argv[2] and s["issuer"] == sys.argv[3], s
		assert int(s["log_index"]) > 0 and int(s["integrated_time"]) > 1600000000, s
		assert s["bundle_url"] == sys.argv[4] + "/s/a.txt.sigstore.json", s
	PY
	"$WINBUILD" plan img.yaml --json >plan.json
	python3 - plan.json "$ID" <<-'PY'
		import json, sys
		v = json.load(open(sys.argv[1]))["artifacts"][0]["verify"]
		s = v["sigstore"]
		assert s["urls"][0].endswith("/s/a.txt.sigstore.json"), s
		assert s["identity"] == sys.argv[2] and s["key"] is None, s
		assert s["trusted_root"].endswith("public-good.json"), s
		assert v["sigstore_also"] == [] and v["minisign"] is None, v
	PY
	wb plan img.yaml --explain
	assert_status 0
	assert_output_has "verify:  sigstore bundle $(H)/s/a.txt.sigstore.json    <- components/demo.yaml:"
	assert_output_has "identity $ID    <- components/demo.yaml:"
	assert_output_has "trusted_root $ROOT"
}

@test "sigstore recipe: a managed key (cosign sign-blob --key) verifies; the lock records the key" {
	art a.txt "$(H)/s/a.txt" "sigstore: {bundle: \"\${url}.key.sigstore.json\", trusted_root: \"$V/trusted_root/production-sigstore-python.json\", key: \"$V/conformance/managed-key-happy-path/key.pub\"}" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - t.lock <<-'PY'
		import json, sys
		s = json.load(open(sys.argv[1]))["artifacts"]["a.txt"]["verified_by"]["sigstore"]
		assert len(s["key_sha256"]) == 64 and "identity" not in s, s
	PY
}

@test "sigstore recipe: a wrong identity is exit 1, names it, and caches nothing" {
	art a.txt "$(H)/s/a.txt" "$(sig "https://github.com/evil/repo/.github/workflows/x.yml@refs/heads/main")" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'a.txt' from '$(H)/s/a.txt': sigstore bundle '$(H)/s/a.txt.sigstore.json'"
	assert_output_has "evil/repo"
	untouched a.txt
}

@test "sigstore recipe: a swapped bundle (genuine, for another artifact) is exit 1 and caches nothing" {
	art a.txt "$(H)/s/a.txt" "sigstore: {bundle: \"\${url}.other.sigstore.json\", trusted_root: \"$V/conformance/intoto-with-custom-trust-root/trusted_root.json\", identity: \"$ID\", issuer: \"$ISS\"}" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "a.txt.other.sigstore.json"
	untouched a.txt
}

@test "sigstore recipe: a tampered artifact beside its good bundle is exit 1 and caches nothing" {
	art t.txt "$(H)/s/t.txt" "$(sig)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 't.txt' from '$(H)/s/t.txt': sigstore bundle"
	untouched t.txt
}

@test "sigstore recipe: a missing bundle (404) is exit 1, not a network error, and caches nothing" {
	art m.txt "$(H)/s/m.txt" "$(sig)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "sigstore bundle '$(H)/s/m.txt.sigstore.json': HTTP 404"
	untouched m.txt
	[ "$(nginx_requests /s/m.txt)" -eq 0 ]
}

@test "sigstore recipe: a cache hit and --offline --locked check the kept bundle again" {
	art a.txt "$(H)/s/a.txt" "$(sig)" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	wb fetch img.yaml --locked --no-progress
	assert_status 0
	n=$(nginx_requests /s/a.txt)
	wb fetch img.yaml --offline --locked --no-progress
	assert_status 0
	assert_output_has "sigstore $ID"
	[ "$(nginx_requests /s/a.txt)" = "$n" ]
	# the kept bundle edited in the ref (the attacker's cheap edit): the
	# hit no longer verifies, the ref is ignored, and offline there is no
	# other way to the bytes
	python3 - "$WINBUILD_CACHE"/refs/* <<-'PY'
		import json, sys
		for f in sys.argv[1:]:
		    d = json.load(open(f))
		    for x in d["evidence"]:
		        if x["method"] == "sigstore":
		            x["text"] = x["text"].replace('"logIndex": "', '"logIndex": "1')
		    json.dump(d, open(f, "w"))
	PY
	wb fetch img.yaml --offline --locked --no-progress
	assert_status 3
	assert_output_has "ignoring a cache ref"
	# online, the bundle is fetched and checked again
	wb fetch img.yaml --locked --no-progress
	assert_status 0
}

@test "sigstore recipe: the SBOM records the evidence; mirror exports the bundle beside the artifact" {
	art a.txt "$(H)/s/a.txt" "$(sig)" | recipe
	wb stage img.yaml --no-progress
	assert_status 0
	python3 - out/t/sbom.cdx.json "$ID" "$ISS" <<-'PY'
		import json, sys
		c = [c for c in json.load(open(sys.argv[1]))["components"] if c["name"] == "a.txt"][0]
		p = {x["name"]: x["value"] for x in c["properties"]}
		assert p["winbuild:verified_by"] == "sigstore", p
		assert p["winbuild:sigstore_identity"] == sys.argv[2], p
		assert p["winbuild:sigstore_issuer"] == sys.argv[3], p
		assert int(p["winbuild:sigstore_log_index"]) > 0, p
		assert int(p["winbuild:sigstore_integrated_time"]) > 0, p
	PY
	wb mirror img.yaml M --no-progress
	assert_status 0
	assert_output_has "1 artifacts, 1 signatures"
	d="M/127.0.0.1_$NGINX_PORT/s"
	cmp "$d/a.txt" "$WWW/s/a.txt"
	cmp "$d/a.txt.sigstore.json" "$WWW/s/a.txt.sigstore.json"
	grep -q '"s/a.txt.sigstore.json"\|a.txt.sigstore.json' M/index.json
}

@test "sigstore recipe: it satisfies policy.require: signature" {
	art a.txt "$(H)/s/a.txt" "$(sig)" | recipe
	printf 'policy: {require: signature}\n' >>img.yaml
	wb fetch img.yaml --no-progress
	assert_status 0
}

@test "sigstore recipe: settings are checked at plan time with file:line:col" {
	art a.txt "$(H)/s/a.txt" "sigstore: {identity: \"$ID\", issuer: \"$ISS\"}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/demo.yaml:8:17: components.demo.artifacts.a.txt.verify.sigstore:"
	assert_output_has "'trusted_root' is required"
	art a.txt "$(H)/s/a.txt" "sigstore: {trusted_root: \"$ROOT\", identity: \"$ID\"}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "needs 'identity' and 'issuer'"
	art a.txt "$(H)/s/a.txt" "sigstore: {trusted_root: \"$ROOT\", identity: \"$ID\", issuer: \"$ISS\", key: \"$V/conformance/managed-key-happy-path/key.pub\"}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "either 'key' or 'identity'"
	art a.txt "$(H)/s/a.txt" "sigstore: {trusted_root: nowhere.json, identity: \"$ID\", issuer: \"$ISS\"}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "nowhere.json' does not exist"
}
