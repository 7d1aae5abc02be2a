#!/usr/bin/env bats
# Issue 29: no source file does several jobs. A file over 1,200 lines is
# split along its sections into files whose names say their job
# (docs/architecture.md); recipe/ first, the rest of builder/ as the other
# splits land (add its directory to SPLIT_DIRS).
load helpers

SPLIT_DIRS="recipe"

# every .c/.h file under builder/DIR... over MAX lines, as "lines path"
too_long() {
	local max="$1" d
	shift
	for d in "$@"; do
		find "$WB_SRC/builder/$d" -name '*.[ch]' -exec wc -l {} + | grep -v ' total$'
	done | awk -v max="$max" '$1 > max { sub(".*/builder/", "builder/", $2); print $1, $2 }'
}

@test "no source file of a split directory of builder/ is over 1,200 lines" {
	run too_long 1200 $SPLIT_DIRS
	[ -z "$output" ] || { echo "over 1,200 lines (split it along its sections):" >&2; echo "$output" >&2; return 1; }
}

@test "the length check names a file over the limit" {
	run too_long 100 recipe
	grep -q '^[0-9]* builder/recipe/schema.c$' <<<"$output"
}
