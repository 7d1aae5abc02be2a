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
	! cmp -s corp.yaml "$WB_SRC/overrides/enterprise-mirror.yaml"
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
