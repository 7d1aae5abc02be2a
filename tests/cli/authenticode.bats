#!/usr/bin/env bats
# winbuild sig authenticode: Authenticode on PE and MSI files, checked
# against osslsigncode's own verdict on every file. Fixtures (test PKI,
# mingw-w64 binaries, a wixl MSI, osslsigncode signatures) are made
# once per run by tests/lib/authenticode.bash.
load helpers
load ../lib/authenticode

setup_file() {
	ac_setup_file
}

@test "a signed PE32+ .exe verifies: signer, thumbprint, no timestamp" {
	accepts good.exe
	assert_output_has "signer:     O=Example Corp,CN=Example Code Signing"
	assert_output_has "issuer:     CN=Test Root CA"
	assert_output_has "thumbprint: $(cat "$FX/cs.thumbprint") (sha256)"
	assert_output_has "digest:     sha256"
	assert_output_has "timestamp:  none"
}

@test "a signed PE32 .exe and a signed .dll verify" {
	accepts good32.exe
	accepts good.dll
}

@test "a signed MSI verifies" {
	accepts good.msi
	assert_output_has "signer:     O=Example Corp,CN=Example Code Signing"
}

@test "an RFC 3161 timestamp is verified and printed" {
	accepts ts.exe
	assert_output_has "timestamp:  20"
	assert_output_lacks "timestamp:  none"
}

@test "an expired signer with a valid timestamp from its validity verifies" {
	accepts expired-ts.exe
	assert_output_has "signer:     CN=Expired Signer"
	assert_output_has "timestamp:  2020-06-01T00:00:00Z"
}

@test "an expired signer without a timestamp is refused" {
	refuses 1 expired.exe "signer 'CN=Expired Signer' does not chain to a trusted root: certificate has expired"
}

@test "a tampered byte inside the signed range of a PE is refused" {
	refuses 1 tampered.exe "PE image hash does not match the signed digest"
}

@test "a tampered byte in an MSI stream is refused" {
	refuses 1 tampered.msi "MSI hash does not match the signed digest"
}

@test "bytes appended after the signature are refused" {
	refuses 1 trailing.exe "22 bytes after the certificate table are not covered by the signature"
}

@test "unsigned PE and MSI files are refused" {
	refuses 1 hello.exe "not signed (no Authenticode signature)"
	refuses 1 hello.msi "not signed (no Authenticode signature)"
}

@test "a signer from another CA is refused" {
	refuses 1 other.exe "signer 'CN=Other CA Signer' does not chain to a trusted root"
	refuses 1 other.msi "signer 'CN=Other CA Signer' does not chain to a trusted root"
}

@test "the other CA's file verifies under the other CA's roots only" {
	wb sig authenticode "$FX/other.exe" --roots "$FX/other-ca.pem"
	assert_status 0
	wb sig authenticode "$FX/good.exe" --roots "$FX/other-ca.pem"
	assert_status 1
}

@test "a certificate without the code-signing EKU is refused" {
	refuses 1 noeku.exe "signer 'CN=No Code Signing EKU' lacks the code-signing extended key usage"
}

@test "a publisher not on the list is refused (the signature itself is sound)" {
	wb sig authenticode "$FX/good.exe" --roots "$FX/ca.pem" --publisher "CN=Someone Else"
	assert_status 1
	assert_output_has "'$FX/good.exe'"
	assert_output_has "is not an allowed publisher"
	# publishers are winbuild policy: osslsigncode accepts the file
	ossl_verify "$FX/good.exe"
}

@test "a publisher is allowed by subject or by SHA-256 thumbprint" {
	accepts good.exe --publisher "CN=Someone Else" --publisher "O=Example Corp,CN=Example Code Signing"
	accepts good.exe --publisher "/CN=Example Code Signing/O=Example Corp"
	accepts good.msi --publisher "$(cat "$FX/cs.thumbprint")"
	accepts good.exe --publisher "$(tr a-f A-F <"$FX/cs.thumbprint")"
}

