#!/usr/bin/env bats
# Air gap end to end: `winbuild mirror` -> serve the export -> fetch with the
# shipped overrides/enterprise-mirror.yaml pointed at the served export.
load helpers
load ../lib/servers
load fetch_fixtures

setup_file() {
	make_fixtures "$BATS_FILE_TMPDIR"
	make_test_ca "$CA"
	start_nginx "$WWW"
	export UP_PORT=$NGINX_PORT
}

teardown_file() { stop_servers; }

setup() {
	common_setup
	GH=https://github.com/acme/tool/releases/download/v1
	K8=https://dl.k8s.io/release/v1/bin
	recipe <<-EOF
		$(art a.bin "$GH/a.bin" "minisign: {keys: [{key: $PUB_A}]}")
		$(art u.bin "$K8/u.bin" 'sha256_url: "${url}.sha256"')
	EOF
	# the fixture server stands in for github.com and dl.k8s.io while the
	# mirror is written
	printf 'kind: override\nmirrors:\n  - {from: "%s/", to: "http://127.0.0.1:%s/"}\n  - {from: "%s/", to: "http://127.0.0.1:%s/"}\n' \
		"$GH" "$UP_PORT" "$K8" "$UP_PORT" >upstream.yaml
}

teardown() { stop_servers; }

# corp.yaml: the shipped enterprise-mirror.yaml, its host replaced by the
# HTTPS server on PORT (nothing else changed)
corp() {
	sed "s|https://artifacts.example.corp/|https://localhost:$1/|" \
		"$WB_SRC/overrides/enterprise-mirror.yaml" >corp.yaml
	! cmp -s corp.yaml "$WB_SRC/overrides/enterprise-mirror.yaml" || false
}

@test "round trip: mirror export, served over HTTPS, fetched with the shipped enterprise-mirror.yaml" {
	wb mirror img.yaml M -O upstream.yaml --no-progress
	assert_status 0
	[ -f M/github.com/acme/tool/releases/download/v1/a.bin ]
	start_nginx M "$CA"
	corp "$NGINX_TLS_PORT"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	wb fetch img.yaml -O corp.yaml --cacert "$CA/ca.crt" --no-progress
	assert_status 0
	[ "$(nginx_requests /github.com/acme/tool/releases/download/v1/a.bin)" -ge 1 ]
	[ "$(nginx_requests /github.com/acme/tool/releases/download/v1/a.bin.minisig)" -ge 1 ]
	[ "$(nginx_requests /dl.k8s.io/release/v1/bin/u.bin.sha256)" -ge 1 ]
	[ "$(find "$WINBUILD_CACHE/sha256" -type f | wc -l)" -ge 2 ]
	# and the stage from the mirrored bytes
	wb stage img.yaml -O corp.yaml --cacert "$CA/ca.crt" --no-progress
	assert_status 0
}

# --- air gap semantics (issue 18 item 4) -------------------------------------

# two.yaml: every upstream URL to a file:// mirror serving tampered bytes
# first, then the good HTTP mirror; $1: extra YAML (e.g. mirror_only)
two_mirrors() {
	mkdir -p bad
	cp "$WWW/a.bin" bad/a.bin
	flip_byte bad/a.bin 100
	BAD_SHA=$(sha256sum bad/a.bin | cut -d' ' -f1)
	printf 'kind: override\n%s\nmirrors:\n  - {from: "%s/", to: "file://%s/bad/"}\n  - {from: "%s/", to: "http://127.0.0.1:%s/"}\n' \
		"${1:-}" "$GH" "$WORK" "$GH" "$UP_PORT" >two.yaml
	recipe <<-EOF
		$(art a.bin "$GH/a.bin" "sha256: $(sha_of a.bin)")
	EOF
}

@test "strict mirror (mirror_only): a mirror serving bad bytes fails the build, naming URL, expected and actual digest" {
	two_mirrors 'mirror_only: true'
	before=$(nginx_requests /a.bin)
	wb fetch img.yaml -O two.yaml --no-progress
	assert_status 1
	assert_output_has "file://$WORK/bad/a.bin"
	assert_output_has "$(sha_of a.bin)"
	assert_output_has "$BAD_SHA"
	assert_output_has "strict mirror"
	[ "$(nginx_requests /a.bin)" -eq "$before" ]   # no fallback to the good mirror
	[ -z "$(find "$WINBUILD_CACHE" -path '*sha256/*' -type f 2>/dev/null)" ]
}

@test "default mirror mode: bad bytes on the first mirror fall back (with a warning naming it) and the good mirror is used" {
	two_mirrors ''
	wb fetch img.yaml -O two.yaml --no-progress
	assert_status 0
	assert_output_has "file://$WORK/bad/a.bin"
	assert_output_has "trying the next URL"
	[ -n "$(find "$WINBUILD_CACHE" -path '*sha256/*' -type f)" ]
}

