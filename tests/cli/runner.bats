#!/usr/bin/env bats
# tests/run itself (issue 44 item 2): TESTS picks bats files, TESTS_SKIP
# leaves some out (.ci/run's sanitizer pass), each job's time is printed and
# kept, and a selection that leaves no job ends at once with "0 passed".
# The nested run writes its times under this test's temp dir (TESTS_TIMES).

load helpers

runner() {
	run env UNIT_BINS= FUZZ_NAMES= TESTS_TIMES="$BATS_TEST_TMPDIR/times" "$@" \
		timeout 120 bash "$WB_SRC/tests/run" -j 2
}

@test "TESTS_SKIP leaves out the files it matches, says so, and the rest run with their times" {
	runner TESTS='^tests/cli/(versions|winrm_session)\.bats$' TESTS_SKIP='winrm_session'
	assert_status 0
	assert_output_has "# skipped here (TESTS_SKIP): tests/cli/winrm_session.bats"
	assert_output_has "# cli: tests/cli/versions.bats ("
	! grep -q '^# cli: tests/cli/winrm_session.bats' <<<"$output" || false
	n=$(grep -c '^@test' "$WB_SRC/tests/cli/versions.bats")
	assert_output_has "$n passed, 0 failed"
	grep -q ' tests/cli/versions.bats$' "$BATS_TEST_TMPDIR/times"
	! grep -q 'winrm_session' "$BATS_TEST_TMPDIR/times" || false
}

@test "a selection with no job at all ends at once: 0 passed, 0 failed" {
	runner TESTS='^tests/cli/versions\.bats$' TESTS_SKIP='versions'
	assert_status 0
	assert_output_has "0 passed, 0 failed"
	[ ! -e "$BATS_TEST_TMPDIR/times" ]
}

# tests/mutate/run's per-file stop (sh_until_fail): a TAP run that hangs
# without printing is stopped by the timeout (it used to be checked only
# between lines, so a deadlocked mutant hung the round), and a timeout is
# reported as such, never as a kill.
@test "mutation runner: a silent hang is stopped at the timeout and called timeout; a 'not ok' line stops the run as a kill" {
	run timeout 60 python3 - "$WB_SRC/tests/mutate/run" "$BATS_TEST_TMPDIR" <<-'PY'
	import importlib.machinery, importlib.util, sys, time
	loader = importlib.machinery.SourceFileLoader("mutate_run", sys.argv[1])
	spec = importlib.util.spec_from_loader("mutate_run", loader)
	m = importlib.util.module_from_spec(spec)
	loader.exec_module(m)
	log = sys.argv[2] + "/run.log"
	t0 = time.time()
	assert m.sh_until_fail(["sh", "-c", "echo ok 1; sleep 50"], ".", log, 2, None) == "timeout"
	assert time.time() - t0 < 20, time.time() - t0
	assert "timed out after 2s" in open(log).read()
	assert m.sh_until_fail(["sh", "-c", "echo 'not ok 1 x'; sleep 50"], ".", log, 30, None) == "not ok"
	# the failure's diagnostics (bats' '# ' lines after it) stay in the log:
	# they say why the mutant was killed
	t0 = time.time()
	assert m.sh_until_fail(["sh", "-c", "echo 'not ok 1 x'; echo '# (in test file x.bats, line 3)'; echo '#   why'; sleep 50"],
	                       ".", log, 30, None) == "not ok"
	assert time.time() - t0 < 20, time.time() - t0
	assert "#   why" in open(log).read(), open(log).read()
	t0 = time.time()
	assert m.sh_until_fail(["sh", "-c", "echo 'not ok 1 x'; echo '# a'; sleep 50; echo '# late'"],
	                       ".", log, 30, None) == "not ok"
	assert time.time() - t0 < 20, time.time() - t0
	assert m.sh_until_fail(["sh", "-c", "echo ok 1"], ".", log, 30, None) == 0
	print("runner ok")
	PY
	assert_status 0
	assert_output_has "runner ok"
	grep -q 'TIMEOUT   a listed test ran past MUTATE_TIMEOUT' "$WB_SRC/tests/mutate/run"
}

