#!/usr/bin/env bats
# Issue 43 item 3 (first part): cosign v3 signs a blob into one protobuf
# bundle (FILE.sigstore.json, application/vnd.dev.sigstore.bundle.v0.3+json)
# and no longer writes a detached .sig/.cert. `verify.cosign.bundle: URL`
# takes it wherever .sig/.cert are taken today, and is preferred when both
# are published: the bundle carries its own tlog entry, so no Rekor lookup
# is made. Real signatures of the private Sigstore world of
# tests/sigstore/forge.py (its good.json is a v0.3 bundle of the same
# artifact its detached/ .sig, .cert and Rekor entry sign); @sigstore/verify
# (tests/sigstore/oracle.cjs) must agree on every bundle used here.
load helpers
load ../lib/servers
load fetch_fixtures
load ../lib/forgeworld

FORGE="$BATS_TEST_DIRNAME/../sigstore"
VEC="$BATS_TEST_DIRNAME/../vectors/sigstore"
PY="$VEC/sigstore-python"

setup_file() {
	python3 -c 'import cryptography' 2>/dev/null || return 0
	make_fixtures "$BATS_FILE_TMPDIR"
	local w="$BATS_FILE_TMPDIR/w" k="$WWW/k"
	forge_world
	mkdir -p "$k"
	# b.exe: signed the cosign v3 way, a bundle and nothing else
	cp "$w/artifact" "$k/b.exe"
	cp "$w/good.json" "$k/b.exe.sigstore.json"
	# kubelet.exe: both (a project moving from cosign v2 to v3)
	cp "$w/artifact" "$k/kubelet.exe"
	cp "$w/detached/artifact.sig" "$k/kubelet.exe.sig"
	cp "$w/detached/cert.b64" "$k/kubelet.exe.cert"
	cp "$w/good.json" "$k/kubelet.exe.sigstore.json"
	# o.exe: other bytes beside the genuine bundle of b.exe
	cp "$w/other" "$k/o.exe"
	cp "$w/good.json" "$k/o.exe.sigstore.json"
	# t.exe: the artifact with a bundle whose SET has one bit flipped
	cp "$w/artifact" "$k/t.exe"
	cp "$w/tampered-set.json" "$k/t.exe.sigstore.json"
	# a real v0.3 bundle with a Rekor v2 entry and an RFC 3161 timestamp
	# (sigstore-python's staging vector, tests/vectors/sigstore/sources.json)
	cp "$PY/staging-rekor-v2.txt" "$k/py.txt"
	cp "$PY/staging-rekor-v2.txt.sigstore.json" "$k/py.txt.sigstore.json"
	start_nginx "$WWW"
	export WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() { stop_servers; }

setup() { forge_setup; }

teardown() {
	[ -z "${REKOR_PID:-}" ] || { kill "$REKOR_PID" 2>/dev/null; wait "$REKOR_PID" 2>/dev/null; }
	true
}

# cosign [EXTRA]: the keyless requirement under the forged root
cosign() {
	echo "cosign: {trusted_root: \"$W/root.json\", identity: \"$ID\", issuer: \"$ISS\"${1:+, $1}}"
}
BUNDLE='bundle: "${url}.sigstore.json"'

# oracle VERDICT ARTIFACT BUNDLE [IDENTITY [ISSUER [ROOT]]]: @sigstore/verify's verdict
oracle() {
	need_dep node -e 1 -- "node not installed (make deps)"
	local rc=0
	node "$FORGE/oracle.cjs" "$2" "$3" "${6:-$W/root.json}" --identity "${4:-$ID}" \
		--issuer "${5:-$ISS}" >"$BATS_TEST_TMPDIR/oracle.out" 2>&1 || rc=$?
	case $1 in
	pass) [ "$rc" = 0 ] || { cat "$BATS_TEST_TMPDIR/oracle.out"; false; } ;;
	fail) [ "$rc" = 1 ] || { cat "$BATS_TEST_TMPDIR/oracle.out"; false; } ;;
	esac
}

