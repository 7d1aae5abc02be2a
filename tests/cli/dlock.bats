#!/usr/bin/env bats
# One download per artifact across processes (issue 18 item 8): a second
# winbuild on the same cache waits on the first one's download lock, then
# uses the bytes it cached; a lock dies with its holder; the wait is
# bounded (WINBUILD_LOCK_TIMEOUT). No timing: faultd's /hold/ path keeps
# the first download half done until the test releases it.
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
	PIDS=()
	# a file of its own per test, so the hold and the counts are per test
	N="d$BATS_TEST_NUMBER"
	head -c 2000000 /dev/urandom >"$WWW/$N.bin"
	rm -f "$WWW/$N.bin.release"
}

teardown() {
	touch "$WWW/$N.bin.release"
	stop_bg
}

# requests PATH: GET requests faultd logged for PATH
requests() { grep -c "^\"GET $1 " "$FAULTD_LOG" || true; }

held() { [ "$(requests "/hold/$N.bin")" -ge "${1:-1}" ]; }

# pinned: a recipe of one artifact, pinned, behind faultd's hold
pinned() { art d "$(F)/hold/$N.bin" "sha256: $(sha_of "$N.bin")" | recipe; }

# first [ARGS...]: a first run (winbuild ARGS, default: fetch img.yaml), its
# download held half done; $A its pid
first() {
	[ $# -gt 0 ] || set -- fetch img.yaml
	bg "$WORK/a.log" "$@"
	A=$!
	wait_for held
}

# second_waits ARGS...: a second run, winbuild ARGS, while the first holds
# the download: it waits; once released both succeed, with one request
second_waits() {
	bg "$WORK/b.log" "$@"
	local b=$!
	wait_for grep -q "waiting for another winbuild (pid $A)" "$WORK/b.log"
	touch "$WWW/$N.bin.release"
	done_ok "$A" "$WORK/a.log"
	done_ok "$b" "$WORK/b.log"
	[ "$(requests "/hold/$N.bin")" -eq 1 ]
}

# done_ok PID LOG: PID exits 0 (else LOG is shown)
done_ok() { wait "$1" || { cat "$2"; false; }; }

@test "a second run waits for the first one's download, then uses its bytes: one request" {
	pinned
	first
	bg_tty "$WORK/b.log" fetch img.yaml
	b=$!
	# the second run's progress line says what it waits for
	wait_for grep -q "waiting for another winbuild (pid $A) to download it" "$WORK/b.log"
	held && ! held 2
	touch "$WWW/$N.bin.release"
	done_ok "$A" "$WORK/a.log"
	done_ok "$b" "$WORK/b.log"
	[ "$(requests "/hold/$N.bin")" -eq 1 ]
	grep -q "fetched d" "$WORK/a.log"
	grep -q "cached  d" "$WORK/b.log"
	# one entry; the holder removed its lock file when it let go
	[ "$(find "$WINBUILD_CACHE/sha256" -type f | wc -l)" -eq 1 ]
	[ -z "$(ls -A "$WINBUILD_CACHE/locks")" ]
}

@test "a lock file left by a killed holder is no entry: cache ls ignores it, cache gc removes it" {
	pinned
	first
	kill -9 "$A"
	wait "$A" || true
	[ "$(ls "$WINBUILD_CACHE/locks" | wc -l)" -eq 1 ]
	wb cache ls --json
	assert_status 0
	python3 -c 'import json,sys
d=json.loads(sys.argv[1])
assert d["entries"] == [], d
assert d["tmp_files"] == 1 and d["quarantined"] == 0, d' "$output"
	wb cache gc
	assert_status 0
	[ -z "$(ls -A "$WINBUILD_CACHE/locks")" ]
	[ -z "$(ls -A "$WINBUILD_CACHE/tmp")" ]
	# and the next run takes the lock and fetches
	touch "$WWW/$N.bin.release"
	wb fetch img.yaml
	assert_status 0
	assert_output_has "fetched d"
	[ -z "$(ls -A "$WINBUILD_CACHE/locks")" ]
}

@test "the lock is keyed by the pinned digest: another URL for the same bytes waits too" {
	pinned
	first
	# the same bytes, pinned, from nginx under another artifact name
	mkdir -p "$WORK/b/components"
	art other "$(H)/$N.bin" "sha256: $(sha_of "$N.bin")" |
		(WORK="$WORK/b" && recipe)
	cd "$WORK/b"
	bg "$WORK/b.log" fetch img.yaml
	b=$!
	wait_for grep -q "artifact 'other': waiting for another winbuild (pid $A)" "$WORK/b.log"
	touch "$WWW/$N.bin.release"
	done_ok "$A" "$WORK/a.log"
	done_ok "$b" "$WORK/b.log"
	grep -q "cached  other" "$WORK/b.log"
	[ "$(nginx_requests "/$N.bin")" -eq 0 ]
}

@test "an artifact verified by signature alone (no pin) is downloaded once too" {
	minisign -S -s "$KEYS/a.key" -m "$WWW/$N.bin" </dev/null >/dev/null
	art d "$(F)/hold/$N.bin" "minisign: {keys: [{key: $PUB_A}], url: $(H)/$N.bin.minisig}" | recipe
	first
	second_waits fetch img.yaml
	# the cache hit still checks the kept signature: "cached", by minisign key
	grep -q "cached  d.*minisign key" "$WORK/b.log"
}

@test "a run killed mid-download releases its lock: the waiting run downloads and succeeds" {
	pinned
	first
	WINBUILD_LOCK_TIMEOUT=600 bg "$WORK/b.log" fetch img.yaml
	b=$!
	wait_for grep -q "waiting for another winbuild (pid $A)" "$WORK/b.log"
	kill -9 "$A"
	# the kernel dropped the lock with the process: the second run starts
	# its own download at once (the hold is not released yet, and 600 s
	# are far away)
	wait_for held 2
	touch "$WWW/$N.bin.release"
	done_ok "$b" "$WORK/b.log"
	grep -q "fetched d" "$WORK/b.log"
	! grep -q "WINBUILD_LOCK_TIMEOUT" "$WORK/b.log" || false
	cmp "$WINBUILD_CACHE/sha256/$(sha_of "$N.bin" | cut -c1-2)/$(sha_of "$N.bin")" "$WWW/$N.bin"
}

@test "the wait is bounded: after WINBUILD_LOCK_TIMEOUT the second run downloads itself" {
	pinned
	first
	WINBUILD_LOCK_TIMEOUT=1 bg "$WORK/b.log" fetch img.yaml
	b=$!
	wait_for grep -q "still locked by another winbuild (pid $A) after 1 s (WINBUILD_LOCK_TIMEOUT); downloading it too" "$WORK/b.log"
	wait_for held 2
	touch "$WWW/$N.bin.release"
	done_ok "$A" "$WORK/a.log"
	done_ok "$b" "$WORK/b.log"
	# both verified the same bytes; one entry, no temp file left
	grep -q "fetched d" "$WORK/a.log"
	grep -q "fetched d" "$WORK/b.log"
	[ "$(find "$WINBUILD_CACHE/sha256" -type f | wc -l)" -eq 1 ]
	[ "$(find "$WINBUILD_CACHE/tmp" -type f | wc -l)" -eq 0 ]
}

@test "WINBUILD_LOCK_TIMEOUT=0: no waiting at all" {
	pinned
	first
	WINBUILD_LOCK_TIMEOUT=0 bg "$WORK/b.log" fetch img.yaml
	b=$!
	wait_for held 2
	touch "$WWW/$N.bin.release"
	done_ok "$b" "$WORK/b.log"
	grep -q "after 0 s (WINBUILD_LOCK_TIMEOUT); downloading it too" "$WORK/b.log"
}

@test "two artifacts of one run with the same pinned bytes: one download" {
	{
		art d "$(F)/hold/$N.bin" "sha256: $(sha_of "$N.bin")"
		art twin "$(H)/$N.bin" "sha256: $(sha_of "$N.bin")"
	} | recipe
	bg "$WORK/a.log" fetch img.yaml -j 2
	A=$!
	wait_for held
	wait_for grep -q "artifact 'twin': waiting for another artifact of this run with the same bytes" "$WORK/a.log"
	touch "$WWW/$N.bin.release"
	done_ok "$A" "$WORK/a.log"
	grep -q "fetched d" "$WORK/a.log"
	grep -q "cached  twin" "$WORK/a.log"
	[ "$(nginx_requests "/$N.bin")" -eq 0 ]
}

@test "two concurrent stages (the path build takes) download once; both trees get the bytes" {
	pinned
	first stage img.yaml -o "$WORK/o1"
	second_waits stage img.yaml -o "$WORK/o2"
	cmp "$WORK/o1/t/tree/k/d" "$WWW/$N.bin"
	cmp "$WORK/o2/t/tree/k/d" "$WWW/$N.bin"
}
