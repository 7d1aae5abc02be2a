#!/usr/bin/env bats
# make bench's harness (bench/run) must keep running: nothing else in
# make check runs its recipes, and in session 8 a recipe change made the
# bench stop with exit 2 unnoticed for a whole session. This runs the whole
# harness once on an artifact set 1000 times smaller (BENCH_GEN_SCALE): its
# recipes resolve and stage, the contenders make the same tree, and it ends
# with the summary line. Its timings mean nothing and are not read.
load helpers

@test "bench/run: the whole harness runs on a small set and ends with its summary line" {
	export BENCH_DIR="$BATS_TEST_TMPDIR/bench" BENCH_REPS=1 BENCH_NO_BIG=1 BENCH_GEN_SCALE=1000
	export BENCH_RESULTS="$BATS_TEST_TMPDIR/RESULTS.md" WINBUILD="$WINBUILD"
	local shipped
	shipped=$(sha256sum <"$WB_SRC/bench/RESULTS.md")
	run bash "$WB_SRC/bench/run"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	[[ "${lines[-1]}" =~ ^bench:\ floor_ratio=[0-9.]+\ expert_speedup=[0-9.]+\ naive_speedup=[0-9.]+\ warm_ratio=[0-9.]+\ rss_1g_mib=NA$ ]]
	grep -q '^## Medians' "$BENCH_RESULTS"
	# the set really was the small one, and the shipped results were not touched
	[ "$(stat -c %s "$BENCH_DIR/data/www/kubelet.exe")" -lt 1000000 ]
	[ "$(sha256sum <"$WB_SRC/bench/RESULTS.md")" = "$shipped" ]
}

# make bench-wan's harness (bench/wan): once exit 2 for a whole wave
# (its recipe's containerd declared no cni:), with nothing to notice. The
# same small set, a 1 ms round trip, one round; timings not read.
@test "bench/wan: the WAN harness runs on a small set and ends with its summary line" {
	export BENCH_DIR="$BATS_TEST_TMPDIR/bench" BENCH_REPS=1 BENCH_GEN_SCALE=1000 BENCH_RTT_MS=1
	export BENCH_RESULTS="$BATS_TEST_TMPDIR/RESULTS-wan.md" WINBUILD="$WINBUILD"
	local shipped
	shipped=$(sha256sum <"$WB_SRC/bench/RESULTS-wan.md")
	run bash "$WB_SRC/bench/wan"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	[[ "${lines[-1]}" =~ ^bench-wan:\ wan_floor_ratio=[0-9.]+\ wan_expert_speedup=[0-9.]+\ rtt_ms=1$ ]]
	[ -s "$BENCH_RESULTS" ]
	[ "$(stat -c %s "$BENCH_DIR/data/www/kubelet.exe")" -lt 1000000 ]
	[ "$(sha256sum <"$WB_SRC/bench/RESULTS-wan.md")" = "$shipped" ]
}

# make bench-matrix's harness (bench/matrix): the three shipped images over
# the demo mirror, one round
@test "bench/matrix: the matrix harness runs one round and ends with its summary line" {
	export BENCH_DIR="$BATS_TEST_TMPDIR/bench" BENCH_REPS=1
	export BENCH_RESULTS="$BATS_TEST_TMPDIR/RESULTS-matrix.md" WINBUILD="$WINBUILD"
	local shipped
	shipped=$(sha256sum <"$WB_SRC/bench/RESULTS-matrix.md")
	run bash "$WB_SRC/bench/matrix"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	[[ "${lines[-1]}" =~ ^bench-matrix:\ matrix_vs_one=[0-9.]+\ matrix_vs_three=[0-9.]+\ one_s=[0-9.]+\ three_s=[0-9.]+\ matrix_s=[0-9.]+$ ]]
	[ -s "$BENCH_RESULTS" ]
	[ "$(sha256sum <"$WB_SRC/bench/RESULTS-matrix.md")" = "$shipped" ]
}