@test "a timestamp whose authority is not under the roots is refused" {
	wb sig authenticode "$FX/expired-ts.exe" --roots "$FX/other-ca.pem"
	assert_status 1
	assert_output_has "timestamp authority 'CN=Test TSA' is not trusted"
}

# One RFC 3161 verifier for Authenticode and Sigstore (trust/timestamp.c,
# issue 29): a token must carry the ESS signing-certificate attribute and
# a SHA-2 imprint. osslsigncode verify accepts both forgeries below.
@test "a timestamp token without the ESS signing-certificate attribute is refused (osslsigncode accepts it)" {
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$BATS_TEST_TMPDIR/ess.exe" \
		"$FX/tsa.pem" "$FX/tsa.key"
	wb sig authenticode "$BATS_TEST_TMPDIR/ess.exe" --roots "$FX/ca.pem"
	assert_status 0
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$BATS_TEST_TMPDIR/noess.exe" \
		"$FX/tsa.pem" "$FX/tsa.key" --no-ess
	ossl_verify "$BATS_TEST_TMPDIR/noess.exe"
	wb sig authenticode "$BATS_TEST_TMPDIR/noess.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "signer 'O=Example Corp,CN=Example Code Signing': missing signing certificate attribute"
}

@test "a timestamp with a SHA-1 message imprint is refused, its token otherwise sound (osslsigncode accepts it)" {
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$BATS_TEST_TMPDIR/sha1.exe" \
		"$FX/tsa.pem" "$FX/tsa.key" --sha1-imprint
	ossl_verify "$BATS_TEST_TMPDIR/sha1.exe"
	wb sig authenticode "$BATS_TEST_TMPDIR/sha1.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "timestamp: message imprint algorithm SHA1 is not SHA-256, SHA-384 or SHA-512"
}

# RFC 5652 lets a token's certificates carry attribute certificates; the
# token on Microsoft-signed files has one (its time-stamping service). The
# TSA signs only the attributes over the TSTInfo, so the token is as sound
# with it as without; osslsigncode (CMS) accepts it.
@test "a timestamp token whose certificates include an attribute certificate verifies, as osslsigncode's does" {
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$BATS_TEST_TMPDIR/ac.exe" \
		"$FX/tsa.pem" "$FX/tsa.key" --attr-cert
	ossl_verify "$BATS_TEST_TMPDIR/ac.exe"
	wb sig authenticode "$BATS_TEST_TMPDIR/ac.exe" --roots "$FX/ca.pem"
	assert_status 0
	assert_output_has "timestamp:"
	# under roots that do not hold the TSA's, still refused
	wb sig authenticode "$BATS_TEST_TMPDIR/ac.exe" --roots "$FX/other-ca.pem"
	assert_status 1
}

# A real vector: pwsh.dll of PowerShell 7.6.9's NuGet package (the engine
# tier's pwsh, .ci/deps), signed by Microsoft and timestamped by Microsoft's
# time-stamping service, whose token carries an attribute certificate.
# No Debian package holds Microsoft's roots, so no roots here trust it: the
# file must parse through to the chain (exit 1, the authority not trusted),
# as osslsigncode's verdict does, never stop at the token (exit 2).
@test "Microsoft's own signature and timestamp on pwsh.dll parse through to the trust decision" {
	local dll
	dll=$(ls "$HOME"/.dotnet/tools/.store/powershell/7.6.9/powershell/7.6.9/tools/net*/any/win/pwsh.dll 2>/dev/null | head -1)
	if [ -z "$dll" ]; then
		if [ "${CI:-}" = true ]; then echo "no pwsh.dll of PowerShell 7.6.9 (make deps installs it with the .NET SDK)" >&2; return 1; fi
		skip "no PowerShell 7.6.9 .NET tool here (make deps with the .NET SDK)"
	fi
	run osslsigncode verify -CAfile "$FX/ca.pem" -in "$dll"
	assert_output_has "Timestamp time:"
	wb sig authenticode "$dll" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "signer 'CN=Microsoft Corporation,O=Microsoft Corporation,L=Redmond,ST=Washington,C=US'"
	assert_output_has "timestamp authority 'CN=Microsoft Time-Stamp Service,"
	assert_output_has "is not trusted"
}

