#!/usr/bin/env bats
# Red-team cases that kill mutants of tests/mutate/mutants.txt the rest of
# the suite let survive (make mutate; docs/hardening.md, "Mutation run").
# Each case goes through the real CLI and checks the exit code, the
# message, that nothing unsafe landed, and that the earlier good output is
# intact. Authenticode fixtures (test PKI, mingw-w64 binaries signed with
# osslsigncode) come from tests/lib/authenticode.bash; minisign keys and
# signed files (minisign CLI) from fetch_fixtures.bash, served as file://.
load helpers
load ../lib/authenticode
load fetch_fixtures

setup_file() {
	ac_setup_file && make_fixtures "$BATS_FILE_TMPDIR"
}

# image_with POLICY FILE: $WORK/img.yaml, image "t" with one component
# "demo" installing the fixture FILE (file:// URL, pinned) to C:\k\demo.exe;
# POLICY is the component file's own authenticode map (or empty). The site
# override site/ac.yaml requires signatures under the test roots.
image_with() {
	local policy=$1 f=$2
	mkdir -p "$WORK/components" "$WORK/site"
	cp "$FX/ca.pem" "$WORK/site/roots.pem"
	printf 'kind: override\nauthenticode: {require: true, roots: roots.pem}\n' \
		>"$WORK/site/ac.yaml"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\n'
		[ -z "$policy" ] || printf 'authenticode: %s\n' "$policy"
		printf 'artifacts:\n  demo:\n    url: file://%s/%s\n' "$FX" "$f"
		printf '    verify: {sha256: %s}\n' "$(sha256sum "$FX/$f" | cut -d' ' -f1)"
		printf '    install: {to: '\''C:\\k\\demo.exe'\''}\n'
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  demo: {}\n' \
		>"$WORK/img.yaml"
}

# good_stage: stage the signed good.exe under the site policy; remember
# the tree's manifest to compare after an attack
good_stage() {
	image_with '' good.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 0
	cmp -s "$WORK/out/t/tree/k/demo.exe" "$FX/good.exe"
	cp "$WORK/out/t/manifest.json" "$BATS_TEST_TMPDIR/manifest.before"
}

# previous_tree_intact: the good stage's tree and manifest are unchanged
previous_tree_intact() {
	cmp "$WORK/out/t/tree/k/demo.exe" "$FX/good.exe"
	cmp "$WORK/out/t/manifest.json" "$BATS_TEST_TMPDIR/manifest.before"
	[ "$(find "$WORK/out/t/tree" -type f | wc -l)" -eq 1 ]
	[ -z "$(find "$WORK/out/t" -maxdepth 1 -name '.tree.tmp.*')" ]
}

# --- policy-component-require-loosened (recipe/authenticode_policy.c, authpol_convert)

@test "redteam mutants: a component's own authenticode require: false cannot loosen the site's require: true" {
	good_stage
	image_with '{require: false, roots: ../site/roots.pem}' hello.exe
	wb plan img.yaml -O site/ac.yaml
	assert_status 0
	assert_output_has "authenticode: .exe/.dll/.msi must be signed"
	assert_output_lacks "checked when signed"
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "authenticode: artifact 'demo': 'k/demo.exe': not signed"
	previous_tree_intact
}

@test "redteam mutants: a component's require: false with the site's require: true still refuses a bad signature" {
	good_stage
	image_with '{require: false, roots: ../site/roots.pem}' other.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "'k/demo.exe': signer 'CN=Other CA Signer' does not chain to a trusted root"
	previous_tree_intact
}

# --- authenticode-pkcs7-unverified (trust/authenticode.c, verify_signed)

