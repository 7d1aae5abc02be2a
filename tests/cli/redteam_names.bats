#!/usr/bin/env bats
# Red team, issue 13 classes 2 and 7: names that become paths, and the
# rules Windows applies to names. Written as an attacker would: every case
# goes through the real CLI and checks four things: the exit code, the
# message (file:line:col for a recipe value), that nothing landed outside
# (the victim directory beside OUT keeps its contents) and that the
# previous good output is intact (tree, manifest, stamp, byte for byte).
load helpers
load ../lib/servers
load fetch_fixtures

setup_file() {
	make_fixtures "$BATS_FILE_TMPDIR"
	start_nginx "$WWW"
}

teardown_file() { stop_servers; }

setup() {
	common_setup
	export SOURCE_DATE_EPOCH=1700000000
	OUT="$BATS_TEST_TMPDIR/out"
	VICTIM="$BATS_TEST_TMPDIR/victim"
	mkdir -p "$VICTIM/sub"
	echo precious >"$VICTIM/keep.txt"
	echo deeper >"$VICTIM/sub/keep2.txt"
	printf 'payload\n' >"$WORK/a.bin"
	SHA=$(sha256sum "$WORK/a.bin" | cut -d' ' -f1)
}

# artifact KEY [DEST [URL]]: one artifact entry (KEY as written in YAML)
artifact() {
	printf '  %s:\n    url: %s\n    verify: {sha256: %s}\n    install:\n      to: %s\n' \
		"$1" "${3:-file://$WORK/a.bin}" "$SHA" "${2:-C:\\k\\good.bin}"
}

# demo [ENTRIES...]: components/demo.yaml with the good artifact plus
# ENTRIES (YAML text), img.yaml naming it (image name $IMG, default t)
demo() {
	mkdir -p "$WORK/components"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n'
		[ -n "${NOGOOD:-}" ] || artifact good
		for a in "$@"; do printf '%s\n' "$a"; done
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: %s\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  demo: {}\n' \
		"${IMG:-t}" >"$WORK/img.yaml"
}

# snapshot DIR: every path below DIR with its type, size and digest
snapshot() {
	# (a failed stage removes .stage-stamp by design: the next one restages)
	(cd "$1" && find . ! -name .stage-stamp -printf '%p %y %s\n' | LC_ALL=C sort &&
		find . -type f ! -name .stage-stamp -print0 | LC_ALL=C sort -z |
		xargs -0 -r sha256sum)
}

# good_stage: stage the good recipe into $OUT and remember everything
good_stage() {
	demo
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 0
	[ -f "$OUT/t/tree/k/good.bin" ]
	GOOD=$(snapshot "$OUT")
}

victim_intact() {
	[ "$(cat "$VICTIM/keep.txt")" = precious ]
	[ "$(cat "$VICTIM/sub/keep2.txt")" = deeper ]
	[ "$(find "$VICTIM" | wc -l)" -eq 4 ]
}

good_intact() {
	local now
	now=$(snapshot "$OUT")
	if [ "$now" != "$GOOD" ]; then
		diff <(echo "$GOOD") <(echo "$now") >&2
		return 1
	fi
}

# refused_at FILE WHAT: exit 2, "FILE:LINE:COL: bad WHAT", no raw control
# byte reached the terminal
refused_at() {
	assert_status 2
	if ! [[ "$output" =~ $1:[0-9]+:[0-9]+:\ bad\ $2 ]]; then
		echo "expected '$1:L:C: bad $2' in: $output" >&2
		return 1
	fi
	if [[ "$output" =~ [$'\x01'-$'\x08'$'\x0b'-$'\x1f'$'\x7f'] ]]; then
		echo "raw control byte in the message" >&2
		return 1
	fi
}

# --- class 2: names that become paths -------------------------------------

