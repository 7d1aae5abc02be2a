#!/usr/bin/env bats
# issue 18 item 1: --json on every command that reports a result, on
# success and on failure: one object on stdout (parsed with Python's json,
# its fields checked against docs/json.md by tests/lib/json_doc.py), human
# messages on stderr.
load helpers
load ../lib/servers
load stage_fixtures

setup() {
	fixture_setup
}

# j ARGS...: run winbuild, stdout to out.json, stderr to err.txt; $status
j() {
	status=0
	"$WINBUILD" "$@" >out.json 2>err.txt </dev/null || status=$?
}

# doc HEADER MODE: out.json matches the docs/json.md example HEADER
doc() {
	python3 "$WB_SRC/tests/lib/json_doc.py" "$WB_SRC/docs/json.md" "$1" "$2" <out.json
}

# q EXPR: a Python expression over the parsed result `r`
q() {
	python3 -c 'import json,sys; r=json.load(open("out.json")); v=eval(sys.argv[1]); print(v)' "$1"
}

@test "build --json: one object, every documented field, artifacts verified, packer files named" {
	j build "$RECIPE" -O fixtures.yaml --builder qemu --json
	[ "$status" -eq 0 ] || { cat err.txt; false; }
	doc "winbuild build --json" exact
	[ "$(q 'r["command"], r["ok"], r["exit"], r["errors"]')" = "('build', True, 0, [])" ]
	[ "$(q 'len(r["artifacts"]) == 10 and all(a["ok"] and len(a["sha256"]) == 64 for a in r["artifacts"])')" = True ]
	[ "$(q 'r["packer"]["builders"]')" = "['qemu']" ]
	[ -f "$(q 'r["packer"]["template"]')" ]
	[ -f "$(q 'r["manifest"]')" ]
	[ "$(q 'r["files"] > 0')" = True ]
	# stdout is the object and nothing else; the human lines went to stderr
	grep -q "^staged " err.txt
}

@test "emit --json over a staged output: the Packer files, nothing else" {
	"$WINBUILD" build "$RECIPE" -O fixtures.yaml -q --no-progress
	j emit "$RECIPE" -O fixtures.yaml --builder qemu --builder vsphere-iso --json
	[ "$status" -eq 0 ] || { cat err.txt; false; }
	doc "winbuild emit --json" exact
	[ "$(q 'r["packer"]["builders"]')" = "['qemu', 'vsphere-iso']" ]
	[ -f "$(q 'r["packer"]["var_file"]')" ]
}

@test "build --json with a tampered artifact: exit 1, the object names the failure, stderr too" {
	sed -i "/^  containerd:/,/sha256/ s/sha256: [0-9a-f]*/sha256: $(printf '0%.0s' {1..64})/" fixtures.yaml
	j build "$RECIPE" -O fixtures.yaml --builder qemu --json
	[ "$status" -eq 1 ]
	doc "winbuild build --json" partial
	[ "$(q 'r["ok"], r["exit"]')" = "(False, 1)" ]
	[ "$(q '[a["name"] for a in r["artifacts"] if not a["ok"]]')" = "['containerd']" ]
	[ "$(q '[a["exit"] for a in r["artifacts"] if not a["ok"]]')" = "[1]" ]
	[ "$(q 'any("containerd" in e and "0000000000" in e for e in r["errors"])')" = True ]
	grep -q '^winbuild: .*containerd' err.txt
}

@test "stage --json: staged, then up to date" {
	j stage "$RECIPE" -O fixtures.yaml --json
	[ "$status" -eq 0 ] || { cat err.txt; false; }
	doc "winbuild stage --json" exact
	[ "$(q 'r["up_to_date"]')" = False ]
	j stage "$RECIPE" -O fixtures.yaml --json
	[ "$status" -eq 0 ]
	doc "winbuild stage --json" partial
	[ "$(q 'r["up_to_date"], "artifacts" in r')" = "(True, False)" ]
}

@test "lock --json: written; a 404 leaves it unwritten (exit 3) and says so" {
	j lock "$RECIPE" -O fixtures.yaml --json
	[ "$status" -eq 0 ] || { cat err.txt; false; }
	doc "winbuild lock --json" exact
	[ "$(q 'r["written"], r["lock"], r["pinned"]')" = "(True, 'windows-2022-containerd.lock', [])" ]
	[ -f windows-2022-containerd.lock ]
	sed -i 's#/good/kubelet.exe#/good/nothere.exe#' fixtures.yaml
	WINBUILD_CACHE="$BATS_TEST_TMPDIR/empty-cache" j lock "$RECIPE" -O fixtures.yaml \
		--lock other.lock --json
	[ "$status" -eq 3 ]
	doc "winbuild lock --json" partial
	[ "$(q 'r["written"], r["exit"]')" = "(False, 3)" ]
	[ "$(q 'any("not written" in e for e in r["errors"])')" = True ]
	[ ! -e other.lock ]
}

@test "verify --json: a clean tree, then a modified file (exit 1, the problem in the object)" {
	"$WINBUILD" build "$RECIPE" -O fixtures.yaml --builder qemu -q --no-progress
	O="out/$NAME"
	j verify "$O" --json
	[ "$status" -eq 0 ]
	doc "winbuild verify OUTDIR --json" exact
	[ "$(q 'r["mode"], r["problems"]')" = "('tree', [])" ]
	flip_byte "$O/tree/k/kubelet.exe" 100
	j verify "$O" --json
	[ "$status" -eq 1 ]
	doc "winbuild verify OUTDIR --json" exact
	[ "$(q '[(p["kind"], p["path"]) for p in r["problems"]]')" = "[('modified', 'k/kubelet.exe')]" ]
	[ "$(q 'r["errors"]')" = "['$O does not match its manifest: 1 modified, 0 missing, 0 extra']" ]
	grep -q "does not match its manifest" err.txt
}

