#!/usr/bin/env bats
# Hostile inputs through the CLI: recipes, overrides and --set values built
# to exhaust memory or time, signature and key files malformed in every
# field, checksum files and server responses that lie or never end.
# Every case must end quickly with a clear message and the documented exit
# code, and leave nothing in the cache. (More in plan.bats "bad:", the
# cmocka files test_minisign.c, test_checksum.c and test_extract.c, and the
# fuzz regression inputs in tests/fuzz/regressions/.)
# @where limits on every input, the fault matrix, hostile inputs and the
#   red-team suites (docs/hardening.md) -- hostile inputs; the fault matrix
#   `tests/cli/faults.bats`; one red-team suite per attack class,
#   `tests/cli/redteam_*.bats`
load helpers
load ../lib/servers
load fetch_fixtures

FIX="$BATS_TEST_DIRNAME/fixtures/plan"

setup_file() {
	start_fetch_servers
	# hostile checksum files and signatures beside the good ones
	local s
	s=$(sha256sum "$WWW/a.bin" | cut -d' ' -f1)
	python3 - "$WWW" "$s" <<-'EOF'
		import sys
		www, s = sys.argv[1], sys.argv[2]
		def w(n, b): open(www + "/" + n, "wb").write(b)
		w("huge.sums", (("0" * 64 + "  other.bin\n") * 20000).encode())
		w("nothex.sums", ("z" * 64 + "  a.bin\n").encode())
		w("short.sums", (s[:63] + "  a.bin\n").encode())
		w("conflict.sums", (s + "  a.bin\n" + "1" * 64 + "  a.bin\n").encode())
		w("many.sums", "".join("%064x  f%d.bin\n" % (i, i) for i in range(500)).encode()
		  + (s + "  a.bin\n").encode())
		w("html.sums", b"<html><body>200 OK but not a checksum file</body></html>\n")
		w("nul.sums", (s + "  a.bin\0\n").encode())
		w("latin1.sums", (s + "  a.bin\n").encode() + ("1" * 64).encode() + b"  caf\xe9.bin\n")
		w("esc.sums", ("1" * 64 + "  \x1b[2Jevil\x07.bin\n").encode())
	EOF
}

teardown_file() {
	stop_servers
}

# timed CMD...: run with a 20 s timeout, capture status and output
timed() {
	timeout 20 "$@" >"$WORK/out.txt" 2>&1 && status=0 || status=$?
	output=$(cat "$WORK/out.txt")
}

plan_fix() {
	cp -R "$FIX"/. "$WORK/"
}

# image_with VARS_YAML: img.yaml beside the fixture components, with extra
# top-level YAML
image_with() {
	plan_fix
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  containerd: {}\n%s\n' "$1" >"$WORK/h.yaml"
}

# --- recipes and overrides -------------------------------------------------

@test "hostile: YAML billion laughs (anchors and aliases) is refused at the first alias" {
	plan_fix
	python3 -c '
print("kind: image\nname: t\nwindows: {version: \"2022\", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}")
print("vars:")
print("  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]")
for i in range(1, 10):
    p = chr(ord("a") + i - 1); c = chr(ord("a") + i)
    print("  %s: &%s [%s]" % (c, c, ",".join(["*" + p] * 9)))' >lol.yaml
	timed "$WINBUILD" plan lol.yaml
	assert_status 2
	assert_output_has "lol.yaml:6:10:"
	assert_output_has "YAML aliases are not supported"
}

@test "hostile: billion laughs in an override file is refused" {
	plan_fix
	printf 'kind: override\nvars: {x: &x [a, a, a]}\nmirrors: [*x, *x]\n' >o.yaml
	timed "$WINBUILD" plan img.yaml -O o.yaml
	assert_status 2
	assert_output_has "o.yaml:3:"
	assert_output_has "aliases are not supported"
}

@test "hostile: billion laughs in a --set flow value is refused" {
	plan_fix
	timed "$WINBUILD" plan img.yaml --set 'vars={a: &a [x, x], b: [*a, *a]}'
	assert_status 2
	assert_output_has "aliases are not supported"
}

