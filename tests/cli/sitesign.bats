#!/usr/bin/env bats
# Site signing (docs/authenticode.md, "Site signing"): the site's own
# Authenticode signature on the staged .exe, .dll and .msi files a recipe's
# site_signing selects, after the upstream checks, on private copies; the
# manifest, the SBOM and `winbuild verify --site-roots` record and check it;
# osslsigncode accepts every signed file. The test PKI of
# tests/lib/authenticode.bash plays two parts: "Test Root CA" (ca.pem, cs)
# is the upstream publisher, "Other Root CA" (other-ca.pem, other) the site.
load helpers
load ../lib/authenticode

setup_file() {
	ac_setup_file
}

# site_recipe SITE_SIGNING_YAML FILE...: $WORK/img.yaml with component demo
# installing each fixture FILE into C:\k, the upstream Authenticode policy
# (require: false under ca.pem) on demo, and SITE_SIGNING_YAML as the
# image's site_signing map (none when empty)
site_recipe() {
	local site=$1
	shift
	mkdir -p "$WORK/site"
	cp "$FX/ca.pem" "$WORK/site/upstream.pem"
	cp "$FX/other-ca.pem" "$WORK/site/roots.pem"
	ac_demo_recipe '{require: false, roots: ../site/upstream.pem}' "$@"
	[ -z "$site" ] || printf 'site_signing: %s\n' "$site" >>"$WORK/img.yaml"
}

KEY=(--sign-cert "$BATS_FILE_TMPDIR/fx/other.pem" --sign-key "$BATS_FILE_TMPDIR/fx/other.key")

# mf TREE_PATH FIELD: a field of the manifest's entry for one file
mf() {
	python3 -c 'import json, sys
f = [f for f in json.load(open(sys.argv[1]))["files"] if f["tree_path"] == sys.argv[2]][0]
v = f
for k in sys.argv[3].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "${3:-$WORK/out}/t/manifest.json" "$1" "$2"
}

sha() {
	sha256sum "$1" | cut -d' ' -f1
}

@test "stage signs every selected file after the upstream check; osslsigncode accepts each; the manifest keeps both digests" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe hello.exe hello.dll good.msi
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	for f in good.exe hello.exe hello.dll good.msi; do
		t="$WORK/out/t/tree/k/$f"
		# the site's signature, as osslsigncode sees it
		osslsigncode verify -CAfile "$FX/other-ca.pem" -in "$t" >"$BATS_TEST_TMPDIR/ov" 2>&1 ||
			{ cat "$BATS_TEST_TMPDIR/ov"; false; }
		grep -q 'Other CA Signer' "$BATS_TEST_TMPDIR/ov"
		! osslsigncode verify -CAfile "$FX/ca.pem" -in "$t" >/dev/null 2>&1 || false
		[ "$(mf "k/$f" upstream_sha256)" = "$(sha "$FX/$f")" ]
		[ "$(mf "k/$f" sha256)" = "$(sha "$t")" ]
		[ "$(mf "k/$f" sha256)" != "$(sha "$FX/$f")" ]
		[ "$(mf "k/$f" size)" = "$(stat -c %s "$t")" ]
		[ "$(mf "k/$f" site_signature.signer)" = "CN=Other CA Signer" ]
	done
	# the upstream check saw the upstream bytes (before the site's
	# signature replaced the publisher's): good.exe is upstream-signed
	[ "$(mf k/good.exe authenticode.signer)" = "O=Example Corp,CN=Example Code Signing" ]
	[ "$(mf k/hello.exe authenticode.signed)" = "False" ]
	wb verify out/t --site-roots "$FX/other-ca.pem"
	assert_status 0
	assert_output_has "4 files and 0 directories match manifest.json; the site signatures verify"
}

