#!/usr/bin/env bats
# Red team, issue 13 classes 4, 9 and 10, written as an attacker would:
#   4  policy only tightens: a higher layer's signature keys, Authenticode
#      roots and publishers are ANDed with the component's own, never
#      appended to a list the component's own key can satisfy;
#   9  the stage stamp covers the contents of every input file;
#  10  no silent caps: more layers, vars or path segments than any old
#      table held still count, every one of them.
# Every case checks the exit code, the message, that nothing unsafe landed
# and that the earlier good output is intact.
load helpers
load ../lib/servers
load fetch_fixtures
load ../lib/authenticode

FIX="$BATS_TEST_DIRNAME/fixtures/plan"

setup_file() {
	start_fetch_servers
	# the site's own counter-signature of a.bin (key B), and one by the
	# component's key A at another URL
	minisign -S -s "$KEYS/b.key" -m "$WWW/a.bin" -x "$WWW/a.bin.site.minisig" </dev/null >/dev/null
	minisign -S -s "$KEYS/a.key" -m "$WWW/a.bin" -x "$WWW/a.bin.sitea.minisig" </dev/null >/dev/null
	export FX="$BATS_FILE_TMPDIR/fx"
	(ac_make_fixtures "$FX") >"$BATS_FILE_TMPDIR/fixtures.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/fixtures.log" >&2
		return 1
	}
}

teardown_file() {
	stop_servers
}

key() { echo "minisign: {keys: [{key: $1}]}"; }

# snap DIR: a listing of every file under DIR with its sha256 ("-" if none)
snap() {
	if [ -d "$1" ]; then
		(cd "$1" && find . -type f -print0 | sort -z | xargs -0r sha256sum)
	else
		echo -
	fi
}

# key id (as winbuild prints it) of a base64 public key
kid() {
	python3 -c 'import base64,sys; print(base64.b64decode(sys.argv[1])[2:10][::-1].hex().upper())' "$1"
}

# a good fetch of a.bin (own key A) first: cache and lock to compare later
good_first() {
	art a "$(H)/a.bin" "$(key "$PUB_A")" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	cp t.lock good.lock
	snap "$WINBUILD_CACHE" >cache.before
}

intact() {
	snap "$WINBUILD_CACHE" >cache.after
	diff cache.before cache.after
	cmp good.lock t.lock
}

# ---- class 4: signature requirements are layered ---------------------------

@test "c4: an override's signatures.keys is not satisfied by the component's own key" {
	good_first
	printf 'kind: override\nsignatures:\n  keys: [{key: %s}]\n' "$PUB_B" >site.yaml
	wb fetch img.yaml -O site.yaml --no-progress
	assert_status 1
	assert_output_has "signature required by site.yaml:3:3"
	assert_output_has "$(kid "$PUB_A")"
	# nothing new in the cache, the lock untouched
	intact
	# the plan shows two requirements, each with its own key
	"$WINBUILD" plan img.yaml -O site.yaml --json >plan.json
	python3 - plan.json "$(kid "$PUB_A")" "$(kid "$PUB_B")" <<-'PY'
		import json, sys
		v = json.load(open(sys.argv[1]))["artifacts"][0]["verify"]
		assert [k["id"] for k in v["minisign"]["keys"]] == [sys.argv[2]], v
		assert [[k["id"] for k in q["keys"]] for q in v["minisign_also"]] == [[sys.argv[3]]], v
	PY
}

