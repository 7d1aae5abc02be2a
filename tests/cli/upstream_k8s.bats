#!/usr/bin/env bats
# Kubernetes-style detached cosign signatures (a binary with its .sig, base64
# DER ECDSA, and .cert, base64 of PEM, beside it) whose Rekor v1 entry is
# looked up online: `winbuild sig sigstore FILE --signature --certificate
# --rekor URL`. A fake Rekor on loopback (tests/sigstore/fakerekor.py) serves
# (1) real production entries, converted from the conformance bundles'
# tlog entries to the Rekor API's JSON (tests/sigstore/rekor_api.py; their
# SETs, proofs and checkpoints check against the real Rekor key of the
# production trusted root), and (2) entries of a private Sigstore world
# minted by tests/sigstore/forge.py (our CA, CT log and Rekor key).
load helpers
load ../lib/servers
load ../lib/forgeworld

FORGE="$WB_SRC/tests/sigstore"
V="$WB_SRC/tests/vectors/sigstore"
BEACON="https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
GHA="https://token.actions.githubusercontent.com"

setup_file() {
	forge_world
	python3 -c 'import cryptography' 2>/dev/null || return 0
	for c in happy-path-v0.1 happy-path-v0.3; do
		python3 "$FORGE/rekor_api.py" "$V/conformance/$c/bundle.sigstore.json" \
			"$BATS_FILE_TMPDIR/real/$c"
	done
}

setup() {
	forge_setup
	# the Kubernetes layout: kubelet.exe, kubelet.exe.sig, kubelet.exe.cert
	K="$BATS_TEST_TMPDIR/k8s"
	mkdir -p "$K"
	cp "$W/artifact" "$K/kubelet.exe"
	cp "$W/detached/artifact.sig" "$K/kubelet.exe.sig"
	cp "$W/detached/cert.b64" "$K/kubelet.exe.cert"
}

teardown() {
	stop_servers
}

# kubelet [ARGS...]: verify the Kubernetes layout online against $REKOR
kubelet() {
	run "$WINBUILD" sig sigstore "$K/kubelet.exe" --trusted-root "$W/root.json" \
		--signature "$K/kubelet.exe.sig" --certificate "$K/kubelet.exe.cert" \
		--rekor "$REKOR" --identity "$ID" --issuer "$ISS" "$@"
}