@test "the SBOM lists the signed file's digest, the upstream digest and the site signer" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	python3 - "$WORK/out/t/sbom.cdx.json" "$(sha "$WORK/out/t/tree/k/good.exe")" "$(sha "$FX/good.exe")" <<-'PY'
	import json, sys
	sbom, signed, upstream = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
	def walk(cs):
	    for c in cs:
	        yield c
	        yield from walk(c.get("components", []))
	f = [c for c in walk(sbom["components"]) if c.get("bom-ref") == "file:k/good.exe"][0]
	props = {p["name"]: p["value"] for p in f["properties"]}
	assert f["hashes"] == [{"alg": "SHA-256", "content": signed}], f["hashes"]
	assert props["winbuild:upstream_sha256"] == upstream, props
	assert props["winbuild:site_signature:signer"] == "CN=Other CA Signer", props
	anc = f["pedigree"]["ancestors"][0]
	assert anc["hashes"] == [{"alg": "SHA-256", "content": upstream}], anc
	PY
	if [ -f "$WB_SRC/tests/sbom/node_modules/.package-lock.json" ]; then
		node "$WB_SRC/tests/sbom/validate.cjs" "$WORK/out/t/sbom.cdx.json"
	fi
}

@test "a tampered signed file fails verify; so does one re-signed by another key with its manifest entry forged" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe hello.dll
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	cp -r out good
	# a byte flipped: the digest no longer matches
	ac_flip out/t/tree/k/good.exe 1040
	wb verify out/t --site-roots "$FX/other-ca.pem"
	assert_status 1
	assert_output_has "modified  tree/k/good.exe"
	# re-signed by a key outside the site's roots, digest and size forged
	rm -rf out && cp -r good out
	rm out/t/tree/k/hello.dll
	osslsigncode sign -certs "$FX/cs.pem" -key "$FX/cs.key" -h sha256 \
		-in good/t/tree/k/hello.dll -out out/t/tree/k/hello.dll >/dev/null
	python3 - out/t/manifest.json k/hello.dll "$(sha out/t/tree/k/hello.dll)" \
		"$(stat -c %s out/t/tree/k/hello.dll)" <<-'PY'
	import json, sys
	m = json.load(open(sys.argv[1]))
	for f in m["files"]:
	    if f["tree_path"] == sys.argv[2]:
	        f["sha256"], f["size"] = sys.argv[3], int(sys.argv[4])
	json.dump(m, open(sys.argv[1], "w"), indent=2)
	PY
	wb verify out/t --site-roots "$FX/other-ca.pem"
	assert_status 1
	assert_output_has "signature tree/k/hello.dll"
	assert_output_has "1 bad site signatures"
	# the untouched copy still verifies; without the site's roots it cannot
	wb verify good/t --site-roots "$FX/other-ca.pem"
	assert_status 0
	wb verify good/t
	assert_status 2
	assert_output_has "give --site-roots FILE"
	wb verify good/t --site-roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "does not chain to a trusted root"
}

@test "the cache keeps the upstream bytes; a later stage without site_signing stages them" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe hello.msi
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	n=0
	while read -r f; do
		[ "$(basename "$f")" = "$(sha "$f")" ]
		n=$((n + 1))
	done < <(find "$WINBUILD_CACHE/sha256" -type f)
	[ "$n" -eq 2 ]
	site_recipe '' good.exe hello.msi
	wb stage img.yaml -o plain --no-progress
	assert_status 0
	[ "$(sha plain/t/tree/k/good.exe)" = "$(sha "$FX/good.exe")" ]
	[ "$(sha plain/t/tree/k/hello.msi)" = "$(sha "$FX/hello.msi")" ]
	[ -z "$(mf k/good.exe upstream_sha256 "$WORK/plain")" ]
	wb verify plain/t
	assert_status 0
	# the signed tree is still the signed one
	[ "$(sha out/t/tree/k/good.exe)" != "$(sha "$FX/good.exe")" ]
}

