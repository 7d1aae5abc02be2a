#!/usr/bin/env bats
# winbuild mirror: the upstream-path layout with checksums, signatures and
# index.json; an air-gapped fetch from it (upstream on a closed port,
# mirror_only); a mirror re-signed with an enterprise key.
load helpers
load ../lib/servers
load fetch_fixtures

setup_file() {
	make_fixtures "$BATS_FILE_TMPDIR"
	start_nginx "$WWW"
	export UP_PORT=$NGINX_PORT
	minisign -G -W -p "$KEYS/ent.pub" -s "$KEYS/ent.key" </dev/null >/dev/null
	export PUB_ENT
	PUB_ENT=$(tail -n1 "$KEYS/ent.pub")
}

teardown_file() { stop_servers; }

setup() {
	common_setup
	CLOSED=$(closed_port)
	U="http://127.0.0.1:$CLOSED"
	# the recipe's upstream is unreachable; the fixture server stands in
	# for it while the mirror is written
	recipe <<-EOF
		$(art a.bin "$U/a.bin" "minisign: {keys: [{key: $PUB_A}]}")
		$(art b.bin "$U/b.bin" "minisign: {keys: [{key: $PUB_A}]}")
		$(art u.bin "$U/u.bin" 'sha256_url: "${url}.sha256"')
	EOF
	printf 'kind: override\nmirrors:\n  - {from: "%s/", to: "http://127.0.0.1:%s/"}\n' \
		"$U" "$UP_PORT" >upstream.yaml
}

# airgap.yaml: mirror_only, every upstream URL to the mirror served on PORT
airgap() {
	printf 'kind: override\nmirror_only: true\nmirrors:\n' >airgap.yaml
	printf '  - {from: "%s/", to: "http://127.0.0.1:%s/127.0.0.1_%s/"}\n' \
		"$U" "$1" "$CLOSED" >>airgap.yaml
	printf '%s' "${2:-}" >>airgap.yaml
}

@test "mirror writes <host>_<port>/<path> (no ':' in any name) with checksum files, signatures and index.json" {
	wb mirror img.yaml M -O upstream.yaml --no-progress
	assert_status 0
	assert_output_has "3 artifacts, 2 signatures"
	d="M/127.0.0.1_$CLOSED"
	[ -z "$(find M -name '*:*')" ]
	cmp "$d/a.bin" "$WWW/a.bin"
	cmp "$d/a.bin.minisig" "$WWW/a.bin.minisig"
	cmp "$d/u.bin" "$WWW/u.bin"
	(cd "$d" && sha256sum -c a.bin.sha256 && sha256sum -c u.bin.sha256 && sha512sum -c u.bin.sha512)
	minisign -V -p "$KEYS/a.pub" -m "$d/b.bin" >/dev/null
	python3 - M/index.json "$CLOSED" <<-'PY'
		import json, sys
		ix = json.load(open(sys.argv[1]))
		names = [a["name"] for a in ix["artifacts"]]
		assert names == ["a.bin", "b.bin", "u.bin"], names
		a = ix["artifacts"][0]
		assert a["path"] == f"127.0.0.1_{sys.argv[2]}/a.bin"
		assert a["signatures"] == [a["path"] + ".minisig"]
		assert ix["signed_by"] is None
	PY
}

@test "air gap: a fetch from the written mirror with upstream on a closed port and mirror_only" {
	wb mirror img.yaml M -O upstream.yaml --no-progress
	assert_status 0
	start_nginx M
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	wb fetch img.yaml --no-progress
	assert_status 3      # upstream is unreachable
	airgap "$NGINX_PORT"
	"$WINBUILD" plan img.yaml -O airgap.yaml --json >plan.json
	python3 - plan.json "$NGINX_PORT" <<-'PY'
		import json, sys   # mirror_only: only mirror URLs are tried
		for a in json.load(open(sys.argv[1]))["artifacts"]:
		    for u in a["urls"] + a["verify"]["sha256_urls"] + (a["verify"]["minisign"] or {"urls": []})["urls"]:
		        assert u.startswith(f"http://127.0.0.1:{sys.argv[2]}/"), u
	PY
	wb fetch img.yaml -O airgap.yaml --no-progress
	assert_status 0
	[ "$(nginx_requests "/127.0.0.1_$CLOSED/a.bin")" -ge 1 ]
	[ "$(nginx_requests "/127.0.0.1_$CLOSED/a.bin.minisig")" -ge 1 ]
	[ "$(nginx_requests "/127.0.0.1_$CLOSED/u.bin.sha256")" -ge 1 ]
	stop_nginx
}

