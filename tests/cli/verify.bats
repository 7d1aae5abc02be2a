#!/usr/bin/env bats
# winbuild verify OUTDIR (the staged tree against its manifest) and
# winbuild verify --lock FILE (the cache against a lock).
load helpers
load ../lib/servers
load stage_fixtures

setup() {
	fixture_setup
	wb build "$RECIPE" -O fixtures.yaml --builder qemu --no-progress
	assert_status 0
}

O() { echo "$WORK/out/$NAME"; }

@test "verify on a fresh build is clean (exit 0)" {
	wb verify "$(O)"
	assert_status 0
	assert_output_has "match manifest.json"
}

@test "verify detects one modified byte (exit 1, the file named)" {
	flip_byte "$(O)/tree/k/kubelet.exe" 100
	wb verify "$(O)"
	assert_status 1
	assert_output_has "modified  tree/k/kubelet.exe"
	assert_output_has "1 modified, 0 missing, 0 extra"
}

@test "verify detects a missing file (exit 1, the file named)" {
	rm "$(O)/tree/Program Files/containerd/ctr.exe"
	wb verify "$(O)"
	assert_status 1
	assert_output_has "missing   tree/Program Files/containerd/ctr.exe"
	assert_output_has "0 modified, 1 missing, 0 extra"
}

@test "verify detects an extra file (exit 1, the file named)" {
	echo evil >"$(O)/tree/k/evil.exe"
	wb verify "$(O)"
	assert_status 1
	assert_output_has "extra     tree/k/evil.exe"
	assert_output_has "0 modified, 0 missing, 1 extra"
}

@test "verify reports a missing directory and an extra one" {
	rmdir "$(O)/tree/var/log/kubelet"
	mkdir "$(O)/tree/stray"
	wb verify "$(O)"
	assert_status 1
	assert_output_has "missing   tree/var/log/kubelet  (directory)"
	assert_output_has "extra     tree/stray  (directory)"
}

@test "verify: usage errors and a directory without a manifest (exit 2)" {
	wb verify
	assert_status 2
	wb verify "$WORK"
	assert_status 2
	assert_output_has "manifest.json"
}

@test "verify --lock: clean cache 0; a changed entry 1 (quarantined); a missing entry 1" {
	wb lock "$RECIPE" -O fixtures.yaml --no-progress -q
	assert_status 0
	wb verify --lock windows-2022-containerd.lock
	assert_status 0
	assert_output_has "ok        kubelet"
	sha=$(python3 -c 'import json; print(json.load(open("windows-2022-containerd.lock"))["artifacts"]["kubelet"]["sha256"])')
	f="$WINBUILD_CACHE/sha256/${sha:0:2}/$sha"
	chmod u+w "$f" "$(dirname "$f")"
	flip_byte "$f" 10
	wb verify --lock windows-2022-containerd.lock
	assert_status 1
	assert_output_has "modified  kubelet"
	assert_output_has "quarantined"
	wb verify --lock windows-2022-containerd.lock
	assert_status 1
	assert_output_has "missing   kubelet"
}