# issue 44 item 5: one warning channel. The fetch engine's warnings went to
# stderr through the run's logger, past cmd_warnf, so --json's "warnings"
# (docs/json.md: every "winbuild: warning:" line) lacked them.
@test "--json carries the fetch engine's warnings: the mirror that served bad bytes is in \"warnings\"" {
	two_mirrors ''
	"$WINBUILD" fetch img.yaml -O two.yaml --no-progress --json >out.json 2>err.txt
	grep -q "^winbuild: warning: artifact 'a.bin' from 'file://$WORK/bad/a.bin' did not verify" err.txt
	# the same warning, whole (URL, expected and actual digest), in --json
	python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["warnings"]; sys.exit(0 if any(all(a in x for a in sys.argv[2:]) for x in w) else 1)' \
		out.json "file://$WORK/bad/a.bin" "$(sha_of a.bin)" "$BAD_SHA" "trying the next URL"
}

@test "every URL fails: the final error names the first verification failure, not only the last network error" {
	mkdir -p bad
	cp "$WWW/a.bin" bad/a.bin
	flip_byte bad/a.bin 100
	BAD_SHA=$(sha256sum bad/a.bin | cut -d' ' -f1)
	printf 'kind: override\nmirrors:\n  - {from: "%s/", to: "file://%s/bad/"}\n' "$GH" "$WORK" >bad.yaml
	recipe <<-EOF
		$(art a.bin "$GH/a.bin" "sha256: $(sha_of a.bin)")
	EOF
	WINBUILD_RETRIES=1 wb fetch img.yaml -O bad.yaml --no-progress
	assert_status 1
	# the final error (the warnings before it name the mismatch too)
	last=$(printf '%s\n' "$output" | sed -n '/every URL of the artifact failed/,$p')
	[[ "$last" == *"first verification failure"* ]]
	[[ "$last" == *"$BAD_SHA"* ]] || { echo "$output"; false; }
	[[ "$last" == *"$(sha_of a.bin)"* ]]
	[[ "$last" == *"file://$WORK/bad/a.bin"* ]]
}

@test "--offline is no network: a file:// URL is fetched, an http URL is not" {
	recipe <<-EOF
		$(art a.bin "file://$WWW/a.bin" "sha256: $(sha_of a.bin)")
		$(art b.bin "http://127.0.0.1:$UP_PORT/b.bin" "sha256: $(sha_of b.bin)")
	EOF
	before=$(nginx_requests /b.bin)
	wb fetch img.yaml --offline --no-progress
	assert_status 3
	assert_output_has "b.bin"
	assert_output_lacks "a.bin (file"
	[ "$(nginx_requests /b.bin)" -eq "$before" ]
	# a.bin came in from file:// although --offline
	wb fetch img.yaml --offline --no-progress
	[ "$(find "$WINBUILD_CACHE" -path '*sha256/*' -type f | wc -l)" -eq 1 ]
	recipe <<-EOF
		$(art a.bin "file://$WWW/a.bin" "sha256: $(sha_of a.bin)")
	EOF
	wb fetch img.yaml --offline --no-progress
	assert_status 0
}

@test "issue 28: air gap in one step: mirror writes the export's own override; moved elsewhere, no server running, a build uses only it" {
	wb mirror img.yaml M -O upstream.yaml --no-progress
	assert_status 0
	assert_output_has "air gap: winbuild build t -O M/winbuild-override.yaml"
	grep -q '^mirror_only: true$' M/winbuild-override.yaml
	grep -qF '{from: "https://github.com/", to: "file://${override_dir}/github.com/"}' M/winbuild-override.yaml
	grep -qF '{from: "https://dl.k8s.io/", to: "file://${override_dir}/dl.k8s.io/"}' M/winbuild-override.yaml
	# not the server the export was fetched through
	! grep -q 127.0.0.1 M/winbuild-override.yaml || false
	# moved, the servers stopped, a fresh cache: nothing but the export
	mkdir -p "$BATS_TEST_TMPDIR/elsewhere"
	mv M "$BATS_TEST_TMPDIR/elsewhere/export"
	stop_servers
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache-airgap"
	wb build img.yaml -O "$BATS_TEST_TMPDIR/elsewhere/export/winbuild-override.yaml" --builder azure-arm --no-progress
	assert_status 0
	assert_output_has "fetched a.bin"
	assert_output_has "minisign key"
	[ -f out/t/packer/t.pkr.hcl ]
	# the override is what makes it work: without it nothing is found offline
	rm -rf "$WINBUILD_CACHE" out
	wb fetch img.yaml --offline --no-progress
	assert_status 3
}
