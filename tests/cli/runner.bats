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
	! grep -q '^# cli: tests/cli/winrm_session.bats' <<<"$output"
	n=$(grep -c '^@test' "$WB_SRC/tests/cli/versions.bats")
	assert_output_has "$n passed, 0 failed"
	grep -q ' tests/cli/versions.bats$' "$BATS_TEST_TMPDIR/times"
	! grep -q 'winrm_session' "$BATS_TEST_TMPDIR/times"
}

@test "a selection with no job at all ends at once: 0 passed, 0 failed" {
	runner TESTS='^tests/cli/versions\.bats$' TESTS_SKIP='versions'
	assert_status 0
	assert_output_has "0 passed, 0 failed"
	[ ! -e "$BATS_TEST_TMPDIR/times" ]
}