@test "files: patterns narrow the selection; other components and unmatched files keep their upstream bytes" {
	site_recipe '{components: [demo], files: ["*.EXE"], roots: site/roots.pem}' good.exe hello.dll
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	[ "$(mf k/good.exe upstream_sha256)" = "$(sha "$FX/good.exe")" ]
	[ -z "$(mf k/hello.dll upstream_sha256)" ]
	[ "$(sha out/t/tree/k/hello.dll)" = "$(sha "$FX/hello.dll")" ]
}

@test "an upstream file that fails its Authenticode policy fails the stage before anything is signed" {
	site_recipe '{components: [demo], roots: site/roots.pem}' other.exe
	sed -i 's/require: false/require: true/' "$WORK/components/demo.yaml"
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 1
	assert_output_has "authenticode: artifact 'other-exe'"
	assert_output_lacks "site signing"
	[ ! -e out/t/tree ]
}

@test "a file changed between its verification and its signing is not signed (exit 1)" {
	site_recipe '{components: [demo], roots: site/roots.pem}' hello.exe
	WINBUILD_TEST_RUN_AT='sign:printf x >>"$(echo out/t/.tree.tmp.*/tree/k/hello.exe)"' \
		wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 1
	assert_output_has "'k/hello.exe' changed after it was verified (expected sha256 $(sha "$FX/hello.exe")"
	[ ! -e out/t/tree ]
}

@test "a site key outside site_signing.roots fails the stage (exit 1); the previous tree stays" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	before=$(sha out/t/tree/k/good.exe)
	wb stage img.yaml -o out --no-progress --sign-cert "$FX/cs.pem" --sign-key "$FX/cs.key"
	assert_status 1
	assert_output_has "site signing: artifact 'good-exe': the site-signed file does not verify"
	[ "$(sha out/t/tree/k/good.exe)" = "$before" ]
	# publishers narrow the site's roots
	site_recipe '{components: [demo], roots: site/roots.pem, publishers: ["CN=Someone Else"]}' good.exe
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 1
	assert_output_has "not an allowed publisher"
}

@test "a PKCS#12 key with a password file signs the same bytes; a new key source restages, the same one is up to date" {
	site_recipe '{components: [demo], roots: site/roots.pem}' hello.exe
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	first=$(sha out/t/tree/k/hello.exe)
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	assert_output_has "up to date"
	printf 'p12-secret\n' >pass
	openssl pkcs12 -export -in "$FX/other.pem" -inkey "$FX/other.key" -out site.p12 \
		-passout file:pass
	wb stage img.yaml -o out --no-progress --sign-pkcs12 site.p12 --sign-pass-file pass
	assert_status 0
	assert_output_lacks "up to date"
	[ "$(sha out/t/tree/k/hello.exe)" = "$first" ]
	wb verify out/t --site-roots "$FX/other-ca.pem"
	assert_status 0
}

@test "restaging after a change never reuses a signed file as if it were upstream" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe hello.dll
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	# another input changes (a --set), the artifacts do not
	wb stage img.yaml -o out --no-progress "${KEY[@]}" --set vars.x=1
	assert_status 0
	[ "$(mf k/good.exe upstream_sha256)" = "$(sha "$FX/good.exe")" ]
	[ "$(mf k/hello.dll upstream_sha256)" = "$(sha "$FX/hello.dll")" ]
	[ "$(mf k/good.exe authenticode.signer)" = "O=Example Corp,CN=Example Code Signing" ]
	wb verify out/t --site-roots "$FX/other-ca.pem"
	assert_status 0
}

