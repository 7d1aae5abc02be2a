#!/usr/bin/env bats
# Credentials for artifact servers (issue 31), against real servers: nginx
# with auth_basic, a bearer-token check, ssl_verify_client and a SAS-style
# query check (HTTPS, the test CA); an S3-style server whose SigV4 check is
# botocore's own signer (tests/creds/s3d.py); a redirect and a mirror to
# another host that record what they saw. Credentials come from outside
# the recipe (a credentials file, netrc, the environment), go to their own
# host only, and no secret appears in anything winbuild writes or prints.
load helpers
load ../lib/servers
load ../creds/servers

setup_file() {
	W="$BATS_FILE_TMPDIR/www" CA="$BATS_FILE_TMPDIR/ca"
	mkdir -p "$W"
	for f in a b c d e; do head -c 70000 /dev/urandom >"$W/$f.bin"; done
	make_test_ca "$CA"
	make_client_cert "$CA"
	start_creds_servers "$W" "$CA"
	start_s3d "$W" "$CA"
	export W CA WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() {
	stop_servers
}

teardown() {
	stop_servers   # what a test started itself (servers.bash)
}

setup() {
	common_setup
	unset NETRC WINBUILD_CREDENTIALS WINBUILD_REDACT_PARAMS
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/xdg"
	for l in basic bearer cert sas rec; do : >"$CREDS_LOGS/$l.log"; done
	: >"$S3_LOG"
}

sha_of() { sha256sum "$W/$1" | cut -d' ' -f1; }

# recipe NAME URL [EXTRA_LINE]: one artifact, its sha256 pinned
recipe() {
	mkdir -p components
	printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n  %s:\n    url: %s\n    verify:\n      sha256: %s\n    install:\n      to: C:/k/%s\n%s' \
		"$1" "$2" "$(sha_of "$(basename "${2%%\?*}")")" "$1" "${3:+    $3
}" >components/demo.yaml
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: %s}\ncomponents:\n  demo: {}\n' \
		"$TEST_ISO_SHA256" >img.yaml
}

# creds FILE <<< INI: a credentials file, mode 600
creds() {
	cat >"$1"
	chmod 600 "$1"
}

# basic_creds FILE NAME: an entry [NAME] for the basic-auth server
basic_creds() {
	creds "$1" <<-EOF
		[$2]
		url = $BASIC_URL
		type = basic
		username = $BASIC_USER
		password = $BASIC_PASS
	EOF
}

# s3_recipe_creds: artifact c from the S3-style server, its [bucket] entry in cr
s3_recipe_creds() {
	recipe c "$S3_URL/c.bin"
	creds cr <<-EOF
		[bucket]
		url = $S3_URL
		type = sigv4
		aws_sigv4 = aws:amz:$S3_REGION:s3
	EOF
}

fetch() { wb fetch img.yaml --cacert "$CA/ca.crt" --no-progress "$@"; }

