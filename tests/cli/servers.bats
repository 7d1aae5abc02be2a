#!/usr/bin/env bats
# The test servers themselves (tests/lib/servers.bash, tests/lib/faultd.py)
# behave as documented, checked with curl as the client. Other bats files
# rely on this behaviour to test winbuild's downloader.
load helpers
load ../lib/servers

setup_file() {
	WWW="$BATS_FILE_TMPDIR/www"
	mkdir -p "$WWW/sub"
	head -c 262144 /dev/urandom >"$WWW/big.bin"
	echo hello >"$WWW/hello.txt"
	echo nested >"$WWW/sub/n.txt"
	export WWW CA="$BATS_FILE_TMPDIR/ca"
	make_test_ca "$CA"
	start_nginx "$WWW" "$CA"
	start_faultd "$WWW"
}

teardown_file() {
	stop_servers
}

# servers a test starts itself (this shell's list only: not setup_file's)
teardown() {
	stop_servers
}

# refute CMD...: CMD must fail (a bare "! cmd" does not fail a bats test)
refute() {
	if "$@"; then
		echo "unexpectedly succeeded: $*" >&2
		return 1
	fi
}

# body TARGET [CURLOPTS...]: GET faultd TARGET into $WORK/body, status in $status
body() {
	local t="$1"
	shift
	run curl -sS -o "$WORK/body" "$@" "$FAULTD_URL$t"
}

size() { stat -c %s "$1"; }

# --- nginx --------------------------------------------------------------

@test "nginx: HTTP serves a file on 127.0.0.1 and logs it" {
	run curl -sS -o "$WORK/got" "http://127.0.0.1:$NGINX_PORT/big.bin"
	assert_status 0
	cmp "$WORK/got" "$WWW/big.bin"
	grep -qF '"GET /big.bin HTTP/1.1" 200 "-" 262144' "$NGINX_LOG"
	# bound to loopback only
	run grep -c 'listen 127.0.0.1:' "$NGINX_DIR/nginx.conf"
	[ "$output" -eq 2 ]
	refute grep -E 'listen +([0-9]+|\*|0\.0\.0\.0|\[::\])[:; ]' "$NGINX_DIR/nginx.conf"
}

@test "nginx: Range is honoured and the Range header is logged" {
	run curl -sS -o "$WORK/tail" -w '%{http_code}' -r 262000- "http://127.0.0.1:$NGINX_PORT/big.bin"
	assert_status 0
	[ "$output" = 206 ]
	[ "$(size "$WORK/tail")" -eq 144 ]
	cmp "$WORK/tail" <(tail -c 144 "$WWW/big.bin")
	grep -qF '"GET /big.bin HTTP/1.1" 206 "bytes=262000-" 144' "$NGINX_LOG"
}

@test "nginx: HTTPS works with the test CA, by name and by IP" {
	run curl -sS --cacert "$CA/ca.crt" "https://localhost:$NGINX_TLS_PORT/hello.txt"
	assert_status 0
	[ "$output" = hello ]
	run curl -sS --cacert "$CA/ca.crt" "https://127.0.0.1:$NGINX_TLS_PORT/sub/n.txt"
	assert_status 0
	[ "$output" = nested ]
}

@test "nginx: HTTPS fails without the test CA" {
	run curl -sS "https://localhost:$NGINX_TLS_PORT/hello.txt"
	assert_status 60
}

@test "nginx: expired and wrong-host certificates are rejected" {
	start_nginx "$WWW" "$CA" expired
	run curl -sS --cacert "$CA/ca.crt" "https://localhost:$NGINX_TLS_PORT/hello.txt"
	assert_status 60
	assert_output_has "expired"
	stop_nginx

	start_nginx "$WWW" "$CA" wrong
	run curl -sS --cacert "$CA/ca.crt" "https://localhost:$NGINX_TLS_PORT/hello.txt"
	assert_status 60
	assert_output_has "localhost"
	# the same cert is fine for the name it was issued to
	run curl -sS --cacert "$CA/ca.crt" --resolve "wrong.example:$NGINX_TLS_PORT:127.0.0.1" \
		"https://wrong.example:$NGINX_TLS_PORT/hello.txt"
	assert_status 0
	stop_nginx
}

