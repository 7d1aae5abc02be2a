#!/usr/bin/env bats
# winbuild sig authenticode on cabinets (.cab, .msu) and on files with
# several signatures (nested, several PE certificate-table entries), each
# vector judged by osslsigncode too: the file's verdict, and with
# `osslsigncode verify -index I` each signature's alone (issue 32).
# Fixtures: tests/lib/authenticode.bash (ac_make_fixtures, then
# ac_make_multi_fixtures: gcab cabinets, osslsigncode -nest, pe_certs.py).
load helpers
load ../lib/authenticode

setup_file() {
	ac_setup_file || return 1
	(ac_make_multi_fixtures "$FX") >>"$BATS_FILE_TMPDIR/fixtures.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/fixtures.log" >&2
		return 1
	}
}

# each_alone FILE N: winbuild's per-signature verdicts (--json) are N
# signatures, each ok exactly when osslsigncode -index I accepts it alone
each_alone() {
	local f=$1 n=$2 i oks
	oks=$("$WINBUILD" sig authenticode "$FX/$f" --roots "$FX/ca.pem" --signatures one --json 2>/dev/null |
		jq -r '.signatures | map(if .ok then "1" else "0" end) | join(" ")')
	[ "$(wc -w <<<"$oks")" -eq "$n" ] || { echo "signatures: '$oks'" >&2; return 1; }
	i=0
	for ok in $oks; do
		if ossl_verify_index "$FX/$f" "$i"; then ossl=1; else ossl=0; fi
		[ "$ok" = "$ossl" ] || { echo "$f signature $i: winbuild $ok, osslsigncode $ossl" >&2; return 1; }
		i=$((i + 1))
	done
}

# ---- cabinets ----

@test "a signed cabinet and an .msu (a cabinet) verify, as osslsigncode's verdict" {
	accepts good.cab
	assert_output_has "signer:     O=Example Corp,CN=Example Code Signing"
	assert_output_has "thumbprint: $(cat "$FX/cs.thumbprint") (sha256)"
	assert_output_has "digest:     sha256"
	accepts good.msu
}

@test "a cabinet from an expired signer, from another CA, or unsigned is refused, as osslsigncode refuses it" {
	refuses 1 expired.cab "signer 'CN=Expired Signer' does not chain to a trusted root: certificate has expired"
	refuses 1 other.cab "signer 'CN=Other CA Signer' does not chain to a trusted root"
	refuses 1 hello.cab "not signed (no Authenticode signature)"
}

@test "a cabinet signed with SHA-1 only is refused (osslsigncode accepts it: winbuild refuses weak digests)" {
	ossl_verify "$FX/sha1.cab"
	wb sig authenticode "$FX/sha1.cab" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "signed digest uses SHA1, which winbuild refuses as weak"
}

@test "a cabinet byte flipped inside the signed range fails; outside it (abReserve[12], not hashed) passes, as osslsigncode judges" {
	refuses 1 flip-in.cab "cabinet hash does not match the signed digest"
	refuses 1 flip-hdr.cab "cabinet hash does not match the signed digest"
	accepts flip-out.cab
}

@test "a cabinet: a publisher not on the list is refused (the signature itself is sound)" {
	wb sig authenticode "$FX/good.cab" --roots "$FX/ca.pem" --publisher "CN=Someone Else"
	assert_status 1
	assert_output_has "is not an allowed publisher"
	ossl_verify "$FX/good.cab"
	accepts good.cab --publisher "O=Example Corp,CN=Example Code Signing"
}