@test "c4: the site's counter-signature at its own URL and the component's both verify, both recorded" {
	good_first
	printf 'kind: override\nsignatures:\n  url: "${url}.site.minisig"\n  keys: [{key: %s}]\n' "$PUB_B" >site.yaml
	wb lock img.yaml -O site.yaml --no-progress
	assert_status 0
	assert_output_has "minisign key $(kid "$PUB_A")"
	assert_output_has "and minisign key $(kid "$PUB_B")"
	python3 - t.lock "$(kid "$PUB_A")" "$(kid "$PUB_B")" <<-'PY'
		import json, sys
		a = json.load(open(sys.argv[1]))["artifacts"]["a"]["verified_by"]
		assert a["minisign"]["key_id"] == sys.argv[2], a
		assert [q["key_id"] for q in a["minisign_also"]] == [sys.argv[3]], a
		assert a["minisign_also"][0]["signature_url"].endswith("/a.bin.site.minisig"), a
	PY
	# the cache hit replays both signers
	wb fetch img.yaml -O site.yaml --no-progress
	assert_status 0
	assert_output_has "and minisign key $(kid "$PUB_B")"
	"$WINBUILD" fetch img.yaml -O site.yaml --no-progress --json >fetch.json
	python3 - fetch.json "$(kid "$PUB_A")" "$(kid "$PUB_B")" <<-'PY'
		import json, sys
		d = json.load(open(sys.argv[1]))
		a = (d["artifacts"] if isinstance(d, dict) else d)[0]
		assert a["key_id"] == sys.argv[2] and a["also_key_ids"] == [sys.argv[3]], a
	PY
	# and the SBOM names both signers
	wb stage img.yaml -O site.yaml --no-progress
	assert_status 0
	python3 - out/t/sbom.cdx.json "$(kid "$PUB_A")" "$(kid "$PUB_B")" <<-'PY'
		import json, sys
		c = [c for c in json.load(open(sys.argv[1]))["components"] if c["name"] == "a"][0]
		p = {x["name"].split(":", 1)[1]: x["value"] for x in c["properties"]}
		assert p["signer_key_id"] == sys.argv[2], p
		assert p["also_signed_by"].startswith(sys.argv[3] + " 'timestamp:"), p
	PY
	# the site URL signed by the component's key instead: refused
	cp good.lock t.lock
	printf 'kind: override\nsignatures:\n  url: "${url}.sitea.minisig"\n  keys: [{key: %s}]\n' "$PUB_B" >site2.yaml
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	wb fetch img.yaml -O site2.yaml --no-progress
	assert_status 1
	assert_output_has "signature required by site2.yaml"
	assert_output_has "a.bin.sitea.minisig"
	[ "$(snap "$WINBUILD_CACHE/sha256")" = - ] || [ -z "$(snap "$WINBUILD_CACHE/sha256")" ]
	cmp good.lock t.lock
}

@test "c4: a later --set cannot swap the key behind a name the override relies on" {
	good_first
	printf 'kind: override\nkeys:\n  site: {key: %s}\nsignatures:\n  url: "${url}.sitea.minisig"\n  keys: [site]\n' "$PUB_B" >site.yaml
	wb fetch img.yaml -O site.yaml --set "keys.site.key=$PUB_A" --no-progress
	assert_status 1
	assert_output_has "signature required by site.yaml"
	assert_output_has "$(kid "$PUB_A")"
	intact
}

@test "c4: a later --set signatures.keys adds a requirement, it does not replace the override's" {
	good_first
	printf 'kind: override\nsignatures:\n  url: "${url}.sitea.minisig"\n  keys: [{key: %s}]\n' "$PUB_B" >site.yaml
	wb fetch img.yaml -O site.yaml --set "signatures.keys=[{key: $PUB_A}]" --no-progress
	assert_status 1
	assert_output_has "signature required by site.yaml"
	intact
	# the plan lists the override's requirement and the --set's
	"$WINBUILD" plan img.yaml -O site.yaml --set "signatures.keys=[{key: $PUB_A}]" --explain >plan.txt
	grep -q "and minisign signature .*a.bin.sitea.minisig" plan.txt
	grep -q "key $(kid "$PUB_B")" plan.txt
}

@test "c4: each layer's signatures map is schema-checked, even when a later layer replaces it" {
	good_first
	printf 'kind: override\nsignatures:\n  keys: [{key: %s, bogus: 1}]\n' "$PUB_B" >site.yaml
	wb fetch img.yaml -O site.yaml --set "signatures.keys=[{key: $PUB_A}]" --no-progress
	assert_status 2
	assert_output_has "site.yaml:3:"
	assert_output_has "bogus"
	intact
}

# ---- policy mutants: a later layer never loosens ----------------------------

@test "policy: --set policy.allow_http=true over an override's false still refuses an http URL at plan time" {
	good_first
	printf 'kind: override\npolicy:\n  allow_http: false\n' >site.yaml
	before=$(nginx_requests /a.bin)
	wb plan img.yaml -O site.yaml --set policy.allow_http=true
	assert_status 2
	assert_output_has "URL '$(H)/a.bin' is plain http and policy.allow_http is false (site.yaml:3:15)"
	wb fetch img.yaml -O site.yaml --set policy.allow_http=true --no-progress
	assert_status 2
	assert_output_has "plain http"
	[ "$(nginx_requests /a.bin)" -eq "$before" ]
	intact
}

