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
