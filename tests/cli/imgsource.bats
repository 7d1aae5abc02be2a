#!/usr/bin/env bats
# Issue 44 item 1: an image's source is one seam (builder/fetch/imgsource.h).
# The fetch step (cmd/pipeimages.c), `winbuild image pull` (cmd/image.c) and
# the stage (stage/oci.c) get an image only through it; the stage reads the
# pinned image back from the cache (imgsource_load) and holds no fetch code:
# no registry client call, no registry or transport option struct.
load helpers

# callers SYMBOL: the builder/ files outside fetch/registry* and
# fetch/imgsource* that name SYMBOL (comments stripped)
callers() {
	local f
	for f in $(grep -rl --include='*.[ch]' "$1" "$WB_SRC/builder"); do
		case "${f#"$WB_SRC/builder/"}" in
		fetch/registry*|fetch/imgsource*) continue ;;
		esac
		cc -fpreprocessed -dD -E -P "$f" 2>/dev/null | grep -q "$1" &&
			echo "${f#"$WB_SRC/builder/"}"
	done
	return 0
}

@test "imgsource: registry_pull is called by the seam only" {
	run callers 'registry_pull('
	assert_status 0
	[ -z "$output" ] || { echo "registry_pull called outside fetch/imgsource.c: $output"; false; }
}

@test "imgsource: the stage holds no fetch code (no registry or transport options, no fetch header)" {
	run grep -rnE 'registry_opts|fetch_transport|registry_pull|fetch/registry\.h|fetch/fetch\.h|trust_policy' \
		"$WB_SRC/builder/stage"
	[ "$status" = 1 ] || { echo "$output"; false; }
	grep -q 'imgsource_load(' "$WB_SRC/builder/stage/oci.c"
	grep -q 'imgsource_pull(' "$WB_SRC/builder/cmd/pipeimages.c"
	grep -q 'imgsource_pull(' "$WB_SRC/builder/cmd/image.c"
}