@test "air gap with a site signature: the mirror carries the further signature at its own URL" {
	for f in a.bin b.bin u.bin; do
		minisign -S -s "$KEYS/ent.key" -m "$WWW/$f" -x "$WWW/$f.site.minisig" </dev/null >/dev/null
	done
	printf 'kind: override\nsignatures:\n  url: "${url}.site.minisig"\n  keys: [{key: %s}]\n' \
		"$PUB_ENT" >site.yaml
	wb mirror img.yaml M -O upstream.yaml -O site.yaml --no-progress
	assert_status 0
	d="M/127.0.0.1_$CLOSED"
	for f in a.bin b.bin u.bin; do cmp "$d/$f.site.minisig" "$WWW/$f.site.minisig"; done
	cmp "$d/a.bin.minisig" "$WWW/a.bin.minisig"
	python3 - M/index.json <<-'PY'
		import json, sys
		a = json.load(open(sys.argv[1]))["artifacts"][0]
		assert a["signatures"] == [a["path"] + ".minisig", a["path"] + ".site.minisig"], a
	PY
	start_nginx M
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	airgap "$NGINX_PORT"
	wb fetch img.yaml -O site.yaml -O airgap.yaml --no-progress
	assert_status 0
	assert_output_has "and minisign key"
	# a mirror whose site signature was swapped for another file's is refused
	cp "$d/b.bin.site.minisig" "$d/a.bin.site.minisig"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache3"
	wb fetch img.yaml -O site.yaml -O airgap.yaml --no-progress
	assert_status 1
	assert_output_has "a.bin.site.minisig"
	[ -z "$(find "$WINBUILD_CACHE/sha256" -name "$(sha256sum "$WWW/a.bin" | cut -c1-64)" 2>/dev/null)" ]
}

@test "a re-signed mirror passes require: signature with the enterprise key and fails with another" {
	wb mirror img.yaml M -O upstream.yaml --sign "$KEYS/ent.key" --no-progress
	assert_status 0
	assert_output_has "3 signatures (re-signed)"
	minisign -V -p "$KEYS/ent.pub" -m "M/127.0.0.1_$CLOSED/u.bin" >/dev/null
	start_nginx M
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache-ent"
	# the recipe trusts upstream key A for a.bin/b.bin; the site trusts only
	# its own key for every artifact
	airgap "$NGINX_PORT" "$(printf 'policy: {require: signature}\nsignatures: {keys: [{key: %s}]}\n' "$PUB_ENT")"
	python3 - "$WORK/components/demo.yaml" <<-'PY'
		import re, sys
		p = sys.argv[1]; s = open(p).read()
		s = re.sub(r"minisign: \{keys: \[\{key: [^}]*\}\]\}", 'sha256_url: "${url}.sha256"', s)
		open(p, "w").write(s)
	PY
	wb fetch img.yaml -O airgap.yaml --no-progress
	assert_status 0
	kid=$(python3 -c 'import base64,sys; print(base64.b64decode(sys.argv[1])[2:10][::-1].hex().upper())' "$PUB_ENT")
	assert_output_has "minisign key $kid"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache-other"
	airgap "$NGINX_PORT" "$(printf 'policy: {require: signature}\nsignatures: {keys: [{key: %s}]}\n' "$PUB_B")"
	wb fetch img.yaml -O airgap.yaml --no-progress
	assert_status 1
	stop_nginx
}

@test "mirror --sign refuses an encrypted or malformed key (exit 2) and needs RECIPE DIR" {
	echo "untrusted comment: x" >bad.key
	echo "AAAA" >>bad.key
	wb mirror img.yaml M --sign bad.key
	assert_status 2
	assert_output_has "secret key"
	wb mirror img.yaml
	assert_status 2
}