@test "redteam names: artifact key ../../../../victim cannot delete a directory outside OUT" {
	good_stage
	# prep/<artifact> of this key is $BATS_TEST_TMPDIR/victim itself
	demo "$(artifact ../../../../victim 'C:\k\x.bin')"
	wb stage img.yaml -o "$OUT" --no-progress
	refused_at components/demo.yaml "artifact name '../../../../victim'"
	assert_output_has "path separator"
	victim_intact
	good_intact
	# lock, fetch and plan refuse it just as early: nothing reaches the cache
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml --no-progress
	refused_at components/demo.yaml "artifact name"
	[ ! -d "$WINBUILD_CACHE/sha256" ] || [ -z "$(find "$WINBUILD_CACHE/sha256" -type f)" ]
	victim_intact
}

@test "redteam names: artifact keys with separators, dots, control characters, empty" {
	good_stage
	local k
	for k in '"a/b"' '"a\\b"' '"..\\..\\victim"' '"."' '".."' '""' '"a\x01b"' \
		'"a\nb"' '"a\tb"' '"\e[2Jx"' '"a\x7f"' '"a\u009bb"' '"CON"' '"nul.txt"' \
		'"a:b"' '"trailing."'; do
		demo "$(artifact "$k" 'C:\k\x.bin')"
		wb stage img.yaml -o "$OUT" --no-progress
		refused_at components/demo.yaml "artifact name" || { echo "key $k" >&2; return 1; }
		victim_intact
		good_intact
	done
	# a NUL inside the key: refused by the YAML reader before any name use
	demo "$(artifact '"a\0b"' 'C:\k\x.bin')"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 2
	assert_output_has "components/demo.yaml:"
	victim_intact
	good_intact
}

@test "redteam names: a bad key under an override's replace: is refused" {
	good_stage
	printf 'kind: override\nreplace:\n  "../x":\n    url: file://%s/a.bin\n' "$WORK" >ov.yaml
	wb stage img.yaml -O ov.yaml -o "$OUT" --no-progress
	assert_status 2
	assert_output_has "ov.yaml:3:3"
	good_intact
	victim_intact
}

@test "redteam names: component name attacks" {
	good_stage
	local k
	for k in '"../../victim"' '"a/b"' '"a\\b"' '".."' '"a\nb"' '""' '"CON"'; do
		printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  %s: {file: components/demo.yaml}\n' \
			"$k" >bad.yaml
		wb stage bad.yaml -o "$OUT" --no-progress
		refused_at bad.yaml "component name" || { echo "name $k" >&2; return 1; }
		good_intact
		victim_intact
	done
}

@test "redteam names: image name attacks (OUT/<name>)" {
	good_stage
	local n
	for n in '"../victim"' '".."' '"."' '"a/b"' '"a\\b"' '""' '"t\n"' '"con"' '"nul.d"' \
		'"lpt1"' '"com\u00b9"'; do
		printf 'kind: image\nname: %s\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  demo: {}\n' \
			"$n" >bad.yaml
		wb stage bad.yaml -o "$OUT" --no-progress
		refused_at bad.yaml "image name" || { echo "name $n" >&2; return 1; }
		good_intact
		victim_intact
		[ "$(ls "$OUT")" = t ]
	done
}

@test "redteam names: -o at a directory whose <name>/tree no stage made is not replaced" {
	good_stage
	# the user's own project happens to live at OTHER/t/tree
	mkdir -p "$BATS_TEST_TMPDIR/other/t/tree/src"
	echo mine >"$BATS_TEST_TMPDIR/other/t/tree/src/main.c"
	wb stage img.yaml -o "$BATS_TEST_TMPDIR/other" --no-progress
	assert_status 2
	assert_output_has "no stage made it"
	[ "$(cat "$BATS_TEST_TMPDIR/other/t/tree/src/main.c")" = mine ]
	[ "$(find "$BATS_TEST_TMPDIR/other" | wc -l)" -eq 5 ]
	# a symlink as OUT/<name>/tree is refused alike, its target untouched
	mkdir -p "$BATS_TEST_TMPDIR/o2/t"
	ln -s "$VICTIM" "$BATS_TEST_TMPDIR/o2/t/tree"
	wb stage img.yaml -o "$BATS_TEST_TMPDIR/o2" --no-progress
	assert_status 2
	assert_output_has "no stage made it"
	victim_intact
	good_intact
}

