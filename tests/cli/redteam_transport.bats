#!/usr/bin/env bats
# Red team, issue 13 classes 1 and 3 (and the trust mutants they share):
# every hop of a download obeys the transport policy, and every path to
# bytes (download, cache ref, cache digest, lock replay) obeys the pins.
# Each case attacks through the real CLI and checks the exit code, the
# message, that nothing unsafe landed, and that earlier good output stands.
load helpers
load ../lib/servers
load fetch_fixtures

# redir: a tiny redirector on plain http and on https (the test CA's
# server cert). GET /to/B64/REST answers 302 with Location: DECODED + REST,
# where B64 is the urlsafe base64 of any URL (file://, ftp://, http://).
# Every request is logged to $REDIR_LOG.
start_redir() {
	cat >"$BATS_FILE_TMPDIR/redir.py" <<-'PY'
		import base64, http.server, socketserver, ssl, sys, threading
		d, log = sys.argv[1], open(sys.argv[2], "a", buffering=1)
		class H(http.server.BaseHTTPRequestHandler):
		    protocol_version = "HTTP/1.1"
		    def log_message(self, *a): pass
		    def do_GET(self):
		        log.write(self.requestline + "\n")
		        p = self.path.split("/", 3)
		        if len(p) < 3 or p[1] != "to":
		            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
		        loc = base64.urlsafe_b64decode(p[2]).decode() + (p[3] if len(p) > 3 else "")
		        self.send_response(302)
		        self.send_header("Location", loc)
		        self.send_header("Content-Length", "0")
		        self.end_headers()
		class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
		    daemon_threads = True
		plain = S(("127.0.0.1", 0), H)
		tls = S(("127.0.0.1", 0), H)
		ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
		ctx.load_cert_chain(d + "/server.crt", d + "/server.key")
		tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
		open(sys.argv[3], "w").write("%d %d\n" % (plain.server_address[1], tls.server_address[1]))
		threading.Thread(target=plain.serve_forever, daemon=True).start()
		tls.serve_forever()
	PY
	export REDIR_LOG="$BATS_FILE_TMPDIR/redir.log"
	: >"$REDIR_LOG"
	rm -f "$BATS_FILE_TMPDIR/redir.ports"
	timeout -k 5 "$WB_SERVER_TIMEOUT" python3 "$BATS_FILE_TMPDIR/redir.py" "$CA" "$REDIR_LOG" \
		"$BATS_FILE_TMPDIR/redir.ports" </dev/null >/dev/null 2>&1 3>&- &
	REDIR_PID=$!
	for _ in $(seq 100); do [ -s "$BATS_FILE_TMPDIR/redir.ports" ] && break; sleep 0.05; done
	read -r REDIR_PORT REDIR_TLS_PORT <"$BATS_FILE_TMPDIR/redir.ports"
	export REDIR_PID REDIR_PORT REDIR_TLS_PORT
}

setup_file() {
	start_fetch_servers
	start_redir
}

teardown_file() {
	kill "$REDIR_PID" 2>/dev/null || true
	stop_servers
}

