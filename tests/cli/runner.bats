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
	assert m.sh_until_fail(["sh", "-c", "echo ok 1"], ".", log, 30, None) == 0
	print("runner ok")
	PY
	assert_status 0
	assert_output_has "runner ok"
	grep -q 'TIMEOUT   a listed test ran past MUTATE_TIMEOUT' "$WB_SRC/tests/mutate/run"
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