@test "nginx: stop_nginx leaves no process and frees the port" {
	start_nginx "$WWW"
	local pid="$NGINX_PID" wrapper="$_NGINX_WRAPPER_PID" port="$NGINX_PORT"
	[ -z "$NGINX_TLS_PORT" ]
	kill -0 "$pid"
	stop_nginx
	refute kill -0 "$pid" 2>/dev/null
	refute kill -0 "$wrapper" 2>/dev/null
	run curl -sS "http://127.0.0.1:$port/"
	assert_status 7
}

@test "nginx: NGINX_IPV6=1 also listens on [::1]" {
	"$(_wb_python)" -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null ||
		skip "no IPv6 loopback"
	NGINX_IPV6=1 start_nginx "$WWW" "$CA"
	run curl -sS -g "http://[::1]:$NGINX_PORT/hello.txt"
	assert_status 0
	[ "$output" = hello ]
	run curl -sS -g --cacert "$CA/ca.crt" "https://[::1]:$NGINX_TLS_PORT/hello.txt"
	assert_status 0
	[ "$output" = hello ]
	stop_nginx
}

# --- faultd -------------------------------------------------------------

@test "faultd: plain path serves the file, Range gives 206, and is logged" {
	body /big.bin
	assert_status 0
	cmp "$WORK/body" "$WWW/big.bin"
	run curl -sS -o "$WORK/tail" -w '%{http_code}' -H 'Range: bytes=262100-' "$FAULTD_URL/big.bin"
	[ "$output" = 206 ]
	cmp "$WORK/tail" <(tail -c 44 "$WWW/big.bin")
	grep -qxF '"GET /big.bin HTTP/1.1" 200 "-" -' "$FAULTD_LOG"
	grep -qxF '"GET /big.bin HTTP/1.1" 206 "bytes=262100-" -' "$FAULTD_LOG"
	run curl -s -o /dev/null -w '%{http_code}' "$FAULTD_URL/nope.bin"
	[ "$output" = 404 ]
	run curl -s -o /dev/null -w '%{http_code}' --path-as-is "$FAULTD_URL/../etc/passwd"
	[ "$output" = 400 ]
}

@test "faultd: /reset/ resets the first request mid-body; a Range resume succeeds" {
	body /reset/big.bin
	assert_status 56
	assert_output_has "reset"
	local got
	got=$(size "$WORK/body")
	[ "$got" -gt 0 ] && [ "$got" -lt 262144 ]
	# resume: the second request for the path is served, from the offset
	run curl -sS -C - -o "$WORK/body" "$FAULTD_URL/reset/big.bin"
	assert_status 0
	cmp "$WORK/body" "$WWW/big.bin"
	grep -qxF '"GET /reset/big.bin HTTP/1.1" 200 "-" reset' "$FAULTD_LOG"
	grep -qxF "\"GET /reset/big.bin HTTP/1.1\" 206 \"bytes=$got-\" -" "$FAULTD_LOG"
	# a query string gives a fresh counter
	body '/reset/big.bin?t=2'
	assert_status 56
}

@test "faultd: /truncate/ and /closeearly/ give a short body (curl 18)" {
	body /truncate/big.bin
	assert_status 18
	[ "$(size "$WORK/body")" -eq 131072 ]
	body /closeearly/big.bin
	assert_status 18
	[ "$(size "$WORK/body")" -eq 262143 ]
}

@test "faultd: /badlength/ promises more than it sends (curl 18)" {
	body /badlength/hello.txt
	assert_status 18
	assert_output_has "1000 bytes remaining"
	[ "$(cat "$WORK/body")" = hello ]
}