HS() { echo "https://localhost:$NGINX_TLS_PORT"; }
b64() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_'; }
# via BASE URL: a URL on redir BASE that redirects to URL
via() { echo "$1/to/$(b64 "${2%/*}/")/${2##*/}"; }
# tls URL / plain URL: via the https / the http redirector
tls() { via "https://localhost:$REDIR_TLS_PORT" "$1"; }
plain() { via "http://127.0.0.1:$REDIR_PORT" "$1"; }

# no_trace ARTIFACT: nothing was cached as verified for ARTIFACT
no_trace() {
	! grep -qs "\"artifact\": \"$1\"" "$WINBUILD_CACHE"/refs/* &&
		[ "$(tmp_files)" -eq 0 ]
}

# swap_ref_signature A B: A's refs name B's entry and keep B's signature
swap_ref_signature() {
	python3 - "$(sha_of "$2.bin")" "$WWW/$2.bin.minisig" $(refs_of "$1") <<-'PY'
		import json, sys
		for f in sys.argv[3:]:
		    d = json.load(open(f))
		    d["sha256"] = sys.argv[1]
		    sigs = [x for x in d["evidence"] if x["method"] == "minisign"]
		    sigs[0]["text"] = open(sys.argv[2]).read()
		    json.dump(d, open(f, "w"))
	PY
}

# swap_is_refused EDIT...: stage, then run the attacker's EDIT before a
# fetch and before a stage from scratch: both still use a.bin's bytes
swap_is_refused() {
	wb stage img.yaml --no-progress
	assert_status 0
	"$@"
	run fetched_sha a
	[ "$output" = "$(sha_of a.bin)" ]
	"$@"
	rm -rf out
	wb stage img.yaml --no-progress
	assert_status 0
	[ "$(staged_sha a)" = "$(sha_of a.bin)" ]
}

# refs_of ARTIFACT: the cache ref files that name ARTIFACT
refs_of() {
	grep -l "\"artifact\": \"$1\"" "$WINBUILD_CACHE"/refs/*
}

# set_ref_sha ARTIFACT SHA: the one-line edit an attacker makes to a ref
# (to every ref of ARTIFACT)
set_ref_sha() {
	local f
	for f in $(refs_of "$1"); do
		sed -i "s/\"sha256\": \"[0-9a-f]*\"/\"sha256\": \"$2\"/" "$f"
	done
	grep -q "\"sha256\": \"$2\"" $(refs_of "$1")
}

entry() { echo "$WINBUILD_CACHE/sha256/${1:0:2}/$1"; }

# staged_sha ARTIFACT: sha256 of the staged C:/k/ARTIFACT
staged_sha() { sha256sum "$WORK/out/t/tree/k/$1" | cut -d' ' -f1; }

# fetched_sha ARTIFACT: the sha256 `fetch --json` reports for ARTIFACT
fetched_sha() {
	"$WINBUILD" fetch img.yaml --json "${@:2}" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([x.get("sha256", "FAILED") for x in d["artifacts"] if x["name"] == sys.argv[1]][0])' "$1"
}

pinned_ab() {
	{
		art a "$(H)/a.bin" "sha256: $(sha_of a.bin)"
		art b "$(H)/b.bin" "sha256: $(sha_of b.bin)"
	} | recipe
}

# ---- class 3: pins hold on every path to bytes ---------------------------

@test "redteam pins: an edited cache ref cannot swap a pinned artifact (fetch, stage)" {
	pinned_ab
	wb stage img.yaml --no-progress
	assert_status 0
	[ "$(staged_sha a)" = "$(sha_of a.bin)" ]
	set_ref_sha a "$(sha_of b.bin)"
	run fetched_sha a
	[ "$output" = "$(sha_of a.bin)" ]
	# stage defers re-hashing: it must still use the pinned bytes
	set_ref_sha a "$(sha_of b.bin)"
	echo "# touch" >>components/demo.yaml
	wb stage img.yaml --no-progress
	assert_status 0
	[ "$(staged_sha a)" = "$(sha_of a.bin)" ]
	[ "$(staged_sha b)" = "$(sha_of b.bin)" ]
	# and build (fetch + stage + emit)
	set_ref_sha a "$(sha_of b.bin)"
	echo "# touch again" >>components/demo.yaml
	wb build img.yaml --no-progress
	assert_status 0
	[ "$(staged_sha a)" = "$(sha_of a.bin)" ]
	python3 - "$(sha_of a.bin)" <<-'PY'
		import json, sys
		m = json.load(open("out/t/manifest.json"))
		f = [x for x in m["files"] if x["tree_path"] == "k/a"][0]
		assert f["sha256"] == sys.argv[1], f
	PY
	# both entries intact
	[ "$(sha256sum "$(entry "$(sha_of a.bin)")" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
}

@test "redteam pins: an edited cache ref cannot swap an artifact pinned by sha512 only" {
	local s512
	s512=$(sha512sum "$WWW/a.bin" | cut -d' ' -f1)
	{
		art a "$(H)/a.bin" "sha512: $s512"
		art b "$(H)/b.bin" "sha256: $(sha_of b.bin)"
	} | recipe
	swap_is_refused set_ref_sha a "$(sha_of b.bin)"
	[ "$(sha256sum "$(entry "$(sha_of b.bin)")" | cut -d' ' -f1)" = "$(sha_of b.bin)" ]
}

@test "redteam pins: an edited cache ref cannot swap a signed artifact (its kept signature is checked again)" {
	{
		art a "$(H)/a.bin" "minisign: {keys: [{key: $PUB_A}]}"
		art b "$(H)/b.bin" "minisign: {keys: [{key: $PUB_A}]}"
	} | recipe
	swap_is_refused set_ref_sha a "$(sha_of b.bin)"
	# the ref's digest and its signature both swapped for b's (same key)
	swap_is_refused swap_ref_signature a b
	[ "$(staged_sha b)" = "$(sha_of b.bin)" ]
}

# swap_ref_site_signature A B: A's refs also keep B's further (site) signature
swap_ref_site_signature() {
	python3 - "$WWW/$2.bin.site.minisig" $(refs_of "$1") <<-'PY'
		import json, sys
		for f in sys.argv[2:]:
		    d = json.load(open(f))
		    sigs = [x for x in d["evidence"] if x["method"] == "minisign"]
		    sigs[1]["text"] = open(sys.argv[1]).read()
		    json.dump(d, open(f, "w"))
	PY
}

@test "redteam pins: an edited cache ref cannot swap an artifact that also needs a site signature (every kept signature is checked again)" {
	for f in a b; do
		minisign -S -s "$KEYS/b.key" -m "$WWW/$f.bin" -x "$WWW/$f.bin.site.minisig" </dev/null >/dev/null
	done
	{
		art a "$(H)/a.bin" "minisign: {keys: [{key: $PUB_A}]}"
		art b "$(H)/b.bin" "minisign: {keys: [{key: $PUB_A}]}"
	} | recipe
	printf 'signatures:\n  url: "${url}.site.minisig"\n  keys: [{key: %s}]\n' "$PUB_B" >>img.yaml
	wb fetch img.yaml --no-progress
	assert_status 0
	# a warm fetch is a cache hit: both kept signatures verify the entry again
	n=$(nginx_requests /a.bin)
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "and minisign key"
	[ "$(nginx_requests /a.bin)" = "$n" ]
	swap_is_refused swap_ref_signature a b
	# and with b's site signature kept too: both signatures are b's, whose
	# trusted comments name b.bin
	swap_is_refused eval 'swap_ref_signature a b && swap_ref_site_signature a b'
	[ "$(staged_sha b)" = "$(sha_of b.bin)" ]
}

@test "redteam pins: a needs_pin artifact's lock pin beats an edited cache ref (--locked and not)" {
	{
		art a "$(H)/a.bin" "needs_pin: no digest published upstream"
		art b "$(H)/b.bin" "sha256: $(sha_of b.bin)"
	} | recipe
	wb lock img.yaml --accept-new
	assert_status 0
	# downloaded against the lock pin: the ref the attacker edits
	rm -rf "$WINBUILD_CACHE"
	wb stage img.yaml --no-progress
	assert_status 0
	grep -q '"methods": 32' $(refs_of a)
	[ "$(staged_sha a)" = "$(sha_of a.bin)" ]
	for flag in "" --locked; do
		set_ref_sha a "$(sha_of b.bin)"
		run fetched_sha a $flag
		[ "$output" = "$(sha_of a.bin)" ]
		set_ref_sha a "$(sha_of b.bin)"
		echo "# touch $flag" >>components/demo.yaml
		wb stage img.yaml --no-progress $flag
		assert_status 0
		[ "$(staged_sha a)" = "$(sha_of a.bin)" ]
	done
}

@test "redteam pins: a cache ref pointing at a missing or quarantined entry falls back to the pin" {
	pinned_ab
	wb fetch img.yaml
	assert_status 0
	# a digest nobody has, then a quarantined one
	set_ref_sha a "$(sha_of c.bin)"
	run fetched_sha a
	[ "$output" = "$(sha_of a.bin)" ]
	mkdir -p "$WINBUILD_CACHE/quarantine"
	cp "$WWW/c.bin" "$WINBUILD_CACHE/quarantine/$(sha_of c.bin)"
	set_ref_sha a "$(sha_of c.bin)"
	wb fetch img.yaml
	assert_status 0
	[ ! -e "$(entry "$(sha_of c.bin)")" ]
	[ "$(sha256sum "$(entry "$(sha_of a.bin)")" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
}

@test "redteam pins: an entry whose bytes were replaced under its name is refused (fetch and stage)" {
	pinned_ab
	wb stage img.yaml --no-progress
	assert_status 0
	local e
	e=$(entry "$(sha_of a.bin)")
	chmod u+w "$e"
	cp "$WWW/b.bin" "$e"
	# fetch re-hashes: quarantined, fetched again, the right bytes
	wb fetch img.yaml
	assert_status 0
	assert_output_has "was corrupt (sha256 $(sha_of a.bin))"
	[ "$(sha256sum "$e" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
	# stage defers the re-hash to its own read: it must still catch it
	chmod u+w "$e"
	cp "$WWW/b.bin" "$e"
	rm -rf out
	wb stage img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'a': '$e' does not match its digest: expected $(sha_of a.bin), actual $(sha_of b.bin)"
	assert_output_has "quarantined the cache entry of 'a'"
	[ ! -e out/t/tree ]
	[ ! -e "$e" ]
	# the next run fetches the pinned bytes again
	wb stage img.yaml --no-progress
	assert_status 0
	[ "$(staged_sha a)" = "$(sha_of a.bin)" ]
	[ "$(staged_sha b)" = "$(sha_of b.bin)" ]
}

@test "redteam pins: an edited lock cannot override a recipe pin (--locked, exit 1, names both)" {
	pinned_ab
	wb lock img.yaml
	assert_status 0
	wb stage img.yaml --no-progress --locked
	assert_status 0
	cp t.lock good.lock
	sed -i "s/$(sha_of a.bin)/$(sha_of b.bin)/" t.lock
	for cmd in fetch stage; do
		wb "$cmd" img.yaml --locked --no-progress
		assert_status 1
		assert_output_has "artifact 'a': the lock file pins sha256 $(sha_of b.bin), but the recipe pins sha256 $(sha_of a.bin)"
	done
	# the earlier tree and both entries stand
	[ "$(staged_sha a)" = "$(sha_of a.bin)" ]
	[ "$(sha256sum "$(entry "$(sha_of a.bin)")" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
	[ "$(sha256sum "$(entry "$(sha_of b.bin)")" | cut -d' ' -f1)" = "$(sha_of b.bin)" ]
}

@test "redteam pins: a lock whose bytes fail the recipe's sha512 pin is an error (exit 1)" {
	local s512
	s512=$(sha512sum "$WWW/a.bin" | cut -d' ' -f1)
	{
		art a "$(H)/a.bin" "sha512: $s512"
		art b "$(H)/b.bin" "sha256: $(sha_of b.bin)"
	} | recipe
	wb lock img.yaml
	assert_status 0
	sed -i "s/$(sha_of a.bin)/$(sha_of b.bin)/" t.lock
	wb fetch img.yaml --locked
	assert_status 1
	assert_output_has "the lock file pins sha256 $(sha_of b.bin)"
	assert_output_has "sha512 (pinned in the recipe) mismatch"
	assert_output_has "expected $s512"
}

@test "redteam pins: a pinned artifact with a checksum file still needs its pin (fetch, exit 1)" {
	# the checksum file matches the served bytes; the recipe's pin does not
	{
		art t "$(H)/t.bin" "sha256: $T_SHA"
	} | recipe
	(cd "$WWW" && sha256sum t.bin >t.bin.sha256)
	{
		art t "$(H)/t.bin" "sha256: $T_SHA" "sha256_url: $(H)/t.bin.sha256"
	} | recipe
	wb fetch img.yaml
	assert_status 1
	assert_output_has "sha256 (pinned in the recipe) mismatch"
	assert_output_has "expected $T_SHA"
	[ "$(cache_files)" -eq 0 ]
}

# ---- class 1: the transport policy holds on every hop ----------------------

@test "redteam transport: https redirecting to http is refused under allow_http: false (artifact)" {
	art a "$(tls "$(H)/a.bin")" "sha256_url: $(HS)/a.bin.sha256" | recipe
	local before
	before=$(nginx_requests /a.bin)
	wb fetch img.yaml --cacert "$CA/ca.crt" --set policy.allow_http=false
	assert_status 1
	assert_output_has "artifact 'a': artifact '$(tls "$(H)/a.bin")' redirects to '$(H)/a.bin', which is refused: plain http, and policy forbids it (policy.allow_http: false)"
	# the http hop was never requested, nothing landed
	[ "$(nginx_requests /a.bin)" -eq "$before" ]
	[ "$(cache_files)" -eq 0 ]
	no_trace a
}

@test "redteam transport: a checksum file redirected to http is refused, and so is a signature" {
	local before_sum before_sig
	before_sum=$(nginx_requests /a.bin.sha256)
	before_sig=$(nginx_requests /a.bin.minisig)
	art a "$(HS)/a.bin" "sha256_url: $(tls "$(H)/a.bin.sha256")" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt" --set policy.allow_http=false
	assert_status 1
	assert_output_has "artifact 'a': sha256 checksum file '$(tls "$(H)/a.bin.sha256")' redirects to '$(H)/a.bin.sha256', which is refused"
	[ "$(nginx_requests /a.bin.sha256)" -eq "$before_sum" ]
	art a "$(HS)/a.bin" "minisign: {url: '$(tls "$(H)/a.bin.minisig")', keys: [{key: $PUB_A}]}" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt" --set policy.allow_http=false
	assert_status 1
	assert_output_has "artifact 'a': signature '$(tls "$(H)/a.bin.minisig")' redirects to '$(H)/a.bin.minisig', which is refused"
	[ "$(nginx_requests /a.bin.minisig)" -eq "$before_sig" ]
	[ "$(cache_files)" -eq 0 ]
	no_trace a
}

@test "redteam transport: a redirect to file:// or ftp:// is refused even with allow_http: true" {
	# the good fetch first: it must stand
	art b "$(HS)/b.bin" "sha256_url: $(HS)/SHA256SUMS" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt"
	assert_status 0
	local good
	good=$(find "$WINBUILD_CACHE" -type f | sort | xargs sha256sum)
	for target in "file://$WWW/a.bin" "ftp://127.0.0.1:$NGINX_PORT/a.bin" "gopher://127.0.0.1/a.bin"; do
		for base in tls plain; do
			art a "$("$base" "$target")" "sha256: $(sha_of a.bin)" | recipe
			wb fetch img.yaml --cacert "$CA/ca.crt"
			assert_status 1
			assert_output_has "redirects to '$target', which is refused: a redirect may lead only to http or https"
			no_trace a
		done
	done
	[ "$(find "$WINBUILD_CACHE" -type f | sort | xargs sha256sum)" = "$good" ]
}

@test "redteam transport: a chain whose 3rd hop is http is refused; an all-https chain is followed" {
	local chain
	chain=$(tls "$(tls "$(tls "$(H)/a.bin")")")
	art a "$chain" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt" --set policy.allow_http=false
	assert_status 1
	assert_output_has "artifact 'a': artifact '$chain' redirects to '$(H)/a.bin', which is refused"
	[ "$(cache_files)" -eq 0 ]
	no_trace a
	# the same chain ending on https is fine (control)
	chain=$(tls "$(tls "$(tls "$(HS)/a.bin")")")
	art a "$chain" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt" --set policy.allow_http=false
	assert_status 0
	[ "$(cache_files)" -eq 1 ]
}

@test "redteam transport: https never downgrades to http, even with allow_http: true" {
	art a "$(tls "$(H)/a.bin")" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt"
	assert_status 1
	assert_output_has "redirects to '$(H)/a.bin', which is refused: a redirect from https never leads to plain http"
	no_trace a
	# http to http stays allowed where http is (control)
	art a "$(plain "$(H)/a.bin")" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
}

@test "redteam transport: each hop is judged against the previous one: http -> https -> http is refused (issue 25)" {
	local chain
	# the plan's URL is plain http, its first hop https, the second plain
	# http again: a downgrade from the hop before, whatever the plan's URL
	chain=$(plain "$(tls "$(H)/a.bin")")
	art a "$chain" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt"
	assert_status 1
	assert_output_has "redirects to '$(H)/a.bin', which is refused: a redirect from https never leads to plain http"
	[ "$(cache_files)" -eq 0 ]
	no_trace a
	# http -> http -> http is not a downgrade (control)
	chain=$(plain "$(plain "$(H)/a.bin")")
	art a "$chain" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --cacert "$CA/ca.crt"
	assert_status 0
}

@test "redteam transport: a mirror that redirects to http is refused, and the upstream is used" {
	art a "$(HS)/a.bin" "sha256_url: $(HS)/a.bin.sha256" | recipe
	printf 'kind: override\nmirrors:\n  - from: "%s/"\n    to: "%s/to/%s/"\n' \
		"$(HS)" "https://localhost:$REDIR_TLS_PORT" "$(b64 "$(H)/")" >mirror.yaml
	wb fetch img.yaml -O mirror.yaml --cacert "$CA/ca.crt" --set policy.allow_http=false
	assert_status 0
	assert_output_has "redirects to '$(H)/a.bin.sha256', which is refused: plain http, and policy forbids it (policy.allow_http: false); trying the next URL"
	# mirror_only: nothing else to try, so the refusal is the answer (exit 1)
	rm -rf "$WINBUILD_CACHE"
	printf 'mirror_only: true\n' >>mirror.yaml
	local before
	before=$(nginx_requests /a.bin.sha256)
	wb fetch img.yaml -O mirror.yaml --cacert "$CA/ca.crt" --set policy.allow_http=false
	assert_status 1
	assert_output_has "redirects to '$(H)/a.bin.sha256', which is refused"
	[ "$(nginx_requests /a.bin.sha256)" -eq "$before" ]
	[ "$(cache_files)" -eq 0 ]
	no_trace a
}

# ---- the trust mutants, through the CLI -----------------------------------

# sig_with COMMENT NAME: sign a.bin with trusted comment COMMENT into
# $WWW/NAME (key A)
sig_with() {
	minisign -S -s "$KEYS/a.key" -m "$WWW/a.bin" -x "$WWW/$2" -t "$1" </dev/null >/dev/null
}

@test "redteam trust: a trusted comment whose file: is empty, cut short or given twice is refused" {
	# good first: it must stand
	art a "$(H)/a.bin" "minisign: {keys: [{key: $PUB_A}]}" | recipe
	wb fetch img.yaml
	assert_status 0
	local good
	good=$(find "$WINBUILD_CACHE" -type f | sort | xargs sha256sum)
	sig_with "$(printf 'timestamp:1\tfile:\thashed')" a.empty.minisig
	sig_with "$(printf 'timestamp:1\tfile:a.bi')" a.cut.minisig
	sig_with "$(printf 'file:a.bin\tfile:other.bin')" a.twice.minisig
	sig_with "$(printf 'file:other.bin\tfile:a.bin')" a.twice2.minisig
	for s in empty:"trusted comment names file '', expected 'a.bin'" \
		cut:"trusted comment names file 'a.bi', expected 'a.bin'" \
		twice:"trusted comment has more than one 'file:' field" \
		twice2:"trusted comment has more than one 'file:' field"; do
		art a "$(H)/a.bin" "minisign: {url: '$(H)/a.${s%%:*}.minisig', keys: [{key: $PUB_A}]}" | recipe
		wb fetch img.yaml
		assert_status 1
		assert_output_has "${s#*:}"
		[ "$(find "$WINBUILD_CACHE" -type f | sort | xargs sha256sum)" = "$good" ]
	done
	# two file: fields are refused even by a key that skips the file check
	art a "$(H)/a.bin" "minisign: {url: '$(H)/a.twice.minisig', keys: [{key: $PUB_A, file_check: false}]}" | recipe
	wb fetch img.yaml
	assert_status 1
	assert_output_has "more than one 'file:' field"
	[ "$(find "$WINBUILD_CACHE" -type f | sort | xargs sha256sum)" = "$good" ]
}

@test "redteam trust: a checksum line for a.bin.sig does not verify a.bin" {
	# the attacker lists a digest for a.bin.sig (the bytes served as a.bin)
	# and no line for a.bin itself
	printf '%s  a.bin.sig\n%s  ./a.bin.sha256\n' "$(sha_of a.bin)" "$(sha_of a.bin)" >"$WWW/prefix.sums"
	art a "$(H)/a.bin" "sha256_url: $(H)/prefix.sums" | recipe
	wb fetch img.yaml
	assert_status 2
	assert_output_has "checksum file has no entry for 'a.bin' (it lists 'a.bin.sig', './a.bin.sha256')"
	[ "$(cache_files)" -eq 0 ]
	no_trace a
	# beside the real line, the real line decides
	printf '%s  a.bin.sig\n%s  a.bin\n' "$(sha_of a.bin)" "$(sha_of b.bin)" >"$WWW/prefix2.sums"
	art a "$(H)/a.bin" "sha256_url: $(H)/prefix2.sums" | recipe
	wb fetch img.yaml
	assert_status 1
	assert_output_has "expected $(sha_of b.bin)"
	[ "$(cache_files)" -eq 0 ]
}
