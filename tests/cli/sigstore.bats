#!/usr/bin/env bats
# winbuild sig sigstore on a private Sigstore world minted at test time by
# tests/sigstore/forge.py (our CA, CT log and Rekor log; python3-cryptography),
# and forgeries of it. Each generated case is also given to an independent
# oracle, @sigstore/verify + @sigstore/bundle (tests/sigstore/oracle.cjs,
# offline with the same trusted root), which must agree, except where the
# oracle is known not to check (said per case). The 70 upstream conformance
# cases are in sigstore_conformance.bats.
load helpers
load ../lib/forgeworld

FORGE="$WB_SRC/tests/sigstore"
PROD_ROOT="$WB_SRC/tests/vectors/sigstore/trusted_root/public-good.json"

setup_file() { forge_world; }

setup() { forge_setup; }

# forged NAME: run winbuild on case NAME of cases.tsv; sets status/output
forged() {
	local name art bun root pol exp orc args=()
	IFS=$'\t' read -r name art bun root pol exp orc < <(grep -P "^$1\t" "$W/cases.tsv")
	[ "$name" = "$1" ] || { echo "no forged case '$1'" >&2; return 1; }
	[ "$root" = PRODUCTION ] && root=$PROD_ROOT || root=$W/$root
	case $pol in
	identity) args=(--identity "$ID" --issuer "$ISS") ;;
	identity=*) args=(--identity "${pol#identity=}" --issuer "$ISS") ;;
	issuer=*) args=(--identity "$ID" --issuer "${pol#issuer=}") ;;
	key=*) args=(--key "$W/${pol#key=}") ;;
	esac
	CASE_EXPECT=$exp CASE_ORACLE=$orc
	CASE_ARGS=("$W/$art" "$W/$bun" "$root" "${args[@]}")
	run "$WINBUILD" sig sigstore "$W/$art" --trusted-root "$root" --bundle "$W/$bun" "${args[@]}"
}

# oracle_says pass|fail: the independent verifier's verdict on the last case
oracle_says() {
	need_dep test -d "$FORGE/node_modules/@sigstore/verify" -- "npm @sigstore/verify (tests/sigstore)"
	local rc=0
	node "$FORGE/oracle.cjs" "${CASE_ARGS[@]}" >"$BATS_TEST_TMPDIR/oracle.out" 2>&1 || rc=$?
	case "$1:$rc" in
	pass:0 | fail:1) ;;
	*) echo "oracle: expected $1, exit $rc:" >&2; cat "$BATS_TEST_TMPDIR/oracle.out" >&2; return 1 ;;
	esac
}

# check NAME: winbuild gives the expected outcome, and so does the oracle
check() {
	forged "$1"
	local winbuild_status=$status winbuild_output=$output
	case $CASE_EXPECT in
	pass) status=$winbuild_status output=$winbuild_output assert_status 0 ;;
	fail) status=$winbuild_status output=$winbuild_output assert_status 1 ;;
	esac
	case $CASE_ORACLE in
	pass | fail) oracle_says "$CASE_ORACLE" ;;
	pass-no-*) oracle_says pass ;;   # where the oracle does not check
	esac
	status=$winbuild_status output=$winbuild_output
}

@test "sigstore: a good keyless bundle verifies and says what verified; the oracle agrees" {
	check good
	assert_output_has "Sigstore signature verified"
	assert_output_has "identity:        $ID"
	assert_output_has "issuer:          $ISS"
	assert_output_has "log index:       5 (hashedrekord 0.0.1)"
	assert_output_has "integrated time: 2025-01-01T00:00:00Z"
}

@test "sigstore: --json prints the evidence as one JSON object" {
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--bundle "$W/good.json" --identity "$ID" --issuer "$ISS" --json
	assert_status 0
	python3 - "$output" "$ID" <<'EOF'
import json, sys
o = json.loads(sys.argv[1])
assert o["verified"] is True and o["material"] == "certificate", o
assert o["identity"] == sys.argv[2] and o["content"] == "message", o
assert o["tlog"]["log_index"] == 5 and o["tlog"]["integrated_time"] == 1735689600, o
assert o["tlog"]["kind"] == "hashedrekord 0.0.1" and len(o["tlog"]["log_id"]) == 64, o
assert o["signed_time"] == "2025-01-01T00:00:00Z" and o["timestamps"] == 0, o
EOF
}

