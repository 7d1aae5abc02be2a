#!/usr/bin/env bats
# Red team, issue 25 classes 1, 2, 3 and 8: the cache is untrusted storage.
# The attacker of most cases is a cache writer (docs/hardening.md): someone
# who can create, rename and remove files in the cache directory, and plant
# links and FIFOs there. Whatever they do, winbuild uses exactly the bytes
# it verified, writes nothing outside the cache, records only what it
# verified in this run, and at worst downloads again. Each case checks the
# exit code, the message, that nothing unsafe landed, and that the previous
# good output stands.
load helpers
load ../lib/servers
load fetch_fixtures

setup_file() {
	start_fetch_servers
}

teardown_file() {
	stop_servers
}

setup() {
	common_setup
	N="c$BATS_TEST_NUMBER"
	OUTSIDE="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$OUTSIDE"
}

entry() { echo "$WINBUILD_CACHE/sha256/${1:0:2}/$1"; }
# dl_lock SHA: the download lock file of bytes pinned to SHA (fetch/dlock.c dl_lock_key)
dl_lock() {
	echo "$WINBUILD_CACHE/locks/dl-$(printf 'winbuild-download 1\nsha256 %s\n' "$1" | sha256sum | cut -d' ' -f1)"
}
staged() { echo "$WORK/out/t/tree/$1"; }

# mk_tgz NAME TEXT: $WWW/NAME, a tar.gz of one file x.txt holding TEXT
mk_tgz() {
	local d="$BATS_TEST_TMPDIR/tgz.$1"
	mkdir -p "$d"
	printf '%s\n' "$2" >"$d/x.txt"
	tar -C "$d" -czf "$WWW/$1" x.txt
}

# unpack_recipe NAME VERIFY_LINE: artifact "arc" unpacking $WWW/NAME into C:\h
unpack_recipe() {
	mkdir -p "$WORK/components"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n'
		printf '  arc:\n    url: %s/%s\n    verify:\n      %s\n' "$(H)" "$1" "$2"
		printf '    unpack:\n      into: C:\\h\n'
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: %s}\ncomponents:\n  demo: {}\n' \
		"$TEST_ISO_SHA256" >"$WORK/img.yaml"
}

# swap_cmd SHA FILE: the shell command a cache writer runs to put FILE's
# bytes under the entry name SHA: a new file renamed over the name (the
# entry itself is 0444 and owned by winbuild's user; the writer only needs
# the directory)
swap_cmd() {
	local e
	e=$(entry "$1")
	echo "cp '$2' '$e.new' && mv -f '$e.new' '$e'"
}

snapshot() {
	(cd "$WORK/out/t" && find tree manifest.json -type f -print0 | sort -z | xargs -0 sha256sum)
}

# ---- class 1: the bytes used are the bytes verified -------------------------

@test "redteam cache 1: an archive swapped in the cache right after its download verified is not what gets unpacked" {
	mk_tgz "$N.tgz" good
	mk_tgz "$N-evil.tgz" evil
	unpack_recipe "$N.tgz" "sha256: $(sha_of "$N.tgz")"
	# between the download's verification and the unpacking
	WINBUILD_TEST_RUN_AT="prepare:$(swap_cmd "$(sha_of "$N.tgz")" "$WWW/$N-evil.tgz")" \
		run "$WINBUILD" stage img.yaml --no-progress
	assert_status 0
	assert_output_has "fetched arc"
	[ "$(cat "$(staged h/x.txt)")" = good ]
	"$WINBUILD" verify out/t
	grep -q "$(sha_of "$N.tgz")" out/t/manifest.json
	snapshot >"$BATS_TEST_TMPDIR/before"
	# the swapped entry is found out by its next reader (the stage's one-pass
	# hash): exit 1, quarantined, the earlier tree intact; then fetched again
	SOURCE_DATE_EPOCH=1700000000 run "$WINBUILD" stage img.yaml --no-progress
	assert_status 1
	assert_output_has "sha256 mismatch: expected $(sha_of "$N.tgz"), got $(sha_of "$N-evil.tgz")"
	assert_output_has "quarantined the cache entry of 'arc'"
	snapshot | diff "$BATS_TEST_TMPDIR/before" -
	SOURCE_DATE_EPOCH=1700000000 run "$WINBUILD" stage img.yaml --no-progress
	assert_status 0
	[ "$(cat "$(staged h/x.txt)")" = good ]
}

