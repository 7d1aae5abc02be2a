#!/usr/bin/env bats
# Issue 41 item 6: Sigstore along sigstore-go's 2026 fixes (docs/sigstore.md
# "Rules from sigstore-go's 2026 fixes"). The attacker is the one of
# docs/hardening.md who controls what is downloaded beside an artifact (a
# mirror, a compromised release page): the bundle, the detached signature,
# its Rekor entry, but none of the keys the pinned trusted root holds. For
# the threshold class it is a compromised transparency log, which can sign
# any entry of its own. Fixtures: tests/sigstore/forge.py's private world,
# and the upstream conformance vectors edited. Where the independent oracle
# (@sigstore/verify 4, tests/sigstore/oracle.cjs) runs on the same input,
# each test says whether it agrees.
load helpers
load ../lib/forgeworld
load ../lib/servers
load fetch_fixtures

FORGE="$WB_SRC/tests/sigstore"
CONF="$WB_SRC/tests/vectors/sigstore/conformance"
PROD_PY="$WB_SRC/tests/vectors/sigstore/trusted_root/production-sigstore-python.json"

# the recipe tests' files on loopback nginx, Kubernetes layout (FILE.sig,
# FILE.cert, FILE.rekor.json beside FILE) and a bundle beside FILE
setup_file() {
	forge_world
	python3 -c 'import cryptography' 2>/dev/null || return 0
	make_fixtures "$BATS_FILE_TMPDIR"
	local w="$BATS_FILE_TMPDIR/w" k="$WWW/k" n
	mkdir -p "$k"
	for n in p384-sha256 p384-sha384-logged-sha256; do
		cp "$w/artifact" "$k/$n.bin"
		cp "$w/detached/$n.sig" "$k/$n.bin.sig"
		cp "$w/detached/p384.cert" "$k/$n.bin.cert"
		cp "$w/detached/$n.entry.json" "$k/$n.bin.rekor.json"
	done
	for n in good relabel-v01 two-logs one-log-twice; do
		cp "$w/artifact" "$k/$n.bin"
		cp "$w/$n.json" "$k/$n.bin.sigstore.json"
	done
	start_nginx "$WWW"
	export WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() { stop_servers; }

setup() { forge_setup; }

# oracle EXPECT ARTIFACT BUNDLE ROOT ARGS...: @sigstore/verify's verdict
oracle() {
	need_dep test -d "$FORGE/node_modules/@sigstore/verify" -- "npm @sigstore/verify (tests/sigstore)"
	local want=$1 rc=0
	shift
	node "$FORGE/oracle.cjs" "$@" >"$BATS_TEST_TMPDIR/oracle.out" 2>&1 || rc=$?
	case "$want:$rc" in
	pass:0 | fail:1) ;;
	*) echo "oracle: expected $want, exit $rc:" >&2; cat "$BATS_TEST_TMPDIR/oracle.out" >&2; return 1 ;;
	esac
}

# detached NAME: the P-384 detached signature NAME with its Rekor entry
detached() {
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/$1.sig" --certificate "$W/detached/p384.cert" \
		--tlog-entry "$W/detached/$1.entry.json" --identity "$ID" --issuer "$ISS"
}

