#!/usr/bin/env bats
# Issue 33 item 1 with issue 31's credentials: the registry client on a
# site's registry mirror that wants them. tests/registry/regfront.py in
# front of Debian's docker-registry: a mirror that wants Basic, a token
# realm on its own origin that wants Basic before it hands out a token,
# and the same over plain http. Every server logs the Authorization it
# got (auth=no|yes|basic:USER:ok|bad), so the tests see where credentials
# went: only to the origin they were given for, never to the blob store a
# redirect leads to, never over plain http.

load helpers
load ../lib/servers
load ../lib/registry

setup_file() {
	registry_file_setup
	start_front basic --basic alice:s3cret-mirror
	start_front realm --token --realm --token-basic bob:t0ken-realm
	start_front realmplain --token --realm --realm-plain --token-basic bob:t0ken-realm
	start_front plainbasic --plain --basic alice:s3cret-mirror
	export WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() { stop_servers; }

cached() { find "$WINBUILD_CACHE/sha256" -type f 2>/dev/null | wc -l; }

# mirrored SCHEME FRONT: img.yaml pulling the pause list through a mirror
# rule to SCHEME://127.0.0.1:FRONT/
mirrored() {
	img_recipe <<-YAML
		  pause: {name: $REG/pause, tag: "3.10", digest: "$(dg 'pause|list')"}
		mirrors:
		  - {from: "https://$REG/", to: "$1://127.0.0.1:$2/"}
	YAML
}

# cred FILE URL USER PASS [TYPE]: a credentials file, mode 600, one entry
cred() {
	printf '[site]\nurl = %s\ntype = %s\nusername = %s\npassword = %s\n' "$2" "${5:-basic}" \
		"$3" "$4" >"$1"
	chmod 600 "$1"
}

fetch() { wb fetch img.yaml --cacert "$CA/ca.crt" --no-progress "$@"; }

@test "images creds: a mirror that wants Basic gets the credentials file's; the redirected blob store never does" {
	read -r front blobs <<<"$BASIC_PORTS"
	mirrored https "$front"
	cred "$WORK/cr" "https://127.0.0.1:$front" alice s3cret-mirror
	: >"$BASIC_LOG"
	fetch --credentials "$WORK/cr" --json
	assert_status 0
	[ "$(cached)" = 6 ]   # the artifact, the list, the manifest, config, 2 layers
	list=$(dg 'pause|list')
	# anonymous first, the challenge, then once more with the credentials;
	# every later request of the pull carries them from the start
	grep -q "^front GET /v2/pause/manifests/$list auth=no 401$" "$BASIC_LOG"
	grep -q "^front GET /v2/pause/manifests/$list auth=basic:alice:ok 200$" "$BASIC_LOG"
	[ "$(grep -c 'auth=no 401$' "$BASIC_LOG")" = 1 ]
	[ "$(grep -c '^front GET /v2/pause/blobs/sha256:[0-9a-f]* auth=basic:alice:ok 307$' "$BASIC_LOG")" = 3 ]
	# the blob store, another origin, got them from no request
	[ "$(grep -c '^blobs GET /b/pause/sha256:[0-9a-f]* auth=no 200$' "$BASIC_LOG")" = 3 ]
	! grep -q '^blobs .* auth=basic' "$BASIC_LOG" || false
	# never the secret in what winbuild says
	[[ "$output" != *s3cret* ]]
}

@test "images creds: a mirror that wants Basic, no credentials: exit 3 saying how to give them; a wrong password: which were sent" {
	read -r front _ <<<"$BASIC_PORTS"
	mirrored https "$front"
	fetch
	assert_status 3
	assert_output_has "/v2/pause/manifests/$(dg 'pause|list')': the registry wants credentials (HTTP 401), and the credentials file and netrc have none for https://127.0.0.1:$front: add one (docs/recipes.md, \"Credentials\": --credentials FILE or --netrc-file FILE)"
	[ "$(cached)" = 1 ]   # the artifact only
	cred "$WORK/cr" "https://127.0.0.1:$front" alice wrong-pass
	: >"$BASIC_LOG"
	fetch --credentials "$WORK/cr"
	assert_status 3
	assert_output_has "HTTP 401: https://127.0.0.1:$front refused the credentials winbuild sent, from the credentials file (credentials file '$WORK/cr' [site])"
	[[ "$output" != *wrong-pass* ]]
	# one try with them, not a loop
	[ "$(grep -c 'auth=basic:alice:bad 401$' "$BASIC_LOG")" = 1 ]
	[ "$(cached)" = 1 ]
}

@test "images creds: a token realm that wants Basic gets those given for its origin; the registry and blob store never see them" {
	read -r front blobs realm <<<"$REALM_PORTS"
	mirrored https "$front"
	cred "$WORK/cr" "https://127.0.0.1:$realm" bob t0ken-realm
	# the realm's entry names the registry it serves (issue 41)
	printf 'registry = https://127.0.0.1:%s\n' "$front" >>"$WORK/cr"
	: >"$REALM_LOG"
	fetch --credentials "$WORK/cr"
	assert_status 0
	[ "$(cached)" = 6 ]
	grep -q '^realm GET /token?service=test-registry&scope=repository%3Apause%3Apull auth=basic:bob:ok 200$' "$REALM_LOG"
	# the registry got the token (auth=yes) and never the realm's credentials
	grep -q "^front GET /v2/pause/manifests/$(dg 'pause|list') auth=yes 200$" "$REALM_LOG"
	! grep -q '^front .* auth=basic' "$REALM_LOG" || false
	! grep -q '^blobs .* auth=basic' "$REALM_LOG" || false
	! grep -q '^blobs .* auth=yes' "$REALM_LOG" || false
}

@test "images creds: credentials given for the registry's origin never go to its token realm on another origin" {
	read -r front blobs realm <<<"$REALM_PORTS"
	mirrored https "$front"
	cred "$WORK/cr" "https://127.0.0.1:$front" bob t0ken-realm
	: >"$REALM_LOG"
	fetch --credentials "$WORK/cr"
	assert_status 3
	assert_output_has "the registry wants credentials (HTTP 401), and the credentials file and netrc have none for https://127.0.0.1:$realm"
	grep -q '^realm GET /token?.* auth=no 401$' "$REALM_LOG"
	! grep -q 'auth=basic' "$REALM_LOG" || false
	[ "$(cached)" = 1 ]
}

@test "images creds: never over plain http: a token realm over http (exit 1, nothing asked of it), a mirror over http wanting Basic (exit 1)" {
	read -r front blobs realm <<<"$REALMPLAIN_PORTS"
	mirrored https "$front"
	cred "$WORK/cr" "http://127.0.0.1:$realm" bob t0ken-realm
	: >"$REALMPLAIN_LOG"
	fetch --credentials "$WORK/cr"
	assert_status 1
	assert_output_has "the token realm 'http://127.0.0.1:$realm/token' of the registry https://127.0.0.1:$front is refused: a token realm is https only"
	! grep -q '^realm ' "$REALMPLAIN_LOG" || false
	[ "$(cached)" = 1 ]

	read -r front _ <<<"$PLAINBASIC_PORTS"
	mirrored http "$front"
	cred "$WORK/cr" "http://127.0.0.1:$front" alice s3cret-mirror
	: >"$PLAINBASIC_LOG"
	fetch --credentials "$WORK/cr"
	assert_status 1
	assert_output_has "/v2/pause/manifests/$(dg 'pause|list')': the registry wants credentials (HTTP 401), and winbuild sends none over plain http"
	! grep -q 'auth=basic' "$PLAINBASIC_LOG" || false
	[ "$(cached)" = 1 ]
}

@test "images creds: a sigv4 or query entry for a registry is exit 2 naming the kind, nothing sent" {
	read -r front _ <<<"$BASIC_PORTS"
	mirrored https "$front"
	printf '[s]\nurl = https://127.0.0.1:%s\ntype = query\nquery = sig=abc\n' "$front" >"$WORK/cr"
	chmod 600 "$WORK/cr"
	: >"$BASIC_LOG"
	fetch --credentials "$WORK/cr"
	assert_status 2
	assert_output_has "(credentials file '$WORK/cr' [s]) are query, which a registry does not take: give it a basic (user and password or access token), bearer or client-cert entry"
	[[ "$output" != *abc* ]]
	! grep -q 'sig=abc' "$BASIC_LOG" || false
}

@test "images creds: image pull by hand takes --credentials too (and without them says how to give them)" {
	read -r front _ <<<"$BASIC_PORTS"
	list=$(dg 'pause|list')
	wb image pull "127.0.0.1:$front/pause@$list" --windows 2022 --cacert "$CA/ca.crt"
	assert_status 3
	assert_output_has "--credentials FILE or --netrc-file FILE"
	[ "$(cached)" = 0 ]
	cred "$WORK/cr" "https://127.0.0.1:$front" alice s3cret-mirror
	: >"$BASIC_LOG"
	wb image pull "127.0.0.1:$front/pause@$list" --windows 2022 --cacert "$CA/ca.crt" \
		--credentials "$WORK/cr"
	assert_status 0
	[ "$(cached)" = 5 ]
	grep -q "^front GET /v2/pause/manifests/$list auth=basic:alice:ok 200$" "$BASIC_LOG"
	! grep -q '^blobs .* auth=basic' "$BASIC_LOG" || false
}

# ---- issue 41 item 3: a token realm is the registry's to name, not to abuse

@test "images creds: a registry naming the site's token service as its realm gets nothing: no login there, no token (exit 1)" {
	read -r front blobs realm <<<"$REALM_PORTS"
	mirrored https "$front"
	# the site's token service has an entry, for other registries
	cred "$WORK/cr" "https://127.0.0.1:$realm" bob t0ken-realm
	printf 'registry = https://registry.corp.example\n' >>"$WORK/cr"
	: >"$REALM_LOG"
	fetch --credentials "$WORK/cr"
	assert_status 1
	assert_output_has "the registry https://127.0.0.1:$front names the token realm 'https://127.0.0.1:$realm/token', on another origin, whose credentials (credentials file '$WORK/cr' [site]) do not name that registry"
	# the token service was never asked, the registry never got a token
	! grep -q '^realm ' "$REALM_LOG" || false
	! grep -q 'auth=yes' "$REALM_LOG" || false
	[[ "$output" != *t0ken-realm* ]]
	[ "$(cached)" = 1 ]
	# a netrc entry cannot name a registry: refused the same way
	printf 'machine 127.0.0.1 login bob password t0ken-realm\n' >"$WORK/nrc"
	chmod 600 "$WORK/nrc"
	fetch --netrc-file "$WORK/nrc"
	assert_status 1
	assert_output_has "do not name that registry"
	! grep -q '^realm ' "$REALM_LOG" || false
}

@test "images creds: a token realm on plain http is refused even where policy.allow_http admits http (exit 1, nothing asked of it)" {
	read -r front blobs realm <<<"$REALMPLAIN_PORTS"
	mirrored https "$front"
	: >"$REALMPLAIN_LOG"
	fetch --set policy.allow_http=true
	assert_status 1
	assert_output_has "the token realm 'http://127.0.0.1:$realm/token' of the registry https://127.0.0.1:$front is refused: a token realm is https only"
	! grep -q '^realm ' "$REALMPLAIN_LOG" || false
	[ "$(cached)" = 1 ]
}

@test "images creds: a realm entry's registry = must be https origins (exit 2 at file:line)" {
	cred "$WORK/cr" "https://127.0.0.1:1" bob t0ken-realm
	printf 'registry = http://registry.corp.example/v2\n' >>"$WORK/cr"
	mirrored https 1
	fetch --credentials "$WORK/cr"
	assert_status 2
	assert_output_has "[site] registry = is a list of https://HOST[:PORT]"
}

# ---- issue 42 item 4: docker login / podman login's files ----------------
# The container auth file (DOCKER_CONFIG/config.json, REGISTRY_AUTH_FILE)
# and docker-credential-NAME helpers, as docker, podman, skopeo and crane
# read them: the registry's own origin only, never shown.

# dockercfg JSON: $DOCKER_CONFIG/config.json, mode 600
dockercfg() {
	mkdir -p "$DOCKER_CONFIG"
	printf '%s\n' "$1" >"$DOCKER_CONFIG/config.json"
	chmod 600 "$DOCKER_CONFIG/config.json"
}

# a fake credential helper on PATH, docker-credential-fake: answers
# alice's password for SERVER only (docker-credential-helpers'
# protocol: "get", the server on stdin, JSON out; "not found" is exit 1);
# what it was asked goes to $WORK/helper.log
fake_helper() {
	mkdir -p "$WORK/bin"
	cat >"$WORK/bin/docker-credential-fake" <<-EOF
		#!/bin/sh
		s=\$(cat)
		echo "\$1 \$s" >>"$WORK/helper.log"
		[ "\$1" = get ] && [ "\$s" = "$1" ] || { echo "credentials not found in native keychain"; exit 1; }
		printf '{"ServerURL": "%s", "Username": "%s", "Secret": "%s"}\n' "\$s" "${2:-alice}" "${3:-s3cret-mirror}"
	EOF
	chmod +x "$WORK/bin/docker-credential-fake"
	export PATH="$WORK/bin:$PATH"
}

@test "issue 42: docker login's config.json: a mirror that wants Basic gets its auths entry; the blob store never does; a file others may read is refused" {
	read -r front _ <<<"$BASIC_PORTS"
	mirrored https "$front"
	dockercfg "{\"auths\": {\"127.0.0.1:$front\": {\"auth\": \"$(printf alice:s3cret-mirror | base64)\"}}}"
	: >"$BASIC_LOG"
	fetch -v
	assert_status 0
	grep -q "^front GET /v2/pause/manifests/$(dg 'pause|list') auth=basic:alice:ok 200$" "$BASIC_LOG"
	! grep -q '^blobs .* auth=basic' "$BASIC_LOG" || false
	[[ "$output" != *s3cret* ]]
	[ "$(cached)" = 6 ]
	# a wrong password says where it came from, never what it is
	rm -rf "$WINBUILD_CACHE"
	dockercfg "{\"auths\": {\"https://127.0.0.1:$front\": {\"username\": \"alice\", \"password\": \"wr0ng-pass\"}}}"
	fetch
	assert_status 3
	assert_output_has "refused the credentials winbuild sent, from a container auth file (container auth file '$DOCKER_CONFIG/config.json' [https://127.0.0.1:$front])"
	[[ "$output" != *wr0ng-pass* ]]
	# REGISTRY_AUTH_FILE (podman's) wins, and is refused when others may read it
	printf '{"auths": {"127.0.0.1:%s": {"auth": "%s"}}}\n' "$front" "$(printf alice:s3cret-mirror | base64)" >"$WORK/auth.json"
	chmod 644 "$WORK/auth.json"
	REGISTRY_AUTH_FILE="$WORK/auth.json" fetch
	assert_status 2
	assert_output_has "container auth file '$WORK/auth.json' holds secrets and other users may read it (mode 644): refused"
	chmod 600 "$WORK/auth.json"
	REGISTRY_AUTH_FILE="$WORK/auth.json" fetch
	assert_status 0
}

@test "issue 42: credHelpers and credsStore: docker-credential-NAME is asked for its registry only; another registry's helper, an identity token, or none: exit 3, nothing sent" {
	read -r front _ <<<"$BASIC_PORTS"
	mirrored https "$front"
	fake_helper "127.0.0.1:$front"
	dockercfg "{\"credHelpers\": {\"127.0.0.1:$front\": \"fake\"}}"
	: >"$BASIC_LOG"
	fetch
	assert_status 0
	grep -q "auth=basic:alice:ok 200$" "$BASIC_LOG"
	[ "$(sort -u "$WORK/helper.log")" = "get 127.0.0.1:$front" ]
	[[ "$output" != *s3cret* ]]
	# credsStore for an auths entry with no secret of its own
	rm -rf "$WINBUILD_CACHE" "$WORK/helper.log"
	dockercfg "{\"auths\": {\"127.0.0.1:$front\": {}}, \"credsStore\": \"fake\"}"
	fetch
	assert_status 0
	[ "$(sort -u "$WORK/helper.log")" = "get 127.0.0.1:$front" ]
	# another registry's entry (its helper answers for it) never goes to
	# this one: another port of the same host is another origin
	rm -rf "$WINBUILD_CACHE" "$WORK/helper.log"
	fake_helper "127.0.0.1:1"
	dockercfg "{\"credHelpers\": {\"127.0.0.1:1\": \"fake\"}}"
	: >"$BASIC_LOG"
	fetch
	assert_status 3
	! grep -q 'auth=basic' "$BASIC_LOG" || false
	# an identity token (Username "<token>") is not a password
	rm -rf "$WINBUILD_CACHE"
	fake_helper "127.0.0.1:$front" "<token>" "s3cret-mirror"
	dockercfg "{\"credHelpers\": {\"127.0.0.1:$front\": \"fake\"}}"
	: >"$BASIC_LOG"
	fetch
	assert_status 3
	! grep -q 'auth=basic' "$BASIC_LOG" || false
	# a helper name that is not a program name is exit 2
	dockercfg "{\"credHelpers\": {\"127.0.0.1:$front\": \"../fake\"}}"
	fetch
	assert_status 2
	assert_output_has "credential helper '../fake' of '127.0.0.1:$front' is not a program name"
}