# no_secret S: S is in nothing winbuild wrote (out/, the lock, the cache,
# the unzipped payload) nor in what it printed ($output)
no_secret() {
	local s="$1"
	[[ "$output" != *"$s"* ]] || { echo "secret in the output" >&2; return 1; }
	if [ -d out ]; then
		find out -name '*.zip' | while read -r z; do
			mkdir -p "unz/$z" && bsdtar -xf "$z" -C "unz/$z"
		done
	fi
	for d in out unz "$WINBUILD_CACHE" ./*.lock; do
		[ -e "$d" ] || continue
		if grep -rlaF -- "$s" "$d"; then
			echo "secret written to the file(s) above" >&2
			return 1
		fi
	done
}

@test "basic: a credentials file entry for the host fetches and verifies; its password is written nowhere" {
	recipe a "$BASIC_URL/a.bin"
	basic_creds cr artifactory
	fetch --credentials cr
	assert_status 0
	grep -q '"GET /a.bin HTTP/1.1" 200 auth="Basic ' "$CREDS_LOGS/basic.log"
	wb lock img.yaml --cacert "$CA/ca.crt" --credentials cr --no-progress
	assert_status 0
	no_secret "$BASIC_PASS"
}

@test "basic: netrc (--netrc-file, then \$NETRC) fetches; without credentials a 401 names the host and says none were sent (exit 3)" {
	recipe a "$BASIC_URL/a.bin"
	fetch
	assert_status 3
	assert_output_has "HTTP 401"
	assert_output_has "no credentials sent: the credentials file and netrc have none for https://localhost:"
	assert_output_has "--netrc-file FILE"
	creds nrc <<<"machine localhost login $BASIC_USER password $BASIC_PASS"
	fetch --netrc-file nrc
	assert_status 0
	rm -rf "$WINBUILD_CACHE"
	NETRC="$PWD/nrc" fetch
	assert_status 0
	[ "$(grep -c '" 200 auth="Basic ' "$CREDS_LOGS/basic.log")" -eq 2 ]
}

@test "basic: a wrong password is a 401 that says credentials were sent, from where, and never shows them" {
	recipe a "$BASIC_URL/a.bin"
	creds nrc <<<"machine localhost login $BASIC_USER password wrong-$BASIC_PASS"
	fetch --netrc-file nrc
	assert_status 3
	assert_output_has "refused the credentials winbuild sent, from netrc (netrc 'nrc')"
	no_secret "wrong-$BASIC_PASS"
	[ "$(ls "$WINBUILD_CACHE"/sha256 2>/dev/null | wc -l)" -eq 0 ]
}

@test "a credentials file or netrc other users may read is refused with the chmod to run (exit 2); nothing is fetched" {
	recipe a "$BASIC_URL/a.bin"
	basic_creds cr a
	chmod 640 cr
	fetch --credentials cr
	assert_status 2
	assert_output_has "credentials file 'cr' holds secrets and other users may read it (mode 640): refused; run 'chmod 600 cr'"
	printf 'machine localhost login u password p\n' >nrc
	chmod 604 nrc
	fetch --netrc-file nrc
	assert_status 2
	assert_output_has "netrc file 'nrc' holds secrets and other users may read it (mode 604)"
	[ ! -s "$CREDS_LOGS/basic.log" ]
}

@test "credentials file errors name file:line: an unknown key, a url with a user, a missing secret variable" {
	recipe a "$BASIC_URL/a.bin"
	creds cr <<-EOF
		[a]
		url = $BASIC_URL
		type = basic
		user = x
	EOF
	fetch --credentials cr
	assert_status 2
	assert_output_has "cr:4: unknown key 'user'"
	creds cr <<-EOF
		[a]
		url = https://u:p@localhost/
		type = bearer
		token = x
	EOF
	fetch --credentials cr
	assert_status 2
	assert_output_has "cr:1: [a] needs 'url = https://HOST[:PORT][/PREFIX]' (no user, query or fragment)"
	creds cr <<-EOF
		[a]
		url = $BEARER_URL
		type = bearer
		token_env = WB_TEST_UNSET_TOKEN
	EOF
	fetch --credentials cr
	assert_status 2
	assert_output_has "cr:1: [a] takes its secret from \$WB_TEST_UNSET_TOKEN, which is not set"
}

@test "bearer: a token from the environment (token_env, \$WINBUILD_CREDENTIALS) fetches; a wrong one is a 401 naming the environment" {
	recipe b "$BEARER_URL/b.bin"
	creds cr <<-EOF
		# the registry's token
		[registry]
		url = $BEARER_URL/
		type = bearer
		token_env = WB_TEST_TOKEN
	EOF
	WB_TEST_TOKEN="$BEARER_TOKEN" WINBUILD_CREDENTIALS="$PWD/cr" fetch
	assert_status 0
	grep -q "200 auth=\"Bearer $BEARER_TOKEN\"" "$CREDS_LOGS/bearer.log"
	no_secret "$BEARER_TOKEN"
	rm -rf "$WINBUILD_CACHE"
	WB_TEST_TOKEN="x$BEARER_TOKEN" fetch --credentials cr
	assert_status 3
	assert_output_has "HTTP 401"
	assert_output_has "from the environment (credentials file 'cr' [registry], secret from \$WB_TEST_TOKEN)"
	no_secret "x$BEARER_TOKEN"
}

@test "bearer with a header beside it (Azure Blob: Entra ID token and x-ms-version); a bad header line is refused" {
	recipe b "$BEARER_URL/azure/b.bin"
	creds cr <<-EOF
		[blob]
		url = $BEARER_URL/azure/
		type = bearer
		token = $BEARER_TOKEN
	EOF
	fetch --credentials cr
	assert_status 3
	assert_output_has "HTTP 400"
	printf 'header = x-ms-version: 2021-08-06\n' >>cr
	fetch --credentials cr
	assert_status 0
	grep -q '"GET /azure/b.bin HTTP/1.1" 200 auth="Bearer ' "$CREDS_LOGS/bearer.log"
	rm -rf "$WINBUILD_CACHE"
	for h in 'Authorization: Bearer x' 'x-ms-version 2021' 'bad name: 1'; do
		creds cr <<-EOF
			[blob]
			url = $BEARER_URL/azure/
			type = bearer
			token = $BEARER_TOKEN
			header = $h
		EOF
		fetch --credentials cr
		assert_status 2
		assert_output_has "cr:1: [blob] header is 'Name: value' on one line"
	done
}

@test "aws-sigv4: keys from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY sign a request botocore's signer accepts; a wrong secret is refused" {
	s3_recipe_creds
	fetch --credentials cr
	assert_status 0
	grep -q "^GET /c.bin 200 auth=present token=absent ok$" "$S3_LOG"
	no_secret "$AWS_SECRET_ACCESS_KEY"
	rm -rf "$WINBUILD_CACHE"
	AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY}x" fetch --credentials cr
	assert_status 3
	assert_output_has "HTTP 403"
	assert_output_has "refused the credentials winbuild sent, from the environment"
	grep -q "^GET /c.bin 403 auth=present token=absent signature_mismatch$" "$S3_LOG"
	unset AWS_ACCESS_KEY_ID
	fetch --credentials cr
	assert_status 2
	assert_output_has "cr:1: [bucket] is sigv4: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
}

@test "aws-sigv4 with temporary keys: AWS_SESSION_TOKEN goes as a signed x-amz-security-token, and is written nowhere" {
	export S3_SESSION_TOKEN="sess-$RANDOM$RANDOM-Token"
	start_s3d "$W" "$CA"
	s3_recipe_creds
	fetch --credentials cr
	assert_status 3
	grep -q "^GET /c.bin 403 auth=present token=absent session_token_not_signed$" "$S3_LOG"
	AWS_SESSION_TOKEN="$S3_SESSION_TOKEN" fetch --credentials cr
	assert_status 0
	grep -q "^GET /c.bin 200 auth=present token=present ok$" "$S3_LOG"
	no_secret "$S3_SESSION_TOKEN"
	no_secret "$AWS_SECRET_ACCESS_KEY"
}

@test "client-cert: the test CA's client certificate opens an ssl_verify_client server; without it, HTTP 400 says how to give one" {
	recipe d "$CERT_URL/d.bin"
	fetch
	assert_status 3
	assert_output_has "HTTP 400 (a server that wants a TLS client certificate answers 400 without one"
	creds cr <<-EOF
		[mtls]
		url = $CERT_URL
		type = client-cert
		cert = $CA/client.crt
		key = $CA/client.key
	EOF
	fetch --credentials cr
	assert_status 0
	grep -q '"GET /d.bin HTTP/1.1" 200 auth="-" cert=SUCCESS' "$CREDS_LOGS/cert.log"
}

@test "a redirect to another host carries no credential (netrc or file); one on the same host does" {
	recipe e "$BASIC_URL/redir/e.bin"
	creds nrc <<<"machine localhost login $BASIC_USER password $BASIC_PASS"
	fetch --netrc-file nrc
	assert_status 0
	grep -q '"GET /redir/e.bin HTTP/1.1" 302 auth="Basic ' "$CREDS_LOGS/basic.log"
	grep -q '"GET /e.bin HTTP/1.1" 200 auth="-" ' "$CREDS_LOGS/rec.log"
	rm -rf "$WINBUILD_CACHE"
	: >"$CREDS_LOGS/rec.log"
	basic_creds cr a
	fetch --credentials cr
	assert_status 0
	grep -q '"GET /e.bin HTTP/1.1" 200 auth="-" ' "$CREDS_LOGS/rec.log"
	# the same host: the hop carries them (else nginx's auth_basic says 401)
	rm -rf "$WINBUILD_CACHE"
	recipe e "$BASIC_URL/same/e.bin"
	fetch --credentials cr
	assert_status 0
	grep -q '"GET /e.bin HTTP/1.1" 200 auth="Basic ' "$CREDS_LOGS/basic.log"
	! grep -q Basic "$CREDS_LOGS/rec.log" || false
}

@test "a mirror rule to another host carries none of the upstream host's credentials" {
	recipe a "$BASIC_URL/a.bin"
	printf 'kind: override\nmirrors:\n  - {from: "%s/", to: "%s/"}\n' "$BASIC_URL" "$REC_URL" >mirror.yaml
	creds nrc <<<"machine localhost login $BASIC_USER password $BASIC_PASS"
	fetch -O mirror.yaml --netrc-file nrc
	assert_status 0
	grep -q '"GET /a.bin HTTP/1.1" 200 auth="-" ' "$CREDS_LOGS/rec.log"
	[ ! -s "$CREDS_LOGS/basic.log" ]
}

@test "an authenticated mirror end to end: mirror_only to a server behind auth_basic, lock, then a --locked replay gets the credential again" {
	recipe a "https://upstream.example/a.bin"
	printf 'kind: override\nmirror_only: true\nmirrors:\n  - {from: "https://upstream.example/", to: "%s/"}\n' \
		"$BASIC_URL" >corp.yaml
	creds cr <<-EOF
		[corp-mirror]
		url = $BASIC_URL/
		type = basic
		username = $BASIC_USER
		password_env = WB_TEST_MIRROR_PASS
	EOF
	export WB_TEST_MIRROR_PASS="$BASIC_PASS"
	wb lock img.yaml -O corp.yaml --cacert "$CA/ca.crt" --credentials cr --no-progress
	assert_status 0
	grep -q '"GET /a.bin HTTP/1.1" 200 auth="Basic ' "$CREDS_LOGS/basic.log"
	rm -rf "$WINBUILD_CACHE"
	# the replay: the lock holds no secret, the credentials file supplies it
	wb build img.yaml -O corp.yaml --locked --cacert "$CA/ca.crt" --credentials cr \
		--builder azure-arm --no-progress
	assert_status 0
	[ "$(grep -c '" 200 auth="Basic ' "$CREDS_LOGS/basic.log")" -eq 2 ]
	no_secret "$BASIC_PASS"
	rm -rf "$WINBUILD_CACHE"
	unset WB_TEST_MIRROR_PASS
	wb fetch img.yaml -O corp.yaml --locked --cacert "$CA/ca.crt" --no-progress
	assert_status 3
	assert_output_has "HTTP 401"
}

@test "an entry applies only to its scheme, host and port, below its path prefix (at a /)" {
	recipe a "$BASIC_URL/a.bin"
	port=${BASIC_URL##*:}
	for u in "$BASIC_URL/a.bin.d/" "$BASIC_URL/a" "https://localhost:$((port + 1))" \
		"http://localhost:$port" "https://127.0.0.1:$port"; do
		creds cr <<-EOF
			[elsewhere]
			url = $u
			type = basic
			username = $BASIC_USER
			password = $BASIC_PASS
		EOF
		fetch --credentials cr
		assert_status 3
		assert_output_has "no credentials sent: the credentials file and netrc have none for https://localhost:$port"
	done
	for u in "$BASIC_URL/" "$BASIC_URL/a.bin" "https://LOCALHOST:$port/"; do
		creds cr <<-EOF
			[here]
			url = $u
			type = basic
			username = $BASIC_USER
			password = $BASIC_PASS
		EOF
		rm -rf "$WINBUILD_CACHE"
		fetch --credentials cr
		assert_status 0
	done
	[ "$(grep -c '" 200 auth="Basic ' "$CREDS_LOGS/basic.log")" -eq 3 ]
}

@test "the longest path prefix wins, whether its secret is in the file or the environment; the file beats netrc" {
	recipe a "$BASIC_URL/a.bin"
	creds cr <<-EOF
		[whole-host]
		url = $BASIC_URL/
		type = basic
		username = $BASIC_USER
		password_env = WB_TEST_WRONG
		[this-file]
		url = $BASIC_URL/a.bin
		type = basic
		username = $BASIC_USER
		password = $BASIC_PASS
	EOF
	creds nrc <<<"machine localhost login $BASIC_USER password netrc-wrong"
	WB_TEST_WRONG=wrong fetch --credentials cr --netrc-file nrc
	assert_status 0
	rm -rf "$WINBUILD_CACHE"
	recipe b "$BASIC_URL/b.bin"
	WB_TEST_WRONG=wrong fetch --credentials cr --netrc-file nrc
	assert_status 3
	assert_output_has "from the environment (credentials file 'cr' [whole-host], secret from \$WB_TEST_WRONG)"
}

@test "credential: NAME in a recipe picks the entry; the secret itself in a recipe URL is a plan-time error at file:line:col" {
	recipe a "$BASIC_URL/a.bin"
	creds cr <<-EOF
		[old]
		url = $BASIC_URL
		type = basic
		username = $BASIC_USER
		password = expired
		[current]
		url = $BASIC_URL
		type = basic
		username = $BASIC_USER
		password = $BASIC_PASS
	EOF
	fetch --credentials cr
	assert_status 3
	assert_output_has "[old]"
	recipe a "$BASIC_URL/a.bin" "credential: current"
	fetch --credentials cr
	assert_status 0
	rm -rf "$WINBUILD_CACHE"
	recipe a "$BASIC_URL/a.bin" "credential: curent"
	fetch --credentials cr
	assert_status 3
	assert_output_has "no credentials sent: the artifact names credential 'curent' (credential:), and the credentials file has no [curent] for https://localhost:"
	recipe a "https://$BASIC_USER:$BASIC_PASS@localhost/a.bin"
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/demo.yaml:6:10: 'components.demo.artifacts.a.url' carries a secret"
	no_secret "$BASIC_PASS"
	recipe a "$SAS_URL/a.bin?sv=2024&sig=$SAS_SIG"
	wb plan img.yaml --json
	assert_status 2
	no_secret "$SAS_SIG"
	# the payload URL the VM pulls would be written into 02-payload.ps1:
	# a secret in it is refused, even from --set
	recipe a "$BASIC_URL/a.bin"
	wb plan img.yaml --set packer.payload=pull \
		--set "packer.payload_url=https://store.example/p.zip?sv=1&sig=$SAS_SIG"
	assert_status 2
	assert_output_has "'packer.payload_url' carries a secret"
	no_secret "$SAS_SIG"
	recipe a "$BASIC_URL/a.bin" "credential: \"$BASIC_PASS!\""
	wb plan img.yaml
	assert_status 2
	assert_output_has "'credential' names an entry of the credentials file"
}

@test "a SAS token (query credential) and a signed URL given with --set: fetched, built, and the signature is in no file, message or --json" {
	recipe a "$SAS_URL/a.bin"
	creds cr <<-EOF
		[blob]
		url = $SAS_URL/
		type = query
		query = sv=2024-01-01&sp=r&sig=$SAS_SIG
	EOF
	wb build img.yaml --cacert "$CA/ca.crt" --credentials cr --builder azure-arm --no-progress --json
	assert_status 0
	grep -q "\"GET /a.bin?sv=2024-01-01&sp=r&sig=$SAS_SIG HTTP/1.1\" 200" "$CREDS_LOGS/sas.log"
	[ -f out/t/packer/payload.zip ]
	wb lock img.yaml --cacert "$CA/ca.crt" --credentials cr --no-progress
	assert_status 0
	no_secret "$SAS_SIG"
	# the signed URL itself, as a user pastes it: --set, and a redirect to
	# another host that must not see it either
	rm -rf out "$WINBUILD_CACHE" ./*.lock
	wb build img.yaml --cacert "$CA/ca.crt" --builder azure-arm --no-progress -v --json \
		--set "components.demo.artifacts.a.url=$SAS_URL/redir/a.bin?se=2030&sig=$SAS_SIG"
	assert_status 0
	grep -q '"GET /a.bin HTTP/1.1" 200' "$CREDS_LOGS/rec.log"
	wb lock img.yaml --cacert "$CA/ca.crt" --no-progress \
		--set "components.demo.artifacts.a.url=$SAS_URL/redir/a.bin?se=2030&sig=$SAS_SIG"
	assert_status 0
	grep -q "sig=REDACTED" t.lock
	no_secret "$SAS_SIG"
	# a wrong signature: the message shows the URL, redacted
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml --cacert "$CA/ca.crt" --no-progress --json \
		--set "components.demo.artifacts.a.url=$SAS_URL/b.bin?se=2030&sig=x$SAS_SIG"
	assert_status 3
	assert_output_has "b.bin?se=2030&sig=REDACTED"
	no_secret "x$SAS_SIG"
}

@test "structure: every URL a record keeps goes through json_url (lib/redact.h), never json_string or json_text" {
	cd "$WB_SRC"
	# a JSON member named *url (not "purl", a package URL; not the policy
	# words "checksum_urls" and "locked_urls") set from anything but json_url
	bad=$(grep -rnE '"([a-z_]*_)?urls?"[^;]*json_(string|text|stringn)\(' builder |
		grep -vE '"purl"|"(checksum|locked)_urls", json_string\(p->policy' || true)
	[ -z "$bad" ] || { echo "$bad" >&2; return 1; }
	# and each place the lock, manifest, SBOM, provenance, mirror index,
	# cache ref and --json record a URL does use it
	for f in fetch/lockfile.c stage/manifest.c emit/sbom.c emit/scripts.c emit/mirror.c \
		fetch/cache.c cmd/json.c cmd/plan.c trust/verify.c; do
		grep -q 'json_url(' "builder/$f" || { echo "builder/$f: no json_url" >&2; return 1; }
	done
	# messages: the one formatter of each kind redacts
	grep -q 'redact_text(e->msg' builder/lib/err.c
	grep -q 'redact_text(msg' builder/lib/log.c
	grep -q 'redact_text(m, room)' builder/cmd/msg.c
	grep -q 'char \*m = redacted_line(msg, (size_t)len);' builder/cmd/msg.c
}

# ---- issue 41 item 3: a secret is bound to its origin (scheme, host, port)

@test "origin: a netrc password never follows a redirect to another port of the same host" {
	recipe e "$BASIC_URL/port/e.bin"
	creds nrc <<<"machine localhost login $BASIC_USER password $BASIC_PASS"
	fetch --netrc-file nrc
	assert_status 0
	grep -q '"GET /port/e.bin HTTP/1.1" 302 auth="Basic ' "$CREDS_LOGS/basic.log"
	# the hop to localhost:<other port> got no Authorization at all
	grep -q '"GET /e.bin HTTP/1.1" 200 auth="-" ' "$CREDS_LOGS/rec.log"
	! grep -q Basic "$CREDS_LOGS/rec.log" || false
	# nor an entry of the credentials file (its url names the port)
	rm -rf "$WINBUILD_CACHE"
	: >"$CREDS_LOGS/rec.log"
	basic_creds cr a
	fetch --credentials cr
	assert_status 0
	grep -q '"GET /e.bin HTTP/1.1" 200 auth="-" ' "$CREDS_LOGS/rec.log"
}

@test "origin: a query credential never follows a redirect that keeps the query string to another host" {
	recipe a "$SAS_URL/keep/a.bin"
	creds cr <<-EOF
		[blob]
		url = $SAS_URL/
		type = query
		query = sv=2024-01-01&sig=$SAS_SIG&code=PlantedQueryKey41
	EOF
	fetch --credentials cr -v --json
	assert_status 0
	grep -q "\"GET /keep/a.bin?sv=2024-01-01&sig=$SAS_SIG&code=PlantedQueryKey41 HTTP/1.1\" 302" "$CREDS_LOGS/sas.log"
	# the other host got the file, and neither the signature nor the key
	grep -q '"GET /a.bin' "$CREDS_LOGS/rec.log"
	! grep -q "$SAS_SIG" "$CREDS_LOGS/rec.log" || false
	! grep -q PlantedQueryKey41 "$CREDS_LOGS/rec.log" || false
	no_secret PlantedQueryKey41
	no_secret "$SAS_SIG"
}

@test "origin: a query credential echoed in a refused redirect's Location is never printed, whatever its parameter is called" {
	recipe a "$SAS_URL/echo/a.bin"
	creds cr <<-EOF
		[blob]
		url = $SAS_URL/
		type = query
		query = sig=$SAS_SIG&code=PlantedQueryKey41
	EOF
	fetch --credentials cr -v
	assert_status 1
	assert_output_has "a redirect from https never leads to plain http"
	assert_output_has "code=REDACTED"
	no_secret PlantedQueryKey41
	fetch --credentials cr --json
	assert_status 1
	no_secret PlantedQueryKey41
	[ ! -s "$CREDS_LOGS/rec.log" ]
}

@test "origin: URLs a hand parser and libcurl read differently get libcurl's one answer everywhere (plan, fetch, image pull)" {
	port=${BASIC_URL##*:}
	recipe a "$BASIC_URL/a.bin"
	# userinfo with '@' in the password: libcurl takes the first '@'
	# (lib/urlapi.c) and refuses the rest as a host; the plan refuses it
	# too, at plan time, and neither prints any part of the password
	for cmd in "plan" "fetch --cacert $CA/ca.crt --no-progress"; do
		wb $cmd img.yaml \
			--set "components.demo.artifacts.a.url=https://$BASIC_USER:Zq@$BASIC_PASS@localhost:$port/a.bin"
		assert_status 2
		assert_output_has "not a URL libcurl reads"
		assert_output_lacks "$BASIC_PASS"
		assert_output_lacks "Zq@"
	done
	[ ! -s "$CREDS_LOGS/basic.log" ]
	# an uppercase scheme: libcurl reads HTTPS as https, but mirror rules
	# and policy compare URLs as written: refused with the reason
	wb plan img.yaml --set "components.demo.artifacts.a.url=HTTPS://localhost:$port/a.bin"
	assert_status 2
	assert_output_has "scheme in lowercase"
	# the default port written out and a percent-encoded host are the
	# origin libcurl connects to: the credentials file's entry for
	# https://localhost:PORT applies to https://%6cocalhost:PORT as well
	basic_creds cr a
	fetch --credentials cr --set "components.demo.artifacts.a.url=https://%6cocalhost:$port/a.bin"
	assert_status 0
	grep -q '"GET /a.bin HTTP/1.1" 200 auth="Basic ' "$CREDS_LOGS/basic.log"
	# an image reference's registry host libcurl cannot read (a port out of
	# range, a stray ']') is refused when parsed, exit 2, nothing asked
	d=sha256:$(printf '%064d' 0)
	for ref in "localhost:99999/pause@$d" "local]host:$port/pause@$d" "localhost:8x/pause@$d"; do
		wb image pull "$ref" --windows 2022 --cacert "$CA/ca.crt"
		assert_status 2
		assert_output_has "is not a registry host"
	done
	[ "$(grep -c 'GET /v2' "$CREDS_LOGS/basic.log")" -eq 0 ]
}