@test "redteam names: -o at a file, or below one, fails without touching it" {
	good_stage
	echo data >"$BATS_TEST_TMPDIR/plainfile"
	wb stage img.yaml -o "$BATS_TEST_TMPDIR/plainfile" --no-progress
	[ "$status" -ne 0 ]
	assert_output_has "plainfile"
	[ "$(cat "$BATS_TEST_TMPDIR/plainfile")" = data ]
	wb stage img.yaml -o "$BATS_TEST_TMPDIR/plainfile/x" --no-progress
	[ "$status" -ne 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/plainfile")" = data ]
	good_intact
	victim_intact
}

@test "redteam names: a stale temp dir is removed; a symlink planted as one is refused, never followed" {
	good_stage
	# a killed run leaves .tree.tmp.<pid>; someone plants one as a symlink
	ln -s "$VICTIM" "$OUT/t/.tree.tmp.999999"
	mkdir -p "$OUT/t/.tree.tmp.999998/tree/k"
	ln -s "$VICTIM" "$OUT/t/.tree.tmp.999998/tree/k/link"
	wb stage img.yaml -o "$OUT" --no-progress
	# the symlink is not a directory a stage made: refused, nothing followed
	[ "$status" -ne 0 ]
	assert_output_has ".tree.tmp.999999"
	victim_intact
	rm "$OUT/t/.tree.tmp.999999"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 0
	[ ! -e "$OUT/t/.tree.tmp.999998" ]
	victim_intact
	good_intact
}

# --- mirror layout: URL host and path segments become directories ---------

# mirror_good: a good mirror of the good recipe served over http at M
mirror_good() {
	NOGOOD=1
	cp "$WORK/a.bin" "$WWW/names-a.bin"
	demo "$(artifact web 'C:\k\web.bin' "$(H)/names-a.bin")"
	wb mirror img.yaml "$BATS_TEST_TMPDIR/M" --no-progress
	assert_status 0
	MGOOD=$(snapshot "$BATS_TEST_TMPDIR/M")
}

@test "redteam names: mirror host and path segments are checked at plan time" {
	mirror_good
	local u
	for u in "$(H)/a/../../../victim/x.bin" "$(H)/./x.bin" "$(H)//x.bin" \
		"$(H)/a%2f..\\..\\x.bin" "http://../x.bin" "http://./x.bin" \
		"$(H)/$(head -c 300 /dev/zero | tr '\0' a)/x.bin"; do
		demo "$(artifact web 'C:\k\web.bin' "$u")"
		wb plan img.yaml
		assert_status 2
		[[ "$output" =~ components/demo.yaml:[0-9]+:[0-9]+:\ .*safe\ mirror\ path ]] ||
			{ echo "url $u: $output" >&2; return 1; }
		wb mirror img.yaml "$BATS_TEST_TMPDIR/M" --no-progress
		assert_status 2
		[ "$(snapshot "$BATS_TEST_TMPDIR/M")" = "$MGOOD" ]
		victim_intact
	done
}

@test "redteam names: checksum and signature URLs are mirror paths too" {
	mirror_good
	demo "$(printf '  web:\n    url: %s/names-a.bin\n    verify:\n      sha256_url: "%s/sums/../../../victim/SHA256SUMS"\n    install:\n      to: C:\\k\\web.bin\n' "$(H)" "$(H)")"
	wb mirror img.yaml "$BATS_TEST_TMPDIR/M" --no-progress
	assert_status 2
	[[ "$output" =~ components/demo.yaml:[0-9]+:[0-9]+:\ .*sha256_url.*safe\ mirror\ path ]]
	demo "$(printf '  web:\n    url: %s/names-a.bin\n    verify:\n      minisign:\n        url: "%s/x/./a.minisig"\n        keys: [{key: %s}]\n    install:\n      to: C:\\k\\web.bin\n' "$(H)" "$(H)" "$PUB_A")"
	wb mirror img.yaml "$BATS_TEST_TMPDIR/M" --no-progress
	assert_status 2
	assert_output_has "safe mirror path"
	[ "$(snapshot "$BATS_TEST_TMPDIR/M")" = "$MGOOD" ]
	victim_intact
}