@test "site_signing and the key go together; bad site_signing maps name file:line:col" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe
	wb stage img.yaml -o out --no-progress
	assert_status 2
	assert_output_has "img.yaml:7:15: 'site_signing' needs the site's code-signing key"
	[ ! -e "$WINBUILD_CACHE/sha256" ] || [ -z "$(find "$WINBUILD_CACHE/sha256" -type f)" ]
	site_recipe '' good.exe
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 2
	assert_output_has "the --sign-* options sign nothing here"
	site_recipe '{components: [demo, nosuch], roots: site/roots.pem}' good.exe
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:7:35: 'site_signing.components' names 'nosuch'"
	site_recipe '{components: [demo], roots: site/missing.pem}' good.exe
	wb plan img.yaml
	assert_status 2
	assert_output_has "'site_signing.roots': cannot read"
	site_recipe '{components: [demo], files: ["k/*.exe"], roots: site/roots.pem}' good.exe
	wb plan img.yaml
	assert_status 2
	assert_output_has "'site_signing.files' entries are file-name patterns"
	site_recipe '{components: [demo]}' good.exe
	wb plan img.yaml
	assert_status 2
	assert_output_has "missing required key 'roots' in 'site_signing'"
	wb stage img.yaml -o out --no-progress --sign-key "$FX/other.key"
	assert_status 2
}