@test "hostile: billion laughs through nested \${var}s stops at the expansion cap" {
	image_with "$(python3 -c '
print("vars:")
print("  a: \"" + "x" * 100 + "\"")
for p, c in zip("abcdefg", "bcdefgh"):
    print("  %s: \"%s\"" % (c, ("${%s}" % p) * 10))
')"
	sed -i 's/^  containerd: {}/  containerd:\n    version: "${h}"/' h.yaml
	# a memory cap makes the old unbounded expansion fail fast (not under
	# ASan, which reserves terabytes of address space)
	(grep -qa __asan_init "$WINBUILD" || ulimit -v 1000000
	 timed "$WINBUILD" plan h.yaml; echo "$status" >st)
	status=$(cat st)
	output=$(cat out.txt)
	assert_status 2
	assert_output_has "expands to more than 65536 bytes"
	assert_output_has "h.yaml:"
}

@test "hostile: a \${var} that refers to itself is a cycle error" {
	image_with 'vars:
  a: "${b}"
  b: "x${a}"'
	sed -i 's/^  containerd: {}/  containerd:\n    version: "${a}"/' h.yaml
	timed "$WINBUILD" plan h.yaml
	assert_status 2
	assert_output_has "nest deeper than"
}

@test "hostile: deep nesting in an override file" {
	plan_fix
	python3 -c 'print("kind: override\nvars:" + " {a:" * 5000 + " 1" + "}" * 5000)' >o.yaml
	timed "$WINBUILD" plan img.yaml -O o.yaml
	assert_status 2
	assert_output_has "nested deeper than 32 levels"
}

@test "hostile: deep nesting in a --set value" {
	plan_fix
	timed "$WINBUILD" plan img.yaml --set "vars=$(python3 -c 'print("[" * 20000 + "]" * 20000)')"
	assert_status 2
	assert_output_has "value of 'vars': --set"
	assert_output_has "nested deeper than 32 levels"
}

@test "hostile: a 100 KB scalar is refused" {
	image_with "windows_x: $(head -c 100000 /dev/zero | tr '\0' x)"
	sed -i 's/^windows_x/vars:\n  big/' h.yaml
	timed "$WINBUILD" plan h.yaml
	assert_status 2
	assert_output_has "h.yaml:8:8:"
	assert_output_has "value longer than 65536 bytes"
}

@test "hostile: a 100 KB map key is refused" {
	image_with "vars:
  $(head -c 100000 /dev/zero | tr '\0' k): 1"
	timed "$WINBUILD" plan h.yaml
	assert_status 2
	assert_output_has "longer than 65536 bytes"
}

@test "hostile: more than 100000 nodes is refused" {
	plan_fix
	python3 -c 'print("kind: override\nvars:\n  l: [" + ",".join(["1"] * 100001) + "]")' >o.yaml
	timed "$WINBUILD" plan img.yaml -O o.yaml
	assert_status 2
	assert_output_has "too many nodes (limit 100000)"
}

@test "hostile: invalid UTF-8 in a recipe names the line" {
	image_with 'vars:
  ok: "fine"
  bad: "caf'$'\xe9''"'
	timed "$WINBUILD" plan h.yaml
	assert_status 2
	assert_output_has "h.yaml:9:"
	assert_output_has "not valid UTF-8"
}

@test "hostile: invalid UTF-8 (overlong, surrogate) in an override file" {
	plan_fix
	printf 'kind: override\nvars:\n  a: "\xc0\xaf"\n  b: "\xed\xa0\x80"\n' >o.yaml
	timed "$WINBUILD" plan img.yaml -O o.yaml
	assert_status 2
	assert_output_has "o.yaml:3:"
	assert_output_has "not valid UTF-8"
}

@test "hostile: invalid UTF-8 in a --set value is refused, not dropped from --json" {
	plan_fix
	timed "$WINBUILD" plan img.yaml --json --set $'windows.edition=\xff\xfe'
	assert_status 2
	assert_output_has "--set #1: 'windows.edition': the value is not valid UTF-8"
}