@test "policy: --set policy.checksum_urls=allow over an override's forbid: a checksum-file-only artifact is refused" {
	art u "$(H)/u.bin" "sha256_url: $(H)/u.bin.sha256" | recipe
	printf 'kind: override\npolicy:\n  checksum_urls: forbid\n' >site.yaml
	wb fetch img.yaml --no-progress
	assert_status 0
	snap "$WINBUILD_CACHE" >cache.before
	before=$(nginx_requests /u.bin.sha256)
	wb fetch img.yaml -O site.yaml --set policy.checksum_urls=allow --no-progress
	assert_status 2
	assert_output_has "artifact 'u' is verified only by a checksum file, which policy.checksum_urls: forbid does not accept (site.yaml:3:18)"
	[ "$(nginx_requests /u.bin.sha256)" -eq "$before" ]
	snap "$WINBUILD_CACHE" >cache.after
	diff cache.before cache.after
	# with a pin as well, the checksum file is not even fetched
	art u "$(H)/u.bin" "sha256_url: $(H)/u.bin.sha256" "sha256: $(sha_of u.bin)" | recipe
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache-pin"
	wb fetch img.yaml -O site.yaml --set policy.checksum_urls=allow --no-progress
	assert_status 0
	assert_output_lacks "checksum file"
	[ "$(nginx_requests /u.bin.sha256)" -eq "$before" ]
}

# ---- class 10: no silent caps ----------------------------------------------

@test "c10: 65 loosening --set layers do not push out a 66th that tightens" {
	good_first
	sets=()
	for i in $(seq 65); do sets+=(--set policy.allow_http=true); done
	wb plan img.yaml "${sets[@]}" --set policy.require=signature
	assert_status 0      # a.bin has its own signature: it passes require
	assert_output_has "policy: require signature"
	art c "$(H)/c.bin" "sha256: $(sha_of c.bin)" | recipe
	wb fetch img.yaml "${sets[@]}" --set policy.require=signature --no-progress
	assert_status 2
	assert_output_has "artifact 'c' has no signature (minisign, sigstore, attestation, cosign), but policy.require is 'signature' (--set #66)"
	snap "$WINBUILD_CACHE" >cache.after
	diff cache.before cache.after
	cmp good.lock t.lock
}

@test "c10: the 70th override file's allow_http: false holds" {
	good_first
	args=()
	for i in $(seq 69); do
		printf 'kind: override\npolicy: {allow_http: true}\n' >"o$i.yaml"
		args+=(-O "o$i.yaml")
	done
	printf 'kind: override\npolicy:\n  allow_http: false\n' >o70.yaml
	wb fetch img.yaml "${args[@]}" -O o70.yaml --no-progress
	assert_status 2
	assert_output_has "is plain http and policy.allow_http is false (o70.yaml:3:15)"
	intact
}

@test "c10: an image with 70 vars resolves the 70th; a component with 70 resolves its own" {
	good_first
	{
		printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\nvars:\n'
		for i in $(seq 70); do printf '  v%d: "x%d"\n' "$i" "$i"; done
		printf '  file: a.bin\ncomponents:\n  demo: {}\n'
	} >img.yaml
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nvars:\n'
		for i in $(seq 70); do printf '  c%d: "y%d"\n' "$i" "$i"; done
		printf 'artifacts:\n  a:\n    url: "%s/${file}?${v70}${c70}"\n' "$(H)"
		printf '    verify: {sha256: %s}\n    install: {to: "C:/k/${c70}/a"}\n' "$(sha_of a.bin)"
	} >components/demo.yaml
	wb plan img.yaml --json
	assert_status 0
	python3 -c 'import json,sys; a=json.loads(sys.stdin.read())["artifacts"][0]; assert a["urls"][0].endswith("/a.bin?x70y70"), a; assert a["destination"].endswith("y70\\a") or "y70" in json.dumps(a), a' <<<"$output"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache-vars"
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "fetched a"
}