# --- class 7: the rules Windows applies ---------------------------------

# dest_refused DEST_A DEST_B MESSAGE: two artifacts at DEST_A and DEST_B,
# each fine alone; plan and stage exit 2 at the second one's file:line:col
# naming both, the good tree intact
dest_refused() {
	good_stage
	demo "$(artifact one "$1")" "$(artifact two "$2")"
	wb plan img.yaml
	assert_status 2
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 2
	if ! [[ "$output" =~ components/demo.yaml:[0-9]+:[0-9]+:\ bad\ Windows\ destination ]]; then
		echo "no file:line:col: $output" >&2
		return 1
	fi
	assert_output_has "$3"
	assert_output_has "artifact 'one'"
	assert_output_has "artifact 'two'"
	good_intact
	victim_intact
}

# tgz NAME ENTRY...: $WWW/NAME, a tar.gz of one-byte files ENTRY...
tgz() {
	python3 - "$WWW/$1" "${@:2}" <<-'PY'
		import io, sys, tarfile
		with tarfile.open(sys.argv[1], "w:gz") as t:
		    for n in sys.argv[2:]:
		        ti = tarfile.TarInfo(n); ti.size = 1
		        t.addfile(ti, io.BytesIO(b"x"))
	PY
}

# unpack_entry KEY FILE INTO: an artifact unpacking $WWW/FILE into INTO
unpack_entry() {
	printf '  %s:\n    url: %s/%s\n    verify: {sha256: %s}\n    unpack:\n      into: %s\n' \
		"$1" "$(H)" "$2" "$(sha256sum "$WWW/$2" | cut -d' ' -f1)" "$3"
}

@test "redteam names: case collisions under Windows' Unicode upper-casing (é/É, Cyrillic о/О, Greek)" {
	dest_refused 'C:\k\é.exe' 'C:\k\É.exe' "differ only in case"
	dest_refused 'C:\k\оп.exe' 'C:\k\ОП.exe' "differ only in case"
	dest_refused 'C:\Ωmega\a.exe' 'C:\ωMEGA\b.exe' "differ only in case"
	dest_refused 'C:\ǅ\a.exe' 'C:\ǆ\b.exe' "differ only in case"
	# Latin o and Cyrillic о are different letters: both staged
	demo "$(artifact one 'C:\k\o.exe')" "$(artifact two 'C:\k\о.exe')"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 0
	[ -f "$OUT/t/tree/k/o.exe" ] && [ -f "$OUT/t/tree/k/о.exe" ]
}

@test "redteam names: every claim in the tree is judged alike: an archive entry against a destination" {
	good_stage
	tgz names-bin.tar.gz BIN/tool.exe
	demo "$(unpack_entry arc names-bin.tar.gz 'C:\h')" "$(artifact one 'C:\h\bin\other.exe')"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 4
	assert_output_has "only in case"
	good_intact
	victim_intact
}

@test "redteam names: every reserved device name is refused, with any extension, as file or directory" {
	good_stage
	local n f
	for n in CON PRN AUX NUL CONIN\$ CONOUT\$ COM0 COM1 COM2 COM3 COM4 COM5 COM6 COM7 COM8 COM9 \
		LPT0 LPT1 LPT2 LPT3 LPT4 LPT5 LPT6 LPT7 LPT8 LPT9 COM¹ COM² COM³ LPT¹ LPT² LPT³; do
		for f in "C:\\k\\$n" "C:\\k\\${n,,}.txt" "C:\\k\\$n .log" "C:\\$n\\x.exe" "C:\\k\\$n..tar.gz"; do
			demo "$(artifact bad "$f")"
			wb stage img.yaml -o "$OUT" --no-progress
			assert_status 2
			[[ "$output" =~ components/demo.yaml:[0-9]+:[0-9]+:\ bad\ Windows\ destination.*reserved\ device\ name ]] ||
				{ echo "dest $f: $output" >&2; return 1; }
		done
	done
	good_intact
	victim_intact
	# one character more is an ordinary name
	demo "$(artifact fine 'C:\k\PRNX.txt')" "$(artifact fine2 'C:\k\COM10')" "$(artifact fine3 'C:\k\xCON.exe')"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 0
}

