#!/usr/bin/env bats
# Includes run down the pipeline only (docs/architecture.md, top):
#   cmd -> emit -> stage -> fetch -> recipe -> trust -> lib
# A module may include its own directory and any directory below it, never
# one above. main.c and run.h sit at the top.
# Within cmd/, calls form no cycle either (docs/architecture.md, "cmd/"):
# main.c -> the command files -> the driver (pipeline.c) -> its steps ->
# the leaves (msg.c, env.c, progress.c), never back.
load helpers

# rank DIR: the layer's height (lib lowest)
layer_check() {
	local src="$1" bad=0 f from to line
	declare -A rank=([lib]=0 [trust]=1 [recipe]=2 [fetch]=3 [stage]=4 [emit]=5 [cmd]=6)
	while IFS= read -r line; do
		f=${line%%:*}
		from=${f#"$src/"}
		from=${from%%/*}
		to=$(sed -n 's/.*#[[:space:]]*include "\([a-z_]*\)\/.*/\1/p' <<<"${line#*:}")
		[ -n "$to" ] || continue
		[ -n "${rank[$from]+x}" ] || continue    # main.c, run.h: the top
		if [ -z "${rank[$to]+x}" ]; then
			echo "${f#"$src/"}: includes unknown layer '$to'" >&2; bad=1; continue
		fi
		if [ "${rank[$to]}" -gt "${rank[$from]}" ]; then
			echo "${f#"$src/"}: $from includes $to (upward): ${line#*:}" >&2
			bad=1
		fi
	done < <(grep -rn --include='*.[ch]' '^[[:space:]]*#[[:space:]]*include "' "$src" |
		 sed 's/^\([^:]*\):[0-9]*:/\1:/')
	return $bad
}

@test "no header or source includes a layer above its own" {
	run layer_check "$WB_SRC/builder"
	echo "$output"
	assert_status 0
}

@test "the layer check catches an upward include" {
	mkdir -p src/trust src/recipe src/lib
	echo '#include "lib/err.h"' >src/trust/ok.h
	echo '#include "trust/ok.h"' >src/recipe/ok.h
	run layer_check "$PWD/src"
	assert_status 0
	echo '#include "recipe/plan.h"' >src/trust/bad.h
	run layer_check "$PWD/src"
	assert_status 1
	assert_output_has "trust/bad.h: trust includes recipe (upward)"
	rm src/trust/bad.h
	echo '  # include "stage/extract.h"' >src/recipe/bad.c
	run layer_check "$PWD/src"
	assert_status 1
	assert_output_has "recipe/bad.c: recipe includes stage (upward)"
}

# call_edges DIR: "FROM TO" per file of DIR/*.c (and DIR/../main.c) that
# names a function another of them defines (a call or a pointer to it),
# comments stripped by the preprocessor
call_edges() {
	local dir="$1" f g name fn
	local -A defs=() text=()
	local files=("$dir"/*.c)
	[ -f "$dir/../main.c" ] && files+=("$dir/../main.c")
	for f in "${files[@]}"; do
		name=$(basename "$f" .c)
		text[$name]=$(cc -fpreprocessed -dD -E -P "$f" | grep -v '^#')
		# what it defines for the others: a definition at the start of a
		# line, not static, not a declaration
		while IFS= read -r fn; do
			[ -n "$fn" ] && defs[$fn]=$name
		done < <(grep -v '^static' <<<"${text[$name]}" |
			 sed -n 's/^[a-z][a-z_ 0-9]*[ *]\([a-z_][a-z_0-9]*\)(.*[^;]$/\1/p' |
			 grep -vx main)
	done
	for f in "${!text[@]}"; do
		for fn in "${!defs[@]}"; do
			g=${defs[$fn]}
			[ "$g" != "$f" ] || continue
			if grep -qE "(^|[^a-z_0-9])$fn([^a-z_0-9]|\$)" <<<"${text[$f]}"; then
				echo "$f $g"
			fi
		done
	done | sort -u
}

# no_call_cycle DIR: tsort fails (naming the loop) on a cycle
no_call_cycle() {
	local edges
	edges=$(call_edges "$1")
	[ -n "$edges" ] || { echo "no calls found in $1" >&2; return 2; }
	tsort <<<"$edges" >/dev/null
}

@test "no cycle among the cmd/ files: main.c and the commands call down to the driver and the leaves" {
	run no_call_cycle "$WB_SRC/builder/cmd"
	echo "$output"
	assert_status 0
	run call_edges "$WB_SRC/builder/cmd"
	# the shape the check relies on: main reaches the commands, the
	# commands the driver, and the leaves call nobody
	assert_output_has "main plan"
	assert_output_has "stage pipeline"
	assert_output_has "pipeline msg"
	for leaf in msg env progress; do
		if grep -q "^$leaf " <<<"$output"; then
			echo "$leaf.c is a leaf, but calls: $(grep "^$leaf " <<<"$output")"
			return 1
		fi
	done
}

@test "the call check catches a cycle through a function pointer or a call" {
	mkdir -p src/cmd
	printf 'int a_run(void);\nint a_run(void)\n{\n\treturn b_help();\n}\n' >src/cmd/a.c
	printf 'int b_help(void)\n{\n\treturn 0; /* not a_run() */\n}\n' >src/cmd/b.c
	run no_call_cycle "$PWD/src/cmd"
	assert_status 0
	printf 'static int (*fn)(void) = a_run;\nint c_x(void)\n{\n\treturn fn();\n}\n' >src/cmd/c.c
	printf 'int b_help(void)\n{\n\treturn c_x();\n}\n' >src/cmd/b.c
	run no_call_cycle "$PWD/src/cmd"
	assert_status 1
	assert_output_has "loop"
}

# ---- one of each mechanism (issue 29): greps that keep the copies gone

# hex_digit_tests DIR: every hand-written hex-digit test in DIR's C files
# (character ranges up to 'f'/'F', isxdigit, a strspn over the digits),
# less those that are not digest checks; prints FILE:LINE: TEXT
hex_digit_tests() {
	grep -rnE --include='*.c' \
		"<= '[fF]'|isxdigit|strspn\([^)]*\"0123456789abcdef|\"0123456789abcdefABCDEF\"" "$1" |
		sed "s|^$1/||" |
		grep -vE '^lib/hex\.c:' |
		grep -vE '^trust/digest\.c:.*(c >= .a. && c <= .f.|c >= .A. && c <= .F.)' |
		grep -vE '^lib/winpath\.c:.*hex &= isxdigit' |
		grep -vE '^fetch/dlock\.c:.*\*p >= .A. && \*p <= .F.'
	return 0
}

@test "one hex-digest check: lib/hex.h, no copy beside it" {
	# lib/winpath.c: 8.3 hash tails; trust/digest.c: the decoder;
	# fetch/dlock.c lower-cases a pin: none of them asks "is this a digest"
	run hex_digit_tests "$WB_SRC/builder"
	echo "$output"
	assert_status 0
	[ -z "$output" ]
	mkdir -p src/stage
	printf 'static int is_hex64(const char *s)\n{\n\treturn *s >= %s && *s <= %s;\n}\n' "'a'" "'f'" >src/stage/x.c
	run hex_digit_tests "$PWD/src"
	assert_output_has "stage/x.c:3:"
}

@test "one case-insensitive path table: lib/pathtab.h; winpath_fold keys nothing else" {
	# winpath_fold's callers: the table, winpath.c itself (paths_clash),
	# and tree.c's 8.3 alias keys (their directory part); no tsearch tree
	run grep -rn --include='*.c' -e 'winpath_fold(' -e 'tsearch(' -e 'tfind(' "$WB_SRC/builder"
	echo "$output"
	[ "$(grep -vcE '^[^:]*/builder/(lib/pathtab\.c|lib/winpath\.c|stage/tree\.c:[0-9]+:[[:space:]]*char \*dfold = winpath_fold\(dir\);)' <<<"$output")" = 0 ]
}

@test "lib/winpath.c uses lib/names.c, never the reverse (one name check, run once)" {
	run grep -n 'winpath_' "$WB_SRC/builder/lib/names.c"
	echo "$output"
	assert_status 1
	grep -q 'names_segment_ok(' "$WB_SRC/builder/lib/winpath.c"
}