@test "could not verify exits 2: missing file, not PE/MSI, unreadable roots" {
	wb sig authenticode "$FX/missing.exe" --roots "$FX/ca.pem"
	assert_status 2
	assert_output_has "cannot open '$FX/missing.exe'"
	wb sig authenticode "$FX/hello.c" --roots "$FX/ca.pem"
	assert_status 2
	assert_output_has "not a PE, MSI or cabinet file"
	wb sig authenticode "$FX/good.exe" --roots "$FX/nope.pem"
	assert_status 2
	assert_output_has "cannot read roots '$FX/nope.pem'"
}

@test "usage errors exit 2" {
	wb sig authenticode
	assert_status 2
	assert_output_has "give exactly one FILE"
	wb sig authenticode a.exe b.exe
	assert_status 2
	wb sig authenticode a.exe --frob
	assert_status 2
	assert_output_has "unknown option '--frob'"
}

# ---- the recipe / override policy ----

# a copy of the plan fixtures with a roots file beside an override in site/
policy_setup() {
	cp -R "$WB_SRC/tests/cli/fixtures/plan/." "$WORK/"
	mkdir -p "$WORK/site"
	cp "$FX/ca.pem" "$WORK/site/roots.pem"
}

@test "policy: a global authenticode override applies to every component, roots relative to the override" {
	policy_setup
	cat >site/ac.yaml <<'YAML'
kind: override
authenticode:
  require: true
  roots: roots.pem
  publishers: ["O=Example Corp,CN=Example Code Signing"]
YAML
	wb plan img.yaml -O site/ac.yaml
	assert_status 0
	assert_output_has "authenticode: .exe/.dll/.msi must be signed under roots site/roots.pem, publishers: O=Example Corp,CN=Example Code Signing"
	[ "$(grep -c 'authenticode:' <<<"$output")" -ge 2 ]
	wb plan img.yaml -O site/ac.yaml --json
	assert_status 0
	python3 -c 'import json, sys
arts = json.load(sys.stdin)["artifacts"]
assert arts and all(a["authenticode"] == {"require": True, "roots": "site/roots.pem",
	"publishers": ["O=Example Corp,CN=Example Code Signing"]} for a in arts)' <<<"$output"
}

@test "policy: a component's authenticode map applies to that component only" {
	policy_setup
	thumb=$(tr a-f A-F <"$FX/cs.thumbprint")
	cat >img-ac.yaml <<YAML
kind: image
include: [img.yaml]
components:
  containerd:
    authenticode:
      roots: site/roots.pem
      publishers: ["$thumb"]
YAML
	wb plan img-ac.yaml --explain
	assert_status 0
	assert_output_has "authenticode: .exe/.dll/.msi checked when signed under roots site/roots.pem"
	assert_output_has "publishers: $(cat "$FX/cs.thumbprint")"
	assert_output_has "img-ac.yaml:6:14"
	[ "$(grep -c 'authenticode:' <<<"$output")" -eq "$(grep -c 'component containerd' <<<"$output")" ]
}

@test "policy: a later layer cannot loosen a global require: true" {
	policy_setup
	printf 'kind: override\nauthenticode: {require: true, roots: roots.pem}\n' >site/ac.yaml
	wb plan img.yaml -O site/ac.yaml --set authenticode.require=false
	assert_status 0
	assert_output_has "must be signed"
	assert_output_lacks "checked when signed"
}