@test "sigstore: another identity does not verify (exit 1); nor for the oracle" {
	check identity-mismatch
	assert_output_has "certificate identity '$ID' is not"
}

@test "sigstore: another OIDC issuer does not verify; nor for the oracle" {
	check issuer-mismatch
	assert_output_has "certificate issuer '$ISS' is not 'https://accounts.google.com'"
}

@test "sigstore: the bundle of one file does not verify another; nor for the oracle" {
	check another-artifact
	assert_output_has "digest"
}

@test "sigstore: the production trusted root does not trust our private world; nor the oracle" {
	check wrong-trusted-root
	assert_output_has "not in the trusted root"
}

@test "sigstore: a SET with one bit flipped does not verify; nor for the oracle" {
	check tampered-set
	assert_output_has "inclusion promise"
}

@test "sigstore: an inclusion proof missing its last hash does not verify; nor for the oracle" {
	check truncated-proof
	assert_output_has "inclusion proof"
}

@test "sigstore: a CA whose trusted-root window ended before the signing time does not verify" {
	check ca-window-expired
	assert_output_has "does not chain to the trusted root at 2025-01-01T00:00:00Z"
}

@test "sigstore: a Rekor key whose window ended before the integrated time does not verify" {
	check tlog-window-expired
	assert_output_has "the log key is not valid at integrated time 1735689600"
}

@test "sigstore: a trusted-root window is inclusive: one ending at the signing time holds" {
	check ca-window-ends-at-signing
}

@test "sigstore: a P-384 leaf whose message signature is over SHA-256 (sigstore-python 1.x) verifies; the oracle agrees" {
	check p384-sha256
	assert_output_has "Sigstore signature verified"
}

@test "sigstore: a P-384 leaf signing over the SHA-384 it declares verifies; the oracle agrees" {
	check p384-sha384
	assert_output_has "Sigstore signature verified"
}

@test "sigstore: a SHA-256 signature whose messageDigest claims SHA2_384 is refused; nor for the oracle" {
	check p384-sha256-says-sha384
	assert_output_has "signature does not verify over the artifact"
}

@test "sigstore: a SHA-384 signature whose messageDigest claims SHA2_256 is refused (the key's size does not choose); nor for the oracle" {
	check p384-sha384-says-sha256
	assert_output_has "signature does not verify over the artifact"
}

@test "sigstore: a leaf that is itself a CA certificate does not verify (the oracle does not check)" {
	check leaf-is-ca
	assert_output_has "signing certificate is a CA certificate"
}

@test "sigstore: a SAN with an embedded NUL after the pinned identity does not match it (the oracle's match stops at the NUL)" {
	check san-nul
	assert_output_has "certificate identity '(none)' is not '$ID'"
}

@test "sigstore: an SCT issued outside its CT log's window in the trusted root does not count; nor for the oracle" {
	check sct-outside-ct-window
	assert_output_has "1 outside the log's validity"
}

@test "sigstore: a DSSE subject sharing only the artifact's first 32 hex digits does not name it" {
	check dsse-subject-prefix
	assert_output_has "no subject of the in-toto statement has the artifact's sha256"
}

@test "sigstore: a DSSE envelope whose payload type is not in-toto's does not verify (the oracle does not check)" {
	check dsse-payload-type
	assert_output_has "DSSE payload type 'text/plain' is not an in-toto statement"
}

@test "sigstore: a v0.2 bundle with an x509CertificateChain verifies; the oracle agrees" {
	check chain-v02
	assert_output_has "Sigstore signature verified"
}

@test "sigstore: an intermediate carried by the bundle does not complete a trusted root that lacks it" {
	check intermediate-from-bundle
	assert_output_has "unable to get local issuer certificate"
}

@test "sigstore: an entry with a proof but no SET gives no signed time: keyless does not verify" {
	check no-set-no-time
	assert_output_has "no verified signing time"
}

@test "sigstore: a leaf without the code-signing EKU does not verify (the oracle does not check EKUs)" {
	check no-codesign-eku
	assert_output_has "code-signing"
}