# untouched NAME: nothing was cached as verified for NAME
untouched() {
	! grep -qs "\"artifact\": \"$1\"" "$WINBUILD_CACHE"/refs/* &&
		[ "$(tmp_files)" -eq 0 ] && [ "$(cache_files)" -eq 0 ]
}

@test "cosign bundle: a v3 bundle alone verifies through fetch; no .sig/.cert asked; lock, plan and SBOM record it; the oracle agrees" {
	oracle pass "$WWW/k/b.exe" "$WWW/k/b.exe.sigstore.json"
	art b.exe "$(H)/k/b.exe" "$(cosign "$BUNDLE")" | recipe
	wb plan img.yaml --explain
	assert_status 0
	assert_output_has "cosign bundle $(H)/k/b.exe.sigstore.json"
	assert_output_has "preferred"
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	assert_output_has "bundle"
	[ "$(nginx_requests /k/b.exe.sigstore.json)" -ge 1 ]
	[ "$(nginx_requests /k/b.exe.sig)" = 0 ]
	[ "$(nginx_requests /k/b.exe.cert)" = 0 ]
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - t.lock "$ID" "$ISS" "$(H)" <<-'PY'
		import json, sys
		lock, ident, iss, h = sys.argv[1:]
		c = json.load(open(lock))["artifacts"]["b.exe"]["verified_by"]["cosign"]
		assert c["identity"] == ident and c["issuer"] == iss, c
		assert c["bundle_url"] == h + "/k/b.exe.sigstore.json", c
		assert c["bundle_version"] == "0.3", c
		assert c["log_index"] == "5", c
		assert "signature_url" not in c and "tlog_entry" not in c, c
	PY
	wb stage img.yaml --no-progress
	assert_status 0
	python3 - out/t/sbom.cdx.json <<-'PY'
		import json, sys
		c = [c for c in json.load(open(sys.argv[1]))["components"] if c["name"] == "b.exe"][0]
		p = {x["name"]: x["value"] for x in c["properties"]}
		assert p["winbuild:verified_by"] == "cosign", p
		assert p["winbuild:cosign_bundle_version"] == "0.3", p
		assert p["winbuild:cosign_log_index"] == "5", p
	PY
}

@test "cosign bundle: a genuine bundle beside other bytes, a tampered bundle (its SET): exit 1 naming artifact, URL and bundle; nothing cached; the oracle agrees" {
	# o.exe: other bytes beside b.exe's bundle; t.exe: one bit of the SET
	for f in o.exe t.exe; do
		oracle fail "$WWW/k/$f" "$WWW/k/$f.sigstore.json"
		rm -rf "$WINBUILD_CACHE"
		art "$f" "$(H)/k/$f" "$(cosign "$BUNDLE")" | recipe
		wb fetch img.yaml --no-progress
		assert_status 1
		assert_output_has "artifact '$f' from '$(H)/k/$f': cosign bundle '$(H)/k/$f.sigstore.json'"
		untouched "$f"
		# the expected and the actual digest, for the other bytes
		[ "$f" = t.exe ] || assert_output_has "digest $(sha256sum "$WWW/k/b.exe" | cut -d' ' -f1) is not the artifact's $(sha256sum "$WWW/k/o.exe" | cut -d' ' -f1)"
	done
	assert_output_has "(SET) does not verify"
}

@test "cosign bundle: another identity is exit 1 naming the expected and the actual signer; the oracle agrees" {
	local evil=https://github.com/winbuild/forge/.github/workflows/evil.yml@refs/heads/main
	oracle fail "$WWW/k/b.exe" "$WWW/k/b.exe.sigstore.json" "$evil"
	art b.exe "$(H)/k/b.exe" "cosign: {trusted_root: \"$W/root.json\", identity: \"$evil\", issuer: \"$ISS\", $BUNDLE}" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'b.exe' from '$(H)/k/b.exe': cosign bundle '$(H)/k/b.exe.sigstore.json'"
	assert_output_has "$evil"
	assert_output_has "$ID"
	untouched b.exe
}

@test "cosign bundle: preferred when .sig/.cert are published too: the Rekor lookup is not made, .sig/.cert not fetched, plan says so" {
	start_rekor "$W/detached/entry.json"
	# the control: without the bundle, the lookup is made
	art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign "rekor: \"$REKOR\"")" | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	[ "$(grep -c "POST /api/v1/index/retrieve" "$REKOR_LOG")" -ge 1 ]
	r=$(grep -c "" "$REKOR_LOG")
	s=$(nginx_requests /k/kubelet.exe.sig)
	c=$(nginx_requests /k/kubelet.exe.cert)
	rm -rf "$WINBUILD_CACHE"
	art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign "rekor: \"$REKOR\", $BUNDLE")" | recipe
	wb plan img.yaml
	assert_status 0
	assert_output_has "cosign bundle $(H)/k/kubelet.exe.sigstore.json"
	assert_output_has "the bundle is preferred"
	"$WINBUILD" plan img.yaml --json >plan.json
	python3 - plan.json "$(H)" <<-'PY'
		import json, sys
		c = json.load(open(sys.argv[1]))["artifacts"][0]["verify"]["cosign"]
		assert c["bundle"] == [sys.argv[2] + "/k/kubelet.exe.sigstore.json"], c
		assert c["rekor"] == [] and c["urls"] == [] and c["certificate"] == [], c
	PY
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	[ "$(grep -c "" "$REKOR_LOG")" = "$r" ]
	[ "$(nginx_requests /k/kubelet.exe.sig)" = "$s" ]
	[ "$(nginx_requests /k/kubelet.exe.cert)" = "$c" ]
	[ "$(nginx_requests /k/kubelet.exe.sigstore.json)" -ge 1 ]
}

@test "cosign bundle: an offline rebuild from the cache checks the kept bundle again; a kept bundle edited is refused" {
	art b.exe "$(H)/k/b.exe" "$(cosign "$BUNDLE")" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	wb fetch img.yaml --locked --no-progress
	assert_status 0
	n=$(nginx_requests /k/b.exe)
	b=$(nginx_requests /k/b.exe.sigstore.json)
	wb fetch img.yaml --offline --locked --no-progress
	assert_status 0
	assert_output_has "cosign $ID"
	[ "$(nginx_requests /k/b.exe)" = "$n" ]
	[ "$(nginx_requests /k/b.exe.sigstore.json)" = "$b" ]
	# the kept bundle swapped for the tampered one: the hit no longer
	# verifies, and offline there is no other way to the bytes
	python3 - "$W/tampered-set.json" "$WINBUILD_CACHE"/refs/* <<-'PY'
		import json, sys
		bad, refs = open(sys.argv[1]).read(), sys.argv[2:]
		n = 0
		for f in refs:
		    d = json.load(open(f))
		    for x in d["evidence"]:
		        if x["method"] == "cosign":
		            x["more"][2]["text"] = bad
		            n += 1
		    json.dump(d, open(f, "w"))
		assert n, refs
	PY
	wb fetch img.yaml --offline --locked --no-progress
	assert_status 3
	assert_output_has "ignoring a cache ref: artifact 'b.exe'"
}

@test "cosign bundle: mirror exports the bundle beside the artifact; a build from the mirror alone verifies" {
	art b.exe "$(H)/k/b.exe" "$(cosign "$BUNDLE")" | recipe
	wb mirror img.yaml M --no-progress
	assert_status 0
	assert_output_has "1 artifacts, 1 signatures"
	d="M/127.0.0.1_$NGINX_PORT/k"
	cmp "$d/b.exe" "$WWW/k/b.exe"
	cmp "$d/b.exe.sigstore.json" "$WWW/k/b.exe.sigstore.json"
	[ ! -e "$d/b.exe.sig" ] && [ ! -e "$d/b.exe.rekor.json" ]
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	printf 'kind: override\nmirror_only: true\nmirrors:\n  - {from: "%s/", to: "file://%s/"}\n' \
		"$(H)" "$PWD/M/127.0.0.1_$NGINX_PORT" >airgap.yaml
	n=$(nginx_requests /k/b.exe)
	wb fetch img.yaml -O airgap.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	[ "$(nginx_requests /k/b.exe)" = "$n" ]
	# the exported bundle tampered with: exit 1
	cp "$W/tampered-set.json" "$d/b.exe.sigstore.json"
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml -O airgap.yaml --no-progress
	assert_status 1
}

@test "cosign bundle: a later layer cannot swap the bundle for weaker material" {
	art b.exe "$(H)/k/b.exe" "$(cosign "$BUNDLE")" | recipe
	# unset: refused
	printf 'kind: override\ncomponents:\n  demo:\n    artifacts:\n      b.exe:\n        verify:\n          cosign: {bundle: ~}\n' >o1.yaml
	wb plan img.yaml -O o1.yaml
	assert_status 2
	assert_output_has "bundle"
	# no transparency log instead: a contradiction, refused
	printf 'kind: override\ncomponents:\n  demo:\n    artifacts:\n      b.exe:\n        verify:\n          cosign: {tlog: none}\n' >o2.yaml
	wb plan img.yaml -O o2.yaml
	assert_status 2
	assert_output_has "'tlog: none' and 'bundle' contradict each other"
	# .sig/.cert and a static entry named beside it: the bundle is still
	# the one checked (it carries its own entry), the others not fetched
	printf 'kind: override\ncomponents:\n  demo:\n    artifacts:\n      b.exe:\n        verify:\n          cosign: {signature: "${url}.sig", certificate: "${url}.cert", tlog_entry: "${url}.rekor.json"}\n' >o4.yaml
	wb fetch img.yaml -O o4.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	[ "$(nginx_requests /k/b.exe.sig)" = 0 ]
	[ "$(nginx_requests /k/b.exe.rekor.json)" = 0 ]
	wb plan img.yaml -O o4.yaml
	assert_output_has "the bundle is preferred"
}

@test "cosign bundle: a real bundle with a Rekor v2 entry (sigstore-python's staging vector) verifies by its timestamp; under another root it does not; the oracle agrees" {
	local root="$PY/staging-trusted-root.json" id=jku@goto.fi iss=https://github.com/login/oauth
	# the vector is the byte-exact copy its record says
	python3 - "$VEC/sources.json" "$VEC" <<-'PY'
		import hashlib, json, os, sys
		n = 0
		for x in json.load(open(sys.argv[1])):
		    if x["file"].startswith("sigstore-python/"):
		        b = open(os.path.join(sys.argv[2], x["file"]), "rb").read()
		        assert hashlib.sha256(b).hexdigest() == x["sha256"] and len(b) == x["bytes"], x
		        n += 1
		assert n == 3, n
	PY
	oracle pass "$WWW/k/py.txt" "$WWW/k/py.txt.sigstore.json" "$id" "$iss" "$root"
	art py.txt "$(H)/k/py.txt" "cosign: {trusted_root: \"$root\", identity: \"$id\", issuer: \"$iss\", $BUNDLE}" | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	# 2025-06-09T11:57:38Z: the timestamp's time (a v2 entry has no integrated time)
	assert_output_has "cosign $id ($iss), log index 645, signed time 1749470258 (timestamp), from its bundle v0.3"
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - t.lock <<-'PY'
		import json, sys
		c = json.load(open(sys.argv[1]))["artifacts"]["py.txt"]["verified_by"]["cosign"]
		assert c["log_index"] == "645" and c["signed_time"] == "1749470258", c
		assert "integrated_time" not in c, c
	PY
	# the production root (its Rekor v2 log and TSA are not staging's)
	local prod="$VEC/trusted_root/production-sigstore-python.json"
	oracle fail "$WWW/k/py.txt" "$WWW/k/py.txt.sigstore.json" "$id" "$iss" "$prod"
	rm -rf "$WINBUILD_CACHE"
	art py.txt "$(H)/k/py.txt" "cosign: {trusted_root: \"$prod\", identity: \"$id\", issuer: \"$iss\", $BUNDLE}" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'py.txt' from '$(H)/k/py.txt': cosign bundle '$(H)/k/py.txt.sigstore.json'"
	untouched py.txt
}
