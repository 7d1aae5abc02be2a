#!/usr/bin/env bats
# winbuild fetch: downloads, verification, cache, network faults, policy.
load helpers
load ../lib/servers
load fetch_fixtures

setup_file() {
	start_fetch_servers
}

teardown_file() {
	stop_servers
}

key() { echo "minisign: {keys: [{key: $1}]}"; }

@test "a good fetch verifies a minisign signature made by the minisign CLI" {
	art a "$(H)/a.bin" "$(key "$PUB_A")" | recipe
	wb fetch img.yaml
	assert_status 0
	assert_output_has "fetched a"
	assert_output_has "minisign key"
	[ "$(cache_files)" -eq 1 ]
	[ -f "$WINBUILD_CACHE/sha256/$(sha_of a.bin | cut -c1-2)/$(sha_of a.bin)" ]
	[ "$(tmp_files)" -eq 0 ]
}

@test "a cache hit makes no request (nginx log)" {
	art b "$(H)/b.bin" "$(key "$PUB_A")" "sha256: $(sha_of b.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
	before=$(wc -l <"$NGINX_LOG")
	wb fetch img.yaml
	assert_status 0
	assert_output_has "cached  b"
	[ "$(wc -l <"$NGINX_LOG")" -eq "$before" ]
}

@test "a pinned sha256 and a checksum file (sha256sum format) verify" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" "sha256_url: $(H)/SHA256SUMS" | recipe
	wb fetch img.yaml
	assert_status 0
	assert_output_has "checksum file $(H)/SHA256SUMS"
}

@test "a bare-digest checksum file verifies" {
	art u "$(H)/u.bin" "sha256_url: $(H)/u.bin.sha256" | recipe
	wb fetch img.yaml
	assert_status 0
}

@test "a checksum file that names only other files cannot be checked (exit 2)" {
	art c "$(H)/c.bin" "sha256_url: $(H)/SHA256SUMS" | recipe
	wb fetch img.yaml
	assert_status 2
	assert_output_has "SHA256SUMS"
	[ "$(cache_files)" -eq 0 ]
}

@test "a tampered byte exits 1, names both digests and leaves nothing in the cache" {
	art t "$(H)/t.bin" "sha256: $T_SHA" | recipe
	wb fetch img.yaml
	assert_status 1
	assert_output_has "expected $T_SHA"
	assert_output_has "actual   $(sha_of t.bin)"
	assert_output_has "$(H)/t.bin"
	[ "$(cache_files)" -eq 0 ]
	[ "$(tmp_files)" -eq 0 ]
}

@test "a wrong key (pinned key id, other key bytes) exits 1" {
	art a "$(H)/a.bin" "$(key "$PUB_WRONG")" | recipe
	wb fetch img.yaml
	assert_status 1
	[ "$(cache_files)" -eq 0 ]
}

@test "a signature by an unpinned key (key id mismatch) exits 1 and names the key id" {
	art g "$(H)/g.bin" "$(key "$PUB_A")" | recipe
	wb fetch img.yaml
	assert_status 1
	idb=$(head -n1 "$KEYS/b.pub" | awk '{print $NF}')
	assert_output_has "$idb"
	[ "$(cache_files)" -eq 0 ]
}

@test "a required signature the server says does not exist (HTTP 404) fails verification: exit 1" {
	# u.bin has no .minisig: the publisher's proof is absent, not unreachable
	art u "$(H)/u.bin" "$(key "$PUB_A")" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "u.bin.minisig"
	assert_output_has "HTTP 404"
	assert_output_has "no such signature"
	[ "$(cache_files)" -eq 0 ]
	[ "$(tmp_files)" -eq 0 ]
	# every URL of the further requirement (signatures.keys) says 404: exit 1
	art a "$(H)/a.bin" "$(key "$PUB_A")" | recipe
	printf 'kind: override\nsignatures:\n  url: "${url}.site.minisig"\n  keys: [{key: %s}]\n' \
		"$PUB_A" >"$WORK/site.yaml"
	wb fetch img.yaml -O "$WORK/site.yaml" --no-progress
	assert_status 1
	assert_output_has "a.bin.site.minisig"
	assert_output_has "no such signature"
	[ "$(cache_files)" -eq 0 ]
}

@test "a required signature that cannot be reached stays a network error: exit 3" {
	port=$(free_port)
	art u "$(H)/u.bin" "minisign: {keys: [{key: $PUB_A}], url: http://127.0.0.1:$port/u.bin.minisig}" | recipe
	wb fetch img.yaml --no-progress
	assert_status 3
	assert_output_has "u.bin.minisig"
	[ "$(cache_files)" -eq 0 ]
}

