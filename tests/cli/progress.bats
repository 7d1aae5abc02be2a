#!/usr/bin/env bats
# The progress display (issue 18 item 9): totals are known up front when
# sizes are, from the lock file or a HEAD request, so the total line shows
# "x/y MiB" from its first frame. Drawn only on a terminal: the runs here
# have stderr on one (script(1)). faultd's /hold/ keeps the first download
# half done while the test reads the display.
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
	N="p$BATS_TEST_NUMBER"
	head -c 2097152 /dev/urandom >"$WWW/$N-a.bin"
	head -c 1048576 /dev/urandom >"$WWW/$N-b.bin"
	rm -f "$WWW/$N-a.bin.release"
	# two artifacts, 2 MiB and 1 MiB; with -j 1 the second waits for the first
	{
		art pa "$(F)/hold/$N-a.bin" "sha256: $(sha_of "$N-a.bin")"
		art pb "$(F)/$N-b.bin" "sha256: $(sha_of "$N-b.bin")"
	} | recipe
}

teardown() {
	touch "$WWW/$N-a.bin.release"
	stop_bg
}

# totals LOG: every "total ..." the display drew, terminal escapes removed
totals() { sed 's/\x1b\[[0-9;]*[A-Za-z]//g; s/\r//g' "$1" | grep -o 'total [^,]*' || true; }

# fetch_held: fetch -j 1 on a terminal, until the held download has drawn
# a frame; then release it and wait for success
fetch_held() {
	bg_tty "$WORK/tty.log" fetch img.yaml -j 1
	local pid=$!
	wait_for grep -qs "total" "$WORK/tty.log"
	totals "$WORK/tty.log" >"$WORK/totals"
	touch "$WWW/$N-a.bin.release"
	wait "$pid" || { cat "$WORK/tty.log"; false; }
	cat "$WORK/totals"
}

heads() { grep -c "^\"HEAD /.*$N-" "$FAULTD_LOG" || true; }

@test "progress totals from the lock file: both sizes in the first frame, no HEAD request" {
	touch "$WWW/$N-a.bin.release"
	wb lock img.yaml --no-progress
	assert_status 0
	rm -f "$WWW/$N-a.bin.release"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	run fetch_held
	assert_status 0
	# the 1 MiB artifact has not started (-j 1), yet counts: 2 + 1 MiB
	[[ "${lines[0]}" == "total "*"/3.0 MiB" ]] || { echo "$output"; false; }
	[ "$(heads)" -eq 0 ]
}

@test "progress totals from HEAD when there is no lock file (a redirect followed hop by hop)" {
	# the 1 MiB artifact behind a redirect: its HEAD follows it
	{
		art pa "$(F)/hold/$N-a.bin" "sha256: $(sha_of "$N-a.bin")"
		art pb "$(F)/redirect/$N-b.bin" "sha256: $(sha_of "$N-b.bin")"
	} | recipe
	run fetch_held
	assert_status 0
	[[ "${lines[0]}" == "total "*"/3.0 MiB" ]] || { echo "$output"; false; }
	[ "$(heads)" -eq 3 ]
	grep -q "^\"HEAD /redirect/$N-b.bin " "$FAULTD_LOG"
	grep -q "^\"HEAD /$N-b.bin " "$FAULTD_LOG"
}

@test "no HEAD request when no progress is drawn" {
	touch "$WWW/$N-a.bin.release"
	wb fetch img.yaml -j 1
	assert_status 0
	[ "$(heads)" -eq 0 ]
}