@test "upstream k8s: real production entries from a fake Rekor verify with the real Rekor key" {
	start_rekor "$BATS_FILE_TMPDIR"/real/*/entry.json
	for c in happy-path-v0.1 happy-path-v0.3; do
		run "$WINBUILD" sig sigstore "$V/conformance/a.txt" \
			--trusted-root "$V/trusted_root/public-good.json" \
			--signature "$BATS_FILE_TMPDIR/real/$c/artifact.sig" \
			--certificate "$BATS_FILE_TMPDIR/real/$c/cert.b64" \
			--rekor "$REKOR" --identity "$BEACON" --issuer "$GHA"
		assert_status 0
		assert_output_has "log index:       "
	done
	# the lookup went through the index, then the entry
	grep -q 'POST /api/v1/index/retrieve' "$REKOR_LOG"
	grep -q 'GET /api/v1/log/entries/' "$REKOR_LOG"
	# the same real entry under our private root: its log key is not pinned
	run "$WINBUILD" sig sigstore "$V/conformance/a.txt" --trusted-root "$W/root.json" \
		--signature "$BATS_FILE_TMPDIR/real/happy-path-v0.3/artifact.sig" \
		--certificate "$BATS_FILE_TMPDIR/real/happy-path-v0.3/cert.b64" \
		--rekor "$REKOR" --identity "$BEACON" --issuer "$GHA"
	assert_status 1
}

@test "upstream k8s: kubelet.exe with .sig and .cert beside it verifies; the entry is saved and replays offline" {
	start_rekor "$W/detached/entry.json"
	kubelet --save-tlog-entry "$BATS_TEST_TMPDIR/entry.json"
	assert_status 0
	assert_output_has "log index:       5 (hashedrekord 0.0.1)"
	assert_output_has "integrated time: 2025-01-01T00:00:00Z"
	# the saved entry is the Rekor API's JSON, and verifies with the server gone
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); assert len(e)==1 and "verification" in next(iter(e.values()))' \
		"$BATS_TEST_TMPDIR/entry.json"
	stop_servers
	run "$WINBUILD" sig sigstore "$K/kubelet.exe" --trusted-root "$W/root.json" \
		--signature "$K/kubelet.exe.sig" --certificate "$K/kubelet.exe.cert" \
		--tlog-entry "$BATS_TEST_TMPDIR/entry.json" --identity "$ID" --issuer "$ISS"
	assert_status 0
	# a plain-PEM .cert is the same
	cp "$W/detached/cert.pem" "$K/kubelet.exe.cert"
	run "$WINBUILD" sig sigstore "$K/kubelet.exe" --trusted-root "$W/root.json" \
		--signature "$K/kubelet.exe.sig" --certificate "$K/kubelet.exe.cert" \
		--tlog-entry "$BATS_TEST_TMPDIR/entry.json" --identity "$ID" --issuer "$ISS"
	assert_status 0
}

@test "upstream k8s: another artifact's entry listed for ours does not verify: exit 1" {
	start_rekor "$W/detached/entry-other.json=$(sha256sum "$K/kubelet.exe" | cut -d' ' -f1)"
	kubelet
	assert_status 1
	assert_output_has "none of the 1 entries rekor lists verifies"
	assert_output_has "is not the artifact's"
}

@test "upstream k8s: an entry integrated after the certificate expired does not verify: exit 1" {
	start_rekor "$W/detached/entry-late.json"
	kubelet
	assert_status 1
	assert_output_has "none of the 1 entries rekor lists verifies"
	assert_output_has "at 2025-01-01T01:00:00Z: certificate has expired"
}

@test "upstream k8s: an entry signed by a log key that is not pinned does not verify: exit 1" {
	# another key under the pinned log's ID: the SET does not verify
	start_rekor "$W/detached/entry-wrong-key.json"
	kubelet
	assert_status 1
	assert_output_has "none of the 1 entries rekor lists verifies"
	assert_output_has "inclusion promise (SET) does not verify"
	stop_servers
	# another log altogether
	start_rekor "$W/detached/entry-unknown-log.json"
	kubelet
	assert_status 1
	assert_output_has "(not in the trusted root)"
}

@test "upstream k8s: a bad entry beside the good one: the good one verifies" {
	start_rekor "$W/detached/entry-wrong-key.json" "$W/detached/entry.json"
	kubelet
	assert_status 0
}

@test "upstream k8s: no entry for the artifact: exit 1" {
	start_rekor "$W/detached/entry-other.json"
	kubelet
	assert_status 1
	assert_output_has "has no entry for sha256:$(sha256sum "$K/kubelet.exe" | cut -d' ' -f1)"
}

@test "upstream k8s: Rekor down: exit 3 naming the URL" {
	local port
	port=$(closed_port)
	REKOR="http://127.0.0.1:$port"
	kubelet
	assert_status 3
	assert_output_has "rekor 'http://127.0.0.1:$port/api/v1/index/retrieve'"
}

@test "upstream k8s: a Rekor that redirects is refused: exit 3" {
	start_rekor --redirect "http://127.0.0.1:1" "$W/detached/entry.json"
	kubelet
	assert_status 3
	assert_output_has "redirect refused"
}

@test "upstream k8s: a hostile Rekor's index answer is refused, never used as a path" {
	start_rekor --index-answer '["../../../etc/passwd"]' "$W/detached/entry.json"
	kubelet
	assert_status 1
	assert_output_has "entry 0 of the index answer is not an entry UUID"
	! grep -q 'GET ' "$REKOR_LOG" || false
	stop_servers
	start_rekor --index-answer '{"uuids": []}' "$W/detached/entry.json"
	kubelet
	assert_status 1
	assert_output_has "the index answer is not a list of entry UUIDs"
}

@test "upstream k8s: --rekor goes with --signature only" {
	REKOR=http://127.0.0.1:1
	run "$WINBUILD" sig sigstore "$K/kubelet.exe" --trusted-root "$W/root.json" \
		--signature "$K/kubelet.exe.sig" --certificate "$K/kubelet.exe.cert" \
		--tlog-entry "$W/detached/entry.json" --rekor "$REKOR" --identity "$ID" --issuer "$ISS"
	assert_status 2
	assert_output_has "--rekor goes with --signature, instead of --tlog-entry"
	run "$WINBUILD" sig sigstore "$K/kubelet.exe" --trusted-root "$W/root.json" \
		--signature "$K/kubelet.exe.sig" --certificate "$K/kubelet.exe.cert" \
		--save-tlog-entry "$BATS_TEST_TMPDIR/x" --identity "$ID" --issuer "$ISS"
	assert_status 2
}
