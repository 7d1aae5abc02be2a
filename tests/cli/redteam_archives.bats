#!/usr/bin/env bats
# Issue 13, class 8: archives, attacked through the real CLI as an archive
# author would. Every attack first stages a good archive into out/t, then
# stages the attack over it and asserts: exit 4, the message (entry named,
# escaped), nothing landed (no temp tree, no evil file in the test dir nor
# at the exact places above it an escape reaches, no new file outside the
# cache and out/), and the previous tree and manifest
# unchanged and still verifying. Archives come from tests/lib/mkarchives.py
# (redteam/), tests/lib/gzquine.py, GNU tar (sparse files) and libarchive's
# own test archives (tests/lib/libarchive-corpus.sh, fetched from Debian).
load helpers
load ../lib/servers
load stage_fixtures

# timed CMD...: run with a 60 s timeout, capturing status and output
timed() {
	timeout 60 "$@" >"$BATS_TEST_TMPDIR/out.txt" 2>&1 && status=0 || status=$?
	output=$(cat "$BATS_TEST_TMPDIR/out.txt")
}

# rt_recipe FILE [UNPACK_YAML_LINE]...: $WORK/img.yaml with one component
# "demo" whose artifact "hostile" unpacks $WWW/FILE into C:\h
rt_recipe() {
	local f="$1" l
	shift
	mkdir -p "$WORK/components"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n'
		printf '  hostile:\n    url: %s/%s\n' "$(H)" "$f"
		printf '    verify: {sha256: %s}\n' "$(sha_www "$f")"
		printf '    unpack:\n      into: C:\\h\n'
		for l in "$@"; do printf '      %s\n' "$l"; done
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  demo: {}\n' \
		>"$WORK/img.yaml"
}

snapshot() {
	(cd "$WORK/out/t" && find tree manifest.json -type f -print0 | sort -z | xargs -0 sha256sum)
}

# manifest_matches OUT: every file on disk is in the manifest, and back;
# winbuild verify agrees
manifest_matches() {
	python3 - "$1/tree" "$1/manifest.json" <<-'EOF'
		import json, os, sys
		t, m = sys.argv[1], json.load(open(sys.argv[2], encoding="utf-8"))
		listed = sorted(f["tree_path"] for f in m["files"])
		on_disk = sorted(os.path.relpath(os.path.join(d, f), t)
		                 for d, _, fs in os.walk(t) for f in fs)
		assert listed == on_disk, ("manifest", listed, "disk", on_disk)
	EOF
	"$WINBUILD" verify "$1" >/dev/null
}

# good_first: the earlier, good output every attack must leave intact
good_first() {
	rt_recipe redteam/good.tgz
	wb stage img.yaml --no-progress
	assert_status 0
	snapshot >"$BATS_TEST_TMPDIR/before.snap"
	touch "$BATS_TEST_TMPDIR/.before"
}