@test "c10: a key_file path deeper than 256 directories is read whole, not cut short" {
	good_first
	d=deep
	for i in $(seq 270); do d="$d/d"; done
	mkdir -p "$d"
	cp "$KEYS/b.pub" "$d/site.pub"
	printf 'kind: override\nsignatures:\n  url: "${url}.site.minisig"\n  keys: [{key_file: %s/site.pub}]\n' "$d" >site.yaml
	wb lock img.yaml -O site.yaml --no-progress
	assert_status 0
	assert_output_has "and minisign key $(kid "$PUB_B")"
	# a cut path would have named the directory deep/d/.../d instead
	"$WINBUILD" plan img.yaml -O site.yaml --json >plan.json
	python3 - plan.json "$(kid "$PUB_B")" <<-'PY'
		import json, sys
		v = json.load(open(sys.argv[1]))["artifacts"][0]["verify"]
		k = v["minisign_also"][0]["keys"][0]
		assert k["origin"].startswith("site.yaml:4:"), k
		assert k["id"] == sys.argv[2], k
	PY
}

# ---- class 4: Authenticode roots and publishers are layered ---------------

# ac_recipe SITE_AUTH COMP_AUTH FILE...: img.yaml (component demo installing
# each fixture FILE, file:// and pinned) with SITE_AUTH as an override
# site/ac.yaml's top-level authenticode map and COMP_AUTH as the component
# file's own; site/roots.pem holds both test CAs, site/ca.pem only the
# Test Root CA, comp/other-ca.pem only the Other Root CA
ac_recipe() {
	local site=$1 comp=$2
	shift 2
	mkdir -p "$WORK/site" "$WORK/comp"
	cat "$FX/ca.pem" "$FX/other-ca.pem" >"$WORK/site/roots.pem"
	cp "$FX/ca.pem" "$WORK/site/ca.pem"
	cp "$FX/other-ca.pem" "$WORK/comp/other-ca.pem"
	ac_demo_recipe "$comp" "$@"
	printf 'kind: override\nauthenticode: %s\n' "$site" >"$WORK/site/ac.yaml"
}

# a good stage first (good.exe under the site's roots): out/ to compare
ac_good_first() {
	ac_recipe '{require: true, roots: ca.pem}' '' good.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 0
	snap "$WORK/out" >out.before
	snap "$WINBUILD_CACHE" >cache.before
}

# the earlier tree, manifest and SBOM intact (a failed stage drops the
# stamp on purpose: the tree no longer matches the latest inputs)
ac_intact() {
	snap "$WORK/out" | grep -v '/\.stage-stamp$' >out.after
	grep -v '/\.stage-stamp$' out.before | diff - out.after
	[ ! -e "$WORK/out/t/tree/k/other.exe" ]
	[ ! -e "$WORK/out/t/tree/k/nxeku.exe" ]
}

@test "c4: a component's own Authenticode roots cannot replace the site's" {
	ac_good_first
	# the component trusts only the Other Root CA, the site only the Test
	# Root CA: other.exe chains to the component's roots, not the site's
	ac_recipe '{require: true, roots: ca.pem}' '{roots: ../comp/other-ca.pem}' other.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "'k/other.exe': signer 'CN=Other CA Signer' does not chain to a trusted root"
	ac_intact
	# and good.exe, under the site's roots, must chain to the component's too
	ac_recipe '{require: true, roots: ca.pem}' '{roots: ../comp/other-ca.pem}' good.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "'k/good.exe': signer 'O=Example Corp,CN=Example Code Signing' does not chain to a root of 'comp/other-ca.pem' as well"
	ac_intact
	wb plan img.yaml -O site/ac.yaml --json
	python3 -c 'import json,sys; a=json.loads(sys.stdin.read())["artifacts"][0]["authenticode"]; assert a["roots"] == "site/ca.pem" and [q["roots"] for q in a["also"]] == ["comp/other-ca.pem"], a' <<<"$output"
}

@test "c4: a component's publishers narrow the site's, they never replace them" {
	ac_good_first
	ac_recipe '{require: true, roots: roots.pem, publishers: ["O=Example Corp,CN=Example Code Signing"]}' \
		'{publishers: ["CN=Other CA Signer"]}' other.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "'k/other.exe': signer 'CN=Other CA Signer'"
	assert_output_has "is not an allowed publisher"
	ac_intact
	# the component narrows a site list that names both signers
	ac_recipe '{require: true, roots: roots.pem, publishers: ["CN=Other CA Signer", "O=Example Corp,CN=Example Code Signing"]}' \
		'{publishers: ["O=Example Corp,CN=Example Code Signing"]}' other.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "'k/other.exe': signer 'CN=Other CA Signer'"
	assert_output_has "is not an allowed publisher under '"
	ac_intact
	# both layers name the same publisher: it passes
	ac_recipe '{require: true, roots: roots.pem, publishers: ["CN=Other CA Signer"]}' \
		'{publishers: ["CN=Other CA Signer"]}' other.exe
	wb stage img.yaml -O site/ac.yaml --no-progress -o out2
	assert_status 0
	[ -f out2/t/tree/k/other.exe ]
}