@test "sigstore: a leaf whose only EKU is TLS server auth does not verify (the oracle does not check EKUs)" {
	check server-auth-eku
	assert_output_has "code-signing"
}

@test "sigstore: a leaf from a CA outside the trusted root (same names, other keys) does not verify" {
	check untrusted-ca
	assert_output_has "does not chain"
}

@test "sigstore: an SCT from a CT log outside the trusted root does not verify; nor for the oracle" {
	check unknown-ct-log
	assert_output_has "1 from unknown logs"
}

@test "sigstore: an SCT of our CT log signed over another certificate does not verify; nor for the oracle" {
	check sct-bad-signature
	assert_output_has "1 invalid"
}

@test "sigstore: a certificate with no SCT does not verify; nor for the oracle" {
	check no-sct
	assert_output_has "no embedded SCT"
}

@test "sigstore: an integrated time after the certificate expired does not verify; nor for the oracle" {
	check time-outside-cert
	assert_output_has "certificate has expired"
}

@test "sigstore: a keyless bundle with no transparency-log entry does not verify; nor for the oracle" {
	check no-tlog-entry
	assert_output_has "the bundle has no transparency-log entry"
}

@test "sigstore: a DSSE in-toto statement about the artifact verifies; the oracle agrees" {
	check dsse-good
	assert_output_has "Sigstore signature verified"
}

@test "sigstore: a DSSE statement about another file does not verify (the oracle does not match subjects)" {
	check dsse-subject-mismatch
	assert_output_has "no subject of the in-toto statement has the artifact's sha256"
}

@test "sigstore: a managed-key bundle verifies with its key; the oracle agrees" {
	check managed-key
	assert_output_has "key:             sha256:"
}

@test "sigstore: a managed-key bundle does not verify with another key; nor for the oracle" {
	check managed-key-wrong-key
	assert_output_has "public key is not the bundle's public key"
}

@test "sigstore: a managed-key bundle does not verify when an identity is required; nor for the oracle" {
	check managed-key-no-key
	assert_output_has "signed with a key"
}

@test "sigstore: a keyless bundle does not verify against a pinned key" {
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--bundle "$W/good.json" --key "$W/detached/ecdsa.pub"
	assert_status 1
	assert_output_has "signed with a certificate, but a key was pinned"
}

@test "sigstore: a root certificate inside the bundle's chain is refused" {
	python3 - "$W/good.json" "$W/root.json" >"$WORK/chain.json" <<'EOF'
import json, sys
b = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
leaf = b["verificationMaterial"].pop("certificate")
b["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.2"
b["verificationMaterial"]["x509CertificateChain"] = {"certificates":
    [leaf] + r["certificateAuthorities"][0]["certChain"]["certificates"]}
print(json.dumps(b))
EOF
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--bundle "$WORK/chain.json" --identity "$ID" --issuer "$ISS"
	assert_status 1
	assert_output_has "holds a root certificate"
	# the same chain without its root verifies (v0.2, x509CertificateChain)
	python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); b["verificationMaterial"]["x509CertificateChain"]["certificates"].pop(); print(json.dumps(b))' \
		"$WORK/chain.json" >"$WORK/chain2.json"
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--bundle "$WORK/chain2.json" --identity "$ID" --issuer "$ISS"
	assert_status 0
}

# ---- detached signatures (cosign sign-blob) ----

@test "sigstore: a keyless detached signature with its Rekor entry verifies" {
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/artifact.sig" --certificate "$W/detached/cert.pem" \
		--tlog-entry "$W/detached/entry.json" --identity "$ID" --issuer "$ISS"
	assert_status 0
	assert_output_has "log index:       5 (hashedrekord 0.0.1)"
	# cosign's --output-certificate writes base64 of the PEM: the same
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/artifact.sig" --certificate "$W/detached/cert.b64" \
		--tlog-entry "$W/detached/entry.json" --identity "$ID" --issuer "$ISS"
	assert_status 0
}

@test "sigstore: a keyless detached signature without a tlog entry proves no time: exit 1" {
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/artifact.sig" --certificate "$W/detached/cert.pem" \
		--identity "$ID" --issuer "$ISS"
	assert_status 1
	assert_output_has "no verified signing time"
}

