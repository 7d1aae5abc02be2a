#!/usr/bin/env bats
# issue 18 item 1: every command's help lists exactly the options its
# parser takes. The accepted set is found by probing the CLI with every
# option any help, the man page or the completion names; never by reading
# winbuild's own table.
load helpers

# options_in SECTION-TITLE < help: the option names listed under the
# section ("options:", "verify options:"), aliases included
options_in() {
	awk -v t="$1" '
		$0 == t { on = 1; next }
		on && /^$/ { on = 0 }
		on && /^  -/ {
			line = $0; sub(/^  /, "", line)
			n = split(line, w, /[ ,]+/)
			for (i = 1; i <= n; i++) if (w[i] ~ /^-/) print w[i]; else break
		}' | sort -u
}

# every option word winbuild's help, man page and completion mention
universe() {
	local c
	for c in plan fetch lock stage emit build verify mirror cache sig help version; do
		"$WINBUILD" help "$c"
	done | grep -oE '(^|[ [(,|])--?[A-Za-z][A-Za-z0-9-]*' | grep -oE -- '--?[A-Za-z][A-Za-z0-9-]*'
	grep -oE -- '\\?-\\?-[a-z][a-z0-9\\-]*' "$WB_SRC/docs/winbuild.1" | tr -d '\\'
	grep -oE -- '(^|[ "])--?[a-zA-Z][a-zA-Z0-9-]*' "$WB_SRC/docs/winbuild.bash-completion" |
		grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*'
}

# accepted CMD... : the options of the universe that CMD does not call unknown
accepted() {
	local o out
	for o in $(universe | sort -u); do
		out=$("$WINBUILD" "$@" "$o" 2>&1 >/dev/null </dev/null) || true
		grep -qF -- "unknown option '$o'" <<<"$out" || echo "$o"
	done | sort -u
}

check_agree() {   # TITLE CMD...
	local title="$1"; shift
	local listed acc
	listed=$("$WINBUILD" help "$1" | options_in "$title")
	acc=$(accepted "$@")
	[ -n "$listed" ]
	if [ "$listed" != "$acc" ]; then
		echo "winbuild $*: help lists / parser accepts differ:" >&2
		diff <(echo "$listed") <(echo "$acc") >&2
		return 1
	fi
}

@test "help and parser agree: plan fetch lock stage" {
	for c in plan fetch lock stage; do check_agree "options:" "$c"; done
}

@test "help and parser agree: emit build verify mirror cache" {
	for c in emit build verify mirror cache; do check_agree "options:" "$c"; done
}

@test "help and parser agree: sig verify, sig authenticode, help, version" {
	check_agree "verify options:" sig verify
	check_agree "authenticode options:" sig authenticode
	check_agree "options:" help
	check_agree "options:" version
}

@test "every command that reports a result lists --json; stage no longer says 'as fetch'" {
	for c in plan fetch lock stage build verify mirror cache; do
		run "$WINBUILD" help "$c"
		assert_status 0
		options_in "options:" <<<"$output" | grep -qx -- --json
	done
	run "$WINBUILD" help stage
	assert_output_lacks "as fetch"
	# build does not take emit's image-builder options
	! "$WINBUILD" help build | options_in "options:" | grep -xE -- '--format|--mirror-url' || false
	"$WINBUILD" help emit | options_in "options:" | grep -qx -- --format
	wb build x.yaml --format packer
	assert_status 2
	assert_output_has "unknown option '--format'"
}

@test "CMD --help and help CMD print the same, exit 0" {
	for c in stage emit sig verify; do
		a=$("$WINBUILD" help "$c")
		b=$("$WINBUILD" "$c" --help)
		[ "$a" = "$b" ]
	done
	wb stage some.yaml -h
	assert_status 0
	assert_output_has "usage: winbuild stage"
}

@test "did-you-mean for an unknown option, among the command's own options" {
	wb plan img.yaml --explian
	assert_status 2
	assert_output_has "unknown option '--explian' (did you mean '--explain'?)"
	wb stage img.yaml --ofline
	assert_status 2
	assert_output_has "unknown option '--ofline' (did you mean '--offline'?)"
	wb emit img.yaml --sign-scirpts
	assert_status 2
	assert_output_has "unknown option '--sign-scirpts' (did you mean '--sign-scripts'?)"
	wb fetch img.yaml --cache-dir=/tmp
	assert_status 2
	assert_output_has "unknown option '--cache-dir' (did you mean '--cache'?)"
	# an option of another command is named as such
	wb plan img.yaml --jobs 2
	assert_status 2
	assert_output_has "unknown option '--jobs': 'plan' does not take it (see 'winbuild help plan')"
	wb plan img.yaml --zzzzzzzz
	assert_status 2
	assert_output_has "unknown option '--zzzzzzzz'"
	assert_output_lacks "did you mean"
}