@test "hostile: invalid UTF-8 in WINBUILD_SET is refused" {
	plan_fix
	WINBUILD_SET=$'components.kubernetes.version=1.\xc3' timed "$WINBUILD" plan img.yaml --json
	assert_status 2
	assert_output_has "env WINBUILD_SET #1"
	assert_output_has "not valid UTF-8"
}

@test "hostile: valid non-ASCII UTF-8 in --set is accepted" {
	plan_fix
	# (windows.edition is an enum now: it picks the install image)
	timed "$WINBUILD" plan img.yaml --json --set 'vars.note=日本語-é'
	assert_status 0
	assert_output_has '日本語-é'
}

@test "hostile: a NUL byte inside a quoted scalar is refused" {
	image_with 'vars:
  a: "x\0y"'
	timed "$WINBUILD" plan h.yaml
	assert_status 2
	assert_output_has "NUL byte in value"
}

@test "hostile: a recipe that never ends (/dev/zero) is refused at the size limit" {
	timed "$WINBUILD" plan /dev/zero
	assert_status 2
	assert_output_has "larger than the limit"
}

@test "hostile: a directory as the recipe is an error, not a crash" {
	mkdir d.yaml
	timed "$WINBUILD" plan d.yaml
	[ "$status" -eq 2 ] || [ "$status" -eq 5 ]
	assert_output_has "d.yaml"
}

@test "hostile: 2000 --set pairs resolve in bounded time" {
	plan_fix
	args=()
	for i in $(seq 2000); do args+=(--set "vars.v$((i % 50))=$i"); done
	timed "$WINBUILD" plan img.yaml "${args[@]}"
	assert_status 0
}

@test "hostile: a WINBUILD_SET of 10000 empty pairs and separators" {
	plan_fix
	WINBUILD_SET="$(printf ' ;%.0s' $(seq 10000))" timed "$WINBUILD" plan img.yaml
	assert_status 0
}

# --- signature and key files (winbuild sig verify) -------------------------

# sigfix: a good signature over $WORK/f.bin, in f.bin.minisig and pub
sigfix() {
	printf 'payload\n' >f.bin
	cp "$KEYS/a.pub" a.pub
	minisign -S -s "$KEYS/a.key" -m f.bin </dev/null >/dev/null
}

# bad_sig PYTHON_EXPR EXPECT: rewrite line list L of the signature with
# PYTHON_EXPR (L is a list of the four lines as bytes), then expect exit 2
# (could not verify) or 1 (did not verify) as $3 (default 2) and EXPECT.
bad_sig() {
	sigfix
	python3 - "$1" <<-'EOF'
		import sys, base64
		L = open("f.bin.minisig", "rb").read().split(b"\n")[:4]
		b64d, b64e = base64.b64decode, base64.b64encode
		exec(sys.argv[1])
		open("f.bin.minisig", "wb").write(b"\n".join(L) + b"\n")
	EOF
	timed "$WINBUILD" sig verify -p a.pub -m f.bin
	assert_status "${3:-2}"
	assert_output_has "$2"
}

@test "hostile sig: the good signature verifies (control)" {
	sigfix
	timed "$WINBUILD" sig verify -p a.pub -m f.bin
	assert_status 0
}

@test "hostile sig: empty file" {
	bad_sig 'L = [b""]' "lines"
}

@test "hostile sig: untrusted comment prefix missing" {
	bad_sig 'L[0] = b"comment: x"' "untrusted comment"
}

@test "hostile sig: signature line not base64" {
	bad_sig 'L[1] = b"!!!!" + L[1][4:]' "base64"
}

@test "hostile sig: signature line one byte short" {
	bad_sig 'L[1] = b64e(b64d(L[1])[:-1])' "not the base64 of a 74-byte signature"
}

@test "hostile sig: signature line one byte long" {
	bad_sig 'L[1] = b64e(b64d(L[1]) + b"x")' "not the base64 of a 74-byte signature"
}