@test "c4: an override's top-level roots hold beside the image recipe's, and a --set cannot swap them" {
	ac_good_first
	ac_recipe '{roots: ../comp/other-ca.pem}' '' other.exe
	printf 'authenticode: {require: true, roots: site/ca.pem}\n' >>img.yaml
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "'k/other.exe': signer 'CN=Other CA Signer'"
	ac_intact
	# the override trusts only the Test Root CA; a --set names the other
	ac_recipe '{require: true, roots: ca.pem}' '' other.exe
	wb stage img.yaml -O site/ac.yaml --set authenticode.roots=comp/other-ca.pem --no-progress
	assert_status 1
	assert_output_has "'k/other.exe': signer 'CN=Other CA Signer'"
	ac_intact
}

@test "authenticode: a signer certificate with no extendedKeyUsage extension at all is not code signing" {
	wb sig authenticode "$FX/nxeku.exe" --roots "$FX/ca.pem"
	assert_status 1
	assert_output_has "'$FX/nxeku.exe': signer 'CN=No EKU Extension' lacks the code-signing extended key usage"
	# the peer accepts it: only our own EKU check stands in the way
	ossl_verify "$FX/nxeku.exe"
	ac_good_first
	ac_recipe '{require: true, roots: ca.pem}' '' good.exe nxeku.exe
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_has "authenticode: artifact 'nxeku-exe': 'k/nxeku.exe': signer 'CN=No EKU Extension' lacks the code-signing extended key usage"
	ac_intact
}

# ---- class 9: the stage stamp covers the contents of every input -----------

# stage_twice ARGS...: stage (exit 0), then again: "up to date"
stage_twice() {
	wb stage "$@" --no-progress
	assert_status 0
	wb stage "$@" --no-progress
	assert_status 0
	assert_output_has "up to date"
	snap "$WORK/out" >out.before
}

@test "c9: the site's roots PEM changed in place: the stage re-runs and refuses" {
	ac_recipe '{require: true, roots: ca.pem}' '' good.exe
	stage_twice img.yaml -O site/ac.yaml
	cp "$FX/other-ca.pem" site/ca.pem      # same path, other CA
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_lacks "up to date"
	assert_output_has "'k/good.exe': signer 'O=Example Corp,CN=Example Code Signing' does not chain to a trusted root"
	ac_intact
	# back to the old roots: staged again, not "up to date" from a stale stamp
	cp "$FX/ca.pem" site/ca.pem
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 0
	assert_output_lacks "up to date"
}

@test "c9: a component's roots PEM changed in place: the stage re-runs and refuses" {
	ac_recipe '{require: true, roots: roots.pem}' '{roots: ../comp/other-ca.pem}' other.exe
	stage_twice img.yaml -O site/ac.yaml
	[ -f out/t/tree/k/other.exe ]
	cp "$FX/ca.pem" comp/other-ca.pem
	wb stage img.yaml -O site/ac.yaml --no-progress
	assert_status 1
	assert_output_lacks "up to date"
	assert_output_has "does not chain to a root of 'comp/other-ca.pem' as well"
	snap "$WORK/out" | grep -v '/\.stage-stamp$' >out.after
	grep -v '/\.stage-stamp$' out.before | diff - out.after
}

@test "c9: a minisign key_file changed in place: the stage re-runs and refuses" {
	mkdir -p keys
	cp "$KEYS/a.pub" keys/site.pub
	art a "$(H)/a.bin" "minisign: {keys: [{key_file: ../keys/site.pub}]}" | recipe
	stage_twice img.yaml
	cp "$KEYS/b.pub" keys/site.pub
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_lacks "up to date"
	assert_output_has "$(kid "$PUB_A")"
	snap "$WORK/out" | grep -v '/\.stage-stamp$' >out.after
	grep -v '/\.stage-stamp$' out.before | diff - out.after
}

