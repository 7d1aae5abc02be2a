#!/usr/bin/env bats
# Issue 17 items 1+2 as a recipe method: `verify.cosign` (Kubernetes layout:
# FILE.sig, base64 DER ECDSA, and FILE.cert, base64 of PEM, beside FILE on
# loopback nginx) with the Rekor v1 entry looked up at fetch time in a fake
# Rekor (tests/sigstore/fakerekor.py) serving (1) entries of a private
# Sigstore world minted by tests/sigstore/forge.py and (2) a real production
# entry converted from a conformance bundle (tests/sigstore/rekor_api.py),
# checked against the real Rekor key of the production trusted root.
load helpers
load ../lib/servers
load fetch_fixtures

FORGE="$BATS_TEST_DIRNAME/../sigstore"
V="$BATS_TEST_DIRNAME/../vectors/sigstore"
BEACON="https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
GHA="https://token.actions.githubusercontent.com"

setup_file() {
	python3 -c 'import cryptography' 2>/dev/null || return 0
	make_fixtures "$BATS_FILE_TMPDIR"
	local w="$BATS_FILE_TMPDIR/w" k="$WWW/k" r="$BATS_FILE_TMPDIR/real/happy-path-v0.3"
	python3 "$FORGE/forge.py" "$w" >/dev/null
	python3 "$FORGE/rekor_api.py" "$V/conformance/happy-path-v0.3/bundle.sigstore.json" "$r"
	mkdir -p "$k"
	# the Kubernetes layout: kubelet.exe, kubelet.exe.sig, kubelet.exe.cert
	cp "$w/artifact" "$k/kubelet.exe"
	cp "$w/detached/artifact.sig" "$k/kubelet.exe.sig"
	cp "$w/detached/cert.b64" "$k/kubelet.exe.cert"
	# a real production signature: the conformance a.txt
	cp "$V/conformance/a.txt" "$k/a.txt"
	cp "$r/artifact.sig" "$k/a.txt.sig"
	cp "$r/cert.b64" "$k/a.txt.cert"
	start_nginx "$WWW"
	export WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() { stop_servers; }

setup() {
	common_setup
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	W="$BATS_FILE_TMPDIR/w"
	REAL="$BATS_FILE_TMPDIR/real/happy-path-v0.3"
	ID=$(cat "$W/identity")
	ISS=$(cat "$W/issuer")
	SHA=$(sha256sum "$WWW/k/kubelet.exe" | cut -d' ' -f1)
}

teardown() {
	[ -z "${REKOR_PID:-}" ] || { kill "$REKOR_PID" 2>/dev/null; wait "$REKOR_PID" 2>/dev/null; }
	true
}

# cosign [EXTRA]: kubelet.exe's requirement under the forged root, Rekor $REKOR
cosign() {
	echo "cosign: {trusted_root: \"$W/root.json\", identity: \"$ID\", issuer: \"$ISS\"${1:+, $1}}"
}

kubelet() { art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign "${1:-rekor: \"$REKOR\"}")"; }

# untouched NAME: nothing was cached as verified for NAME
untouched() {
	! grep -qs "\"artifact\": \"$1\"" "$WINBUILD_CACHE"/refs/* &&
		[ "$(tmp_files)" -eq 0 ] && [ "$(cache_files)" -eq 0 ]
}

@test "cosign recipe: kubelet.exe (.sig, .cert, entry looked up in Rekor) verifies; lock and SBOM record it" {
	start_rekor "$W/detached/entry.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	grep -q "POST /api/v1/index/retrieve" "$REKOR_LOG"
	[ "$(nginx_requests /k/kubelet.exe.sig)" -ge 1 ]
	[ "$(nginx_requests /k/kubelet.exe.cert)" -ge 1 ]
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - winbuild.lock "$ID" "$ISS" "$(H)" "$REKOR" "$W/detached/entry.json" <<-'PY'
		import json, sys
		lock, ident, iss, h, rekor, entry = sys.argv[1:]
		c = json.load(open(lock))["artifacts"]["kubelet.exe"]["verified_by"]["cosign"]
		assert c["identity"] == ident and c["issuer"] == iss, c
		assert c["log_index"] == "5" and c["integrated_time"] == "1735689600", c
		assert c["signature_url"] == h + "/k/kubelet.exe.sig", c
		assert c["certificate_url"] == h + "/k/kubelet.exe.cert", c
		want = json.load(open(entry))
		assert c["tlog_entry"] == want, c["tlog_entry"]
		assert c["tlog_entry_url"] == rekor + "/api/v1/log/entries/" + next(iter(want)), c
	PY
}
