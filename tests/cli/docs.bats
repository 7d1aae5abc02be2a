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

# issue 44 item 4: "where things happen" is generated from `@where` tags in
# the sources' comments; docs/architecture.md keeps no hand-kept table
@test "docs/api-index.md's \"where things happen\" comes from @where tags: a tag beside a function or atop a file makes a row, a tagged function gone takes its row" {
	idx="$WB_SRC/docs/api-index.md"
	grep -qF '| the one URL parser and origin rule (scheme, host, port; the default port explicit) | ' "$idx"
	grep -qF '`wb_url_parse()` in `builder/lib/url.c`: on libcurl' "$idx"
	grep -qF '`tests/win/run`: from `tests/run`' "$idx"
	# every topic of the table architecture.md once held is a row here
	rows=$(sed -n '/^## Where things happen/,/^## `/p' "$idx" | grep -c '^| [^-]')
	[ "$rows" -ge 130 ] || { echo "only $rows rows" >&2; return 1; }
	! grep -q '^| you look for' "$WB_SRC/docs/architecture.md" || false
	r="$BATS_TEST_TMPDIR/r"
	mkdir -p "$r/docs" && cp "$idx" "$r/docs/"
	tar -C "$WB_SRC" --exclude=node_modules --exclude=.cache -cf - builder tests .ci bench | tar -C "$r" -xf -
	run python3 "$WB_SRC/tests/lib/apiindex.py" "$r" --check
	assert_status 0
	# a tag beside a function names the function, one atop a file the file;
	# the same topic in two places is one row
	printf '\n/*\n * Planted.\n * @where a planted topic -- the\n *   planted note\n */\nint wb_planted_fn(void);\n' >>"$r/builder/lib/url.h"
	sed -i '1i /* @where a planted topic */' "$r/builder/lib/hex.c"
	run python3 "$WB_SRC/tests/lib/apiindex.py" "$r" --check
	assert_status 1
	assert_output_has '+| a planted topic | `builder/lib/hex.c`; `wb_planted_fn()` in `builder/lib/url.h`: the planted note |'
	# a function that is gone takes its row with it
	python3 "$WB_SRC/tests/lib/apiindex.py" "$r" --write
	sed -i '/^int wb_url_parse(/,/^}/d' "$r/builder/lib/url.c"
	run python3 "$WB_SRC/tests/lib/apiindex.py" "$r" --check
	assert_status 1
	assert_output_has '-| the one URL parser and origin rule'
}

# issue 44 item 4: a doc names nothing that is gone (issue 29 found
# `verify_signed()` in docs/hardening.md; issue 44 a renamed test title and
# upstream paths written as if they were ours). Functions: the test above;
# these are paths, make targets, bats files, quoted test titles, WINBUILD_*
# variables (tests/lib/apiindex.py --stale). An upstream file is named with
# its repository (`images/capi/packer/...`, `github.com/hashicorp/packer/...`).
@test "nothing stale is named in docs/ or README.md: repository paths, make targets, bats files, quoted test titles, WINBUILD_* variables" {
	run python3 "$WB_SRC/tests/lib/apiindex.py" "$WB_SRC" --stale
	echo "$output"
	assert_status 0
}

@test "each stale-name check fails on a name planted in a copy of a doc" {
	plant() {
		cp "$WB_SRC/docs/hardening.md" "$BATS_TEST_TMPDIR/h.md"
		printf '\n%s\n' "$1" >>"$BATS_TEST_TMPDIR/h.md"
		run python3 "$WB_SRC/tests/lib/apiindex.py" "$WB_SRC" --stale "$BATS_TEST_TMPDIR/h.md"
		echo "$output"
		assert_status 1
		assert_output_has "$2"
		[ "${#lines[@]}" -eq 1 ]
	}
	cp "$WB_SRC/docs/hardening.md" "$BATS_TEST_TMPDIR/h.md"
	run python3 "$WB_SRC/tests/lib/apiindex.py" "$WB_SRC" --stale "$BATS_TEST_TMPDIR/h.md"
	assert_status 0
	plant 'kept in `builder/lib/verify_signed.c`' 'path builder/lib/verify_signed.c'
	plant 'the templates `packer/hcl/build-{payload,gone}.pkr.hcl.in`' 'path packer/hcl/build-{payload,gone}.pkr.hcl.in'
	plant 'done in recipe/gone_helpers.c' 'path recipe/gone_helpers.c (builder/recipe/gone_helpers.c)'
	plant 'run `make check-everything`' 'make target check-everything'
	plant '    make -j2 winbuild unitz' 'make target unitz'
	plant 'see redteam_gone.bats' 'bats file redteam_gone.bats'
	plant 'fetch.bats "a tampered byte exits 7"' 'test fetch.bats "a tampered byte exits 7"'
	plant 'stage.bats "hostile: ../ entry", "hostile: gone …"' 'test stage.bats "hostile: gone …"'
	# (the name in two pieces: this file is among the sources read)
	v=WINBUILD_NO_SUCH; v=${v}_LIMIT
	plant "set \`$v\`" "variable $v"
}