@test "c9: a template changed in place re-renders; an input file the plan loads (component, override) too" {
	cp -R "$WB_SRC/recipes/templates" tmpl
	export WINBUILD_TEMPLATES="$WORK/tmpl"
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	sed -i 's/^name: demo$/name: cloudbase-init/' components/demo.yaml
	mv components/demo.yaml components/cloudbase-init.yaml
	sed -i 's/  demo: {}/  cloudbase-init: {}/' img.yaml
	printf 'kind: override\nvars: {site: one}\n' >o.yaml
	stage_twice img.yaml -O o.yaml
	# provider auto: one conf pair per builder's provider (azure for azure-arm)
	conf=out/t/tree/ProgramData/winbuild/cloudbase-init/azure/cloudbase-init.conf
	grep -q . "$conf"
	printf '# redteam-marker\n' >>tmpl/cloudbase-init/cloudbase-init.conf
	wb stage img.yaml -O o.yaml --no-progress
	assert_status 0
	assert_output_lacks "up to date"
	grep -q redteam-marker "$conf"
	# the override's content (same path) and the component file's
	printf 'kind: override\nvars: {site: two}\n' >o.yaml
	wb stage img.yaml -O o.yaml --no-progress
	assert_status 0
	assert_output_lacks "up to date"
	printf '# edited\n' >>components/cloudbase-init.yaml
	wb stage img.yaml -O o.yaml --no-progress
	assert_status 0
	assert_output_lacks "up to date"
}

@test "c9/c10: a template deep in the tree is covered; past 64 levels the check says so and stages" {
	cp -R "$WB_SRC/recipes/templates" tmpl
	export WINBUILD_TEMPLATES="$WORK/tmpl"
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	d=tmpl/deep
	for i in $(seq 10); do d="$d/d"; done
	mkdir -p "$d"
	echo one >"$d/t.conf"
	stage_twice img.yaml
	echo two >"$d/t.conf"     # ten levels down, same path
	wb stage img.yaml --no-progress
	assert_status 0
	assert_output_lacks "up to date"
	snap "$WORK/out" >out.before
	# past the walk's limit: a warning and a stage, never a stale "up to date"
	d=tmpl/deeper
	for i in $(seq 70); do d="$d/d"; done
	mkdir -p "$d"
	echo x >"$d/t.conf"
	for run in 1 2; do
		wb stage img.yaml --no-progress
		assert_status 0
		assert_output_has "warning: cannot tell whether the stage is up to date"
		assert_output_has "is nested deeper than 64 directories"
		assert_output_lacks "up to date:"
	done
	[ ! -e out/t/.stage-stamp ]
	[ -f out/t/tree/k/a ]
	cmp out/t/tree/k/a "$WWW/a.bin"
}

@test "c10: plan values with keys longer than 1 KiB are kept whole, never cut into each other" {
	good_first
	long=$(printf 'k%.0s' $(seq 1100))
	printf 'vars:\n  ? %sA\n  : one\n  ? %sB\n  : two\n' "$long" "$long" >>img.yaml
	wb plan img.yaml --json
	assert_status 0
	python3 -c 'import json,sys
v = {x["key"]: x["value"] for x in json.loads(sys.stdin.read())["values"]}
l = "k" * 1100
assert v.get("vars." + l + "A") == "one" and v.get("vars." + l + "B") == "two", [k[-8:] for k in v]' <<<"$output"
	wb plan img.yaml --explain
	assert_status 0
	snap "$WINBUILD_CACHE" >cache.after
	diff cache.before cache.after
	cmp good.lock t.lock
}

