#!/usr/bin/env bats
# Issue 42 item 4: the proxy variables a CI runner sets, as libcurl reads
# them (CURLOPT_PROXY's documentation, "Environment variables"): http_proxy
# (lower case only: the upper-case HTTP_PROXY is ignored for http://, the
# "httpoxy" rule), HTTPS_PROXY or https_proxy, NO_PROXY or no_proxy, each
# through Debian's tinyproxy on loopback. The proxy sees an https download
# only as a CONNECT to its host and port; a proxy password in the variable
# is shown and written nowhere. docs/winbuild.1, ENVIRONMENT.
load helpers
load ../lib/servers
load fetch_fixtures

setup_file() {
	need_dep command -v tinyproxy -- "tinyproxy not installed (make deps)"
	make_fixtures "$BATS_FILE_TMPDIR"
	make_test_ca "$CA"
	start_nginx "$WWW" "$CA"
}

teardown_file() { stop_servers; }

# each test's own proxy stops with it (setup_file's nginx with the file)
teardown() { stop_servers; }

setup() {
	common_setup
	unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY no_proxy ALL_PROXY all_proxy
}


proxied() { grep -c "Request (file descriptor [0-9]*): $1" "$PROXY_LOG" || true; }

@test "http_proxy carries an http download, NO_PROXY skips it, the upper-case HTTP_PROXY is ignored for http://" {
	start_tinyproxy
	art a "$(H)/a.bin" "sha256_url: $(H)/a.bin.sha256" | recipe
	http_proxy="http://127.0.0.1:$PROXY_PORT" run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
	[ "$(proxied "GET $(H)/a.bin HTTP")" -eq 1 ]
	[ "$(proxied "GET $(H)/a.bin.sha256 HTTP")" -eq 1 ]
	rm -rf "$WINBUILD_CACHE"
	http_proxy="http://127.0.0.1:$PROXY_PORT" NO_PROXY=127.0.0.1 run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
	[ "$(proxied "GET $(H)/a.bin HTTP")" -eq 1 ]
	rm -rf "$WINBUILD_CACHE"
	HTTP_PROXY="http://127.0.0.1:$PROXY_PORT" run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
	[ "$(proxied "GET $(H)/a.bin HTTP")" -eq 1 ]
}

@test "HTTPS_PROXY: the proxy sees only a CONNECT to the host and port, never the path; the bytes still verified" {
	start_tinyproxy
	art a "https://localhost:$NGINX_TLS_PORT/a.bin" "sha256: $(sha_of a.bin)" | recipe
	HTTPS_PROXY="http://127.0.0.1:$PROXY_PORT" run "$WINBUILD" fetch img.yaml --cacert "$CA/ca.crt" --no-progress
	assert_status 0
	assert_output_has "fetched a"
	[ "$(proxied "CONNECT localhost:$NGINX_TLS_PORT HTTP")" -ge 1 ]
	! grep -q "a.bin" "$PROXY_LOG" || false
	# through the proxy, bytes that do not verify are still refused
	art a "https://localhost:$NGINX_TLS_PORT/a.bin" "sha256: $(sha_of b.bin)" | recipe
	rm -rf "$WINBUILD_CACHE"
	HTTPS_PROXY="http://127.0.0.1:$PROXY_PORT" run "$WINBUILD" fetch img.yaml --cacert "$CA/ca.crt" --no-progress
	assert_status 1
}

@test "a proxy password in HTTPS_PROXY is used, and shown or written nowhere; a wrong one fails (exit 3) without it" {
	start_tinyproxy wbproxy 'Pr0xy-S3cret'
	art a "https://localhost:$NGINX_TLS_PORT/a.bin" "sha256: $(sha_of a.bin)" | recipe
	HTTPS_PROXY="http://wbproxy:Pr0xy-S3cret@127.0.0.1:$PROXY_PORT" run "$WINBUILD" lock img.yaml \
		--cacert "$CA/ca.crt" --no-progress -v -v --json
	assert_status 0
	[ "$(proxied "CONNECT localhost:$NGINX_TLS_PORT HTTP")" -ge 1 ]
	[[ "$output" != *Pr0xy-S3cret* ]]
	! grep -rqaF Pr0xy-S3cret ./*.lock "$WINBUILD_CACHE" || false
	rm -rf "$WINBUILD_CACHE"
	HTTPS_PROXY="http://wbproxy:Wr0ng-S3cret@127.0.0.1:$PROXY_PORT" run "$WINBUILD" fetch img.yaml \
		--cacert "$CA/ca.crt" --no-progress -v -v
	assert_status 3
	[[ "$output" != *Wr0ng-S3cret* ]]
}