# policy_refused YAML MESSAGE: an override holding YAML fails the plan
# with exit 2 and MESSAGE
policy_refused() {
	printf 'kind: override\n%s\n' "$1" >site/ac.yaml
	wb plan img.yaml -O site/ac.yaml
	assert_status 2
	assert_output_has "$2"
}

@test "policy: authenticode needs readable roots and known keys" {
	policy_setup
	policy_refused 'authenticode: {require: true}' \
		"site/ac.yaml:2:15: 'authenticode' needs 'roots'"
	policy_refused 'authenticode: {require: true, roots: missing.pem}' \
		"'authenticode.roots': cannot read 'site/missing.pem'"
	policy_refused 'authenticode: {require: yes-please, roots: roots.pem}' \
		"'authenticode.require' must be true or false"
	policy_refused 'authenticode: {roots: roots.pem, publisher: x}' \
		"unknown key 'authenticode.publisher'"
}

# ---- staging: the policy applied to staged files ----

# manifest_auth TREE_PATH: the manifest's authenticode entry for one file
manifest_auth() {
	python3 -c 'import json, sys
files = json.load(open(sys.argv[1]))["files"]
print(json.dumps([f.get("authenticode") for f in files if f["tree_path"] == sys.argv[2]][0], sort_keys=True))' \
		"$WORK/out/t/manifest.json" "$1"
}

@test "stage: signed .exe and .msi pass; signer, thumbprint and timestamp go into the manifest and the SBOM" {
	stage_recipe '{require: true, roots: site/roots.pem}' good.msi ts.exe expired-ts.exe
	wb stage img.yaml --no-progress
	assert_status 0
	run manifest_auth k/ts.exe
	assert_output_has '"digest": "sha256", "issuer": "CN=Test Root CA", "signed": true, "signer": "O=Example Corp,CN=Example Code Signing"'
	assert_output_has "\"thumbprint_sha256\": \"$(cat "$FX/cs.thumbprint")\""
	assert_output_has '"timestamp": "20'
	run manifest_auth k/expired-ts.exe
	assert_output_has '"timestamp": "2020-06-01T00:00:00Z"'
	run manifest_auth k/good.msi
	assert_output_has '"signed": true'
	assert_output_has '"timestamp": null'
	# ... and into the SBOM, as properties of the file's component
	python3 - out/t/sbom.cdx.json "$(cat "$FX/cs.thumbprint")" <<-'PY'
		import json, sys
		bom = json.load(open(sys.argv[1]))
		comps = {}
		def walk(cs):
		    for c in cs:
		        comps[c["bom-ref"]] = c
		        walk(c.get("components", []))
		walk(bom["components"])
		props = {p["name"].split(":", 1)[1]: p["value"]
		         for p in comps["file:k/ts.exe"]["properties"]}
		assert props["authenticode:signer"] == "O=Example Corp,CN=Example Code Signing", props
		assert props["authenticode:thumbprint_sha256"] == sys.argv[2], props
		assert props["authenticode:timestamp"].startswith("20"), props
	PY
}

@test "stage: a file failing the policy fails the stage (exit 1) naming artifact, file and reason; no tree" {
	stage_recipe '{require: true, roots: site/roots.pem}' good.exe other.exe
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "authenticode: artifact 'other-exe': 'k/other.exe': signer 'CN=Other CA Signer' does not chain to a trusted root"
	[ ! -e "$WORK/out/t/tree" ]
	stage_recipe '{require: true, roots: site/roots.pem, publishers: [CN=Nobody]}' good.exe
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "'k/good.exe': signer 'O=Example Corp,CN=Example Code Signing'"
	assert_output_has "is not an allowed publisher"
	stage_recipe '{require: true, roots: site/roots.pem}' hello.exe
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "'k/hello.exe': not signed"
}

@test "stage: require false lets unsigned files pass (recorded) but still refuses a bad signature" {
	stage_recipe '{require: false, roots: site/roots.pem}' hello.exe good.dll
	wb stage img.yaml --no-progress
	assert_status 0
	run manifest_auth k/hello.exe
	assert_output_has '{"signed": false}'
	stage_recipe '{require: false, roots: site/roots.pem}' tampered.exe
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "'k/tampered.exe': PE image hash does not match the signed digest"
}