@test "mirror and stage read SOURCE_DATE_EPOCH with one parser: a bad value is exit 2 for both, nothing fetched or written" {
	for v in soon 12x -1 253402300800; do
		SOURCE_DATE_EPOCH=$v wb mirror img.yaml M -O upstream.yaml --no-progress
		assert_status 2
		assert_output_has "SOURCE_DATE_EPOCH '$v' is not a number of seconds since 1970"
		[ ! -e M ]
		SOURCE_DATE_EPOCH=$v wb stage img.yaml -O upstream.yaml --no-progress
		assert_status 2
		assert_output_has "SOURCE_DATE_EPOCH '$v' is not a number of seconds since 1970"
		[ ! -e out ]
	done
	# unset or a number: the mirror is written
	SOURCE_DATE_EPOCH=1700000000 wb mirror img.yaml M -O upstream.yaml --no-progress
	assert_status 0
}

@test "issue 41: two artifacts checked against one SHA256SUMS get one file in the mirror holding both lines; the export fetches --offline" {
	recipe <<-EOF
		$(art a.bin "$U/a.bin" "sha256_url: $U/SHA256SUMS")
		$(art b.bin "$U/b.bin" "sha256_url: $U/SHA256SUMS")
	EOF
	wb mirror img.yaml M -O upstream.yaml --no-progress
	assert_status 0
	d="M/127.0.0.1_$CLOSED"
	grep -q "^$(sha_of a.bin)  a.bin\$" "$d/SHA256SUMS"
	grep -q "^$(sha_of b.bin)  b.bin\$" "$d/SHA256SUMS"
	[ "$(wc -l <"$d/SHA256SUMS")" -eq 2 ]
	(cd "$d" && sha256sum -c SHA256SUMS)
	# the export alone, as file:// under --offline, with a new cache
	printf 'kind: override\nmirror_only: true\nmirrors:\n  - {from: "%s/", to: "file://%s/"}\n' \
		"$U" "$PWD/$d" >files.yaml
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	wb fetch img.yaml -O files.yaml --offline --no-progress
	assert_status 0
	assert_output_has "fetched a.bin"
	assert_output_has "fetched b.bin"
	# a second export over the first (mirror run again) still holds both
	wb mirror img.yaml M -O upstream.yaml --no-progress
	assert_status 0
	[ "$(wc -l <"$d/SHA256SUMS")" -eq 2 ]
}

# issue 42 (air gap): an export written through the corporate mirror
# (mirror_only: every URL of the plan is a mirror rule's rewrite) carries
# every file the recipe names at its upstream path, as one written from
# upstream does: a checksum file under another name (SHA256SUMS here;
# containerd's .intoto.jsonl attestation is the same class: files whose
# name is not <artifact><suffix> were written only at non-mirrored URLs).
# The export then fetches --offline by its own file:// override.
@test "issue 42: an export written under mirror_only holds the files named at upstream URLs (a SHA256SUMS), and fetches offline" {
	recipe <<-EOF
		$(art a.bin "$U/a.bin" "sha256_url: $U/SHA256SUMS")
		$(art b.bin "$U/b.bin" "minisign: {keys: [{key: $PUB_A}]}")
	EOF
	{ cat upstream.yaml; printf 'mirror_only: true\n'; } >corp.yaml
	wb mirror img.yaml M -O corp.yaml --no-progress
	assert_status 0
	d="M/127.0.0.1_$CLOSED"
	grep -q "^$(sha_of a.bin)  a.bin\$" "$d/SHA256SUMS"
	cmp "$d/b.bin.minisig" "$WWW/b.bin.minisig"
	printf 'kind: override\nmirror_only: true\nmirrors:\n  - {from: "%s/", to: "file://%s/"}\n' \
		"$U" "$PWD/$d" >files.yaml
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	wb fetch img.yaml -O files.yaml --offline --no-progress
	assert_status 0
	assert_output_has "fetched a.bin"
	assert_output_has "fetched b.bin"
}