@test "redteam cache 1: a signed file swapped in the cache after a hit re-checked its signature is not what gets staged" {
	cp "$WWW/a.bin" "$WWW/$N.bin"
	minisign -S -s "$KEYS/a.key" -m "$WWW/$N.bin" </dev/null >/dev/null
	art s "$(H)/$N.bin" "minisign: {keys: [{key: $PUB_A}]}" | recipe
	wb stage img.yaml --no-progress
	assert_status 0
	# another epoch: nothing is reused, the cache entry is read again; the
	# hit re-checks the signature over the entry, then the writer swaps it
	SOURCE_DATE_EPOCH=1700000000 \
	WINBUILD_TEST_RUN_AT="prepare:$(swap_cmd "$(sha_of "$N.bin")" "$WWW/b.bin")" \
		run "$WINBUILD" stage img.yaml --no-progress
	assert_status 0
	assert_output_has "cached  s"
	# the very file that was checked is staged: b's bytes are nowhere
	[ "$(sha256sum "$(staged k/s)" | cut -d' ' -f1)" = "$(sha_of "$N.bin")" ]
	! grep -rq "$(sha_of b.bin)" out/t/manifest.json || false
	"$WINBUILD" verify out/t
	[ -z "$(ls -d out/t/.tree.tmp.* 2>/dev/null)" ]
	# the next run re-checks the entry, quarantines it, fetches it again
	run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "was corrupt (sha256 $(sha_of "$N.bin"))"
	[ "$(sha256sum "$(entry "$(sha_of "$N.bin")")" | cut -d' ' -f1)" = "$(sha_of "$N.bin")" ]
}

@test "redteam cache 1: an archive pinned by sha512 swapped after a hit re-hashed it is not what gets unpacked" {
	mk_tgz "$N.tgz" good
	mk_tgz "$N-evil.tgz" evil
	unpack_recipe "$N.tgz" "sha512: $(sha512sum "$WWW/$N.tgz" | cut -d' ' -f1)"
	wb stage img.yaml --no-progress
	assert_status 0
	SOURCE_DATE_EPOCH=1700000000 \
	WINBUILD_TEST_RUN_AT="prepare:$(swap_cmd "$(sha_of "$N.tgz")" "$WWW/$N-evil.tgz")" \
		run "$WINBUILD" stage img.yaml --no-progress
	assert_status 0
	assert_output_has "cached  arc"
	[ "$(cat "$(staged h/x.txt)")" = good ]
	"$WINBUILD" verify out/t
	# the next run finds the swap, quarantines it, downloads the bytes again
	SOURCE_DATE_EPOCH=1600000000 run "$WINBUILD" stage img.yaml --no-progress
	assert_status 0
	assert_output_has "was corrupt (sha256 $(sha_of "$N.tgz"))"
	[ "$(cat "$(staged h/x.txt)")" = good ]
}

@test "redteam cache 1: an entry planted writable is hashed while staged, even after a hit re-hashed it" {
	cp "$WWW/a.bin" "$WWW/$N.bin"
	art p "$(H)/$N.bin" "sha256: $(sha_of "$N.bin")" "sha512: $(sha512sum "$WWW/$N.bin" | cut -d' ' -f1)" | recipe
	wb stage img.yaml --no-progress
	assert_status 0
	snapshot >"$BATS_TEST_TMPDIR/before"
	# the writer replaces the entry by a copy of its own, still writable:
	# right bytes now, other bytes once fetch has hashed it
	local e
	e=$(entry "$(sha_of "$N.bin")")
	rm -f "$e"
	cp "$WWW/$N.bin" "$e"
	chmod 0666 "$e"
	SOURCE_DATE_EPOCH=1700000000 WINBUILD_TEST_RUN_AT="prepare:cp '$WWW/b.bin' '$e'" \
		run "$WINBUILD" stage img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'p': '$e' does not match its digest: expected $(sha_of "$N.bin"), actual $(sha_of b.bin)"
	assert_output_has "quarantined the cache entry of 'p'"
	snapshot | diff "$BATS_TEST_TMPDIR/before" -
	[ -z "$(ls -d out/t/.tree.tmp.* 2>/dev/null)" ]
}

# ---- class 2: a cache writer can cause a download, nothing else -------------