# forge_rsa IN OUT: OUT is IN with one bit of the signer's RSA signature
# value (the SignerInfo's encryptedDigest, found with openssl asn1parse)
# flipped: the signed file digest and the certificates are untouched
forge_rsa() {
	python3 - "$1" "$2" <<-'PY'
		import re, struct, subprocess, sys
		d = bytearray(open(sys.argv[1], "rb").read())
		pe = struct.unpack_from("<I", d, 0x3c)[0]
		magic = struct.unpack_from("<H", d, pe + 24)[0]
		dd = pe + 24 + (96 if magic == 0x10b else 112)
		off, size = struct.unpack_from("<II", d, dd + 4 * 8)   # certificate table
		p7 = bytes(d[off + 8:off + size])
		out = subprocess.run(["openssl", "asn1parse", "-inform", "DER"], input=p7,
		                     capture_output=True, check=True).stdout.decode()
		sigs = [(int(m.group(1)), int(m.group(2))) for m in
		        re.finditer(r"^\s*(\d+):d=\d+\s+hl=(\d+)\s+l=\s*256 prim: OCTET STRING", out, re.M)]
		assert sigs, out
		o, hl = sigs[-1]
		d[off + 8 + o + hl + 100] ^= 1
		open(sys.argv[2], "wb").write(d)
	PY
}

@test "redteam mutants: a PE whose RSA signature value was altered is refused (signed digest intact)" {
	good_stage
	forge_rsa "$FX/good.exe" "$BATS_TEST_TMPDIR/forged.exe"
	# osslsigncode refuses it too
	run ossl_verify "$BATS_TEST_TMPDIR/forged.exe"
	[ "$status" -ne 0 ]
	wb sig authenticode "$BATS_TEST_TMPDIR/forged.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "PKCS#7 signature does not verify"
	cp "$BATS_TEST_TMPDIR/forged.exe" "$FX/forged.exe"
	image_with '' forged.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "authenticode: artifact 'demo': 'k/demo.exe': PKCS#7 signature does not verify"
	previous_tree_intact
}

# --- timestamp-signer-unchecked (trust/timestamp.c, token_check: the one RFC 3161 verifier; was authenticode-tsa-any-purpose)

@test "redteam mutants: a timestamp signed by a code-signing (not time-stamping) certificate is refused" {
	good_stage
	# control: the token re-signed by the real TSA still verifies
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$FX/ts-resigned.exe" \
		"$FX/tsa.pem" "$FX/tsa.key"
	wb sig authenticode "$FX/ts-resigned.exe" --roots "$FX/ca.pem"
	assert_status 0
	assert_output_has "timestamp:  20"
	# the same token signed by the code-signing certificate, which chains
	# to the same roots but lacks the time-stamping EKU (RFC 3161 2.3).
	# osslsigncode verify accepts this file: winbuild is stricter
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$FX/ts-by-cs.exe" \
		"$FX/cs.pem" "$FX/cs.key"
	wb sig authenticode "$FX/ts-by-cs.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "timestamp authority 'O=Example Corp,CN=Example Code Signing' is not trusted: unsuitable certificate purpose"
	image_with '' ts-by-cs.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "'k/demo.exe': signer 'O=Example Corp,CN=Example Code Signing': timestamp authority"
	previous_tree_intact
}

# --- authenticode-sha1-accepted (trust/authenticode.c, verify_signed)

@test "redteam mutants: an Authenticode signature over a SHA-1 digest is refused as weak" {
	good_stage
	# osslsigncode signs and verifies it: winbuild is stricter
	(cd "$FX" && ac_sign cs hello.exe sha1.exe -h sha1)
	wb sig authenticode "$FX/sha1.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "signed digest uses SHA1, which winbuild refuses as weak"
	image_with '' sha1.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "'k/demo.exe': signed digest uses SHA1"
	previous_tree_intact
}

# ---- minisign keys and URLs in the recipe (recipe/verify_spec.c, recipe/urls.c) ----