@test "redteam names: a reserved name inside an archive is refused at stage time" {
	good_stage
	tgz names-dev.tar.gz bin/Prn.TXT
	demo "$(unpack_entry arc names-dev.tar.gz 'C:\h')"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 4
	assert_output_has "reserved device name"
	good_intact
}

@test "redteam names: an 8.3 short name aliasing another entry is refused (KUBE-L~1.EXE)" {
	dest_refused 'C:\k\kube-log-runner.exe' 'C:\k\KUBE-L~1.EXE' "8.3 short name"
	assert_output_has "'C:\k\KUBE-L~1.EXE' of artifact 'two'"
	# either order, any case, later numbers and hashed tails
	dest_refused 'C:\k\kube-l~2.exe' 'C:\k\kube-log-runner.exe' "8.3 short name"
	dest_refused 'C:\k\KU3F2A~1.EXE' 'C:\k\kube-log-runner.exe' "8.3 short name"
	# directories too: PROGRA~1 beside Program Files
	dest_refused 'C:\Program Files\a.exe' 'C:\PROGRA~1\b.exe' "8.3 short name"
	# a different extension or prefix is no alias
	demo "$(artifact one 'C:\k\kube-log-runner.exe')" "$(artifact two 'C:\k\KUBE-L~1.TXT')" \
		"$(artifact three 'C:\k\KUBELE~1.EXE')" "$(artifact four 'C:\k\kubelet.exe')"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 0
}

@test "redteam names: an archive entry aliasing a destination's 8.3 name is refused at stage time" {
	good_stage
	tgz names-k.tar.gz kube-log-runner.exe
	demo "$(unpack_entry arc names-k.tar.gz 'C:\k')" "$(artifact one 'C:\k\KUBE-L~1.EXE')"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 4
	assert_output_has "'C:\k\KUBE-L~1.EXE' from artifact 'one' may be the 8.3 short name Windows gives 'C:\k\kube-log-runner.exe' from artifact 'arc'"
	good_intact
	# inside one archive: a directory and its alias
	tgz names-p.tar.gz "Program Files/a.exe" "PROGRA~1/b.exe"
	demo "$(unpack_entry arc names-p.tar.gz 'C:\h')"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 4
	assert_output_has "8.3 short name"
	good_intact
	victim_intact
}

@test "redteam names: paths over MAX_PATH are refused at plan time and in archives" {
	good_stage
	local d250 ok
	d250=$(head -c 200 /dev/zero | tr '\0' d)
	# C:\ + 200 + \ + 55 = 259: accepted; one more is refused
	ok="C:\\$d250\\$(head -c 55 /dev/zero | tr '\0' f)"
	demo "$(artifact long "$ok")"
	wb plan img.yaml
	assert_status 0
	demo "$(artifact long "${ok}f")"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 2
	[[ "$output" =~ components/demo.yaml:[0-9]+:[0-9]+:\ bad\ Windows\ destination.*MAX_PATH ]]
	good_intact
	# an archive entry that is fine alone but too long below its into:
	tgz names-long.tar.gz "$(head -c 120 /dev/zero | tr '\0' a)/$(head -c 120 /dev/zero | tr '\0' b).exe"
	demo "$(unpack_entry arc names-long.tar.gz "C:\\$(head -c 30 /dev/zero | tr '\0' i)")"
	wb stage img.yaml -o "$OUT" --no-progress
	assert_status 4
	assert_output_has "MAX_PATH"
	good_intact
	victim_intact
}
