#!/usr/bin/env bats
# Red team, issue 25 class 6: no silent caps, no lossy encodings. Written
# as an attacker (or a careless operator) would:
#   - a limit set in the environment that does not parse, or is out of
#     range, is refused (exit 2) instead of silently becoming the default;
#     the documented suffixes (k, M, G: x1024) are honoured;
#   - a Rekor flooded with later entries for a public digest cannot push
#     the genuine entry out of reach, and the bound it works to is reported;
#   - text that is not UTF-8 reaches the records escaped, never dropped.
# Every case checks the exit code, the message, that nothing unsafe landed
# (cache, lock, out) and that the earlier good output is intact.
load helpers
load ../lib/servers
load fetch_fixtures

FORGE="$WB_SRC/tests/sigstore"

setup_file() {
	start_fetch_servers
	# a.bin again, signed by key A with a trusted comment that is not
	# UTF-8 (Latin-1 e-acute), as an old signing script might write it
	cp "$WWW/a.bin" "$WWW/latin1.bin"
	minisign -S -s "$KEYS/a.key" -m "$WWW/latin1.bin" \
		-t "$(printf 'caf\xe9 build\tfile:latin1.bin')" </dev/null >/dev/null
	if python3 -c 'import cryptography' 2>/dev/null; then
		python3 "$FORGE/forge.py" "$BATS_FILE_TMPDIR/w" >/dev/null
	fi
}

teardown_file() {
	stop_servers
}

teardown() {
	[ -z "${REKOR_PID:-}" ] || kill "$REKOR_PID" 2>/dev/null || true
}

key() { echo "minisign: {keys: [{key: $1}]}"; }

snap() {
	if [ -d "$1" ]; then
		(cd "$1" && find . -type f -print0 | sort -z | xargs -0r sha256sum)
	else
		echo -
	fi
}

# a good lock of a.bin first: cache and lock to compare later
good_first() {
	art a "$(H)/a.bin" "$(key "$PUB_A")" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	cp t.lock good.lock
	snap "$WINBUILD_CACHE" >cache.before
}

intact() {
	snap "$WINBUILD_CACHE" >cache.after
	diff cache.before cache.after
	cmp good.lock t.lock
}

# ---- limits from the environment -------------------------------------------

@test "c25.6: WINBUILD_MAX_SIZE=1M is one MiB, not the 2 GiB default: a 4 MB artifact is refused" {
	good_first
	art big "$(H)/big.bin" "$(key "$PUB_A")" | recipe
	WINBUILD_MAX_SIZE=1M run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 3
	assert_output_has "big"
	assert_output_has "1048576"
	intact
	[ ! -e out ]
	# 4M holds it (the suffix is binary: 4 MiB > 4000000 bytes)
	WINBUILD_MAX_SIZE=4M run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
}

@test "c25.6: WINBUILD_MAX_SIZE=500k caps at 512000 bytes; 100k refuses a 150000-byte artifact" {
	good_first
	WINBUILD_MAX_SIZE=500k run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
	art u "$(H)/u.bin" "sha256: $(sha_of u.bin)" | recipe
	WINBUILD_MAX_SIZE=100k run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 3
	assert_output_has "102400"
	intact
}

@test "c25.6: a limit that does not parse or is out of range is refused (exit 2), never the default" {
	good_first
	art u "$(H)/u.bin" "sha256: $(sha_of u.bin)" | recipe
	for bad in WINBUILD_MAX_SIZE=-1 WINBUILD_MAX_SIZE=1.5G "WINBUILD_MAX_SIZE=1 M" \
		WINBUILD_MAX_SIZE=1T WINBUILD_MAX_SIZE=0 WINBUILD_MAX_SIZE=65G \
		WINBUILD_RETRIES=abc WINBUILD_RETRIES=0 WINBUILD_CONNECT_TIMEOUT=30s \
		WINBUILD_LOCK_TIMEOUT=-5 WINBUILD_LOW_SPEED_LIMIT=0x10; do
		env "$bad" "$WINBUILD" fetch img.yaml --no-progress >out.txt 2>&1 && st=0 || st=$?
		[ "$st" -eq 2 ] || { echo "$bad: exit $st" >&2; cat out.txt >&2; return 1; }
		grep -qF "${bad%%=*}='${bad#*=}'" out.txt || { echo "$bad:" >&2; cat out.txt >&2; return 1; }
		grep -q "fix or unset it" out.txt
	done
	intact
	[ ! -e out ]
	# empty means unset: the default
	WINBUILD_MAX_SIZE= run "$WINBUILD" fetch img.yaml --no-progress
	assert_status 0
}