@test "verify --lock --json: ok, then a changed cache entry" {
	"$WINBUILD" lock "$RECIPE" -O fixtures.yaml -q --no-progress
	j verify --lock windows-2022-containerd.lock --json
	[ "$status" -eq 0 ]
	doc "winbuild verify --lock FILE --json" exact
	[ "$(q 'set(a["status"] for a in r["artifacts"])')" = "{'ok'}" ]
	sha=$(python3 -c 'import json; print(json.load(open("windows-2022-containerd.lock"))["artifacts"]["kubelet"]["sha256"])')
	f="$WINBUILD_CACHE/sha256/${sha:0:2}/$sha"
	chmod u+w "$f" "$(dirname "$f")"
	flip_byte "$f" 10
	j verify --lock windows-2022-containerd.lock --json
	[ "$status" -eq 1 ]
	doc "winbuild verify --lock FILE --json" exact
	[ "$(q '[(a["name"], a["status"], a["quarantined"] is not None) for a in r["artifacts"] if a["status"] != "ok"]')" = "[('kubelet', 'modified', True)]" ]
}

@test "mirror --json: the export described; stdout holds only the object" {
	j mirror "$RECIPE" M -O fixtures.yaml --json
	[ "$status" -eq 0 ] || { cat err.txt; false; }
	doc "winbuild mirror --json" exact
	[ "$(q 'r["written"]["artifacts"], r["resigned"]')" = "(10, False)" ]
	[ -f "$(q 'r["index"]')" ]
}

@test "fetch and cache --json carry the common fields" {
	j fetch "$RECIPE" -O fixtures.yaml --json
	[ "$status" -eq 0 ]
	doc "winbuild fetch --json" exact
	j cache ls --json
	[ "$status" -eq 0 ]
	doc "winbuild cache ls --json" exact
	[ "$(q 'len(r["entries"])')" -ge 10 ]
	j cache gc --json
	[ "$status" -eq 0 ]
	doc "winbuild cache gc --json" exact
}

@test "a usage error and a recipe error are JSON results too (exit 2, every error line)" {
	j stage "$RECIPE" --bogus --json
	[ "$status" -eq 2 ]
	doc "winbuild stage --json" partial
	[ "$(q 'r["errors"][0]')" = "unknown option '--bogus'" ]
	printf 'kind: image\nnmae: x\nwindows: {version: "2022", edition: datacentre}\ncomponents: {}\npolicy: {allow_http: maybe}\n' >bad.yaml
	for c in build plan; do
		j "$c" bad.yaml --json
		[ "$status" -eq 2 ]
		doc "winbuild stage --json" partial
		[ "$(q 'r["command"], len(r["errors"])')" = "('$c', 4)" ]
		[ "$(q 'all(e.startswith("bad.yaml:") for e in r["errors"])')" = True ]
	done
	# without --json, stdout stays empty
	"$WINBUILD" build bad.yaml >stdout.txt 2>/dev/null || true
	[ ! -s stdout.txt ]
}

@test "issue 28: --json carries every error: recipe errors with file, line, col; sig's own usage errors; no raw error fprintf in builder/cmd" {
	printf 'kind: image\nnmae: x\nwindows: {version: "2022", edition: datacentre}\ncomponents: {}\n' >bad.yaml
	j plan bad.yaml --json
	[ "$status" -eq 2 ]
	doc "winbuild stage --json" partial
	[ "$(q '[(l["file"], l["line"], l["col"]) for l in r["error_locations"]]')" = "[('bad.yaml', 2, 1), ('bad.yaml', 3, 37), ('bad.yaml', 1, 1)]" ]
	[ "$(q 'r["error_locations"][0]["message"]')" = "unknown key 'nmae' (did you mean 'name'?)" ]
	# no location, no field
	j stage "$RECIPE" --bogus --json
	[ "$(q '"error_locations" in r')" = False ]
	echo data >f.bin
	j sig sigstore f.bin --json
	[ "$status" -eq 2 ]
	[ "$(q 'r["errors"][0]')" = "sig sigstore: --trusted-root is required" ]
	# sig verify has no --json (minisign's interface); the same path prints
	wb sig verify -m f.bin
	assert_status 2
	assert_output_has "winbuild: sig verify: give exactly one of -p KEYFILE and -P KEY"
	# and warnings: "warnings" holds what stderr said
	WINBUILD_CACHE="$BATS_TEST_TMPDIR/empty" j fetch windows-2022-containerd --offline --json
	doc "winbuild fetch --json" partial
	[ "$(q 'len(r["warnings"]), "is not pinned" in r["warnings"][0]')" = "(1, True)" ]
	grep -q "winbuild: warning: .*is not pinned" err.txt
	# an error or warning goes through cmd_errorf()/cmd_fail()/cmd_warnf(),
	# which --json records (the one raw line is theirs, in cmd/msg.c)
	[ "$(cat "$WB_SRC"/builder/cmd/*.c | grep -cE 'f(puts|printf)\((stderr, )?"winbuild: ')" -eq 1 ]
}

@test "issue 41: --json keeps an error message cut inside a UTF-8 sequence (escaped, never dropped)" {
	local k n
	for k in 0 1 2 3; do
		n=$(python3 -c "print('a' * $k + '\u00e9' * 2100)")
		run bash -c '"$WINBUILD" fetch "$1.yaml" --json 2>/dev/null' _ "$n"
		[ "$status" -eq 2 ]
		# one error, whatever byte the cut falls on
		[ "$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["errors"]))' <<<"$output")" = 1 ]
	done
}
