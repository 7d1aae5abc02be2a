#!/usr/bin/env bats
# winbuild lock, --locked, --accept-new; winbuild cache ls|gc.
load helpers
load ../lib/servers
load fetch_fixtures

setup_file() {
	make_fixtures "$BATS_FILE_TMPDIR"
	start_nginx "$WWW"
	export WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() {
	stop_servers
}

@test "lock records url, size, sha256, key id and trusted comment" {
	{
		art a "$(H)/a.bin" "minisign: {keys: [{key: $PUB_A}]}"
		art b "$(H)/b.bin" "sha256: $(sha_of b.bin)"
	} | recipe
	wb lock img.yaml
	assert_status 0
	python3 - "$(sha_of a.bin)" "$(H)" <<-'PY'
		import json, sys
		d = json.load(open("t.lock"))
		a = d["artifacts"]["a"]
		assert a["sha256"] == sys.argv[1] and a["size"] == 150000
		assert a["url"] == sys.argv[2] + "/a.bin"
		assert "file:a.bin" in a["verified_by"]["minisign"]["trusted_comment"]
		assert len(a["verified_by"]["minisign"]["key_id"]) == 16
		assert d["artifacts"]["b"]["verified_by"]["pinned"] == ["sha256"]
	PY
}

@test "--locked accepts what the lock holds" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb lock img.yaml
	assert_status 0
	wb fetch img.yaml --locked
	assert_status 0
}

@test "--locked refuses a digest that differs from the lock (exit 1)" {
	art a "$(H)/a.bin" "sha256_url: $(H)/a.bin.sha256" | recipe
	wb lock img.yaml
	assert_status 0
	sed -i "s/$(sha_of a.bin)/$(sha_of b.bin)/" t.lock
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml --locked
	assert_status 1
	assert_output_has "lock"
	[ "$(cache_files)" -eq 0 ]
}

# issue 42: the lock binds bytes, so a URL that moved (a corporate
# mirror, an export moved) is reported and the bytes still held to the
# lock's digest; a site that wants the URLs held says policy.locked_urls:
# refuse (exit 1), and no later layer takes that back.
@test "--locked reports a URL the lock does not hold and still binds the bytes; policy.locked_urls: refuse refuses it (exit 1)" {
	art a "$(H)/a.bin" "sha256_url: $(H)/a.bin.sha256" | recipe
	wb lock img.yaml
	assert_status 0
	art a "$(H)/a.bin?v=2" "sha256_url: $(H)/a.bin.sha256" | recipe
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml --locked
	assert_status 0
	assert_output_has "warning: --locked: artifact 'a' is locked at '$(H)/a.bin', which the plan no longer uses (plan: '$(H)/a.bin?v=2'); its bytes must still be the lock's sha256 $(sha_of a.bin)"
	# other bytes at the moved URL: the lock's digest refuses them
	sed -i "s/$(sha_of a.bin)/$(sha_of b.bin)/" t.lock
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml --locked
	assert_status 1
	[ "$(cache_files)" -eq 0 ]
	sed -i "s/$(sha_of b.bin)/$(sha_of a.bin)/" t.lock
	printf 'policy: {locked_urls: refuse}\n' >>img.yaml
	wb fetch img.yaml --locked
	assert_status 1
	assert_output_has "locked at '$(H)/a.bin', which the plan no longer uses (plan: '$(H)/a.bin?v=2'; policy.locked_urls: refuse)"
	printf 'kind: override\npolicy: {locked_urls: report}\n' >loosen.yaml
	wb fetch img.yaml --locked -O loosen.yaml
	assert_status 1
}

@test "--locked without a lock file is a usage error (exit 2)" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --locked
	assert_status 2
	assert_output_has "t.lock"
}

@test "needs_pin: fetch refuses until lock --accept-new pinned it" {
	art v "$(H)/v.bin" "needs_pin: upstream publishes no digest" | recipe
	wb fetch img.yaml
	assert_status 2
	assert_output_has "--accept-new"
	wb lock img.yaml
	assert_status 2
	[ ! -e t.lock ]
	wb lock img.yaml --accept-new
	assert_status 0
	assert_output_has "pinned v: sha256 $(sha_of v.bin)"
	grep -q '"accepted_new": true' t.lock
	wb fetch img.yaml
	assert_status 0
}

@test "needs_pin: a pinned artifact whose bytes changed fails (exit 1)" {
	art v "$(H)/v.bin" "needs_pin: upstream publishes no digest" | recipe
	wb lock img.yaml --accept-new
	assert_status 0
	sed -i "s/$(sha_of v.bin)/$(sha_of b.bin)/" t.lock
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml
	assert_status 1
}