@test "c4: a later layer cannot turn off or replace an override's per-component Authenticode settings" {
	ac_good_first
	# the override narrows component demo to the Test Root CA and requires
	# signatures; a --set tries to swap the roots and turn require off
	ac_recipe '{roots: roots.pem}' '' hello.exe other.exe
	printf 'components:\n  demo:\n    authenticode: {require: true, roots: ca.pem}\n' >>site/ac.yaml
	wb stage img.yaml -O site/ac.yaml --set components.demo.authenticode.roots=comp/other-ca.pem \
		--set components.demo.authenticode.require=false --no-progress
	assert_status 1
	assert_output_has "authenticode: artifact 'hello-exe': 'k/hello.exe': not signed"
	ac_intact
	wb stage img.yaml -O site/ac.yaml --set components.demo.authenticode.roots=comp/other-ca.pem \
		--set components.demo.authenticode.require=false --no-progress -o out3
	assert_status 1
	[ ! -e out3/t/tree ]
	ac_recipe '{roots: roots.pem}' '' other.exe
	printf 'components:\n  demo:\n    authenticode: {require: true, roots: ca.pem}\n' >>site/ac.yaml
	wb stage img.yaml -O site/ac.yaml --set components.demo.authenticode.roots=comp/other-ca.pem --no-progress
	assert_status 1
	assert_output_has "'k/other.exe': signer 'CN=Other CA Signer'"
	ac_intact
	# a bad map in a replaced layer is still refused
	wb plan img.yaml -O site/ac.yaml --set 'components.demo.authenticode={roots: comp/other-ca.pem}'
	assert_status 0
	printf 'kind: override\ncomponents:\n  demo:\n    authenticode: {roots: [a, b]}\n' >site/bad.yaml
	wb plan img.yaml -O site/ac.yaml -O site/bad.yaml --set components.demo.authenticode.roots=comp/other-ca.pem
	assert_status 2
	assert_output_has "site/bad.yaml:4:"
}

# ---- issue 25 class 5: a key's flags only tighten ---------------------------
# The site pins key A with its defaults (file check on, legacy refused). A
# component (or a lower layer) that lists the same key with file_check:
# false or allow_legacy: true declares a looser requirement of its own; it
# never stands in for the site's, which is kept and ANDed.

# site_a: an override requiring key A with its defaults
site_a() { printf 'kind: override\nsignatures:\n  keys: [{key: %s}]\n' "$PUB_A" >site.yaml; }

@test "c25.5: a component's file_check: false on the site's key does not turn off the site's file check" {
	good_first
	site_a
	# c.bin is validly signed by A, for another file (file:other.bin)
	art a "$(H)/c.bin" "minisign: {keys: [{key: $PUB_A, file_check: false}]}" | recipe
	wb fetch img.yaml -O site.yaml --no-progress
	assert_status 1
	assert_output_has "signature required by site.yaml:3:3"
	assert_output_has "other.bin"
	intact
	# the plan keeps both requirements, the site's with its file check
	"$WINBUILD" plan img.yaml -O site.yaml --json >plan.json
	python3 - plan.json <<-'PY'
		import json, sys
		v = json.load(open(sys.argv[1]))["artifacts"][0]["verify"]
		assert v["minisign"]["keys"][0]["file_check"] is False, v
		assert [k["file_check"] for q in v["minisign_also"] for k in q["keys"]] == [True], v
	PY
	# without the site's override the component's own choice stands
	wb fetch img.yaml --no-progress
	assert_status 0
}

@test "c25.5: a component's allow_legacy: true on the site's key does not let a legacy signature through" {
	good_first
	site_a
	art a "$(H)/l.bin" "minisign: {keys: [{key: $PUB_A, allow_legacy: true}]}" | recipe
	wb fetch img.yaml -O site.yaml --no-progress
	assert_status 1
	assert_output_has "signature required by site.yaml:3:3"
	assert_output_has "legacy"
	intact
	[ ! -e out ]
}

@test "c25.5: the image recipe's signatures with file_check: false do not absorb the override's same key" {
	good_first
	site_a
	# the component pins c.bin's digest only; the image recipe adds key A
	# without the file check, the site key A with it
	art a "$(H)/c.bin" "sha256: $(sha256sum "$WWW/c.bin" | cut -d' ' -f1)" | recipe
	printf 'signatures:\n  keys: [{key: %s, file_check: false}]\n' "$PUB_A" >>img.yaml
	wb fetch img.yaml -O site.yaml --no-progress
	assert_status 1
	assert_output_has "signature required by site.yaml:3:3"
	assert_output_has "other.bin"
	intact
	# same flags: one requirement, not two (the dedup still works)
	art a "$(H)/a.bin" "$(key "$PUB_A")" | recipe
	"$WINBUILD" plan img.yaml -O site.yaml --json >plan.json
	python3 - plan.json <<-'PY'
		import json, sys
		v = json.load(open(sys.argv[1]))["artifacts"][0]["verify"]
		assert "minisign_also" not in v or v["minisign_also"] == [], v
	PY
}