@test "a second pinned key (rotation) verifies a signature by key B" {
	art g "$(H)/g.bin" "minisign: {keys: [{key: $PUB_A}, {key: $PUB_B}]}" | recipe
	wb fetch img.yaml
	assert_status 0
}

@test "a legacy Ed signature is refused by default" {
	art l "$(H)/l.bin" "$(key "$PUB_A")" | recipe
	wb fetch img.yaml
	assert_status 1
	assert_output_has "legacy"
	[ "$(cache_files)" -eq 0 ]
}

@test "a legacy Ed signature is accepted where the key allows it" {
	art l "$(H)/l.bin" "minisign: {keys: [{key: $PUB_A, allow_legacy: true}]}" | recipe
	wb fetch img.yaml
	assert_status 0
}

@test "a trusted comment naming another file is refused" {
	art c "$(H)/c.bin" "$(key "$PUB_A")" | recipe
	wb fetch img.yaml
	assert_status 1
	assert_output_has "other.bin"
	[ "$(cache_files)" -eq 0 ]
}

@test "an edited trusted comment is refused" {
	art e "$(H)/e.bin" "$(key "$PUB_A")" | recipe
	wb fetch img.yaml
	assert_status 1
	[ "$(cache_files)" -eq 0 ]
}

@test "a signature file with CRLF line ends is accepted" {
	art f "$(H)/f.bin" "$(key "$PUB_A")" | recipe
	wb fetch img.yaml
	assert_status 0
}

@test "a reset mid-body is resumed with Range and the whole file verified" {
	art v "$(F)/reset/v.bin?t=$BATS_TEST_NUMBER" "sha256: $(sha_of v.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
	grep -q "\"GET /reset/v.bin?t=$BATS_TEST_NUMBER HTTP/1.1\" 206 \"bytes=" "$FAULTD_LOG"
	[ "$(cache_files)" -eq 1 ]
}

@test "500 then 200: retried and fetched" {
	art w "$(F)/500then200/w.bin?t=$BATS_TEST_NUMBER" "sha256: $(sha_of w.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
	[ "$(grep -c "500then200/w.bin?t=$BATS_TEST_NUMBER" "$FAULTD_LOG")" -eq 2 ]
}

@test "always 500: gives up after the retries with exit 3" {
	art w "$(F)/always500/w.bin?t=$BATS_TEST_NUMBER" "sha256: $(sha_of w.bin)" | recipe
	wb fetch img.yaml
	assert_status 3
	assert_output_has "HTTP 500"
	[ "$(grep -c "always500/w.bin?t=$BATS_TEST_NUMBER" "$FAULTD_LOG")" -eq 3 ]
}

@test "a 404 on the mirror falls back to upstream" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	printf 'kind: override\nmirrors:\n  - from: "%s/"\n    to: "%s/404/"\n' "$(H)" "$(F)" >mirror.yaml
	wb fetch img.yaml -O mirror.yaml
	assert_status 0
	grep -q '"GET /404/a.bin HTTP/1.1" 404' "$FAULTD_LOG"
}

@test "with mirror_only a 404 on the mirror is an error (exit 3)" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	printf 'kind: override\nmirror_only: true\nmirrors:\n  - from: "%s/"\n    to: "%s/404/"\n' \
		"$(H)" "$(F)" >mirror.yaml
	before=$(nginx_requests /a.bin)
	wb fetch img.yaml -O mirror.yaml
	assert_status 3
	assert_output_has "404"
	[ "$(nginx_requests /a.bin)" -eq "$before" ]
}

@test "HTTPS with the test CA (--cacert) is accepted" {
	art a "https://localhost:$NGINX_TLS_PORT/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt"
	assert_status 0
}

@test "HTTPS with the test CA from SSL_CERT_FILE is accepted" {
	art a "https://localhost:$NGINX_TLS_PORT/a.bin" "sha256: $(sha_of a.bin)" | recipe
	SSL_CERT_FILE="$CA/ca.crt" run "$WINBUILD" fetch img.yaml
	assert_status 0
}

@test "HTTPS without the test CA is refused (exit 3)" {
	art a "https://localhost:$NGINX_TLS_PORT/a.bin" "sha256: $(sha_of a.bin)" | recipe
	SSL_CERT_FILE= run "$WINBUILD" fetch img.yaml
	assert_status 3
	assert_output_has "certificate"
	[ "$(cache_files)" -eq 0 ]
}