@test "cache ls shows entries with size and the artifacts that refer to them" {
	{
		art a "$(H)/a.bin" "sha256: $(sha_of a.bin)"
		art b "$(H)/b.bin" "sha256: $(sha_of b.bin)"
	} | recipe
	wb fetch img.yaml
	assert_status 0
	wb cache ls
	assert_status 0
	assert_output_has "$(sha_of a.bin)       150000 a"
	assert_output_has "$(sha_of b.bin)       150000 b"
	assert_output_has "2 entries"
}

@test "cache gc removes temp files, quarantine and unreferenced entries only" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml
	assert_status 0
	s=$(sha_of b.bin)
	mkdir -p "$WINBUILD_CACHE/sha256/${s:0:2}"
	cp "$WWW/b.bin" "$WINBUILD_CACHE/sha256/${s:0:2}/$s"
	echo partial >"$WINBUILD_CACHE/tmp/dl-1-abcdef"
	echo bad >"$WINBUILD_CACHE/quarantine/x"
	wb cache gc
	assert_status 0
	assert_output_has "removed 1 unreferenced entry, 1 temp file, 1 quarantined"
	[ "$(cache_files)" -eq 1 ]
	[ "$(tmp_files)" -eq 0 ]
	wb fetch img.yaml --offline
	assert_status 0
}

@test "cache with an unknown subcommand is a usage error" {
	wb cache frob
	assert_status 2
}

@test "issue 28: one lock per image: the default lock is <image name>.lock; a lock made for another image is refused, naming both" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	sed 's/^name: t$/name: other/' img.yaml >other.yaml
	wb lock img.yaml
	assert_status 0
	assert_output_has "wrote 't.lock'"
	wb lock other.yaml
	assert_status 0
	assert_output_has "wrote 'other.lock'"
	# neither overwrote the other
	[ "$(python3 -c 'import json; print(json.load(open("t.lock"))["recipe"])')" = t ]
	[ "$(python3 -c 'import json; print(json.load(open("other.lock"))["recipe"])')" = other ]
	[ ! -e winbuild.lock ]
	wb fetch img.yaml --locked --no-progress
	assert_status 0
	# another image's lock: --locked refuses it (exit 1), naming both images
	wb build other.yaml --locked --lock t.lock --no-progress --builder azure-arm
	assert_status 1
	assert_output_has "the lock file 't.lock' was made for image 't', not 'other'"
	[ ! -e out ]
	# and without --locked its pins are not used either (exit 2)
	wb fetch other.yaml --lock t.lock --no-progress --json
	assert_status 2
	assert_output_has "was made for image 't', not 'other'"
}

# issue 42 (first real build): every pin a build needs is named before
# anything is fetched: plan's footer lists them, and fetch refuses them all
# in one error (exit 2) with no request made and nothing cached, where it
# used to download every other artifact first and name the image last.
@test "issue 42: plan and fetch name every pin needed (artifact and image) before anything is fetched" {
	{
		art a "$(H)/a.bin" "sha256: $(sha_of a.bin)"
		art v "$(H)/v.bin" "needs_pin: upstream publishes no digest"
	} | recipe
	printf 'images:\n  pause: {name: 127.0.0.1:9/pause, tag: "3.10", needs_pin: "choose a digest"}\n' >>img.yaml
	wb plan img.yaml
	assert_status 0
	assert_output_has "2 artifacts from 1 component, 1 container image; 2 need a pin (winbuild lock --accept-new): v, image pause"
	local before
	before=$(nginx_requests /a.bin)
	wb fetch img.yaml
	assert_status 2
	assert_output_has "2 pins are needed before anything is fetched ('winbuild lock --accept-new' makes them; review the lock after):"
	assert_output_has "  artifact 'v' cannot be verified: upstream publishes no digest"
	assert_output_has "  img.yaml:8:3: images.pause: '127.0.0.1:9/pause:3.10' is not pinned (needs_pin: choose a digest)"
	[ "$(nginx_requests /a.bin)" -eq "$before" ]
	[ "$(cache_files)" -eq 0 ]
	# one pin missing keeps its own message, as before
	sed -i '/^images:/,$d' img.yaml
	wb fetch img.yaml
	assert_status 2
	assert_output_has "artifact 'v' cannot be verified: upstream publishes no digest"
	assert_output_lacks "pins are needed"
	[ "$(nginx_requests /a.bin)" -eq "$before" ]
}