@test "build takes the site key without --sign-scripts, and signs scripts with it too" {
	site_recipe '{components: [demo], roots: site/roots.pem}' hello.exe
	wb build img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	[ "$(mf k/hello.exe upstream_sha256)" = "$(sha "$FX/hello.exe")" ]
	grep -rq '"bypass"' out/t/packer/*.pkr.hcl
	wb build img.yaml -o out2 --no-progress "${KEY[@]}" --sign-scripts
	assert_status 0
	grep -rq '"allsigned"' out2/t/packer/*.pkr.hcl
	[ "$(mf k/hello.exe upstream_sha256 "$WORK/out2")" = "$(sha "$FX/hello.exe")" ]
	wb emit img.yaml -o out3 --no-progress "${KEY[@]}"
	assert_status 2
	assert_output_has "--sign-* options need --sign-scripts"
}

# lk FILE FIELD: a field of the lock's "site_signed" entry of tree path FILE
lk() {
	python3 -c 'import json, sys
e = json.load(open(sys.argv[1])).get("site_signed", {}).get(sys.argv[2])
print("" if e is None else e[sys.argv[3]])' "$WORK/t.lock" "$1" "$2"
}

@test "the lock records each site-signed file's digests; --locked signs again and must give the same bytes" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe hello.dll
	wb lock img.yaml --no-progress
	assert_status 0
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	assert_output_has "recorded 2 site-signed files in 't.lock'"
	for f in good.exe hello.dll; do
		[ "$(lk "k/$f" upstream_sha256)" = "$(sha "$FX/$f")" ]
		[ "$(lk "k/$f" sha256)" = "$(sha "out/t/tree/k/$f")" ]
		[ "$(lk "k/$f" artifact)" = "$(mf "k/$f" artifact)" ]
		[ "$(lk "k/$f" signer)" = "CN=Other CA Signer" ]
		[ "$(lk "k/$f" timestamped)" = "False" ]
	done
	# the certificate's fingerprint as openssl computes it
	fp=$(openssl x509 -in "$FX/other.pem" -outform DER | sha256sum | cut -d' ' -f1)
	[ "$(lk k/good.exe signer_sha256)" = "$fp" ]
	# a rebuild elsewhere with the same key and inputs: the same bytes
	rm -rf out
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 0
	assert_output_lacks "recorded"
	[ "$(sha out/t/tree/k/good.exe)" = "$(lk k/good.exe sha256)" ]
	# nothing changed, and the staged signed files are the lock's: up to date
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 0
	assert_output_has "up to date"
	# another signing time signs other bytes: refused, the tree stays
	before=$(sha out/t/tree/k/good.exe)
	SOURCE_DATE_EPOCH=1700000000 wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 1
	assert_output_has "--locked: the site-signed 'k/"
	assert_output_has "the lock file 't.lock' recorded"
	[ "$(sha out/t/tree/k/good.exe)" = "$before" ]
	# `lock` again keeps the entries of artifacts whose bytes it still pins
	wb lock img.yaml --no-progress
	assert_status 0
	[ "$(lk k/good.exe sha256)" = "$before" ]
	[ "$(lk k/hello.dll upstream_sha256)" = "$(sha "$FX/hello.dll")" ]
	# --json says how many it recorded
	"$WINBUILD" stage img.yaml -o out --no-progress --json --set vars.x=1 "${KEY[@]}" >st.json
	[ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["site_signed_recorded"])' st.json)" = 2 ]
}

@test "--locked refuses a new signing certificate, a signed file the lock lacks and a lock entry nothing signed" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe hello.dll
	wb lock img.yaml --no-progress
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	# another certificate under the same site roots
	openssl req -new -newkey rsa:2048 -nodes -keyout new.key -out new.csr \
		-subj "/CN=New Site Signer" 2>/dev/null
	openssl x509 -req -in new.csr -CA "$FX/other-ca.pem" -CAkey "$FX/other-ca.key" \
		-set_serial 4242 -days 3650 -extfile "$FX/ext.cnf" -extensions v3_cs \
		-out new.pem 2>/dev/null
	wb stage img.yaml -o out --no-progress --locked --sign-cert new.pem --sign-key new.key
	assert_status 1
	assert_output_has "the site's signing certificate changed"
	cp t.lock t.lock.good
	# a tree staged as the lock has it is up to date under --locked; every
	# change of the lock below is judged on that up-to-date tree
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 0
	assert_output_lacks "up to date"
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 0
	assert_output_has "up to date"
	# an attacker (or a stale lock) drops one file's entry
	python3 -c 'import json; l = json.load(open("t.lock")); del l["site_signed"]["k/hello.dll"]; json.dump(l, open("t.lock", "w"))'
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 1
	assert_output_has "--locked: the site-signed file 'k/hello.dll' (artifact"
	assert_output_has "is not in the lock file 't.lock'"
	# or adds one the stage does not sign
	python3 -c 'import json; l = json.load(open("t.lock.good")); l["site_signed"]["k/extra.exe"] = dict(l["site_signed"]["k/good.exe"]); json.dump(l, open("t.lock", "w"))'
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 1
	assert_output_has "records the site-signed file 'k/extra.exe'"
	# or forges the signed digest
	python3 -c 'import json; l = json.load(open("t.lock.good")); l["site_signed"]["k/good.exe"]["sha256"] = "0" * 64; json.dump(l, open("t.lock", "w"))'
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 1
	assert_output_has "recorded 0000000000000000"
	# or forges the upstream digest it records beside the same signed bytes
	# (o41-site-locked-upstream)
	python3 -c 'import json; l = json.load(open("t.lock.good")); l["site_signed"]["k/good.exe"]["upstream_sha256"] = "1" * 64; json.dump(l, open("t.lock", "w"))'
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 1
	assert_output_has "the lock file 't.lock' recorded upstream sha256 $(printf '1%.0s' $(seq 64)) before site signing, these bytes are $(sha "$FX/good.exe")"
	# a malformed entry is a lock error, exit 2
	python3 -c 'import json; l = json.load(open("t.lock.good")); l["site_signed"]["k/good.exe"]["sha256"] = "xyz"; json.dump(l, open("t.lock", "w"))'
	wb stage img.yaml -o out --no-progress --locked "${KEY[@]}"
	assert_status 2
	assert_output_has "site-signed file 'k/good.exe' needs"
}

@test "without a lock file the site-signed digests stay in the manifest, and no lock file appears" {
	site_recipe '{components: [demo], roots: site/roots.pem}' good.exe
	wb stage img.yaml -o out --no-progress "${KEY[@]}"
	assert_status 0
	assert_output_has "the site-signed digests are in the manifest only: there is no lock file 't.lock'"
	[ ! -e t.lock ]
}