@test "--offline on an empty cache lists every missing artifact (exit 3)" {
	{
		art a "$(H)/a.bin" "sha256: $(sha_of a.bin)"
		art b "$(H)/b.bin" "sha256: $(sha_of b.bin)"
		art u "$(H)/u.bin" "sha256: $(sha_of u.bin)"
	} | recipe
	before=$(wc -l <"$NGINX_LOG")
	wb fetch img.yaml --offline
	assert_status 3
	assert_output_has "3 artifacts are not in the cache"
	assert_output_has "  a ("
	assert_output_has "  b ("
	assert_output_has "  u ("
	[ "$(wc -l <"$NGINX_LOG")" -eq "$before" ]
}

@test "--offline after a fetch uses the cache" {
	art a "$(H)/a.bin" "$(key "$PUB_A")" | recipe
	wb fetch img.yaml
	assert_status 0
	wb fetch img.yaml --offline
	assert_status 0
}

@test "two concurrent fetches on one cache both succeed, one intact entry each" {
	{
		art big "$(H)/big.bin" "$(key "$PUB_A")"
		art big2 "$(H)/big2.bin" "$(key "$PUB_A")"
		art a "$(H)/a.bin" "sha256: $(sha_of a.bin)"
	} | recipe
	"$WINBUILD" fetch img.yaml -q >out1 2>&1 &
	p1=$!
	"$WINBUILD" fetch img.yaml -q >out2 2>&1 &
	p2=$!
	wait $p1
	wait $p2
	[ "$(cache_files)" -eq 3 ]
	[ "$(tmp_files)" -eq 0 ]
	for f in big.bin big2.bin a.bin; do
		s=$(sha_of $f)
		[ "$(sha256sum "$WINBUILD_CACHE/sha256/${s:0:2}/$s" | cut -d' ' -f1)" = "$s" ]
	done
}

@test "a corrupt cache entry is quarantined, reported and fetched again" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
	s=$(sha_of a.bin)
	e="$WINBUILD_CACHE/sha256/${s:0:2}/$s"
	chmod u+w "$e"
	printf 'Z' | dd of="$e" bs=1 seek=10 conv=notrunc 2>/dev/null
	wb fetch img.yaml
	assert_status 0
	assert_output_has "corrupt"
	assert_output_has "quarantine"
	[ "$(sha256sum "$e" | cut -d' ' -f1)" = "$s" ]
	[ "$(ls "$WINBUILD_CACHE/quarantine" | wc -l)" -eq 1 ]
}

@test "require: signature in an override: an unsigned artifact fails whatever the flags" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	printf 'kind: override\npolicy:\n  require: signature\n' >strict.yaml
	wb fetch img.yaml -O strict.yaml
	[ "$status" -eq 1 ] || [ "$status" -eq 2 ]
	assert_output_has "signature"
	wb fetch img.yaml -O strict.yaml --set policy.require=digest
	[ "$status" -ne 0 ]
	WINBUILD_SET="policy.require=digest" run "$WINBUILD" fetch img.yaml -O strict.yaml
	[ "$status" -ne 0 ]
	wb fetch img.yaml -O strict.yaml --set "replace.a.verify.sha256=$(sha_of a.bin)"
	[ "$status" -ne 0 ]
	[ "$(cache_files)" -eq 0 ]
}

@test "require: signature with a replacement that is signed succeeds" {
	art a "$(H)/a.bin" "sha256: $(sha_of b.bin)" | recipe
	printf 'kind: override\npolicy:\n  require: signature\nreplace:\n  a:\n    url: %s/b.bin\n    verify:\n      minisign: {keys: [{key: %s, file_check: false}]}\n' \
		"$(H)" "$PUB_A" >repl.yaml
	wb fetch img.yaml -O repl.yaml
	assert_status 0
}

@test "a redirect loop is a network error (exit 3)" {
	art a "$(F)/redirloop/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml
	assert_status 3
	assert_output_has "redirect"
}

@test "an endless body stops at the size limit (exit 3)" {
	art a "$(F)/endless-chunked/a.bin" "sha256: $(sha_of a.bin)" | recipe
	WINBUILD_MAX_SIZE=500000 run "$WINBUILD" fetch img.yaml
	assert_status 3
	assert_output_has "larger than the limit"
	[ "$(tmp_files)" -eq 0 ]
}

@test "a file:// artifact far larger than the download buffers is fetched (file:// cannot pause)" {
	head -c 40000000 /dev/zero | tr '\0' 'x' >"$WORK/large.bin"
	art large "file://$WORK/large.bin" "sha256: $(sha256sum "$WORK/large.bin" | cut -d' ' -f1)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "fetched large"
}