@test "sigstore: a detached signature's Rekor entry with a tampered SET does not verify" {
	python3 - "$W/detached/entry.json" >"$WORK/entry.json" <<'EOF'
import base64, json, sys
e = json.load(open(sys.argv[1]))
v = next(iter(e.values()))["verification"]
s = bytearray(base64.b64decode(v["signedEntryTimestamp"]))
s[10] ^= 1
v["signedEntryTimestamp"] = base64.b64encode(bytes(s)).decode()
print(json.dumps(e))
EOF
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/artifact.sig" --certificate "$W/detached/cert.pem" \
		--tlog-entry "$WORK/entry.json" --identity "$ID" --issuer "$ISS"
	assert_status 1
	assert_output_has "inclusion promise (SET) does not verify"
}

@test "sigstore: cosign sign-blob --key signatures (ECDSA P-256, Ed25519) verify with their key; openssl agrees" {
	for k in ecdsa ed25519; do
		run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
			--signature "$W/detached/$k.sig" --key "$W/detached/$k.pub"
		assert_status 0
		assert_output_has "key:             sha256:"
	done
	# the oracle for detached signatures: the openssl CLI
	base64 -d "$W/detached/ecdsa.sig" >"$WORK/ecdsa.der"
	openssl dgst -sha256 -verify "$W/detached/ecdsa.pub" -signature "$WORK/ecdsa.der" \
		"$W/artifact" >/dev/null
	base64 -d "$W/detached/ed25519.sig" >"$WORK/ed.raw"
	openssl pkeyutl -verify -pubin -inkey "$W/detached/ed25519.pub" -rawin \
		-in "$W/artifact" -sigfile "$WORK/ed.raw" >/dev/null
}

@test "sigstore: managed-key detached signatures do not verify another file or with another key" {
	for k in ecdsa ed25519; do
		run "$WINBUILD" sig sigstore "$W/other" --trusted-root "$W/root.json" \
			--signature "$W/detached/$k.sig" --key "$W/detached/$k.pub"
		assert_status 1
		assert_output_has "signature does not verify over the artifact"
	done
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/ecdsa.sig" --key "$W/detached/other.pub"
	assert_status 1
	assert_output_has "signature does not verify over the artifact"
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/ecdsa.sig" --key "$W/detached/ed25519.pub"
	assert_status 1
	assert_output_has "signature does not verify over the artifact"
}

# ---- could not check: exit 2 ----

@test "sigstore: usage errors and unreadable inputs exit 2" {
	wb sig sigstore "$W/artifact" --bundle "$W/good.json" --identity "$ID" --issuer "$ISS"
	assert_status 2
	assert_output_has "--trusted-root is required"
	wb sig sigstore "$W/artifact" --trusted-root "$W/root.json" --bundle "$W/good.json" \
		--identity "$ID"
	assert_status 2
	wb sig sigstore "$W/artifact" --trusted-root "$W/root.json" --bundle "$W/good.json" \
		--signature "$W/detached/ecdsa.sig" --key "$W/detached/ecdsa.pub"
	assert_status 2
	wb sig sigstore "$W/artifact" --trusted-root "$W/root.json" --bundle "$WORK/missing.json" \
		--identity "$ID" --issuer "$ISS"
	assert_status 2
	assert_output_has "missing.json"
	wb sig sigstore "$WORK/missing" --trusted-root "$W/root.json" --bundle "$W/good.json" \
		--identity "$ID" --issuer "$ISS"
	assert_status 2
	printf 'not json' >"$WORK/root.json"
	wb sig sigstore "$W/artifact" --trusted-root "$WORK/root.json" --bundle "$W/good.json" \
		--identity "$ID" --issuer "$ISS"
	assert_status 2
	assert_output_has "trusted root '$WORK/root.json'"
}

@test "sigstore: a trusted-root window with no start is refused as malformed (exit 2)" {
	python3 - "$W/root.json" >"$WORK/root.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
del r["certificateAuthorities"][0]["validFor"]["start"]
print(json.dumps(r))
EOF
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$WORK/root.json" \
		--bundle "$W/good.json" --identity "$ID" --issuer "$ISS"
	assert_status 2
	assert_output_has "certificateAuthorities[0]: validFor: missing start"
}