@test "hostile sig: unknown algorithm bytes" {
	bad_sig 'L[1] = b64e(b"Xx" + b64d(L[1])[2:])' "algorithm"
}

@test "hostile sig: key id of an unpinned key (did not verify, exit 1)" {
	bad_sig 'd = bytearray(b64d(L[1])); d[2] ^= 1; L[1] = b64e(bytes(d))' "key id" 1
}

@test "hostile sig: R value with the high bits set (non-canonical) does not verify" {
	bad_sig 'd = bytearray(b64d(L[1])); d[10:42] = b"\xff" * 31 + b"\x7f"; L[1] = b64e(bytes(d))' "signature" 1
}

@test "hostile sig: trusted comment prefix missing" {
	bad_sig 'L[2] = b"trusted: x"' "trusted comment"
}

@test "hostile sig: an edited trusted comment fails the global signature (exit 1)" {
	bad_sig 'L[2] = L[2] + b"\x1b[2J"' "comment signature verification failed" 1
}

@test "hostile sig: a validly signed trusted comment with an escape byte is refused" {
	sigfix
	minisign -S -s "$KEYS/a.key" -m f.bin -t "$(printf 'file:f.bin\x1b[2J')" </dev/null >/dev/null
	timed "$WINBUILD" sig verify -p a.pub -m f.bin
	assert_status 1
	assert_output_has "trusted comment holds control byte 0x1b"
}

@test "hostile sig: trusted comment longer than minisign allows" {
	bad_sig 'L[2] = b"trusted comment: " + b"x" * 5000' "comment"
}

@test "hostile sig: global signature not base64" {
	bad_sig 'L[3] = b"*" * len(L[3])' "base64"
}

@test "hostile sig: global signature truncated" {
	bad_sig 'L[3] = b64e(b64d(L[3])[:32])' "not the base64 of a 64-byte signature"
}

@test "hostile sig: global signature flipped (did not verify, exit 1)" {
	bad_sig 'd = bytearray(b64d(L[3])); d[0] ^= 1; L[3] = b64e(bytes(d))' "signature" 1
}

@test "hostile sig: a fifth line" {
	bad_sig 'L.append(b"extra")' "lines"
}

@test "hostile sig: a NUL byte in the untrusted comment" {
	bad_sig 'L[0] = L[0] + b"\0"' "NUL"
}

@test "hostile sig: a 1 MB signature file is refused without reading it all" {
	sigfix
	head -c 1000000 /dev/zero | tr '\0' A >f.bin.minisig
	timed "$WINBUILD" sig verify -p a.pub -m f.bin
	assert_status 2
	assert_output_has "f.bin.minisig"
}

# bad_key PYTHON_EXPR EXPECT: rewrite the key bytes K (42 bytes decoded)
bad_key() {
	sigfix
	python3 - "$1" <<-'EOF'
		import sys, base64
		lines = open("a.pub", "rb").read().split(b"\n")
		K = base64.b64decode(lines[1])
		R = None
		exec(sys.argv[1])
		lines[1] = R if R is not None else base64.b64encode(K)
		open("a.pub", "wb").write(b"\n".join(lines))
	EOF
	timed "$WINBUILD" sig verify -p a.pub -m f.bin
	assert_status 2
	assert_output_has "$2"
}

@test "hostile key: wrong algorithm" {
	bad_key 'K = b"Xd" + K[2:]' "algorithm"
}

@test "hostile key: one byte short" {
	bad_key 'K = K[:-1]' "not the base64 of a 42-byte minisign key"
}

@test "hostile key: not base64" {
	bad_key 'R = b"RW" + b"%" * 54' "base64"
}

@test "hostile key: the identity point (small order)" {
	bad_key 'K = K[:10] + b"\x01" + b"\0" * 31' "key"
}

@test "hostile key: a non-canonical point (y >= p)" {
	bad_key 'K = K[:10] + b"\xff" * 31 + b"\x7f"' "key"
}