# bundle NAME [ROOT] [ARGS...]: the keyless bundle NAME.json
bundle() {
	local name=$1 root=${2:-root.json}
	shift $(($# < 2 ? $# : 2))
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/$root" \
		--bundle "$W/$name.json" --identity "$ID" --issuer "$ISS" "$@"
}

# ---- 1. the hash of a detached signature is the one its entry logs ----

@test "sigstore fixes: a detached P-384 signature over SHA-256 whose entry says sha256 verifies (sigstore-python 1.x)" {
	detached p384-sha256
	assert_status 0
	assert_output_has "log index:       3 (hashedrekord 0.0.1)"
}

@test "sigstore fixes: a detached P-384 signature over SHA-384 whose entry says sha384 verifies" {
	detached p384-sha384
	assert_status 0
}

@test "sigstore fixes: a SHA-384 signature whose entry logs sha256 is refused: the key's size does not choose the hash" {
	detached p384-sha384-logged-sha256
	assert_status 1
	assert_output_has "signature does not verify over the artifact"
}

@test "sigstore fixes: a SHA-256 signature whose entry logs sha384 is refused" {
	detached p384-sha256-logged-sha384
	assert_status 1
	assert_output_has "signature does not verify over the artifact"
}

# ---- 2. a trusted-root key is used only inside its validity window ----

# mk_window END: managed-key-happy-path (a Rekor v1 entry, SET + proof,
# and an RFC 3161 timestamp of 2025-12-18T17:04:39Z) without its SET, so
# that the entry's time is the timestamp's; and sigstore-python's
# production root with the Rekor v1 log's window ending at END
mk_window() {
	jq 'del(.verificationMaterial.tlogEntries[0].inclusionPromise)' \
		"$CONF/managed-key-happy-path/bundle.sigstore.json" >"$WORK/noset.json"
	jq --arg t "$1" '(.tlogs[] | select(.baseUrl == "https://rekor.sigstore.dev")
		| .publicKey.validFor.end) = $t' "$PROD_PY" >"$WORK/root.json"
}

# mk_verify BUNDLE: verify a.txt's BUNDLE under that root and the case's key
mk_verify() {
	run "$WINBUILD" sig sigstore "$CONF/a.txt" --trusted-root "$WORK/root.json" \
		--bundle "$1" --key "$CONF/managed-key-happy-path/key.pub"
}

@test "sigstore fixes: a Rekor v1 entry with only a proof is refused when its log's window ended before the timestamp" {
	mk_window 2025-12-01T00:00:00Z
	mk_verify "$WORK/noset.json"
	assert_status 1
	assert_output_has "the transparency log's key was not valid at the timestamp's time"
	# @sigstore/verify 4 does not check the log key's window here: it passes
	oracle pass "$CONF/a.txt" "$WORK/noset.json" "$WORK/root.json" \
		--key "$CONF/managed-key-happy-path/key.pub"
}

@test "sigstore fixes: inside the window (ending exactly at the timestamp, inclusive) it verifies" {
	mk_window 2025-12-18T17:04:39Z
	mk_verify "$WORK/noset.json"
	assert_status 0
	assert_output_has "signed at:       2025-12-18T17:04:39Z"
}

@test "sigstore fixes: with its SET the same entry is refused when the window ended before the integrated time" {
	mk_window 2025-12-01T00:00:00Z
	mk_verify "$CONF/managed-key-happy-path/bundle.sigstore.json"
	assert_status 1
	assert_output_has "the log key is not valid at integrated time"
}

# ---- 3. the media type cannot lower the inclusion-proof requirement ----

@test "sigstore fixes: a v0.3 bundle without its proof relabelled v0.1 is refused (the oracle accepts it)" {
	bundle relabel-v01
	assert_status 1
	assert_output_has "a v0.1 media type on a v0.3 bundle (verificationMaterial.certificate)"
	oracle pass "$W/artifact" "$W/relabel-v01.json" "$W/root.json" --identity "$ID" --issuer "$ISS"
}

@test "sigstore fixes: the same under the new spelling (bundle.v0.1+json, which no client writes) is refused; nor for the oracle" {
	bundle relabel-v01-new
	assert_status 2
	assert_output_has "unsupported media type 'application/vnd.dev.sigstore.bundle.v0.1+json'"
	oracle fail "$W/artifact" "$W/relabel-v01-new.json" "$W/root.json" --identity "$ID" --issuer "$ISS"
}

@test "sigstore fixes: unknown versions are refused, never read as v0.1" {
	local mt
	for mt in "application/vnd.dev.sigstore.bundle+json;version=0.1.1" \
		"application/vnd.dev.sigstore.bundle+json;version=0.4" \
		"application/vnd.dev.sigstore.bundle.v0.4+json" \
		"application/vnd.dev.sigstore.bundle.v0.1.0+json" \
		"application/vnd.dev.sigstore.bundle+json;version=0.0"; do
		jq --arg mt "$mt" '.mediaType = $mt' "$W/relabel-v01.json" >"$WORK/b.json"
		run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
			--bundle "$WORK/b.json" --identity "$ID" --issuer "$ISS"
		assert_status 2
		assert_output_has "unsupported media type"
	done
}

@test "sigstore fixes: v0.3 without the proof is refused; nor for the oracle" {
	bundle no-proof-v03
	assert_status 1
	assert_output_has "has no inclusion proof"
	oracle fail "$W/artifact" "$W/no-proof-v03.json" "$W/root.json" --identity "$ID" --issuer "$ISS"
}

@test "sigstore fixes: a v0.3 label on a certificate chain is refused (sigstore-go's rule); nor for the oracle" {
	bundle chain-v03
	assert_status 1
	assert_output_has "a v0.3 bundle cannot hold an x509CertificateChain"
	oracle fail "$W/artifact" "$W/chain-v03.json" "$W/root.json" --identity "$ID" --issuer "$ISS"
	# the genuine v0.2 one still verifies
	bundle chain-v02
	assert_status 0
}

# ---- 4. a threshold of logs counts distinct logs ----

@test "sigstore fixes: --tlog-threshold 2 is met by entries in two logs; the oracle agrees" {
	bundle two-logs root-two-logs.json --tlog-threshold 2
	assert_status 0
	oracle pass "$W/artifact" "$W/two-logs.json" "$W/root-two-logs.json" \
		--identity "$ID" --issuer "$ISS" --tlog-threshold 2
}

@test "sigstore fixes: two entries of one log do not meet --tlog-threshold 2 (the oracle counts entries and passes)" {
	bundle one-log-twice root-two-logs.json --tlog-threshold 2
	assert_status 1
	assert_output_has "1 distinct transparency log, 2 required (entries in one log count once)"
	oracle pass "$W/artifact" "$W/one-log-twice.json" "$W/root-two-logs.json" \
		--identity "$ID" --issuer "$ISS" --tlog-threshold 2
	# without a threshold both entries verify and one suffices
	bundle one-log-twice root-two-logs.json
	assert_status 0
}

@test "sigstore fixes: the same entry twice is refused, threshold or not" {
	bundle same-entry-twice root-two-logs.json
	assert_status 1
	assert_output_has "transparency-log entries 0 and 1 are the same entry (log index 5)"
}

@test "sigstore fixes: --tlog-threshold takes a number of logs" {
	local n
	for n in 0 -1 x 100 ""; do
		bundle two-logs root-two-logs.json --tlog-threshold "$n"
		assert_status 2
		assert_output_has "--tlog-threshold takes a number of logs"
	done
	# a threshold above what a detached signature (one entry) can give
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/p384-sha256.sig" --certificate "$W/detached/p384.cert" \
		--tlog-entry "$W/detached/p384-sha256.entry.json" --identity "$ID" --issuer "$ISS" \
		--tlog-threshold 2
	assert_status 1
	assert_output_has "1 distinct transparency log, 2 required"
}

# ---- the same rules at fetch, through a recipe ----

# untouched NAME: nothing was cached as verified for NAME
untouched() {
	! grep -qs "\"artifact\": \"$1\"" "$WINBUILD_CACHE"/refs/* &&
		[ "$(cache_files)" -eq 0 ]
}

# cosign_art NAME: NAME.bin under verify.cosign with its exported entry
cosign_art() {
	art "$1.bin" "$(H)/k/$1.bin" "cosign: {trusted_root: \"$W/root.json\", identity: \"$ID\", issuer: \"$ISS\", tlog_entry: \"\${url}.rekor.json\"}"
}

# sigstore_art NAME: NAME.bin under verify.sigstore (bundle beside it)
sigstore_art() {
	art "$1.bin" "$(H)/k/$1.bin" "sigstore: {trusted_root: \"$W/root.json\", identity: \"$ID\", issuer: \"$ISS\"}"
}

@test "sigstore fixes: fetch: verify.cosign takes a P-384 signature's hash from its entry; a SHA-384 one logged as sha256 is exit 1, nothing cached" {
	cosign_art p384-sha256 | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 3"
	rm -rf "$WINBUILD_CACHE"
	cosign_art p384-sha384-logged-sha256 | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "signature does not verify over the artifact"
	untouched p384-sha384-logged-sha256.bin
}

@test "sigstore fixes: fetch: verify.sigstore refuses a bundle relabelled v0.1 without its proof: exit 1, nothing cached" {
	sigstore_art good | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	rm -rf "$WINBUILD_CACHE"
	sigstore_art relabel-v01 | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "a v0.1 media type on a v0.3 bundle"
	untouched relabel-v01.bin
}

# ---- policy.tlog_threshold: the threshold as site policy ----

# root2_art NAME: NAME.bin under verify.sigstore, the two-log world's root
root2_art() {
	art "$1.bin" "$(H)/k/$1.bin" "sigstore: {trusted_root: \"$W/root-two-logs.json\", identity: \"$ID\", issuer: \"$ISS\"}"
}

@test "sigstore fixes: policy.tlog_threshold 2 in the recipe: entries in two logs fetch; two entries of one log are exit 1, nothing cached" {
	root2_art two-logs | recipe
	printf 'policy: {tlog_threshold: 2}\n' >>img.yaml
	wb plan img.yaml --explain
	assert_status 0
	assert_output_has "transparency logs: 2 distinct    <- img.yaml:"
	wb fetch img.yaml --no-progress
	assert_status 0
	rm -rf "$WINBUILD_CACHE"
	root2_art one-log-twice | recipe
	printf 'policy: {tlog_threshold: 2}\n' >>img.yaml
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "1 distinct transparency log, 2 required"
	untouched one-log-twice.bin
	# a later layer's 1 loosens nothing: each layer's policy holds
	wb fetch img.yaml --no-progress --set policy.tlog_threshold=1
	assert_status 1
	assert_output_has "1 distinct transparency log, 2 required"
	untouched one-log-twice.bin
	# out of range, at its file:line:col
	sed -i 's/tlog_threshold: 2/tlog_threshold: 0/' img.yaml
	wb plan img.yaml
	assert_status 2
	assert_output_has "policy.tlog_threshold: a number of transparency logs, 1 to 99, not '0'"
}

@test "sigstore fixes: policy.tlog_threshold binds the cache: what verified under one log is checked again under 2, and refused" {
	root2_art one-log-twice | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	wb fetch img.yaml --no-progress --offline
	assert_status 0
	# the same bytes and bundle in the cache: a cache hit is verified again
	# under this run's policy, which they do not meet, so offline there is
	# nothing verified to use
	wb fetch img.yaml --no-progress --offline --set policy.tlog_threshold=2
	assert_status 3
	assert_output_has "offline, and 1 artifact is not in the cache"
	# and says the copy is there but refused, not absent
	assert_output_has "one-log-twice.bin ($(H)/k/one-log-twice.bin): its cached copy does not meet this run's checks"
	assert_output_has "ignoring a cache ref: artifact 'one-log-twice.bin'"
	wb fetch img.yaml --no-progress --set policy.tlog_threshold=2
	assert_status 1
	assert_output_has "1 distinct transparency log, 2 required"
}