@test "stage: without an authenticode policy nothing is checked" {
	stage_recipe '' hello.exe
	wb stage img.yaml --no-progress
	assert_status 0
	run manifest_auth k/hello.exe
	assert_output_has 'null'
}

# ---- emit --sign-scripts ----

# emit_staged: a staged windows-2022-containerd output (emit's fixture
# writer), then `winbuild emit` for qemu with the given options
emit_staged() {
	packer_setup secrets
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out windows-2022-containerd 2022
	wb emit "$WB_SRC/recipes/windows-2022-containerd.yaml" --builder qemu --builder azure-arm \
		--set "windows.iso_sha256=$TEST_ISO_SHA256" --set images.pause.enabled=false "$@"
}

PK=out/windows-2022-containerd/packer

@test "emit --sign-scripts: every script verifies with osslsigncode and parses; the template says allsigned" {
	emit_staged --sign-scripts --sign-cert "$FX/cs.pem" --sign-key "$FX/cs.key"
	assert_status 0
	files=("$PK"/scripts/*.ps1)
	[ "${#files[@]}" -ge 7 ]
	for f in "${files[@]}"; do
		grep -q '^# SIG # Begin signature block' "$f"
		osslsigncode verify -CAfile "$FX/ca.pem" -in "$f" >/dev/null 2>&1 ||
			{ echo "osslsigncode refuses $f" >&2; return 1; }
	done
	[ "$(grep -c 'execution_policy = "allsigned"' "$PK/windows-2022-containerd.pkr.hcl")" -ge 3 ]
	! grep -q '"bypass"' "$PK/windows-2022-containerd.pkr.hcl" || false
	run packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run packer fmt -check "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	if [ -d "$WB_SRC/tests/ps/node_modules/web-tree-sitter" ]; then
		run node "$WB_SRC/tests/ps/psparse.cjs" "${files[@]}"
		[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	fi
}

@test "emit --sign-scripts with a PKCS#12 file and a password file" {
	printf 'p12-secret\n' >pass.txt
	openssl pkcs12 -export -in "$FX/cs.pem" -inkey "$FX/cs.key" -out cs.p12 \
		-passout file:pass.txt
	emit_staged --sign-scripts --sign-pkcs12 cs.p12 --sign-pass-file pass.txt
	assert_status 0
	osslsigncode verify -CAfile "$FX/ca.pem" -in "$PK/scripts/04-containerd.ps1" >/dev/null 2>&1
	# the password is never on a command line
	! grep -rq p12-secret "$PK" || false
}

@test "emit without --sign-scripts: unsigned scripts, execution_policy bypass" {
	emit_staged
	assert_status 0
	! grep -q 'SIG # Begin signature block' "$PK"/scripts/*.ps1 || false
	grep -q 'execution_policy = "bypass"' "$PK/windows-2022-containerd.pkr.hcl"
	! grep -q allsigned "$PK/windows-2022-containerd.pkr.hcl" || false
}

@test "emit: signing options are checked; a failing signer fails emit and writes no packer dir" {
	emit_staged --sign-scripts
	assert_status 2
	assert_output_has "--sign-scripts needs a key"
	emit_staged --sign-key "$FX/cs.key" --sign-cert "$FX/cs.pem"
	assert_status 2
	assert_output_has "--sign-* options need --sign-scripts"
	emit_staged --sign-scripts --sign-key "$FX/cs.key"
	assert_status 2
	assert_output_has "--sign-key needs --sign-cert"
	emit_staged --sign-scripts --sign-cert "$FX/cs.pem" --sign-key "$FX/missing.key"
	assert_status 5
	assert_output_has "osslsigncode could not sign"
	[ ! -e "$PK" ]
}
