#!/usr/bin/env bats
# The man page renders, names every command of the command table, and is
# installed with the bash completion, which offers the command names.
# @where the man page and bash completion -- `docs/winbuild.1`,
#   `docs/winbuild.bash-completion` (recipe and override names from `winbuild
#   list --names`, `--set` keys from `plan --explain`)
load helpers

commands() { "$WINBUILD" help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1} /^$/{if(f)exit}'; }

@test "docs/winbuild.1 renders without warnings and names every command" {
	run bash -c "groff -man -Tutf8 -ww -z '$WB_SRC/docs/winbuild.1' 2>&1"
	assert_status 0
	[ -z "$output" ]
	if command -v man >/dev/null; then
		MANWIDTH=100 man -l "$WB_SRC/docs/winbuild.1" >page.txt 2>err.txt
	else
		groff -man -Tutf8 "$WB_SRC/docs/winbuild.1" >page.txt
	fi
	grep -q 'winbuild - build the offline' page.txt
	for c in $(commands); do
		[ "$c" = version ] && continue
		grep -qE "^ +$c( |$)" page.txt || { echo "man page lacks $c" >&2; return 1; }
	done
}

@test "bash completion offers every command, and options per command" {
	run bash -c "
		PATH='$(dirname "$WINBUILD")':\$PATH
		source '$WB_SRC/docs/winbuild.bash-completion'
		COMP_WORDS=(winbuild ''); COMP_CWORD=1; _winbuild; echo \"\${COMPREPLY[*]}\"
		COMP_WORDS=(winbuild ve); COMP_CWORD=1; _winbuild; echo \"v:\${COMPREPLY[*]}\"
		COMP_WORDS=(winbuild mirror --s); COMP_CWORD=2; _winbuild; echo \"m:\${COMPREPLY[*]}\"
		COMP_WORDS=(winbuild build -b q); COMP_CWORD=3; _winbuild; echo \"b:\${COMPREPLY[*]}\"
		COMP_WORDS=(winbuild stage --j); COMP_CWORD=2; _winbuild; echo \"s:\${COMPREPLY[*]}\"
		COMP_WORDS=(winbuild build --f); COMP_CWORD=2; _winbuild; echo \"bf:\${COMPREPLY[*]}\""
	assert_status 0
	for c in $(commands); do
		grep -qw -- "$c" <<<"${lines[0]}" || { echo "completion lacks $c" >&2; return 1; }
	done
	assert_output_has "v:verify version"
	grep -qx -- "m:--sign --set\|m:--set --sign" <<<"$output"
	assert_output_has "b:qemu"
	# from 'winbuild help CMD': stage takes --json and --jobs, build no --format
	assert_output_has "s:--jobs --json"
	grep -qx "bf:" <<<"$output"
}

@test "make install puts the man page and the completion in place" {
	# dry run: a real install would rebuild ./winbuild with other flags
	# under make SANITIZE=... check
	run make -n -C "$WB_SRC" install PREFIX=/usr DESTDIR=/dest
	assert_status 0
	assert_output_has "docs/winbuild.1 /dest/usr/share/man/man1/winbuild.1"
	assert_output_has "/dest/usr/share/bash-completion/completions/winbuild"
}

@test "issue 28: completion offers shipped recipe names, shipped override names after -O, and --set keys of the recipe" {
	common_setup
	cd "$WORK"
	run bash -c "
		PATH='$(dirname "$WINBUILD")':\$PATH
		source '$WB_SRC/docs/winbuild.bash-completion'
		COMP_WORDS=(winbuild plan win); COMP_CWORD=2; _winbuild; echo \"r:\${COMPREPLY[*]}\"
		COMP_WORDS=(winbuild build windows-2022-containerd -O ent); COMP_CWORD=4; _winbuild; echo \"o:\${COMPREPLY[*]}\"
		COMP_WORDS=(winbuild plan windows-2022-containerd --set components.containerd.ver); COMP_CWORD=4; _winbuild; echo \"s:\${COMPREPLY[*]}\"
		COMP_WORDS=(winbuild list ''); COMP_CWORD=2; _winbuild; echo \"l:\${COMPREPLY[*]}\""
	assert_status 0
	assert_output_has "r:windows-2019-containerd windows-2022-containerd windows-2025-containerd"
	assert_output_has "o:enterprise-mirror enterprise-replace"
	assert_output_has "s:components.containerd.version="
	grep -q "^l:.*recipes overrides" <<<"$output"
}

@test "every function any doc names, as \`name()\`, exists in builder/, tests/ or packer/" {
	# a renamed or removed function leaves the docs pointing nowhere
	# (issue 29: a stale name in docs/hardening.md; issue 44: every doc,
	# not two, after architecture.md named a hop.c function renamed away);
	# "`x()`/`_y()`" short forms are skipped
	missing=
	for f in "$WB_SRC"/docs/*.md "$WB_SRC/README.md"; do
		for n in $(grep -o '`[a-z][a-z_0-9]*()`' "$f" | tr -d '`()' | sort -u); do
			grep -rqw -- "$n" "$WB_SRC/builder" "$WB_SRC/tests" "$WB_SRC/packer" || missing="$missing ${f##*/}:$n"
		done
	done
	[ -z "$missing" ] || { echo "docs name functions that do not exist:$missing" >&2; return 1; }
}

# issue 44 item 4: the function and file index is generated from the
# headers (tests/lib/apiindex.py, as git's api-index), so it cannot name a
# function that is gone or miss one that was added
@test "docs/api-index.md is what the headers give (make api-index), and a new declaration shows as stale" {
	run python3 "$WB_SRC/tests/lib/apiindex.py" "$WB_SRC" --check
	echo "$output"
	assert_status 0
	grep -q '`wb_url_parse()`' "$WB_SRC/docs/api-index.md"
	# a header that gains a function makes the index stale
	r="$BATS_TEST_TMPDIR/r"
	mkdir -p "$r/docs" && cp -R "$WB_SRC/builder" "$r/builder" && cp "$WB_SRC/docs/api-index.md" "$r/docs/"
	printf '\nint wb_url_dummy_added(void);\n' >>"$r/builder/lib/url.h"
	run python3 "$WB_SRC/tests/lib/apiindex.py" "$r" --check
	assert_status 1
	assert_output_has '`wb_url_dummy_added()`'
}
