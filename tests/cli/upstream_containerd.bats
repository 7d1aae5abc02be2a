#!/usr/bin/env bats
# containerd's build provenance as a recipe requirement (issue 17 item 3):
# verify.attestation names containerd-<v>-attestation.intoto.jsonl, each line
# a Sigstore bundle of an in-toto SLSA v1 statement, as
# actions/attest-build-provenance writes it in containerd's release workflow.
# One line must verify under the pinned root, the release workflow identity
# (.github/workflows/release.yml@refs/tags/v<version>) and GitHub's OIDC
# issuer, with a subject whose sha256 is the tarball's. The world (CA, CT log,
# Rekor key) is minted by tests/sigstore/forge.py; nginx serves the files.
load helpers
load ../lib/servers
load fetch_fixtures

FORGE="$BATS_TEST_DIRNAME/../sigstore"
GHA="https://token.actions.githubusercontent.com"
TAR=containerd-2.0.0-windows-amd64.tar.gz

setup_file() {
	python3 -c 'import cryptography' 2>/dev/null || return 0
	make_fixtures "$BATS_FILE_TMPDIR"
	python3 "$FORGE/forge.py" "$BATS_FILE_TMPDIR/w" >/dev/null
	local a="$BATS_FILE_TMPDIR/w/attest" d="$WWW/containerd/v2.0.0"
	mkdir -p "$d"
	cp "$a/$TAR" "$a"/*.intoto.jsonl "$d/"
	cp "$a/good.intoto.jsonl" "$d/containerd-2.0.0-attestation.intoto.jsonl"
	start_nginx "$WWW"
	export WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() { stop_servers; }

setup() {
	common_setup
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	W="$BATS_FILE_TMPDIR/w"
	ID=$(cat "$W/attest/identity")
}

# att FILE [IDENTITY]: the requirement, the attestation at FILE
att() {
	echo "attestation: {url: \"$(H)/containerd/v2.0.0/$1\", trusted_root: \"$W/root.json\", identity: \"${2:-$ID}\", issuer: \"$GHA\"}"
}

untouched() {
	[ "$(tmp_files)" -eq 0 ] && [ "$(cache_files)" -eq 0 ]
}

@test "upstream containerd: the release workflow's provenance verifies the tarball; lock, plan, SBOM record builder, source, ref" {
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "$(att containerd-2.0.0-attestation.intoto.jsonl)" | recipe
	wb plan img.yaml
	assert_status 0
	assert_output_has "build provenance attestation $(H)/containerd/v2.0.0/containerd-2.0.0-attestation.intoto.jsonl"
	assert_output_has "identity https://github.com/containerd/containerd/.github/workflows/release.yml@refs/tags/v2.0.0"
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "attestation by $ID ($GHA), builder $ID, source https://github.com/containerd/containerd@refs/tags/v2.0.0"
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - t.lock "$ID" <<-'PY'
		import json, sys
		s = json.load(open(sys.argv[1]))["artifacts"]["containerd-2.0.0-windows-amd64.tar.gz"]["verified_by"]["attestation"]
		assert s["identity"] == sys.argv[2], s
		assert s["line"] == "2", s          # line 1 is about another file
		assert s["attestation_url"].endswith("/containerd-2.0.0-attestation.intoto.jsonl"), s
	PY
	wb stage img.yaml --no-progress
	assert_status 0
	python3 - out/t/sbom.cdx.json "$ID" <<-'PY'
		import json, sys
		c = [c for c in json.load(open(sys.argv[1]))["components"]
		     if c["name"] == "containerd-2.0.0-windows-amd64.tar.gz"][0]
		p = {x["name"]: x["value"] for x in c["properties"]}
		assert p["winbuild:verified_by"] == "attestation", p
		assert p["winbuild:attestation_identity"] == sys.argv[2], p
		assert p["winbuild:attestation_builder"] == sys.argv[2], p
		assert p["winbuild:attestation_source"] == "https://github.com/containerd/containerd", p
		assert p["winbuild:attestation_ref"] == "refs/tags/v2.0.0", p
		assert p["winbuild:attestation_predicate_type"] == "https://slsa.dev/provenance/v1", p
	PY
}

@test "upstream containerd: an attestation whose subject is another file is exit 1 and caches nothing" {
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "$(att other.intoto.jsonl)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "no line of the attestation"
	assert_output_has "no subject of the in-toto statement has the artifact's sha256"
	untouched
}

@test "upstream containerd: a line that is a plain message signature over the tarball is not provenance: exit 1" {
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "$(att message.intoto.jsonl)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "no line of the attestation"
	assert_output_has "a message signature, not an in-toto statement"
	untouched
}

@test "upstream containerd: provenance from another workflow is exit 1; so is a wrong pinned version" {
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "$(att wrong-workflow.intoto.jsonl)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "no line of the attestation"
	untouched
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" \
		"$(att containerd-2.0.0-attestation.intoto.jsonl "${ID%v2.0.0}v2.0.1")" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	untouched
}

@test "upstream containerd: a missing attestation (404) is exit 1" {
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "$(att nope.intoto.jsonl)" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	untouched
}

@test "upstream containerd: --offline --locked checks the kept attestation again; mirror exports it" {
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "$(att containerd-2.0.0-attestation.intoto.jsonl)" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	wb fetch img.yaml --locked --no-progress
	assert_status 0
	n=$(nginx_requests /containerd/v2.0.0/containerd-2.0.0-attestation.intoto.jsonl)
	wb fetch img.yaml --offline --locked --no-progress
	assert_status 0
	assert_output_has "attestation by $ID"
	[ "$(nginx_requests /containerd/v2.0.0/containerd-2.0.0-attestation.intoto.jsonl)" = "$n" ]
	# the kept attestation edited in the ref: the hit no longer verifies
	cp -r "$WINBUILD_CACHE/refs" refs.saved
	python3 - "$WINBUILD_CACHE"/refs/* <<-'PY'
		import json, sys
		for f in sys.argv[1:]:
		    d = json.load(open(f))
		    for x in d["evidence"]:
		        if x["method"] == "attestation":
		            x["text"] = x["text"].split("\n")[0] + "\n"   # only the other file's line
		    json.dump(d, open(f, "w"))
	PY
	wb fetch img.yaml --offline --locked --no-progress
	assert_status 3
	assert_output_has "ignoring a cache ref"
	rm -rf "$WINBUILD_CACHE/refs" && cp -r refs.saved "$WINBUILD_CACHE/refs"
	wb mirror img.yaml M --no-progress
	assert_status 0
	d="M/127.0.0.1_$NGINX_PORT/containerd/v2.0.0"
	cmp "$d/$TAR" "$WWW/containerd/v2.0.0/$TAR"
	cmp "$d/containerd-2.0.0-attestation.intoto.jsonl" "$WWW/containerd/v2.0.0/containerd-2.0.0-attestation.intoto.jsonl"
}

@test "issue 41: an attestation with a line that is not UTF-8 (or holds a NUL) is kept byte-exact: --offline --locked and mirror as online" {
	local f=containerd-2.0.0-odd.intoto.jsonl
	# a Latin-1 line and a line with a NUL before the good bundles: no
	# bundle, skipped online as any line that does not verify
	{ printf 'caf\xe9 \xff\xfe\n'; printf 'a\0b\n'; cat "$WWW/containerd/v2.0.0/containerd-2.0.0-attestation.intoto.jsonl"; } \
		>"$WWW/containerd/v2.0.0/$f"
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "$(att $f)" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	assert_output_has "attestation by $ID"
	n=$(nginx_requests "/containerd/v2.0.0/$f")
	wb fetch img.yaml --offline --locked --no-progress
	assert_status 0
	assert_output_has "cached  $TAR"
	assert_output_has "attestation by $ID"
	[ "$(nginx_requests "/containerd/v2.0.0/$f")" = "$n" ]
	wb mirror img.yaml M --offline --no-progress
	assert_status 0
	cmp "M/127.0.0.1_$NGINX_PORT/containerd/v2.0.0/$f" "$WWW/containerd/v2.0.0/$f"
}

@test "upstream containerd: settings are checked at plan time" {
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "attestation: {url: \"$(H)/x.jsonl\", trusted_root: \"$W/root.json\"}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "needs 'identity' and 'issuer'"
	art "$TAR" "$(H)/containerd/v2.0.0/$TAR" "attestation: {trusted_root: \"$W/root.json\", identity: x, issuer: y}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "verify.attestation.url' is required"
}
