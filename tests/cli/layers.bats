#!/usr/bin/env bats
# Includes run down the pipeline only (docs/architecture.md, top):
#   cmd -> emit -> stage -> fetch -> recipe -> trust -> lib
# A module may include its own directory and any directory below it, never
# one above. main.c and run.h sit at the top.
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

# ---- one of each mechanism (issue 29): greps that keep the copies gone

@test "one case-insensitive path table: lib/pathtab.h; winpath_fold keys nothing else" {
	# winpath_fold's callers: the table, winpath.c itself (paths_clash),
	# and tree.c's 8.3 alias keys (their directory part); no tsearch tree
	run grep -rn --include='*.c' -e 'winpath_fold(' -e 'tsearch(' -e 'tfind(' "$WB_SRC/builder"
	echo "$output"
	[ "$(grep -vcE '^[^:]*/builder/(lib/pathtab\.c|lib/winpath\.c|stage/tree\.c:[0-9]+:[[:space:]]*char \*dfold = winpath_fold\(dir\);)' <<<"$output")" = 0 ]
}