# put32 FILE OFFSET VALUE: a little-endian 32-bit word
put32() {
	printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($3 & 255)) $(($3 >> 8 & 255)) \
		$(($3 >> 16 & 255)) $(($3 >> 24 & 255)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

@test "a malformed cabinet header exits 2 (could not verify), bytes after the signature exit 1; osslsigncode refuses each" {
	local c=$BATS_TEST_TMPDIR/c.cab size
	size=$(stat -c %s "$FX/good.cab")
	cp "$FX/good.cab" "$c"; put32 "$c" 44 $((size + 100))   # signature offset past the end
	wb sig authenticode "$c" --roots "$FX/ca.pem"
	assert_status 2
	assert_output_has "cabinet signature (offset $((size + 100)),"
	assert_output_has "lies outside the file ($size bytes)"
	run ossl_verify "$c"; [ "$status" -ne 0 ]
	cp "$FX/good.cab" "$c"; put32 "$c" 48 4000000000         # signature size past the end
	wb sig authenticode "$c" --roots "$FX/ca.pem"
	assert_status 2
	assert_output_has "lies outside the file"
	run ossl_verify "$c"; [ "$status" -ne 0 ]
	cp "$FX/good.cab" "$c"; put32 "$c" 36 24                 # cbCFHeader not 20
	wb sig authenticode "$c" --roots "$FX/ca.pem"
	assert_status 2
	assert_output_has "cabinet reserve area (24 header bytes) is not an Authenticode signature header"
	run ossl_verify "$c"; [ "$status" -ne 0 ]
	cp "$FX/good.cab" "$c"; put32 "$c" 16 0                  # coffFiles wrong
	wb sig authenticode "$c" --roots "$FX/ca.pem"
	assert_status 2
	assert_output_has "do not end at coffFiles (0)"
	run ossl_verify "$c"; [ "$status" -ne 0 ]
	head -c 50 "$FX/good.cab" >"$c"                          # truncated header
	wb sig authenticode "$c" --roots "$FX/ca.pem"
	assert_status 2
	run ossl_verify "$c"; [ "$status" -ne 0 ]
	cp "$FX/good.cab" "$c"; printf 'appended' >>"$c"
	wb sig authenticode "$c" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "8 bytes after the cabinet signature are not covered by the signature"
	run ossl_verify "$c"; [ "$status" -ne 0 ]
}

# ---- several signatures ----

@test "nested signatures (PE, MSI, cabinet): each is judged alone, as osslsigncode -index judges it" {
	each_alone nested.exe 2
	each_alone nested.msi 2
	each_alone nested.cab 2
	each_alone nested-other.exe 2
	each_alone nested-other.cab 2
	each_alone nested-broken.exe 2
}

@test "nested: every signature must pass by default; --signatures one takes one, as osslsigncode's file verdict" {
	accepts nested.exe
	assert_output_has "signature 2: entry 1, nested: ok: O=Example Corp,CN=Example Code Signing"
	accepts nested.cab
	accepts nested.msi
	# the nested signer is from another CA: osslsigncode takes the file
	# (one valid signature is enough for it); winbuild's default does not
	ossl_verify "$FX/nested-other.exe"
	wb sig authenticode "$FX/nested-other.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "signature 2 of 2 (entry 1, nested): signer 'CN=Other CA Signer' does not chain to a trusted root"
	accepts nested-other.exe --signatures one
	assert_output_has "signature 2: entry 1, nested: not accepted: signer 'CN=Other CA Signer'"
	accepts nested-other.cab --signatures one
	wb sig authenticode "$FX/nested-other.cab" --roots "$FX/ca.pem" --signatures all
	assert_status 1
}

@test "a broken nested signature fails the file in both modes (osslsigncode takes the file, refuses it alone)" {
	ossl_verify "$FX/nested-broken.exe"
	run ossl_verify_index "$FX/nested-broken.exe" 1
	[ "$status" -ne 0 ]
	for m in all one; do
		wb sig authenticode "$FX/nested-broken.exe" --roots "$FX/ca.pem" --signatures "$m"
		assert_status 1
		assert_output_has "signature 2 of 2 (entry 1, nested): PKCS#7 signature does not verify"
	done
}

# osslsigncode writes one certificate-table entry and cannot read a second
# ("Corrupted attribute certificate table"): pe_certs.py crafts the file;
# the verdicts are checked against each entry alone (good.exe, other.exe).
@test "two certificate-table entries: each judged alone; all needs both, one needs one" {
	run osslsigncode verify -CAfile "$FX/ca.pem" -in "$FX/two.exe"
	assert_output_has "Corrupted attribute certificate table"
	ossl_verify "$FX/good.exe"
	run ossl_verify "$FX/other.exe"; [ "$status" -ne 0 ]
	wb sig authenticode "$FX/two.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "signature 2 of 2 (entry 2): signer 'CN=Other CA Signer' does not chain to a trusted root"
	wb sig authenticode "$FX/two.exe" --roots "$FX/ca.pem" --signatures one
	assert_status 0
	assert_output_has "signature 1: entry 1: ok: O=Example Corp,CN=Example Code Signing"
	assert_output_has "signature 2: entry 2: not accepted:"
	wb sig authenticode "$FX/two.exe" --roots "$FX/other-ca.pem" --signatures one
	assert_status 0
	assert_output_has "signer:     CN=Other CA Signer"
	wb sig authenticode "$FX/twogood.exe" --roots "$FX/ca.pem"
	assert_status 0
}

@test "--json names every signer with its verdict; --signatures takes all or one" {
	wb sig authenticode "$FX/nested-other.exe" --roots "$FX/ca.pem" --signatures one --json
	assert_status 0
	run jq -c '[.verified, .signer, (.signatures | map([.entry, .nested, .ok, .signer, .digest]))]' <<<"$output"
	assert_output_has '[true,"O=Example Corp,CN=Example Code Signing",[[1,0,true,"O=Example Corp,CN=Example Code Signing","sha256"],[1,1,false,"CN=Other CA Signer","sha256"]]]'
	run bash -c '"$1" sig authenticode "$2" --roots "$3" --json 2>/dev/null' _ "$WINBUILD" \
		"$FX/nested-other.exe" "$FX/ca.pem"
	assert_status 1
	run jq -c '[.verified, .exit, (.signatures | map(.error))]' <<<"$output"
	assert_output_has "[false,1,[null,\"signer 'CN=Other CA Signer' does not chain to a trusted root: unable to get local issuer certificate\"]]"
	wb sig authenticode "$FX/good.exe" --roots "$FX/ca.pem" --signatures some
	assert_status 2
	assert_output_has "--signatures takes 'all' or 'one', not 'some'"
	wb sig authenticode "$FX/good.exe" --roots "$FX/ca.pem" --at yesterday
	assert_status 2
	assert_output_has "--at takes a UTC time"
}

@test "--at judges a signature without a timestamp at that time (an expired signer, within its validity)" {
	wb sig authenticode "$FX/expired.cab" --roots "$FX/ca.pem" --at 2020-06-01T00:00:00Z
	assert_status 0
	wb sig authenticode "$FX/expired.cab" --roots "$FX/ca.pem" --at 2022-06-01T00:00:00Z
	assert_status 1
	assert_output_has "certificate has expired"
}

# ---- a real vector: Debian's Microsoft-signed shim ----

# ms_roots OUT: Microsoft's UEFI CA 2011 (from Debian's ovmf) and Root
# Certificate Authority 2010 (from the .NET SDK), each pinned by SHA-256
# (tests/cli/fixtures/msroots/README.md says where and why)
ms_roots() {
	local sdk
	sdk=$(dotnet --list-sdks 2>/dev/null | tail -1 | sed 's/^\([^ ]*\) \[\(.*\)\]$/\2\/\1/')
	python3 "$WB_SRC/tests/lib/msroots.py" /usr/share/OVMF/OVMF_VARS_4M.ms.fd \
		48e99b991f57fc52f76149599bff0a58c47154229b9f8d603ac40d3500248507 "$1.uefi" &&
	python3 "$WB_SRC/tests/lib/msroots.py" "$sdk/trustedroots/timestampctl.pem" \
		df545bf919a2439c36983b54cdfc903dfa4f37d3996d8d84b4c31eec6f3c163e "$1.ts" &&
	cat "$1.uefi" "$1.ts" >"$1"
}

@test "Debian's Microsoft-signed shimx64.efi verifies under Microsoft's UEFI CA 2011: one of its two entries" {
	local shim=/usr/lib/shim/shimx64.efi.signed roots=$BATS_TEST_TMPDIR/ms.pem
	need_dep test -r "$shim" -- "shim-signed not installed (make deps)"
	need_dep test -r /usr/share/OVMF/OVMF_VARS_4M.ms.fd -- "ovmf not installed (make deps)"
	need_dep dotnet --list-sdks -- "no .NET SDK (its trustedroots hold Microsoft's 2010 root)"
	ms_roots "$roots"
	wb sig authenticode "$shim" --roots "$roots" --signatures one \
		--publisher "CN=Microsoft Windows UEFI Driver Publisher,O=Microsoft Corporation,L=Redmond,ST=Washington,C=US"
	assert_status 0
	assert_output_has "issuer:     CN=Microsoft Corporation UEFI CA 2011,"
	assert_output_lacks "timestamp:  none"
	assert_output_has "signature 1: entry 1: ok: CN=Microsoft Windows UEFI Driver Publisher"
	assert_output_has "signature 2: entry 2: not accepted: signer 'CN=Microsoft UEFI CA 2023 signer,"
	# all (the default): entry 2 does not chain to these roots
	wb sig authenticode "$shim" --roots "$roots"
	assert_status 1
	assert_output_has "signature 2 of 2 (entry 2): signer 'CN=Microsoft UEFI CA 2023 signer,"
	# without the time-stamping root the timestamp is not trusted
	wb sig authenticode "$shim" --roots "$roots.uefi" --signatures one
	assert_status 1
	assert_output_has "timestamp authority 'CN=Microsoft Time-Stamp Service,"
	# a byte changed inside the image: both entries fail
	cp "$shim" "$BATS_TEST_TMPDIR/shim.efi"
	ac_flip "$BATS_TEST_TMPDIR/shim.efi" 1040
	wb sig authenticode "$BATS_TEST_TMPDIR/shim.efi" --roots "$roots" --signatures one
	assert_status 1
	assert_output_has "signature 1 of 2 (entry 1): PE image hash does not match the signed digest"
	# osslsigncode 2.9 cannot read a second certificate-table entry
	run osslsigncode verify -CAfile "$roots" -TSA-CAfile "$roots" -in "$shim"
	assert_output_has "Corrupted attribute certificate table"
}

# ---- the recipe path: staged .cab and .msu files ----

manifest_auth() {
	jq -c --arg p "$1" '.files[] | select(.tree_path == $p) | .authenticode' "$WORK/out/t/manifest.json"
}

@test "stage: a staged .cab and .msu are checked; all signatures by default, one with signatures: one; the manifest names each signer" {
	stage_recipe '{require: true, roots: site/roots.pem}' good.msu nested-other.cab
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "'k/nested-other.cab': signature 2 of 2 (entry 1, nested): signer 'CN=Other CA Signer' does not chain to a trusted root"
	[ ! -e "$WORK/out/t/tree" ]
	stage_recipe '{require: true, roots: site/roots.pem, signatures: one}' good.msu nested-other.cab
	wb stage img.yaml --no-progress
	assert_status 0
	run manifest_auth k/good.msu
	assert_output_has '"signed":true,"signer":"O=Example Corp,CN=Example Code Signing"'
	run manifest_auth k/nested-other.cab
	assert_output_has '"signatures":[{"entry":1,"nested":0,"ok":true,"signer":"O=Example Corp,CN=Example Code Signing"'
	assert_output_has '{"entry":1,"nested":1,"ok":false,"signer":"CN=Other CA Signer"'
}

@test "stage: a tampered or unsigned cabinet fails the stage (exit 1), whatever signatures says; a wrong publisher too" {
	stage_recipe '{require: true, roots: site/roots.pem, signatures: one}' flip-in.cab
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "'k/flip-in.cab': cabinet hash does not match the signed digest"
	stage_recipe '{require: true, roots: site/roots.pem}' hello.cab
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "'k/hello.cab': not signed"
	stage_recipe '{require: true, roots: site/roots.pem, publishers: [CN=Nobody]}' good.cab
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "'k/good.cab': signer 'O=Example Corp,CN=Example Code Signing'"
	assert_output_has "is not an allowed publisher"
}

@test "policy: signatures takes all or one; all in any layer holds over one" {
	stage_recipe '{require: true, roots: site/roots.pem, signatures: some}' good.cab
	wb plan img.yaml
	assert_status 2
	assert_output_has "authenticode.signatures"
	# the recipe's all holds over an override's one; an override's all
	# over the recipe's one
	stage_recipe '{require: true, roots: site/roots.pem, signatures: all}' nested-other.cab
	printf 'kind: override\nauthenticode: {signatures: one}\n' >"$WORK/site/loose.yaml"
	wb stage img.yaml -O site/loose.yaml --no-progress
	assert_status 1
	assert_output_has "signature 2 of 2 (entry 1, nested)"
	stage_recipe '{require: true, roots: site/roots.pem, signatures: one}' nested-other.cab
	printf 'kind: override\nauthenticode: {signatures: all}\n' >"$WORK/site/strict.yaml"
	wb stage img.yaml -O site/strict.yaml --no-progress
	assert_status 1
	assert_output_has "signature 2 of 2 (entry 1, nested)"
	wb stage img.yaml --no-progress
	assert_status 0
}

# ---- Microsoft's timestamp tokens: an attribute certificate in the ESS list ----

@test "a timestamp whose ESS list names the TSA and then an attribute certificate verifies (Microsoft's shape); the other way round it does not" {
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$BATS_TEST_TMPDIR/ess.exe" \
		"$FX/tsa.pem" "$FX/tsa.key" --ess-attr-cert
	ossl_verify "$BATS_TEST_TMPDIR/ess.exe"
	wb sig authenticode "$BATS_TEST_TMPDIR/ess.exe" --roots "$FX/ca.pem"
	assert_status 0
	assert_output_lacks "timestamp:  none"
	# the first ID must be the signer's (RFC 5035 5.4); osslsigncode reads
	# the token through CMS, which checks no ESS attribute at all
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$BATS_TEST_TMPDIR/essf.exe" \
		"$FX/tsa.pem" "$FX/tsa.key" --ess-attr-cert-first
	ossl_verify "$BATS_TEST_TMPDIR/essf.exe"
	wb sig authenticode "$BATS_TEST_TMPDIR/essf.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "timestamp: the token's signing-certificate attribute does not name its signer first"
	# the step-by-step check still checks the token's signature
	python3 "$WB_SRC/tests/lib/forge_timestamp.py" "$FX/ts.exe" "$BATS_TEST_TMPDIR/essb.exe" \
		"$FX/tsa.pem" "$FX/tsa.key" --ess-attr-cert-badsig
	wb sig authenticode "$BATS_TEST_TMPDIR/essb.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "timestamp: the token's signing-certificate attribute does not name its signer first, or the token does not verify"
	# osslsigncode finds the token bad too, then judges the signer at the
	# current time instead; winbuild never ignores a bad timestamp
	run osslsigncode verify -CAfile "$FX/ca.pem" -TSA-CAfile "$FX/ca.pem" -in "$BATS_TEST_TMPDIR/essb.exe"
	assert_output_has "Timestamp Server Signature verification: failed"
	# and a TSA outside the roots is still not trusted
	wb sig authenticode "$BATS_TEST_TMPDIR/ess.exe" --roots "$FX/other-ca.pem"
	assert_status 1
}