@test "faultd: /500then200/ and /5xx-N/ fail N times, then serve" {
	body /500then200/hello.txt -f
	assert_status 22
	body /500then200/hello.txt -f
	assert_status 0
	[ "$(cat "$WORK/body")" = hello ]
	body /5xx-2/hello.txt -f
	assert_status 22
	body /5xx-2/hello.txt -f
	assert_status 22
	body /5xx-2/hello.txt -f
	assert_status 0
	[ "$(grep -c '"GET /5xx-2/hello.txt HTTP/1.1" 500 ' "$FAULTD_LOG")" -eq 2 ]
}

@test "faultd: /always500/ and /404/ never serve" {
	local i
	for i in 1 2 3; do
		run curl -s -o /dev/null -w '%{http_code}' "$FAULTD_URL/always500/hello.txt"
		[ "$output" = 500 ]
	done
	run curl -s -o /dev/null -w '%{http_code}' "$FAULTD_URL/404/hello.txt"
	[ "$output" = 404 ]
}

@test "faultd: /redirect/ leads to the plain path; /redirloop/ never ends (curl 47)" {
	body /redirect/hello.txt -L
	assert_status 0
	[ "$(cat "$WORK/body")" = hello ]
	grep -qxF '"GET /redirect/hello.txt HTTP/1.1" 302 "-" redirect' "$FAULTD_LOG"
	body /redirloop/x -L --max-redirs 5
	assert_status 47
}

@test "faultd: /hugeheaders/ sends a header curl refuses" {
	body /hugeheaders/hello.txt
	[ "$status" -ne 0 ]
	grep -qF '"GET /hugeheaders/hello.txt HTTP/1.1" 200' "$FAULTD_LOG"
}

@test "faultd: /endless/ and /endless-chunked/ never end (stopped by a timeout)" {
	run curl -sS -o /dev/null -w '%{size_download}' --max-time 0.5 "$FAULTD_URL/endless/hello.txt"
	assert_status 28
	[ "${output##*$'\n'}" -gt 1048576 ]
	run curl -sS -o /dev/null -w '%{size_download}' --max-time 0.5 "$FAULTD_URL/endless-chunked/hello.txt"
	assert_status 28
	[ "${output##*$'\n'}" -gt 1048576 ]
}

@test "faultd: /slow/ trips curl's --speed-limit (curl 28)" {
	body /slow/big.bin --speed-limit 1000 --speed-time 1
	assert_status 28
	assert_output_has "too slow"
	[ "$(size "$WORK/body")" -lt 100 ]
}

@test "faultd: binds [::1] when asked; stop_faultd leaves no process" {
	"$(_wb_python)" -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null ||
		skip "no IPv6 loopback"
	start_faultd "$WWW" ::1
	local pid="$FAULTD_PID"
	[ "$FAULTD_URL" = "http://[::1]:$FAULTD_PORT" ]
	run curl -sS -g "$FAULTD_URL/hello.txt"
	assert_status 0
	[ "$output" = hello ]
	run curl -sS "http://127.0.0.1:$FAULTD_PORT/hello.txt"
	[ "$status" -ne 0 ]
	stop_faultd
	refute kill -0 "$pid" 2>/dev/null
}

@test "faultd: exits by itself after its --timeout" {
	local d="$BATS_TEST_TMPDIR/fd"
	mkdir -p "$d"
	"$(_wb_python)" "$WB_SRC/tests/lib/faultd.py" --root "$WWW" --port-file "$d/port" \
		--timeout 0.3 </dev/null >/dev/null 2>&1 3>&- &
	local pid=$! i
	for ((i = 0; i < 40; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	refute kill -0 "$pid" 2>/dev/null
}

@test "closed_port: nothing listens there (curl 7)" {
	local p
	p=$(closed_port)
	[ "$p" -gt 0 ]
	run curl -sS "http://127.0.0.1:$p/"
	assert_status 7
}