@test "hostile key: an empty key file" {
	sigfix
	: >a.pub
	timed "$WINBUILD" sig verify -p a.pub -m f.bin
	assert_status 2
	assert_output_has "a.pub"
}

# --- checksum files (fetch) ------------------------------------------------

# sums_case FILE EXIT MESSAGE
sums_case() {
	art a "$(H)/a.bin" "sha256_url: $(H)/$1" | recipe
	timed "$WINBUILD" fetch img.yaml
	assert_status "$2"
	assert_output_has "$3"
	[ "$(cache_files)" -eq "$([ "$2" -eq 0 ] && echo 1 || echo 0)" ]
	[ "$(tmp_files)" -eq 0 ]
}

@test "hostile checksum: larger than 1 MiB is refused at the cap" {
	sums_case huge.sums 3 "larger than the limit of 1048576 bytes"
}

@test "hostile checksum: a digest that is not hex" {
	sums_case nothex.sums 2 "nothex.sums"
}

@test "hostile checksum: a digest one digit short" {
	sums_case short.sums 2 "short.sums"
}

@test "hostile checksum: two different digests for the same name" {
	sums_case conflict.sums 2 "conflict.sums"
}

@test "hostile checksum: 500 other names and the right one last" {
	sums_case many.sums 0 "fetched a"
}

@test "hostile checksum: an HTML page served as 200" {
	sums_case html.sums 2 "html.sums"
}

@test "hostile checksum: a NUL byte" {
	sums_case nul.sums 2 "NUL"
}

@test "hostile checksum: non-UTF-8 names on other lines do not matter" {
	sums_case latin1.sums 0 "fetched a"
}

@test "hostile checksum: control bytes in other names are not echoed to the terminal" {
	sums_case esc.sums 2 "it lists '\\x1b[2Jevil\\x07.bin'"
	assert_output_lacks $'\x1b'
}

# --- server responses ------------------------------------------------------

@test "hostile server: a 4 MiB response header is a network error (exit 3)" {
	art a "$(F)/hugeheaders/a.bin" "sha256: $(sha_of a.bin)" | recipe
	timed "$WINBUILD" fetch img.yaml
	assert_status 3
	assert_output_has "hugeheaders/a.bin"
	[ "$(cache_files)" -eq 0 ]
	[ "$(tmp_files)" -eq 0 ]
}

@test "hostile server: an endless chunked body stops at the size cap (exit 3)" {
	art a "$(F)/endless-chunked/a.bin" "sha256: $(sha_of a.bin)" | recipe
	WINBUILD_MAX_SIZE=300000 timed "$WINBUILD" fetch img.yaml
	assert_status 3
	assert_output_has "larger than the limit of 300000 bytes"
	[ "$(cache_files)" -eq 0 ]
	[ "$(tmp_files)" -eq 0 ]
}

@test "hostile server: an endless signature file stops at 8192 bytes" {
	art a "$(H)/a.bin" "minisign: {keys: [{key: $PUB_A}], url: $(F)/endless/a.bin.minisig}" | recipe
	timed "$WINBUILD" fetch img.yaml
	assert_status 3
	assert_output_has "signature"
	assert_output_has "larger than the limit of 8192 bytes"
	[ "$(cache_files)" -eq 0 ]
}

@test "hostile server: an endless checksum file stops at 1 MiB" {
	art a "$(H)/a.bin" "sha256_url: $(F)/endless-chunked/SHA256SUMS" | recipe
	timed "$WINBUILD" fetch img.yaml
	assert_status 3
	assert_output_has "larger than the limit of 1048576 bytes"
	[ "$(cache_files)" -eq 0 ]
}

@test "hostile server: a Content-Length above the size cap is refused before the body" {
	art a "$(H)/big.bin" "sha256: $(sha_of big.bin)" | recipe
	WINBUILD_MAX_SIZE=100000 timed "$WINBUILD" fetch img.yaml
	assert_status 3
	assert_output_has "larger than the limit of 100000 bytes"
	[ "$(tmp_files)" -eq 0 ]
}