@test "redteam cache 2: a download lock planted as a link never makes winbuild write the file it names" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	printf 'precious\n' >"$OUTSIDE/victim"
	mkdir -p "$WINBUILD_CACHE/locks"
	ln -s "$OUTSIDE/victim" "$(dl_lock "$(sha_of a.bin)")"
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "fetched a"
	[ "$(cat "$OUTSIDE/victim")" = precious ]
	[ ! -e "$(dl_lock "$(sha_of a.bin)")" ]
	[ "$(sha256sum "$(entry "$(sha_of a.bin)")" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
	# a hard link to a file of the user's (same filesystem) is not written either
	rm -rf "$WINBUILD_CACHE"
	mkdir -p "$WINBUILD_CACHE/locks"
	ln "$OUTSIDE/victim" "$(dl_lock "$(sha_of a.bin)")"
	wb fetch img.yaml --no-progress
	assert_status 0
	[ "$(cat "$OUTSIDE/victim")" = precious ]
}

@test "redteam cache 2: links planted as cache/lock, gc.lock and the cache's directories create nothing outside it" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	mkdir -p "$WINBUILD_CACHE" "$OUTSIDE/tmp" "$OUTSIDE/refs" "$OUTSIDE/sha256"
	ln -s "$OUTSIDE/made-by-lock" "$WINBUILD_CACHE/lock"
	ln -s "$OUTSIDE/made-by-gc-lock" "$WINBUILD_CACHE/gc.lock"
	for d in tmp refs sha256; do ln -s "$OUTSIDE/$d" "$WINBUILD_CACHE/$d"; done
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "fetched a"
	# nothing was created or written outside the cache
	[ -z "$(find "$OUTSIDE" -mindepth 1 ! -type d)" ]
	for f in lock gc.lock; do [ -f "$WINBUILD_CACHE/$f" ] && [ ! -L "$WINBUILD_CACHE/$f" ]; done
	for d in tmp refs sha256; do [ -d "$WINBUILD_CACHE/$d" ] && [ ! -L "$WINBUILD_CACHE/$d" ]; done
	[ "$(sha256sum "$(entry "$(sha_of a.bin)")" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
	# and gc through a planted sha256/xx link removes nothing outside
	printf 'keep\n' >"$OUTSIDE/sha256/keep"
	rm -rf "$WINBUILD_CACHE/sha256/ff"
	ln -s "$OUTSIDE/sha256" "$WINBUILD_CACHE/sha256/ff"
	wb cache gc
	assert_status 0
	[ "$(cat "$OUTSIDE/sha256/keep")" = keep ]
}

