#!/usr/bin/env bats
# The command line itself: version, help, unknown commands and options.
load helpers

@test "--version prints the version" {
	wb --version
	assert_status 0
	[[ "$output" =~ ^winbuild\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "help lists commands and exit codes" {
	wb help
	assert_status 0
	assert_output_has "commands:"
	assert_output_has "exit codes"
}

@test "help COMMAND shows that command's usage" {
	wb help version
	assert_status 0
	assert_output_has "usage: winbuild version"
}

@test "no command exits 2 with usage" {
	wb
	assert_status 2
	assert_output_has "usage: winbuild"
}

@test "unknown command exits 2 and suggests the closest" {
	wb verzion
	assert_status 2
	assert_output_has "'verzion' is not a winbuild command"
	assert_output_has "did you mean 'version'?"
}

@test "unknown global option exits 2" {
	wb --frobnicate
	assert_status 2
	assert_output_has "unknown option '--frobnicate'"
}

@test "help for an unknown command exits 2" {
	wb help nosuch
	assert_status 2
	assert_output_has "no such command 'nosuch'"
}

@test "issue 28: winbuild list shows shipped and local recipes and overrides; a shipped override is found by name from any directory" {
	common_setup
	cd "$WORK"
	printf 'kind: override\nnode: {cni: nat}\n' >site.yaml
	printf 'not: yaml of ours\n' >other.yaml
	run "$WINBUILD" list
	assert_status 0
	assert_output_has "  windows-2022-containerd"
	assert_output_has "  enterprise-mirror"
	assert_output_has "overrides (local):"
	assert_output_has "  site.yaml"
	[[ "$output" != *other.yaml* ]]
	run "$WINBUILD" list recipes --names
	[ "${lines[0]}" = windows-2019-containerd ]
	[[ "$output" != *enterprise* ]]
	run "$WINBUILD" list --json
	assert_status 0
	python3 -c 'import json,sys; r = json.loads(sys.argv[1]); assert "demo" in r["overrides"]["shipped"] and r["overrides"]["local"] == ["site.yaml"], r' "$output"
	# by name: the recipe and the override, from a directory that has neither
	run "$WINBUILD" plan windows-2022-containerd -O enterprise-mirror -O site.yaml --builder azure-arm
	assert_status 0
	assert_output_has "override: $WB_SRC/overrides/enterprise-mirror.yaml"
	assert_output_has "override: site.yaml"
	run "$WINBUILD" plan windows-2022-containerd -O no-such-override
	assert_status 2
	assert_output_has "no-such-override"
	run "$WINBUILD" list bogus
	assert_status 2
}