# attack FILE MESSAGE [UNPACK_YAML_LINE]...: staging FILE over the good
# output fails with exit 4 and MESSAGE, and nothing else changed
attack() {
	local f="$1" msg="$2"
	shift 2
	good_first
	rt_recipe "$f" "$@"
	timed "$WINBUILD" stage img.yaml --no-progress
	assert_status 4
	assert_output_has "$msg"
	assert_output_has "artifact 'hostile'"
	# no raw control byte (escape sequence, newline inside a name) reaches
	# the terminal: the only newlines end lines, every line is one message
	if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$BATS_TEST_TMPDIR/out.txt"; then
		echo "raw control bytes in the output" >&2
		return 1
	fi
	diff "$BATS_TEST_TMPDIR/before.snap" <(snapshot)
	manifest_matches "$WORK/out/t"
	[ -z "$(ls -d "$WORK/out/t"/.tree.tmp.* 2>/dev/null)" ]
	[ -z "$(find "$BATS_TEST_TMPDIR" ! -type d -newer "$BATS_TEST_TMPDIR/.before" \
		! -path "$WINBUILD_CACHE/*" ! -path "$WORK/out/*" ! -path "$WORK/components/*" \
		! -path "$WORK/img.yaml" ! -path "$BATS_TEST_TMPDIR/out.txt" -print)" ] || false
	[ -z "$(find "$BATS_TEST_TMPDIR" "$WWW/.." -name 'evil*' -newer "$BATS_TEST_TMPDIR/.before" 2>/dev/null)" ]
	# above the test dir, only the exact names the fixtures' ../ entries
	# carry, beside each folder above out/t that ../ climbs to (issue 44:
	# another program's evil* in /tmp must not fail this test)
	local d="$WORK/out/t" up n
	for up in 1 2 3 4 5 6 7 8; do
		d=$(dirname "$d")
		for n in evil-strip.exe evil-inc.exe evil.exe; do
			[ ! "$d/$n" -nt "$BATS_TEST_TMPDIR/.before" ] || { echo "escaped: $d/$n" >&2; return 1; }
		done
	done
}

# staged FILE [UNPACK_YAML_LINE]...: stages cleanly, manifest = disk, verify ok
staged() {
	local f="$1"
	shift
	rt_recipe "$f" "$@"
	timed "$WINBUILD" stage img.yaml --no-progress
	assert_status 0
	manifest_matches "$WORK/out/t"
}

# ---- names: UTF-8 locale, strict UTF-8 ------------------------------------

@test "redteam archives: UTF-8 names in a pax tar stage and are in the manifest" {
	staged redteam/utf8-pax.tgz
	grep -qF '"h/café.exe"' "$WORK/out/t/manifest.json"
	[ -f "$WORK/out/t/tree/h/данные/файл.txt" ]
}

@test "redteam archives: UTF-8 names in a zip (UTF-8 flag) stage and are in the manifest" {
	staged redteam/utf8.zip
	grep -qF '"h/Ünïcødé/ß.txt"' "$WORK/out/t/manifest.json"
	grep -qF '"h/中文.exe"' "$WORK/out/t/manifest.json"
}

@test "redteam archives: UTF-8 names in a GNU tar (raw bytes) stage and are in the manifest" {
	staged redteam/utf8-gnu.tgz
	grep -qF '"h/naïve/日本語.txt"' "$WORK/out/t/manifest.json"
}

@test "redteam archives: a Latin-1 name is refused, named with its byte escaped" {
	attack redteam/latin1.tgz "entry 'caf\\xe9.exe': name is not valid UTF-8"
}

@test "redteam archives: an overlong UTF-8 '/' in a name is refused" {
	attack redteam/overlong.tgz "entry 'a\\xc0\\xafb.exe': name is not valid UTF-8"
}

@test "redteam archives: a UTF-8-encoded surrogate in a name is refused" {
	attack redteam/surrogate.tgz "entry 's\\xed\\xa0\\x80.exe': name is not valid UTF-8"
}

@test "redteam archives: a zip name in CP437 (no UTF-8 flag) is refused" {
	attack redteam/cp437.zip "entry 'c\\x82fe.exe': name is not valid UTF-8"
}

# ---- zip: local header against central directory ----------------------------

@test "redteam archives: zip local header names another file than the central directory" {
	attack redteam/zip-local.zip "entry 'good.exe': the central directory and the local header disagree (the local header names it 'evil.exe')"
}

@test "redteam archives: zip central directory names another file than the local header" {
	attack redteam/zip-central.zip "entry 'evil.exe': the central directory and the local header disagree (the local header names it 'good.exe')"
}

@test "redteam archives: zip local Info-ZIP Unicode path differs from the central one" {
	attack redteam/zip-upath.zip "entry 'tool.exe': the central directory and the local header disagree (Info-ZIP Unicode path field"
}

@test "redteam archives: zip local UTF-8 flag differs from the central one" {
	attack redteam/zip-flag.zip "entry 'good.exe': the central directory and the local header disagree (UTF-8 flag"
}

# ---- sparse entries at full size (GNU tar writes them; the file is the oracle)

# sparse_case NAME FORMAT: tar NAME (already in $BATS_TEST_TMPDIR/src) with
# GNU tar --sparse in FORMAT; the staged file must equal the original
sparse_case() {
	tar --version 2>/dev/null | grep -q 'GNU tar' || skip "GNU tar not installed"
	mkdir -p "$WWW/rtgen"
	local a="rtgen/sparse-$1-$2-$BATS_TEST_NUMBER.tgz"
	tar --sparse --format="$2" -C "$BATS_TEST_TMPDIR/src" -czf "$WWW/$a" "$1"
	staged "$a" "limits: {max_ratio: 1000000}"
	[ "$(stat -c %s "$WORK/out/t/tree/h/$1")" = "$(stat -c %s "$BATS_TEST_TMPDIR/src/$1")" ]
	cmp "$WORK/out/t/tree/h/$1" "$BATS_TEST_TMPDIR/src/$1"
	python3 - "$WORK/out/t/manifest.json" "h/$1" "$(stat -c %s "$BATS_TEST_TMPDIR/src/$1")" <<-'EOF'
		import json, sys
		m = json.load(open(sys.argv[1]))
		f = [f for f in m["files"] if f["tree_path"] == sys.argv[2]]
		assert f and f[0]["size"] == int(sys.argv[3]), f
	EOF
}

@test "redteam archives: an all-hole sparse file (GNU format) is staged at its full size" {
	mkdir -p "$BATS_TEST_TMPDIR/src"
	truncate -s 3M "$BATS_TEST_TMPDIR/src/holes.bin"
	sparse_case holes.bin gnu
}

@test "redteam archives: an all-hole sparse file (pax 1.0 format) is staged at its full size" {
	mkdir -p "$BATS_TEST_TMPDIR/src"
	truncate -s 3M "$BATS_TEST_TMPDIR/src/holes.bin"
	sparse_case holes.bin posix
}

@test "redteam archives: data then a trailing hole is staged at its full size" {
	mkdir -p "$BATS_TEST_TMPDIR/src"
	head -c 5000 /dev/urandom >"$BATS_TEST_TMPDIR/src/tail.bin"
	truncate -s 2M "$BATS_TEST_TMPDIR/src/tail.bin"
	sparse_case tail.bin gnu
}

@test "redteam archives: hole, data, hole is staged byte for byte" {
	mkdir -p "$BATS_TEST_TMPDIR/src"
	truncate -s 4M "$BATS_TEST_TMPDIR/src/mid.bin"
	head -c 70000 /dev/urandom | dd of="$BATS_TEST_TMPDIR/src/mid.bin" bs=4096 seek=300 conv=notrunc 2>/dev/null
	sparse_case mid.bin posix
}

# ---- unpack.format is enforced ----------------------------------------------

@test "redteam archives: a tar.gz declared as zip is refused" {
	attack redteam/good.tgz "unpack.format is 'zip' but the file is a gzip stream" "format: zip"
}

@test "redteam archives: a zip declared as tar.gz is refused" {
	attack redteam/good.zip "unpack.format is 'tar.gz' but the file is a zip archive" "format: tar.gz"
}

@test "redteam archives: a zip declared as tgz is refused" {
	attack redteam/good.zip "unpack.format is 'tgz' but the file is a zip archive" "format: tgz"
}

@test "redteam archives: a tar.bz2 declared as tgz is refused; auto accepts it" {
	attack redteam/good.tar.bz2 "unpack.format is 'tgz' but the file is a bzip2 stream" "format: tgz"
	staged redteam/good.tar.bz2 "format: auto"
	[ -f "$WORK/out/t/tree/h/good.exe" ]
}

# ---- bounded in time and memory -------------------------------------------

@test "redteam archives: a recursive gzip (a gzip quine) is refused quickly with bounded memory" {
	mkdir -p "$WWW/rtgen"
	python3 "$WB_SRC/tests/lib/gzquine.py" "$WWW/rtgen/quine.tgz"
	# the oracle: Python's gzip says it decompresses to itself
	python3 -c 'import gzip,sys; d=open(sys.argv[1],"rb").read(); assert gzip.decompress(d)==d' \
		"$WWW/rtgen/quine.tgz"
	good_first
	rt_recipe rtgen/quine.tgz
	timeout 60 /usr/bin/time -v -o "$BATS_TEST_TMPDIR/time.txt" \
		"$WINBUILD" stage img.yaml --no-progress >"$BATS_TEST_TMPDIR/out.txt" 2>&1 &&
		status=0 || status=$?
	output=$(cat "$BATS_TEST_TMPDIR/out.txt")
	assert_status 4
	assert_output_has "no tar archive inside a gzip stream"
	assert_output_has "artifact 'hostile'"
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$BATS_TEST_TMPDIR/time.txt")
	echo "# quine: $(grep -E 'Elapsed' "$BATS_TEST_TMPDIR/time.txt"), max RSS ${rss} KB" >&3
	[ "$rss" -lt 512000 ]
	diff "$BATS_TEST_TMPDIR/before.snap" <(snapshot)
	manifest_matches "$WORK/out/t"
}

@test "redteam archives: a tar.gz inside another gzip is refused (one decompressor at most)" {
	attack redteam/nested.tgz "no tar archive inside a gzip stream"
}

@test "redteam archives: data skipped by include still counts against max_ratio" {
	attack redteam/skipped-bomb.tgz "the decompressed stream exceeds limits.max_ratio" \
		'include: ["small.txt"]'
}

@test "redteam archives: skipped data within a raised max_ratio stages the included file" {
	staged redteam/skipped-bomb.tgz 'include: ["small.txt"]' "limits: {max_ratio: 100000}"
	[ "$(cat "$WORK/out/t/tree/h/small.txt")" = hi ]
	[ ! -e "$WORK/out/t/tree/h/zeros.bin" ]
}

# ---- names in messages are escaped; every refusal names the entry -----------

@test "redteam archives: an escape sequence in an entry name never reaches the terminal raw" {
	attack redteam/esc-name.tgz "entry '\\x1b[31mred\\x1b[0m.exe'"
	assert_output_lacks $'\x1b'
}

@test "redteam archives: a newline in an entry name cannot forge an output line" {
	attack redteam/newline-name.tgz "entry 'ok.exe\\x0awinbuild: all verified.exe'"
	if grep -q '^winbuild: all verified' "$BATS_TEST_TMPDIR/out.txt"; then
		return 1
	fi
}

@test "redteam archives: a hard link target with an escape sequence is printed escaped" {
	attack redteam/esc-link.tgz "entry 'l.exe': hard link (to '\\x1b]0;pwned\\x07') refused"
}

@test "redteam archives: a damaged header is named by number and the entry before it" {
	attack redteam/damaged.tgz "entry #2 (after entry 'first.txt'): damaged entry header"
}

# ---- '..' is refused even where strip or include would skip it --------------
# (kills the mutant "extraction's own '..' check removed": winpath alone
# would let these through, as the component never reaches the output path)

@test "redteam archives: a '..' entry that strip would remove is refused" {
	attack redteam/dotdot-strip.tgz "entry '../evil-strip.exe': '..' component" "strip: 1"
}

@test "redteam archives: a '..' entry that include would skip is refused" {
	attack redteam/dotdot-include.tgz "entry '../evil-inc.exe': '..' component" \
		'include: ["ok.exe"]'
}

# ---- the peer corpus: libarchive's own test archives -----------------------

@test "redteam archives: libarchive's tar and zip test archives stage cleanly or are refused by name" {
	local dir
	dir=$(sh "$WB_SRC/tests/lib/libarchive-corpus.sh" 2>"$BATS_TEST_TMPDIR/fetch.err") || true
	need_dep test -d "$dir" -- "libarchive's test archives (Debian source package) not available: $(tail -1 "$BATS_TEST_TMPDIR/fetch.err")"
	mkdir -p "$WWW/corpus"
	# the tar and zip cases (any compression); not cpio, iso, rar, 7z, cab...
	python3 "$WB_SRC/tests/lib/uudecode.py" -o "$WWW/corpus" $(ls "$dir"/*.uu |
		grep -iE 'tar|zip|tgz|tbz|tlz|txz|pax|jar|xps' |
		grep -viE '7z|rar|cab|lha|xar|iso|cpio|mtree|format_ar_|warc|lzh|rpm')
	touch "$BATS_TEST_TMPDIR/.before"
	local f n=0 ok=0 refused=0 bad=""
	for f in "$WWW"/corpus/*; do
		f=$(basename "$f")
		n=$((n + 1))
		rt_recipe "corpus/$f"
		timeout 30 "$WINBUILD" stage img.yaml --no-progress -o "$WORK/c/$n" \
			>"$BATS_TEST_TMPDIR/out.txt" 2>&1 && status=0 || status=$?
		output=$(cat "$BATS_TEST_TMPDIR/out.txt")
		case $status in
		0)
			if manifest_matches "$WORK/c/$n/t" 2>"$BATS_TEST_TMPDIR/m.err"; then
				ok=$((ok + 1))
			else
				bad="$bad$f: staged, but the manifest or verify disagrees: $(tail -1 "$BATS_TEST_TMPDIR/m.err")"$'\n'
			fi ;;
		4)
			refused=$((refused + 1))
			# named: an entry, or the archive with a reason (never "unknown error")
			if ! grep -qE "archive '[^']*': (entry '|entry #|zip: |unpack.format|not an archive|no tar archive|the decompressed|sha256)" <<<"$output" ||
				grep -q "unknown error" <<<"$output" ||
				LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$BATS_TEST_TMPDIR/out.txt" ||
				[ -e "$WORK/c/$n/t/tree" ]; then
				bad="$bad$f: refused without naming the entry (or left a tree): $output"$'\n'
			fi ;;
		*)
			bad="$bad$f: exit $status: $output"$'\n' ;;
		esac
	done
	echo "# corpus: $n archives, $ok staged, $refused refused" >&3
	[ -z "$(find "$BATS_TEST_TMPDIR" ! -type d -newer "$BATS_TEST_TMPDIR/.before" \
		! -path "$WINBUILD_CACHE/*" ! -path "$WORK/c/*" ! -path "$WORK/components/*" \
		! -path "$WORK/img.yaml" ! -path "$BATS_TEST_TMPDIR/*.txt" ! -path "$BATS_TEST_TMPDIR/*.err" -print)" ] || false
	if [ -n "$bad" ]; then
		printf '%s' "$bad" >&2
		return 1
	fi
	[ "$n" -ge 100 ] && [ "$ok" -ge 40 ]
}
