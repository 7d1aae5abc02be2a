#!/usr/bin/env bats
# The Makefile as a user meets it: missing build dependencies named before
# any compile.
load helpers

# a source dir that shares this checkout's sources but has its own build/,
# so nothing here touches the checkout's build/ or ./winbuild
scratch_src() {
	mkdir -p "$WORK/src"
	ln -s "$WB_SRC/builder" "$WORK/src/builder"
}

@test "make without the -dev packages names them and 'make deps', and compiles nothing" {
	scratch_src
	mkdir -p "$WORK/bin"
	# a pkg-config that knows every package but jansson and libyaml
	cat >"$WORK/bin/pkg-config" <<-'SH'
	#!/bin/sh
	for a; do case "$a" in jansson|yaml-0.1) exit 1;; esac; done
	exec pkg-config "$@"
	SH
	chmod +x "$WORK/bin/pkg-config"
	run env PKG_CONFIG="$WORK/bin/pkg-config" make -f "$WB_SRC/Makefile" -C "$WORK/src"
	[ "$status" -ne 0 ]
	assert_output_has "missing build dependencies"
	assert_output_has "libjansson-dev (jansson)"
	assert_output_has "libyaml-dev (yaml-0.1)"
	assert_output_has "make deps"
	! grep -q 'libcurl' <<<"$output"
	! grep -q 'No such file' <<<"$output"
	[ ! -e "$WORK/src/build/builder" ] && [ ! -e "$WORK/src/winbuild" ]
	# no pkg-config at all: every package is named
	run env PKG_CONFIG="$WORK/bin/no-such-pkg-config" make -f "$WB_SRC/Makefile" -C "$WORK/src"
	[ "$status" -ne 0 ]
	assert_output_has "libcurl4-openssl-dev (libcurl)"
	assert_output_has "libssl-dev (libcrypto)"
	assert_output_has "make deps"
	[ ! -e "$WORK/src/winbuild" ]
}
