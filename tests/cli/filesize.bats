#!/usr/bin/env bats
# Issue 29: no source file does several jobs. A file over 1,200 lines is
# split along its sections into files whose names say their job
# (docs/architecture.md): every directory of builder/ and main.c's.
load helpers

SPLIT_DIRS=". cmd emit fetch lib recipe stage trust"

# every .c/.h file under builder/DIR... over MAX lines, as "lines path"
too_long() {
	local max="$1" d
	shift
	for d in "$@"; do
		find "$WB_SRC/builder/$d" -maxdepth 1 -name '*.[ch]' -exec wc -l {} + | grep -v ' total$'
	done | awk -v max="$max" '$1 > max { sub(".*/builder/(\\./)?", "builder/", $2); print $1, $2 }'
}

@test "no source file of builder/ is over 1,200 lines" {
	run too_long 1200 $SPLIT_DIRS
	[ -z "$output" ] || { echo "over 1,200 lines (split it along its sections):" >&2; echo "$output" >&2; return 1; }
}

@test "the length check names a file over the limit" {
	run too_long 100 recipe
	grep -q '^[0-9]* builder/recipe/schema.c$' <<<"$output"
}
