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

# Issue 44 (item 3): recipe/resolve.c is the driver alone, and the helpers
# the resolver's files share carry the prefix of the file that defines
# them. The prefixes are the table "Which file does what" at the top of
# recipe/resolve_int.h (" *   FILE.c  PREFIX_  what it does", "-": none).
# resolver_split DIR: every violation in DIR (a copy of builder/recipe), one
# a line; nothing when it holds.
resolver_split() {
	local dir="$1" h="$1/resolve_int.h" name def prefix
	declare -A pfx
	while read -r def prefix; do
		pfx[$def]=$prefix
	done < <(sed -n 's/^ \*   \([a-z_]*\.c\)  *\([a-z_]*_\) .*/\1 \2/p' "$h")
	[ "${#pfx[@]}" -gt 0 ] || echo "resolve_int.h: no table of files and prefixes"
	# the functions declared: a line at column 0 that names one, then "("
	for name in $(grep -oP '^(?!#|/\*| \*|struct |typedef)[a-z][\w \*]*?\b\K\w+(?=\()' "$h"); do
		def=$(grep -lP "^(?!static)[a-z][\w \*]*\b$name\((?!.*;\s*$)" "$dir"/*.c | head -n1)
		def=${def##*/}
		if [ -z "$def" ]; then
			echo "$name: declared in resolve_int.h, defined in no file"
		elif [ -z "${pfx[$def]}" ]; then
			echo "$name: $def has no prefix in resolve_int.h's table"
		elif [ "${name#"${pfx[$def]}"}" = "$name" ]; then
			echo "$name: defined in $def, not prefixed ${pfx[$def]}"
		fi
	done
	# resolve.c: plan_resolve() and static passes, nothing else
	grep -P '^(?!static)[a-z][\w \*]*\b\w+\((?!.*;\s*$)' "$dir/resolve.c" |
		grep -v '^int plan_resolve(' | sed 's/^/resolve.c defines more than the driver: /'
	# convert_top's pieces and the driver: no function over 60 lines
	for def in resolve.c top.c rs_util.c; do
		[ -f "$dir/$def" ] || { echo "$def: missing"; continue; }
		awk -v f="$def" '/^[a-z].*\(/ && !/;$/ { name = $0; start = NR }
			/^}/ && start { if (NR - start > 60) print f ": " NR - start " lines: " name; start = 0 }' "$dir/$def"
	done
}

@test "recipe/: resolve.c is the driver alone; resolve_int.h's functions carry their file's prefix" {
	run resolver_split "$WB_SRC/builder/recipe"
	[ -z "$output" ] || { echo "$output" >&2; return 1; }
}

@test "the resolver check names an unprefixed helper, a helper in resolve.c and a long pass" {
	cp -r "$WB_SRC/builder/recipe" "$BATS_TEST_TMPDIR/recipe"
	cd "$BATS_TEST_TMPDIR/recipe"
	printf 'int tidy(int x);\n' >>resolve_int.h
	printf 'int tidy(int x)\n{\n\treturn x;\n}\n' >>rs_util.c
	printf 'int helper(int x)\n{\n\treturn x;\n}\n' >>resolve.c
	{ printf 'static int longpass(int x)\n{\n'; for i in $(seq 61); do printf '\tx++;\n'; done; printf '\treturn x;\n}\n'; } >>top.c
	run resolver_split "$PWD"
	echo "$output"
	grep -qx 'tidy: defined in rs_util.c, not prefixed rs_' <<<"$output"
	grep -q '^resolve.c defines more than the driver: int helper(int x)$' <<<"$output"
	grep -q '^top.c: 6[0-9] lines: static int longpass(int x)$' <<<"$output"
	[ "$(wc -l <<<"$output")" -eq 3 ]
}