@test "c25.6: a bad limit is refused by the Rekor lookups too (the one reader)" {
	need_dep test -d "$BATS_FILE_TMPDIR/w" -- "python3-cryptography (make deps)"
	W="$BATS_FILE_TMPDIR/w"
	start_rekor "$W/detached/entry.json"
	WINBUILD_RETRIES=lots run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/artifact.sig" --certificate "$W/detached/cert.b64" \
		--rekor "$REKOR" --identity "$(cat "$W/identity")" --issuer "$(cat "$W/issuer")"
	assert_status 2
	assert_output_has "WINBUILD_RETRIES='lots'"
}

# ---- Rekor: a flood of later entries ---------------------------------------

# junk N DIR SHA: N entries in DIR (another artifact's, re-keyed under
# fresh UUIDs), each to be listed for SHA; prints their fakerekor specs
junk() {
	python3 - "$1" "$2" "$3" "$W/detached/entry-other.json" <<-'PY'
		import json, os, sys
		n, d, sha, src = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
		os.makedirs(d, exist_ok=True)
		val = next(iter(json.load(open(src)).values()))
		for i in range(n):
		    p = os.path.join(d, "junk%03d.json" % i)
		    json.dump({"%064x" % (0xabc000 + i): val}, open(p, "w"))
		    print(p + "=" + sha)
	PY
}

rekor_setup() {
	need_dep test -d "$BATS_FILE_TMPDIR/w" -- "python3-cryptography (make deps)"
	W="$BATS_FILE_TMPDIR/w"
	SHA=$(sha256sum "$W/artifact" | cut -d' ' -f1)
}

check_art() {
	run "$WINBUILD" sig sigstore "$W/artifact" --trusted-root "$W/root.json" \
		--signature "$W/detached/artifact.sig" --certificate "$W/detached/cert.b64" \
		--rekor "$REKOR" --identity "$(cat "$W/identity")" --issuer "$(cat "$W/issuer")" \
		--save-tlog-entry "$BATS_TEST_TMPDIR/saved.json"
}

@test "c25.6: 20 later entries logged for a public digest do not push the genuine one out of reach" {
	rekor_setup
	# Rekor lists the newest first: the genuine (oldest) entry last
	mapfile -t specs < <(junk 20 "$BATS_TEST_TMPDIR/junk" "$SHA")
	start_rekor "${specs[@]}" "$W/detached/entry.json"
	check_art
	assert_status 0
	assert_output_has "Sigstore signature verified"
	# the entry kept is the genuine one
	python3 - "$BATS_TEST_TMPDIR/saved.json" "$W/detached/entry.json" <<-'PY'
		import json, sys
		assert json.load(open(sys.argv[1])).keys() == json.load(open(sys.argv[2])).keys()
	PY
}

@test "c25.6: past the bound the lookup says how many were listed and how many fetched" {
	rekor_setup
	# 70 entries older than the genuine one (listed after it): past the
	# bound of 64, the genuine newest is not fetched, and the run says so
	mapfile -t specs < <(junk 70 "$BATS_TEST_TMPDIR/junk" "$SHA")
	start_rekor "$W/detached/entry.json" "${specs[@]}"
	check_art
	assert_status 1
	assert_output_has "lists 71 entries for sha256:$SHA; only the 64 oldest were fetched (REKOR_MAX_ENTRIES)"
	assert_output_has "none of the 64 entries fetched verifies"
	[ ! -e "$BATS_TEST_TMPDIR/saved.json" ]
}

# ---- text that is not UTF-8 ------------------------------------------------

@test "c25.6: a trusted comment that is not UTF-8 is recorded escaped in lock, --json and SBOM, not dropped" {
	good_first
	art a "$(H)/latin1.bin" "$(key "$PUB_A")" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - t.lock <<-'PY'
		import json, sys
		a = json.load(open(sys.argv[1]))["artifacts"]["a"]["verified_by"]["minisign"]
		assert a["trusted_comment"] == "caf\\xe9 build\\x09file:latin1.bin", a
	PY
	"$WINBUILD" fetch img.yaml --no-progress --json >fetch.json
	python3 - fetch.json <<-'PY'
		import json, sys
		d = json.load(open(sys.argv[1]))
		a = (d["artifacts"] if isinstance(d, dict) else d)[0]
		assert a["trusted_comment"] == "caf\\xe9 build\\x09file:latin1.bin", a
	PY
	wb stage img.yaml --no-progress
	assert_status 0
	python3 - out/t/sbom.cdx.json <<-'PY'
		import json, sys
		c = [c for c in json.load(open(sys.argv[1]))["components"] if c["name"] == "a"][0]
		p = {x["name"].split(":", 1)[1]: x["value"] for x in c["properties"]}
		assert p["trusted_comment"] == "caf\\xe9 build\\x09file:latin1.bin", p
	PY
	# --locked replays it: the escaped record matches the escaped evidence
	wb fetch img.yaml --locked --no-progress
	assert_status 0
}