@test "file:// URLs are fetched" {
	art a "file://$WWW/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
}

@test "--json prints a machine-readable summary" {
	{
		art a "$(H)/a.bin" "$(key "$PUB_A")"
		art t "$(H)/t.bin" "sha256: $T_SHA"
	} | recipe
	run sh -c "'$WINBUILD' fetch img.yaml --json 2>/dev/null"
	assert_status 1
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); a={x["name"]:x for x in d["artifacts"]}
assert a["a"]["ok"] and a["a"]["key_id"] and not a["t"]["ok"] and a["t"]["exit"]==1 and not d["ok"]' "$output"
}

@test "-j 1 fetches several artifacts one at a time" {
	{
		art a "$(H)/a.bin" "sha256: $(sha_of a.bin)"
		art b "$(H)/b.bin" "sha256: $(sha_of b.bin)"
	} | recipe
	wb fetch img.yaml -j 1 --no-progress
	assert_status 0
	[ "$(cache_files)" -eq 2 ]
}

@test "the User-Agent is winbuild/VERSION" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	python3 - "$WORK/ua.port" "$WORK/ua.log" <<-'PY' &
		import http.server, socketserver, sys
		class H(http.server.BaseHTTPRequestHandler):
		    def do_GET(self):
		        open(sys.argv[2], "a").write(self.headers.get("User-Agent", "") + "\n")
		        self.send_response(404); self.end_headers()
		    def log_message(self, *a): pass
		s = socketserver.TCPServer(("127.0.0.1", 0), H)
		open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1])); import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
		s.handle_request()
	PY
	for i in $(seq 50); do [ -s "$WORK/ua.port" ] && break; sleep 0.1; done
	art a "http://127.0.0.1:$(cat "$WORK/ua.port")/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml
	assert_status 3
	wait
	grep -qx "winbuild/[0-9.]*" "$WORK/ua.log"
}

@test "on a TTY: a progress bar per transfer and a total line; plain lines otherwise" {
	# /slow/ keeps the transfer running long enough for several redraws
	{
		art big "$(H)/big.bin" "sha256: $(sha_of big.bin)"
		art s "$(F)/slow/a.bin?tty" "sha256: $(sha_of a.bin)"
	} | recipe
	export WINBUILD_LOW_SPEED_TIME=30
	# script(1) gives winbuild a pseudo-terminal on stderr; stop once the
	# bars were redrawn (at most 20 s: a loaded machine starts slowly)
	timeout 20 script -qec "$WINBUILD fetch img.yaml -j 2" "$WORK/tty.log" \
		>/dev/null 2>&1 3>&- &
	pid=$!
	for _ in $(seq 200); do
		grep -q $'\r' "$WORK/tty.log" 2>/dev/null && grep -aq "total" "$WORK/tty.log" &&
			grep -aq "big" "$WORK/tty.log" && break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" || true
	grep -q $'\r' "$WORK/tty.log"
	grep -aq "total" "$WORK/tty.log"
	grep -aq "big" "$WORK/tty.log"
	# not a TTY: no carriage-return redraws
	rm -rf "$WINBUILD_CACHE"
	art big "$(H)/big.bin" "sha256: $(sha_of big.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
	! grep -q $'\r' <<<"$output" || false
	assert_output_has "big"
}

@test "--no-progress on a TTY prints no progress bars" {
	art big "$(H)/big2.bin" "sha256: $(sha_of big2.bin)" | recipe
	script -qec "$WINBUILD fetch img.yaml --no-progress" "$WORK/tty.log" >/dev/null 2>&1
	grep -aq "big" "$WORK/tty.log"
	! grep -aq "total" "$WORK/tty.log" || false
}

@test "ten redirects are followed, an eleventh is a network error (exit 3), nothing cached" {
	# FETCH_MAX_REDIRS (fetch/engine.h) is 10 hops; faultd's /redirect/REST
	# answers 302 to /REST, so N "redirect/" segments are N hops
	# (o41-hop-one-redirect-more: one hop more followed)
	local ten="" i
	for i in $(seq 10); do ten="${ten}redirect/"; done
	art a "$(F)/redirect/${ten}a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml
	assert_status 3
	assert_output_has "more than 10 redirects (the last to '$(F)/a.bin')"
	[ "$(cache_files)" -eq 0 ]
	[ "$(grep -c '"GET /redirect/' "$FAULTD_LOG")" -ge 11 ]
	# one hop fewer: followed to the end
	art a "$(F)/${ten}a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
	[ "$(cache_files)" -eq 1 ]
}