@test "redteam cache 2: a FIFO planted as a cache entry is quarantined, not waited on" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	mkdir -p "$(dirname "$(entry "$(sha_of a.bin)")")"
	mkfifo "$(entry "$(sha_of a.bin)")"
	run timeout 30 "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "cache entry for 'a' was corrupt"
	assert_output_has "fetched a"
	[ -f "$(entry "$(sha_of a.bin)")" ]
	[ "$(sha256sum "$(entry "$(sha_of a.bin)")" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
	# a planted ref that is a FIFO is no ref: the warm run does not hang
	for f in "$WINBUILD_CACHE"/refs/*; do rm -f "$f"; mkfifo "$f"; done
	run timeout 30 "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
}

# edit_evidence [urls]: the fields a cache writer edits in every ref: the
# signer's trusted comment and key id, the URL that served, the digests;
# with "urls" also the kept files' URLs (the checksum file's)
edit_evidence() {
	python3 - "${1:-}" "$WINBUILD_CACHE"/refs/* <<-'PY'
		import json, sys
		for f in sys.argv[2:]:
		    d = json.load(open(f))
		    for x in d["evidence"]:
		        if sys.argv[1] == "urls":
		            x["url"] = "https://evil.example/forged"
		        for k in list(x.get("fields", {})):
		            x["fields"][k] = "forged by the cache writer"
		    d["url"] = "https://evil.example/a.bin"
		    for k in ("sha512", "blake2b512"):
		        if k in d:
		            d[k] = "0" * 128
		    json.dump(d, open(f, "w"))
	PY
}

@test "redteam cache 2: evidence edited in a cache ref never reaches fetch --json, the lock or the SBOM" {
	art a "$(H)/a.bin" "minisign: {keys: [{key: $PUB_A}]}" "sha256_url: $(H)/a.bin.sha256" | recipe
	wb stage img.yaml --no-progress
	assert_status 0
	cp out/t/sbom.cdx.json "$BATS_TEST_TMPDIR/sbom.before"
	edit_evidence
	run "$WINBUILD" fetch img.yaml --json
	assert_status 0
	assert_output_has '"cached": true'
	assert_output_lacks "forged"
	assert_output_lacks "evil.example"
	assert_output_has "file:a.bin"
	assert_output_has "\"url\": \"$(H)/a.bin\""
	# a kept file's URL that is not the plan's: the ref is not believed
	edit_evidence urls
	run "$WINBUILD" fetch img.yaml --json
	assert_status 0
	assert_output_lacks "forged"
	assert_output_lacks "evil.example"
	assert_output_has "\"checksum_url\": \"$(H)/a.bin.sha256\""
	edit_evidence
	wb lock img.yaml
	assert_status 0
	! grep -q "forged\|evil.example" t.lock || false
	grep -q "$(H)/a.bin.sha256" t.lock
	edit_evidence
	echo "# touch" >>components/demo.yaml
	wb stage img.yaml --no-progress
	assert_status 0
	! grep -q "forged\|evil.example\|0000000000000000" out/t/sbom.cdx.json || false
	grep -q "$(sha512sum "$WWW/a.bin" | cut -d' ' -f1)\|$(b2sum "$WWW/a.bin" | cut -d' ' -f1)" out/t/sbom.cdx.json ||
		grep -q "file:a.bin" out/t/sbom.cdx.json
}

@test "redteam cache 2: a checksum-verified artifact's ref with a forged SHA-512 leaves the SBOM's digest true" {
	(cd "$WWW" && sha512sum a.bin >"$N.sha512")
	art a "$(H)/a.bin" "sha512_url: $(H)/$N.sha512" | recipe
	wb stage img.yaml --no-progress
	assert_status 0
	local s512
	s512=$(sha512sum "$WWW/a.bin" | cut -d' ' -f1)
	grep -q "$s512" out/t/sbom.cdx.json
	edit_evidence
	echo "# touch" >>components/demo.yaml
	wb stage img.yaml --no-progress
	assert_status 0
	grep -q "$s512" out/t/sbom.cdx.json
	! grep -q "0000000000000000000000000000" out/t/sbom.cdx.json || false
	! grep -q "evil.example" out/t/sbom.cdx.json out/t/manifest.json || false
}

# ---- class 3: every input of a stage is in its up-to-date key ----------------

@test "redteam cache 3: a component's generate: template changed in place is restaged, not 'up to date'" {
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	printf 'generate:\n  - template: hello.in\n    to: C:/k/hello.txt\n' >>components/demo.yaml
	printf 'first {{comment:image}}\n' >components/hello.in
	wb stage img.yaml --no-progress
	assert_status 0
	grep -q '^first t' "$(staged k/hello.txt)"
	printf 'second {{comment:image}}\n' >components/hello.in
	wb stage img.yaml --no-progress
	assert_status 0
	assert_output_lacks "up to date"
	grep -q '^second t' "$(staged k/hello.txt)"
	"$WINBUILD" verify out/t
}

# served_by_upstream: the mirror of a.bin goes away and the cache entry with
# it, and a fetch gets the same bytes from upstream
mirror_recipe() {
	mkdir -p "$WWW/m$N"
	cp "$WWW/a.bin" "$WWW/m$N/a.bin"
	art a "$(H)/a.bin" "sha256: $(sha_of a.bin)" | recipe
	printf 'mirrors:\n  - {from: "%s/", to: "%s/m%s/"}\n' "$(H)" "$(H)" "$N" >>img.yaml
}
served_by_upstream() {
	rm -f "$WWW/m$N/a.bin" "$(entry "$(sha_of a.bin)")"
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "fetched a"
}
manifest_url() {
	python3 -c 'import json,sys; print([f["url"] for f in json.load(open(sys.argv[1]))["artifacts"] if f["name"] == "a"][0])' out/t/manifest.json
}

@test "redteam cache 3: the same bytes served by another URL are restaged with that URL, not 'up to date'" {
	mirror_recipe
	wb stage img.yaml --no-progress
	assert_status 0
	[ "$(manifest_url)" = "$(H)/m$N/a.bin" ]
	served_by_upstream
	wb stage img.yaml --no-progress
	assert_status 0
	assert_output_lacks "up to date"
	[ "$(manifest_url)" = "$(H)/a.bin" ]
	grep -q "\"$(H)/a.bin\"" out/t/sbom.cdx.json
	! grep -q "/m$N/a.bin" out/t/sbom.cdx.json || false
}

@test "redteam cache 3: build after the bytes came from another URL emits a manifest and SBOM naming it" {
	mirror_recipe
	wb build img.yaml --no-progress
	assert_status 0
	[ "$(manifest_url)" = "$(H)/m$N/a.bin" ]
	served_by_upstream
	wb build img.yaml --no-progress
	assert_status 0
	assert_output_lacks "up to date"
	[ "$(manifest_url)" = "$(H)/a.bin" ]
	! grep -q "/m$N/a.bin" out/t/sbom.cdx.json || false
	"$WINBUILD" verify out/t
}

# ---- class 8: README's everyday flow: lock, then build --locked --offline ---

# lock_then_offline: `winbuild lock`, the server's files gone, then
# `build --locked --offline` from the cache alone
lock_then_offline() {
	wb lock img.yaml
	assert_status 0
	wb build img.yaml --locked --offline --no-progress
	assert_status 0
	assert_output_has "cached  a"
	"$WINBUILD" verify out/t
	[ "$(sha256sum "$(staged k/a)" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
}

@test "redteam cache 8: lock then build --locked --offline works for a signed artifact" {
	art a "$(H)/a.bin" "minisign: {keys: [{key: $PUB_A}]}" | recipe
	lock_then_offline
	# and a lock edited to pin other bytes never passes offline: those bytes
	# are not in the cache (exit 3), the tree stays
	sed -i "s/$(sha_of a.bin)/$(sha_of b.bin)/" t.lock
	wb build img.yaml --locked --offline --no-progress
	assert_status 3
	assert_output_has "not in the cache"
	[ "$(sha256sum "$(staged k/a)" | cut -d' ' -f1)" = "$(sha_of a.bin)" ]
}

@test "redteam cache 8: lock then build --locked --offline works for a checksum-verified artifact" {
	art a "$(H)/a.bin" "sha256_url: $(H)/a.bin.sha256" | recipe
	lock_then_offline
}

@test "redteam cache 8: lock --accept-new then build --locked --offline works for a needs_pin artifact that is also signed" {
	art a "$(H)/a.bin" "needs_pin: no digest published" "minisign: {keys: [{key: $PUB_A}]}" | recipe
	wb lock img.yaml --accept-new
	assert_status 0
	wb build img.yaml --locked --offline --no-progress
	assert_status 0
	assert_output_has "cached  a"
	"$WINBUILD" verify out/t
}

# ---- mutation survivors (issue 25 class 10) ---------------------------------

@test "redteam cache 10: with a pin, a cached entry never stands in for the signature the recipe also asks" {
	cp "$WWW/a.bin" "$WWW/$N.bin"
	# the bytes are cached (pinned only), then the recipe also asks for a
	# signature by key B, which never signed them: the signature decides
	art a "$(H)/$N.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	minisign -S -s "$KEYS/a.key" -m "$WWW/$N.bin" </dev/null >/dev/null
	art a "$(H)/$N.bin" "sha256: $(sha_of a.bin)" "minisign: {keys: [{key: $PUB_B}]}" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'a'"
	assert_output_lacks "cached  a"
	! grep -qs '"minisign"' "$WINBUILD_CACHE"/refs/* || false
}

@test "redteam cache 10: lock --accept-new never replaces an existing lock pin" {
	cp "$WWW/a.bin" "$WWW/$N.bin"
	art v "$(H)/$N.bin" "needs_pin: upstream publishes no digest" | recipe
	wb lock img.yaml --accept-new
	assert_status 0
	cp t.lock good.lock
	# upstream (or a mirror) now serves other bytes under the same name
	cp "$WWW/b.bin" "$WWW/$N.bin"
	rm -rf "$WINBUILD_CACHE"
	wb lock img.yaml --accept-new
	assert_status 1
	assert_output_has "artifact 'v'"
	cmp t.lock good.lock
	! grep -q "$(sha_of b.bin)" t.lock || false
}

@test "issue 41: a cache ref's artifact name with terminal controls reaches the terminal escaped (cache ls)" {
	printf 'demo\n' >"$WORK/demo.bin"
	mkdir -p components
	cat >components/demo.yaml <<-EOF
		kind: component
		name: demo
		version: "1.0"
		artifacts:
		  demo:
		    url: file://$WORK/demo.bin
		    verify: {sha256: $(sha256sum "$WORK/demo.bin" | cut -d' ' -f1)}
		    install: {to: C:/k/demo.bin}
	EOF
	printf 'kind: image\nname: t\nwindows: {version: "2022", iso_sha256: %s}\ncomponents:\n  demo: {}\n' \
		"$TEST_ISO_SHA256" >img.yaml
	wb fetch img.yaml --no-progress
	assert_status 0
	# the ref's artifact name: an OSC retitling the window, a bell, a
	# screen clear and a C1 CSI
	for f in "$WINBUILD_CACHE"/refs/*; do
		sed -i 's/"artifact": "demo"/"artifact": "demo\\u001b]0;pwned\\u0007\\u001b[2J\\u009b1A"/' "$f"
	done
	run bash -c '"$WINBUILD" cache ls 2>&1'
	assert_status 0
	assert_output_has 'demo\x1b]0;pwned\x07\x1b[2J\xc2\x9b1A'
	! printf '%s' "$output" | LC_ALL=C grep -q $'[\x01-\x08\x0b-\x0c\x0e-\x1f\x7f]' || false
	! printf '%s' "$output" | LC_ALL=C grep -q $'\xc2\x9b' || false
}

# ---- issue 41 item 7: a pin is made only from bytes this run downloaded ------

@test "issue 41: lock --accept-new pins the bytes it downloads, never an entry and ref a cache writer planted" {
	# the cache writer's plant: other bytes (a.bin) and the ref that names
	# them for this very artifact, made the way a writer holding them
	# would make it: by a lock that is then thrown away
	cp "$WWW/a.bin" "$WWW/$N.bin"
	art v "$(H)/$N.bin" "needs_pin: upstream publishes no digest" | recipe
	wb lock img.yaml --accept-new
	assert_status 0
	rm -f t.lock
	ls "$WINBUILD_CACHE"/refs/* >/dev/null
	# upstream serves the bytes the user means to pin
	cp "$WWW/b.bin" "$WWW/$N.bin"
	local before
	before=$(nginx_requests "/$N.bin")
	wb lock img.yaml --accept-new
	assert_status 0
	assert_output_has "pinned v: sha256 $(sha_of b.bin)"
	assert_output_lacks "cached  v"
	grep -q "$(sha_of b.bin)" t.lock
	! grep -q "$(sha_of a.bin)" t.lock || false
	[ "$(nginx_requests "/$N.bin")" -gt "$before" ]
	# the pin it made then serves from the cache, offline
	wb build img.yaml --locked --offline --no-progress
	assert_status 0
	assert_output_has "cached  v"
	[ "$(sha256sum "$(staged k/v)" | cut -d' ' -f1)" = "$(sha_of b.bin)" ]
}

@test "issue 41: a carriage return in a cache ref's strings never rewrites a line on the terminal (cache ls, fetch)" {
	cp "$WWW/a.bin" "$WWW/$N.bin"
	art v "$(H)/$N.bin" "sha256: $(sha_of a.bin)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	# the ref's artifact name and URL: a CR that would put the next text
	# over the start of the line, and an ESC
	for f in "$WINBUILD_CACHE"/refs/*; do
		sed -i -e 's/"artifact": "v"/"artifact": "v\\rall entries verified\\u001b[K"/' \
			-e 's|"url": "http[^"]*"|"url": "http://x/\\r\\u001b[2Kok"|' "$f"
	done
	grep -q 'all entries verified' "$WINBUILD_CACHE"/refs/*
	run bash -c '"$WINBUILD" cache ls 2>&1'
	assert_status 0
	assert_output_has 'v\x0dall entries verified\x1b[K'
	! printf '%s' "$output" | LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' || false
	run bash -c '"$WINBUILD" fetch img.yaml --no-progress 2>&1'
	assert_status 0
	assert_output_has "cached  v"
	! printf '%s' "$output" | LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' || false
}
