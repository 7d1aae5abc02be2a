#!/usr/bin/env bats
# Issue 40 (the containerd part): what winbuild stages for step 06-images
# must import into a real containerd. Debian's containerd 1.6.20 (.ci/deps)
# runs as a test-owned daemon (tests/lib/containerd.bash: its own root,
# state, socket and config in the test's temp dir, stopped by pid) and
# imports the staged image tars of every shipped image (recipes/*.yaml,
# each pre-pulls the pause image: make demo's stand-in, tests/demo/pause.py,
# from a static registry tree, as images_shipped.bats stages it) with the
# command line 06-images runs, read from the emitted script
# (tests/lib/ctrcmd.py), then lists them with the script's own `images ls`
# and finds each name at the digest the script checks.
#
# What a Linux containerd proves and what it does not: the import is
# containerd's own code on the same input (ImportIndex, the platform
# filter, the walk over every descriptor the filter keeps: the same
# source on Windows, containerd 1.6.20 platforms/platforms.go NewMatcher
# ignores os.version on every host), and 06-images' command unpacks (no
# --no-unpack): the unpack here applies the layers to Linux's overlayfs
# snapshotter, which takes the demo's Windows-shaped layers as plain tars.
# On Windows the windows snapshotter applies them (Files/, Hives/ and the
# layer's reparse points) and that part is not exercised here: docs/node.md
# says what stays unobserved.
load helpers
load ../lib/servers
load ../lib/containerd
load stage_fixtures

SIGNER=pause-signer@winbuild.invalid
ISSUER=https://oidc.winbuild.invalid
VERSIONS="2019 2022 2025"

# every shipped image built once, with the pause image pinned to make
# demo's stand-in: $BUILT/out/windows-V-containerd
setup_file() {
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	make_pause_mirror "$SIGNER" "$ISSUER"
	WB_NGINX_INCLUDE="$PAUSE_INCLUDE" start_nginx "$WWW"
	export BUILT="$BATS_FILE_TMPDIR/built"
	mkdir -p "$BUILT"
	(
		cd "$BUILT" || exit 1
		fixture_override >fixtures.yaml
		pause_override "$SIGNER" "$ISSUER" pin >pause.yaml
		for v in $VERSIONS; do
			WINBUILD_CACHE="$BUILT/cache" SOURCE_DATE_EPOCH=1700000000 NO_COLOR=1 \
				"$WINBUILD" build "$WB_SRC/recipes/windows-$v-containerd.yaml" \
				-O fixtures.yaml -O pause.yaml --no-progress >"build-$v.log" 2>&1 ||
				{ cat "build-$v.log" >&3; exit 1; }
		done
	)
}

teardown_file() { stop_servers; }

teardown() { stop_containerd; }

# the shipped recipes that pull images: every one (images.pause)
shipped() {
	local r
	for r in "$WB_SRC"/recipes/windows-*-containerd.yaml; do
		grep -q '^kind: image' "$r" && basename "$r" .yaml
	done
}

# cmd NAME: 06-images' ctr command lines and image records (ctrcmd.py)
cmd() { python3 "$WB_SRC/tests/lib/ctrcmd.py" "$BUILT/out/$1/packer/scripts/06-images.ps1"; }
jq_() { python3 -c 'import json,sys; J=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
jj_() { python3 -c 'import json,sys; J=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1])))' "$1"; }
# img KEY FIELD < CMD_JSON: a field of 06-images' record of image KEY
img() { jq_ "[i for i in J['images'] if i['Key'] == '$1'][0]['$2']"; }

# host_tar NAME WINPATH: the staged tree's file for a C:\ path
host_tar() {
	local p=${2#C:\\}
	echo "$BUILT/out/$1/tree/${p//\\//}"
}

# real_ctr TAR IMPORT_ARGV_JSON LS_ARGV_JSON: import TAR into the running
# daemon, then list; prints "rc=N", the import's output, then the table
real_ctr() {
	local -a imp ls_
	mapfile -t imp < <(python3 -c 'import json,sys; print("\n".join(a.replace("{TAR}", sys.argv[2]) for a in json.loads(sys.argv[1])))' "$2" "$1")
	mapfile -t ls_ < <(python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$3")
	local rc=0
	ctr -a "$CTR_SOCK" "${imp[@]}" 2>&1 || rc=$?
	echo "rc=$rc"
	ctr -a "$CTR_SOCK" "${ls_[@]}" 2>&1
}

# lsdigest NAME < TABLE: the DIGEST of NAME in a `ctr images ls` table, as
# 06-images reads it (REF TYPE DIGEST, the first three fields)
lsdigest() {
	awk -v n="$1" 'NR > 1 && $1 == n { print $3; exit }'
}

@test "every shipped image's staged tars import into Debian's containerd 1.6.20 with 06-images' own command, and ctr lists each name at the digest 06-images checks" {
	local names n=0 name c tar out want key
	names=$(shipped)
	[ -n "$names" ]
	for name in $names; do
		c=$(cmd "$name")
		echo "$name: $c"
		# the script imports into k8s.io for the kubelet, for one platform
		[ "$(jq_ 'J["import"][:4]' <<<"$c")" = "['-n', 'k8s.io', 'images', 'import']" ]
		[ "$(jq_ 'len(J["images"])' <<<"$c")" -ge 1 ]
		start_containerd
		for key in $(jq_ '" ".join(i["Key"] for i in J["images"])' <<<"$c"); do
			tar=$(host_tar "$name" "$(img "$key" Tar <<<"$c")")
			[ -f "$tar" ]
			out=$(real_ctr "$tar" "$(jj_ 'J["import"]' <<<"$c")" "$(jj_ 'J["ls"]' <<<"$c")")
			echo "$out"
			grep -qx 'rc=0' <<<"$out"
			want=$(img "$key" Digest <<<"$c")
			[ "$(sed '1,/^rc=/d' <<<"$out" | lsdigest "$(img "$key" Name <<<"$c")")" = "$want" ]
			# the digest checked is the manifest's: the one manifest.json
			# records as the node's (manifest_digest), bound to the pin
			python3 - "$BUILT/out/$name/manifest.json" "$key" "$want" <<-'PY'
				import json, sys
				m = json.load(open(sys.argv[1]))
				(i,) = [i for i in m["images"] if i["key"] == sys.argv[2]]
				assert i["manifest_digest"] == sys.argv[3], (i, sys.argv[3])
			PY
			n=$((n + 1))
		done
		stop_containerd
	done
	[ "$n" -ge 3 ]
}