# good_lock: lock a recipe whose artifact a.bin (file://) is signed by key
# A; remember the lock and the cache entries to compare after an attack
good_lock() {
	art a "file://$WWW/a.bin" "minisign: {keys: [{key: $PUB_A}]}" | recipe
	wb lock img.yaml
	assert_status 0
	cp t.lock "$BATS_TEST_TMPDIR/lock.before"
	find "$WINBUILD_CACHE/sha256" -type f | sort >"$BATS_TEST_TMPDIR/entries.before"
}

# previous_lock_intact: the lock and the cache entries are as good_lock left them
previous_lock_intact() {
	cmp t.lock "$BATS_TEST_TMPDIR/lock.before"
	find "$WINBUILD_CACHE/sha256" -type f | sort | cmp - "$BATS_TEST_TMPDIR/entries.before"
	[ -z "$(find "$WINBUILD_CACHE/tmp" -type f)" ]
}

# --- policy-key-id-collision (recipe/verify_spec.c, add_keys)

@test "redteam mutants: two different minisign keys under one key id are refused, in either order" {
	good_lock
	for keys in "{key: $PUB_A}, {key: $PUB_WRONG}" "{key: $PUB_WRONG}, {key: $PUB_A}"; do
		art a "file://$WWW/a.bin" "minisign: {keys: [$keys]}" | recipe
		wb lock img.yaml
		assert_status 2
		assert_output_has "two different minisign keys share the key id"
		assert_output_has "components/demo.yaml:"
		previous_lock_intact
	done
}

# --- policy-url-scheme (recipe/urls.c, urls_check)

@test "redteam mutants: artifact, checksum and signature URLs of another scheme are refused at plan time" {
	good_lock
	art a "ftp://127.0.0.1/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb lock img.yaml
	assert_status 2
	assert_output_has "must be an https, http or file URL, not 'ftp://127.0.0.1/a.bin'"
	previous_lock_intact
	art a "file://$WWW/a.bin" "sha256_url: gopher://127.0.0.1/a.bin.sha256" | recipe
	wb lock img.yaml
	assert_status 2
	assert_output_has "not 'gopher://127.0.0.1/a.bin.sha256'"
	previous_lock_intact
	art a "file://$WWW/a.bin" "minisign: {url: 'dict://127.0.0.1/a.bin.minisig', keys: [{key: $PUB_A}]}" | recipe
	wb lock img.yaml
	assert_status 2
	assert_output_has "not 'dict://127.0.0.1/a.bin.minisig'"
	previous_lock_intact
}

# --- policy-forbid-urls-kept (recipe/policy.c, policy_check_artifact)

@test "redteam mutants: under checksum_urls: forbid no checksum URL reaches the plan, the fetch or the lock" {
	good_lock
	art a "file://$WWW/a.bin" "sha256: $(sha_of a.bin)" \
		"sha256_url: file://$BATS_TEST_TMPDIR/absent.sha256" | recipe
	printf 'kind: override\npolicy: {checksum_urls: forbid}\n' >forbid.yaml
	wb plan img.yaml -O forbid.yaml
	assert_status 0
	assert_output_has "checksum files forbidden"
	assert_output_lacks "absent.sha256"
	assert_output_lacks "from checksum file"
	wb plan img.yaml -O forbid.yaml --json
	assert_status 0
	python3 -c 'import json, sys
v = json.load(sys.stdin)["artifacts"][0]["verify"]
assert v["sha256_urls"] == [] and v["sha512_urls"] == [], v' <<<"$output"
	# the checksum file does not exist: fetching it would fail the lock
	wb lock img.yaml -O forbid.yaml
	assert_status 0
	python3 - <<-'PY'
		import json
		a = json.load(open("t.lock"))["artifacts"]["a"]
		assert a["verified_by"]["pinned"] == ["sha256"], a
		assert "checksum" not in json.dumps(a["verified_by"]), a
	PY
	find "$WINBUILD_CACHE/sha256" -type f | sort | cmp - "$BATS_TEST_TMPDIR/entries.before"
}