# v2_root_ending END OUT: rekor2-happy-path's root with its Rekor v2 log's
# window ending at END
v2_root_ending() {
	python3 - "$WB_SRC/tests/vectors/sigstore/conformance/rekor2-happy-path/trusted_root.json" \
		"$1" >"$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for t in r["tlogs"]:
    if "log2025" in t["baseUrl"]:
        t["publicKey"]["validFor"]["end"] = sys.argv[2]
print(json.dumps(r))
PY
}

@test "sigstore: a Rekor v2 log key must be valid at the timestamp's time (edited conformance root)" {
	local c="$WB_SRC/tests/vectors/sigstore/conformance/rekor2-happy-path"
	local id="https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
	local iss="https://token.actions.githubusercontent.com"
	# the v2 log's window ends a day before the timestamp (2025-06-12T12:02:20Z)
	v2_root_ending 2025-06-11T12:00:00Z "$WORK/ended.json"
	run "$WINBUILD" sig sigstore "$c/../a.txt" --trusted-root "$WORK/ended.json" \
		--bundle "$c/bundle.sigstore.json" --identity "$id" --issuer "$iss"
	assert_status 1
	assert_output_has "the transparency log's key was not valid at the timestamp's time"
	# ...and one ending exactly then holds (closed interval)
	v2_root_ending 2025-06-12T12:02:20Z "$WORK/ends-then.json"
	run "$WINBUILD" sig sigstore "$c/../a.txt" --trusted-root "$WORK/ends-then.json" \
		--bundle "$c/bundle.sigstore.json" --identity "$id" --issuer "$iss"
	assert_status 0
}

@test "sigstore: a bundle with a trusted timestamp but no transparency-log entry does not verify; nor for the oracle" {
	local c="$WB_SRC/tests/vectors/sigstore/conformance/rekor2-happy-path"
	local id="https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
	local iss="https://token.actions.githubusercontent.com"
	python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); b["verificationMaterial"]["tlogEntries"]=[]; print(json.dumps(b))' \
		"$c/bundle.sigstore.json" >"$WORK/no-entry.json"
	run "$WINBUILD" sig sigstore "$c/../a.txt" --trusted-root "$c/trusted_root.json" \
		--bundle "$WORK/no-entry.json" --identity "$id" --issuer "$iss"
	assert_status 1
	assert_output_has "the bundle has no transparency-log entry"
	CASE_ARGS=("$c/../a.txt" "$WORK/no-entry.json" "$c/trusted_root.json" --identity "$id" --issuer "$iss")
	oracle_says fail
}

@test "sigstore: a trusted root whose CT logs or Rekor v1 log carry another log's key under their logId is refused (exit 2)" {
	local V="$WB_SRC/tests/vectors/sigstore" c=conformance/happy-path-v0.1
	local id='https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main'
	local iss=https://token.actions.githubusercontent.com
	# the unedited root verifies the case
	run "$WINBUILD" sig sigstore "$V/conformance/a.txt" --trusted-root "$V/trusted_root/public-good.json" \
		--bundle "$V/$c/bundle.sigstore.json" --identity "$id" --issuer "$iss"
	assert_status 0
	python3 - "$V/trusted_root/public-good.json" "$WORK" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
x = json.loads(json.dumps(r))
a, b = x["ctlogs"][0]["publicKey"], x["ctlogs"][-1]["publicKey"]
x["ctlogs"][0]["publicKey"], x["ctlogs"][-1]["publicKey"] = b, a
json.dump(x, open(sys.argv[2] + "/ctswap.json", "w"))
x = json.loads(json.dumps(r))
x["tlogs"][0]["publicKey"]["rawBytes"] = x["ctlogs"][-1]["publicKey"]["rawBytes"]
json.dump(x, open(sys.argv[2] + "/tlogkey.json", "w"))
PY
	for f in ctswap:ctlogs tlogkey:tlogs; do
		run "$WINBUILD" sig sigstore "$V/conformance/a.txt" --trusted-root "$WORK/${f%%:*}.json" \
			--bundle "$V/$c/bundle.sigstore.json" --identity "$id" --issuer "$iss"
		assert_status 2
		assert_output_has "${f#*:}[0]: logId.keyId is not the SHA-256 of its publicKey"
	done
}