# tests/mutate/run's command line: -h prints the usage and runs nothing (it
# was read as the id regex "-h" and started a 32-mutant run); an unknown
# option is an error; several names select each of them (only the first
# was used, the others dropped without a word). A mutant's `filter:` line
# reaches bats as --filter, so one engine-tier case can be run, not a file.
@test "mutation runner: -h is help, an unknown option is refused, several names select all, filter: becomes bats --filter" {
	mkdir -p "$BATS_TEST_TMPDIR/m"
	M=$BATS_TEST_TMPDIR/m/list.txt
	printf '%s\n' '=== one-a' 'file: f.c' 'desc: a' 'cli: x' 'filter: first case' '--- find' 'a' '--- replace' 'b' \
		'=== two-b' 'file: f.c' 'desc: b' 'cli: x' '--- find' 'a' '--- replace' 'c' \
		'=== three-c' 'file: f.c' 'desc: c' 'cli: x' '--- find' 'a' '--- replace' 'd' >"$M"
	run env MUTANTS="$M" MUTATE_DIR="$BATS_TEST_TMPDIR/m/scratch" timeout 20 python3 "$WB_SRC/tests/mutate/run" -h
	assert_status 0
	assert_output_has "Usage: tests/mutate/run"
	[ ! -e "$BATS_TEST_TMPDIR/m/scratch" ]
	run env MUTANTS="$M" MUTATE_DIR="$BATS_TEST_TMPDIR/m/scratch" timeout 20 python3 "$WB_SRC/tests/mutate/run" -q
	assert_status 2
	assert_output_has "unknown option -q"
	[ ! -e "$BATS_TEST_TMPDIR/m/scratch" ]
	run env MUTANTS="$M" timeout 20 python3 "$WB_SRC/tests/mutate/run" -l '^one-a$' '^three-c$'
	assert_status 0
	[ "$(echo "$output" | awk '{print $1}' | tr '\n' ' ')" = "one-a three-c " ]
	run timeout 60 python3 - "$WB_SRC/tests/mutate/run" "$M" <<-'PY'
	import importlib.machinery, importlib.util, sys
	loader = importlib.machinery.SourceFileLoader("mutate_run", sys.argv[1])
	spec = importlib.util.spec_from_loader("mutate_run", loader)
	m = importlib.util.module_from_spec(spec)
	loader.exec_module(m)
	ms = {x["id"]: x for x in m.parse(sys.argv[2])}
	assert m.bats_cmd("tests/cli/x.bats", ms["one-a"]) == ["bats", "--tap", "--filter", "first case", "tests/cli/x.bats"], m.bats_cmd("tests/cli/x.bats", ms["one-a"])
	assert m.bats_cmd("tests/cli/x.bats", ms["two-b"]) == ["bats", "--tap", "tests/cli/x.bats"]
	print("filter ok")
	PY
	assert_status 0
	assert_output_has "filter ok"
}

# A bare "! cmd" line in a test never fails it: bash's errexit ignores a
# status inverted with "!" (unless it is the test's last command), so such
# an assertion cannot fail (outsider41's round found three; 110 were fixed
# by adding "|| false"). Every such line in tests/cli and tests/lib ends in
# "|| false" or in an explicit failure ("|| { ...; return 1; }").
@test "no bats assertion is a bare '! cmd' line, which errexit ignores" {
	run python3 "$WB_SRC/tests/lib/bangcheck.py" "$WB_SRC"
	echo "$output"
	assert_status 0
	# the check finds one: a tree with a bare "! grep" line
	mkdir -p "$BATS_TEST_TMPDIR/r/tests/cli" "$BATS_TEST_TMPDIR/r/tests/lib"
	printf '@test "x" {\n\t! grep -q a b\n\t! grep -q a b || false\n\ttrue\n}\n' >"$BATS_TEST_TMPDIR/r/tests/cli/x.bats"
	run python3 "$WB_SRC/tests/lib/bangcheck.py" "$BATS_TEST_TMPDIR/r"
	assert_status 1
	[ "$output" = "tests/cli/x.bats:2: ! grep -q a b" ]
}

# issue 42 item 4: `bats tests/cli/X.bats` alone, without tests/run's
# environment. helpers.bash finds the tree and the binary and exports both,
# so what a test starts (python reading os.environ["WB_SRC"], tests/win/run,
# the doctests) sees them; every file loads it. The probe is a copy of the
# layout under this test's dir, so its WB_SRC is that copy.
@test "issue 42: a bats file run alone hands WB_SRC and WINBUILD to what it starts; every file loads helpers" {
	local t="$BATS_TEST_TMPDIR/alone" f
	mkdir -p "$t/tests/cli"
	ln -s "$WB_SRC/tests/cli/helpers.bash" "$t/tests/cli/helpers.bash"
	printf '#!/usr/bin/env bats\nload helpers\n@test "probe" {\n\trun bash -c '"'"'printf "%%s|%%s" "$WB_SRC" "$WINBUILD"'"'"'\n\techo "$output" >"%s"\n}\n' \
		"$t/seen" >"$t/tests/cli/probe.bats"
	run env -u WB_SRC -u WINBUILD bats "$t/tests/cli/probe.bats"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(cat "$t/seen")" = "$(cd "$t" && pwd)|$t/tests/cli/../../winbuild" ]
	for f in "$WB_SRC"/tests/cli/*.bats; do
		grep -q '^load helpers$' "$f" || { echo "$f does not load helpers" >&2; false; }
	done
}
