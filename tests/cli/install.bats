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
	! grep -q 'libcurl' <<<"$output" || false
	! grep -q 'No such file' <<<"$output" || false
	[ ! -e "$WORK/src/build/builder" ] && [ ! -e "$WORK/src/winbuild" ]
	# no pkg-config at all: every package is named
	run env PKG_CONFIG="$WORK/bin/no-such-pkg-config" make -f "$WB_SRC/Makefile" -C "$WORK/src"
	[ "$status" -ne 0 ]
	assert_output_has "libcurl4-openssl-dev (libcurl)"
	assert_output_has "libssl-dev (libcrypto)"
	assert_output_has "make deps"
	[ ! -e "$WORK/src/winbuild" ]
}

@test "make install ships recipes, templates, docs and man page; the installed binary finds a shipped recipe by name anywhere; ./winbuild untouched" {
	scratch_src
	for d in recipes packer overrides docs README.md; do ln -s "$WB_SRC/$d" "$WORK/src/$d"; done
	cp "$WINBUILD" "$WORK/src/winbuild"
	sum=$(sha256sum "$WORK/src/winbuild" | cut -d' ' -f1)
	touch -d '2020-01-01' "$WORK/src/winbuild"
	# other flags than the build's: install must not rebuild or relink
	run make -n -f "$WB_SRC/Makefile" -C "$WORK/src" install DEVELOPER=1 \
		PREFIX=/opt/wb DESTDIR="$WORK/dest"
	assert_status 0
	! grep -E -- '(^| )-o (build/|winbuild)' <<<"$output" || false
	run make -f "$WB_SRC/Makefile" -C "$WORK/src" install DEVELOPER=1 \
		PREFIX=/opt/wb DESTDIR="$WORK/dest"
	assert_status 0
	[ "$(sha256sum "$WORK/src/winbuild" | cut -d' ' -f1)" = "$sum" ]
	[ "$(stat -c %Y "$WORK/src/winbuild")" = "$(date -d 2020-01-01 +%s)" ]
	[ ! -e "$WORK/src/build/builder" ]
	P="$WORK/dest/opt/wb"
	[ -x "$P/bin/winbuild" ]
	[ -f "$P/share/winbuild/recipes/windows-2022-containerd.yaml" ]
	[ -f "$P/share/winbuild/recipes/templates/containerd/config.v3.toml" ]
	[ -d "$P/share/winbuild/packer/hcl" ]
	[ -f "$P/share/man/man1/winbuild.1" ]
	[ -f "$P/share/doc/winbuild/exit-codes.md" ] && [ -f "$P/share/doc/winbuild/README.md" ]
	# from a directory with no recipes: the shipped recipe by name
	mkdir -p "$WORK/elsewhere" && cd "$WORK/elsewhere"
	run "$P/bin/winbuild" plan windows-2022-containerd --set windows.iso_sha256=$TEST_ISO_SHA256 --json
	assert_status 0
	python3 -c 'import json,sys; p=json.load(sys.stdin); assert p["artifacts"], p' <<<"$output"
	# the Sigstore trusted root the shipped components name travels with them
	cmp "$P/share/winbuild/recipes/trust/sigstore/trusted_root.json" "$WB_SRC/recipes/trust/sigstore/trusted_root.json"
	python3 -c 'import json,sys,os
a = [a for a in json.load(sys.stdin)["artifacts"] if a["name"] == "containerd"][0]
r = a["verify"]["attestation"]["trusted_root"]
assert r == sys.argv[1] + "/share/winbuild/recipes/trust/sigstore/trusted_root.json", r
assert os.path.isfile(r), r' "$P" <<<"$output"
	run "$P/bin/winbuild" plan windows-2022-containerd.yaml --set windows.iso_sha256=$TEST_ISO_SHA256
	assert_status 0
	# a file in the current directory wins over a shipped recipe of that name
	printf 'not: a recipe\n' >windows-2022-containerd
	run "$P/bin/winbuild" plan windows-2022-containerd
	[ "$status" -eq 2 ]
	# an unknown name is still an error naming it
	run "$P/bin/winbuild" plan no-such-recipe
	[ "$status" -eq 2 ]
	assert_output_has "no-such-recipe"
}
