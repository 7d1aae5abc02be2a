#!/usr/bin/env bats
# Issue 17 items 1+2 as a recipe method: `verify.cosign` (Kubernetes layout:
# FILE.sig, base64 DER ECDSA, and FILE.cert, base64 of PEM, beside FILE on
# loopback nginx) with the Rekor v1 entry looked up at fetch time in a fake
# Rekor (tests/sigstore/fakerekor.py) serving (1) entries of a private
# Sigstore world minted by tests/sigstore/forge.py and (2) a real production
# entry converted from a conformance bundle (tests/sigstore/rekor_api.py),
# checked against the real Rekor key of the production trusted root.
load helpers
load ../lib/servers
load fetch_fixtures

FORGE="$BATS_TEST_DIRNAME/../sigstore"
V="$BATS_TEST_DIRNAME/../vectors/sigstore"
BEACON="https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
GHA="https://token.actions.githubusercontent.com"

setup_file() {
	python3 -c 'import cryptography' 2>/dev/null || return 0
	make_fixtures "$BATS_FILE_TMPDIR"
	local w="$BATS_FILE_TMPDIR/w" k="$WWW/k" r="$BATS_FILE_TMPDIR/real/happy-path-v0.3"
	python3 "$FORGE/forge.py" "$w" >/dev/null
	python3 "$FORGE/rekor_api.py" "$V/conformance/happy-path-v0.3/bundle.sigstore.json" "$r"
	mkdir -p "$k"
	# the Kubernetes layout: kubelet.exe, kubelet.exe.sig, kubelet.exe.cert
	cp "$w/artifact" "$k/kubelet.exe"
	cp "$w/detached/artifact.sig" "$k/kubelet.exe.sig"
	cp "$w/detached/cert.b64" "$k/kubelet.exe.cert"
	(cd "$k" && sha256sum kubelet.exe >kubelet.exe.sha256)
	# a real production signature: the conformance a.txt
	cp "$V/conformance/a.txt" "$k/a.txt"
	cp "$r/artifact.sig" "$k/a.txt.sig"
	cp "$r/cert.b64" "$k/a.txt.cert"
	start_nginx "$WWW"
	export WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() { stop_servers; }

setup() {
	common_setup
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	W="$BATS_FILE_TMPDIR/w"
	REAL="$BATS_FILE_TMPDIR/real/happy-path-v0.3"
	ID=$(cat "$W/identity")
	ISS=$(cat "$W/issuer")
	SHA=$(sha256sum "$WWW/k/kubelet.exe" | cut -d' ' -f1)
}

teardown() {
	[ -z "${REKOR_PID:-}" ] || { kill "$REKOR_PID" 2>/dev/null; wait "$REKOR_PID" 2>/dev/null; }
	[ -z "${FAULTD_PID:-}" ] || stop_faultd
	true
}

# cosign [EXTRA]: kubelet.exe's requirement under the forged root, Rekor $REKOR
cosign() {
	echo "cosign: {trusted_root: \"$W/root.json\", identity: \"$ID\", issuer: \"$ISS\"${1:+, $1}}"
}

kubelet() { art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign "${1:-rekor: \"$REKOR\"}")"; }

# edit_entry FILE: a Rekor API entry with its log index changed (its
# signed timestamp no longer covers it)
edit_entry() {
	python3 - "$1" <<-'PY'
		import json, sys
		e = json.load(open(sys.argv[1]))
		next(iter(e.values()))["logIndex"] += 1
		json.dump(e, open(sys.argv[1], "w"))
	PY
}

# untouched NAME: nothing was cached as verified for NAME
untouched() {
	! grep -qs "\"artifact\": \"$1\"" "$WINBUILD_CACHE"/refs/* &&
		[ "$(tmp_files)" -eq 0 ] && [ "$(cache_files)" -eq 0 ]
}

@test "cosign recipe: kubelet.exe (.sig, .cert, entry looked up in Rekor) verifies; lock and SBOM record it" {
	start_rekor "$W/detached/entry.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	grep -q "POST /api/v1/index/retrieve" "$REKOR_LOG"
	[ "$(nginx_requests /k/kubelet.exe.sig)" -ge 1 ]
	[ "$(nginx_requests /k/kubelet.exe.cert)" -ge 1 ]
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - t.lock "$ID" "$ISS" "$(H)" "$REKOR" "$W/detached/entry.json" <<-'PY'
		import json, sys
		lock, ident, iss, h, rekor, entry = sys.argv[1:]
		c = json.load(open(lock))["artifacts"]["kubelet.exe"]["verified_by"]["cosign"]
		assert c["identity"] == ident and c["issuer"] == iss, c
		assert c["log_index"] == "5" and c["integrated_time"] == "1735689600", c
		assert c["signature_url"] == h + "/k/kubelet.exe.sig", c
		assert c["certificate_url"] == h + "/k/kubelet.exe.cert", c
		want = json.load(open(entry))
		assert c["tlog_entry"] == want, c["tlog_entry"]
		assert c["tlog_entry_url"] == rekor + "/api/v1/log/entries/" + next(iter(want)), c
	PY
}

@test "cosign recipe: a real production signature with its real Rekor entry verifies under the production root" {
	start_rekor "$REAL/entry.json"
	art a.txt "$(H)/k/a.txt" "cosign: {trusted_root: \"$V/trusted_root/public-good.json\", identity: \"$BEACON\", issuer: \"$GHA\", rekor: \"$REKOR\"}" | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	python3 - t.lock "$REAL/entry.json" <<-'PY'
		import json, sys
		c = json.load(open(sys.argv[1]))["artifacts"]["a.txt"]["verified_by"]["cosign"]
		e = json.load(open(sys.argv[2]))
		assert c["tlog_entry"] == e, c
		assert c["log_index"] == str(next(iter(e.values()))["logIndex"]), c
	PY
	# the same real entry under the forged root: its log key is not pinned
	rm -rf "$WINBUILD_CACHE"
	art a.txt "$(H)/k/a.txt" "cosign: {trusted_root: \"$W/root.json\", identity: \"$BEACON\", issuer: \"$GHA\", rekor: \"$REKOR\"}" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	untouched a.txt
}

@test "cosign recipe: another artifact's entry listed for ours: exit 1, nothing cached" {
	start_rekor "$W/detached/entry-other.json=$SHA"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'kubelet.exe' from '$(H)/k/kubelet.exe': cosign signature '$(H)/k/kubelet.exe.sig'"
	assert_output_has "is not the artifact's"
	untouched kubelet.exe
}

@test "cosign recipe: an entry integrated after the certificate expired: exit 1, nothing cached" {
	start_rekor "$W/detached/entry-late.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "at 2025-01-01T01:00:00Z: certificate has expired"
	untouched kubelet.exe
}

@test "cosign recipe: an entry signed by a log key that is not pinned: exit 1; a good one beside it verifies" {
	start_rekor "$W/detached/entry-wrong-key.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "inclusion promise (SET) does not verify"
	untouched kubelet.exe
	kill "$REKOR_PID"
	start_rekor "$W/detached/entry-wrong-key.json" "$W/detached/entry.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
}

@test "cosign recipe: no entry for the artifact: exit 1, nothing cached" {
	start_rekor "$W/detached/entry-other.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "no transparency-log entry for sha256:$SHA in rekor '$REKOR'"
	untouched kubelet.exe
}

@test "cosign recipe: Rekor down at fetch: exit 3 naming the URL, nothing cached" {
	local port
	port=$(closed_port)
	REKOR="http://127.0.0.1:$port"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 3
	assert_output_has "rekor 'http://127.0.0.1:$port/api/v1/index/retrieve'"
	untouched kubelet.exe
}

@test "cosign recipe: a failing Rekor (HTTP 503) is asked again as the transport retries, then exit 3" {
	start_rekor --status 503 "$W/detached/entry.json"
	kubelet | recipe
	export WINBUILD_RETRIES=3
	wb fetch img.yaml --no-progress
	assert_status 3
	assert_output_has "rekor '$REKOR/api/v1/index/retrieve': HTTP status 503"
	[ "$(grep -c "POST /api/v1/index/retrieve" "$REKOR_LOG")" = 3 ]
	untouched kubelet.exe
}

@test "cosign recipe: a redirecting Rekor is refused: exit 3, nothing cached" {
	start_rekor --redirect "http://127.0.0.1:1" "$W/detached/entry.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 3
	assert_output_has "redirect refused"
	untouched kubelet.exe
}

@test "issue 30: the Rekor lookup runs beside the other downloads: another artifact's transfer ends and its next one starts while Rekor holds its answer" {
	# a.bin's checksum file is held by faultd until Rekor is asked; Rekor
	# then holds its index answer until faultd sees the GET of a.bin, which
	# winbuild can only send once it has taken the checksum file's end
	# while the lookup is in flight. A lookup on the engine's thread blocks
	# it: a.bin's GET never comes and Rekor's hold ends by its timeout.
	start_faultd "$WWW"
	rm -f "$WWW/a.bin.sha256.release"
	start_rekor --release-on-index "$WWW/a.bin.sha256.release" \
		--hold-index-until "$FAULTD_LOG" '"GET /a\.bin HTTP' --hold-timeout 20 \
		"$W/detached/entry.json"
	{ kubelet; art a.bin "$(F)/a.bin" "sha256_url: $(F)/hold/a.bin.sha256"; } | recipe
	wb fetch img.yaml --no-progress -j 4
	rm -f "$WWW/a.bin.sha256.release"
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	grep -q '"GET /hold/a.bin.sha256 HTTP' "$FAULTD_LOG"
	grep -q "index held: released by" "$REKOR_LOG"
	! grep -q "index held: timed out" "$REKOR_LOG" || false
}

@test "issue 30: the trusted root is parsed once per run, whatever number of requirements name it (downloads and cache hits)" {
	start_rekor "$W/detached/entry.json"
	for b in kubeadm.exe kube-proxy.exe; do
		cp "$WWW/k/kubelet.exe" "$WWW/k/$b"
		cp "$WWW/k/kubelet.exe.sig" "$WWW/k/$b.sig"
		cp "$WWW/k/kubelet.exe.cert" "$WWW/k/$b.cert"
	done
	{
		kubelet
		art kubeadm.exe "$(H)/k/kubeadm.exe" "$(cosign "rekor: \"$REKOR\"")"
		art kube-proxy.exe "$(H)/k/kube-proxy.exe" "$(cosign "rekor: \"$REKOR\"")"
	} | recipe
	wb fetch img.yaml --no-progress -v
	assert_status 0
	assert_output_has "sigstore trusted roots: 1 parsed for 3 checks"
	# the cache hits check the kept files again, under the one parse too
	wb fetch img.yaml --no-progress -v
	assert_status 0
	assert_output_has "sigstore trusted roots: 1 parsed for 3 checks"
	# a debug line: only with -v, and -q wins
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_lacks "sigstore trusted roots"
	wb fetch img.yaml --no-progress -v -q
	assert_status 0
	assert_output_lacks "sigstore trusted roots"
}

@test "issue 30: a Rekor answer past its cap (1 MiB) is refused by the engine's lookup: exit 3, nothing cached" {
	python3 -c 'import json; print(json.dumps(["%064x" % i for i in range(17000)]))' \
		>"$BATS_TEST_TMPDIR/huge.json"
	start_rekor --index-answer "@$BATS_TEST_TMPDIR/huge.json" "$W/detached/entry.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 3
	assert_output_has "answer larger than 1048576 bytes"
	untouched kubelet.exe
}

@test "cosign recipe: an entry's GET follows a redirect only as the transport policy allows" {
	# to another path of the same log: followed, and the entry verifies
	start_rekor --redirect-entries self "$W/detached/entry.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 0
	grep -q "GET /moved/api/v1/log/entries/" "$REKOR_LOG"
	# to file://: refused by the transport policy (hop_refused), exit 1
	rm -rf "$WINBUILD_CACHE"
	kill "$REKOR_PID"
	wait "$REKOR_PID" 2>/dev/null || true
	start_rekor --redirect-entries "file:///etc" "$W/detached/entry.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "which is refused: a redirect may lead only to http or https"
	untouched kubelet.exe
}

@test "cosign recipe: plan, --explain and plan --json show identity, issuer and rekor or tlog_entry" {
	REKOR=http://127.0.0.1:1
	kubelet | recipe
	wb plan img.yaml --explain
	assert_status 0
	assert_output_has "verify:  cosign signature $(H)/k/kubelet.exe.sig    <- components/demo.yaml:"
	assert_output_has "cosign certificate $(H)/k/kubelet.exe.cert"
	assert_output_has "identity $ID    <- components/demo.yaml:"
	assert_output_has "rekor $REKOR (searched by the artifact's sha256 at fetch time)"
	"$WINBUILD" plan img.yaml --json >plan.json
	python3 - plan.json "$ID" "$ISS" "$(H)" <<-'PY'
		import json, sys
		p = json.load(open(sys.argv[1]))
		c = p["artifacts"][0]["verify"]["cosign"]
		assert c["identity"] == sys.argv[2] and c["issuer"] == sys.argv[3], c
		assert c["urls"] == [sys.argv[4] + "/k/kubelet.exe.sig"], c
		assert c["certificate"] == [sys.argv[4] + "/k/kubelet.exe.cert"], c
		assert c["rekor"] == ["http://127.0.0.1:1"] and c["tlog_entry"] == [], c
		assert c["tlog"] is None and c["tlog_warning"] is None, c
		assert p["warnings"] == [], p["warnings"]
	PY
	# a static entry instead of the search
	art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign 'tlog_entry: "${url}.rekor.json"')" | recipe
	"$WINBUILD" plan img.yaml --json >plan.json
	python3 - plan.json "$(H)" <<-'PY'
		import json, sys
		c = json.load(open(sys.argv[1]))["artifacts"][0]["verify"]["cosign"]
		assert c["rekor"] == [] and c["tlog_entry"] == [sys.argv[2] + "/k/kubelet.exe.rekor.json"], c
	PY
}

@test "cosign recipe: tlog: none verifies at notBefore; plan (text and --json) and fetch warn loudly" {
	art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign 'tlog: none')" | recipe
	wb plan img.yaml
	assert_status 0
	assert_output_has "warning: components/demo.yaml:"
	assert_output_has "tlog: none: NO transparency-log proof"
	assert_output_has "WARNING: tlog: none"
	"$WINBUILD" plan img.yaml --json >plan.json 2>/dev/null
	python3 - plan.json <<-'PY'
		import json, sys
		p = json.load(open(sys.argv[1]))
		assert any("NO transparency-log proof" in w["message"] for w in p["warnings"]), p["warnings"]
		c = p["artifacts"][0]["verify"]["cosign"]
		assert c["tlog"] == "none" and "NO transparency-log" in c["tlog_warning"] and c["rekor"] == [], c
	PY
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "tlog: none: NO transparency-log proof"
	assert_output_has "NO transparency-log proof (tlog: none)"
	wb lock img.yaml --no-progress
	python3 - t.lock <<-'PY'
		import json, sys
		c = json.load(open(sys.argv[1]))["artifacts"]["kubelet.exe"]["verified_by"]["cosign"]
		assert c["tlog"] == "none" and "log_index" not in c and "tlog_entry" not in c, c
	PY
	# without the opt-out the same signature needs an entry: exit 1
	rm -rf "$WINBUILD_CACHE"
	start_rekor
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
}

@test "cosign recipe: bad settings are recipe errors with file:line:col (exit 2)" {
	local r='rekor: "http://127.0.0.1:1"'
	for bad in "$r, rekr: x" "$r, tlog_entry: \"\${url}.rekor.json\"" "tlog: none, $r" \
		"tlog: maybe" "tlog: none, tlog_entry: \"\${url}.rekor.json\""; do
		art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign "$bad")" | recipe
		wb plan img.yaml
		assert_status 2
		assert_output_has "components/demo.yaml:"
	done
	art kubelet.exe "$(H)/k/kubelet.exe" "cosign: {trusted_root: \"$W/root.json\", identity: \"$ID\"}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "needs 'identity' and 'issuer'"
	art kubelet.exe "$(H)/k/kubelet.exe" "cosign: {identity: \"$ID\", issuer: \"$ISS\"}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "'trusted_root' is required"
	art kubelet.exe "$(H)/k/kubelet.exe" "cosign: {trusted_root: missing.json, identity: \"$ID\", issuer: \"$ISS\"}" | recipe
	wb plan img.yaml
	assert_status 2
	assert_output_has "does not exist"
}

@test "cosign recipe: under mirror_only an unmatched Rekor URL is a plan-time error, unless tlog_entry is set" {
	kubelet "rekor: \"https://rekor.example.invalid\"" | recipe
	printf 'kind: override\nmirror_only: true\nmirrors:\n  - {from: "%s/", to: "%s/"}\n' "$(H)" "$(H)" >airgap.yaml
	wb plan img.yaml -O airgap.yaml
	assert_status 2
	assert_output_has "components/demo.yaml:"
	assert_output_has "no mirror rule covers rekor URL 'https://rekor.example.invalid'"
	# the default Rekor too
	art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign)" | recipe
	wb plan img.yaml -O airgap.yaml
	assert_status 2
	assert_output_has "rekor URL 'https://rekor.sigstore.dev'"
	# a rule for it: the mirror's Rekor is asked
	printf '  - {from: "https://rekor.sigstore.dev", to: "http://127.0.0.1:1"}\n' >>airgap.yaml
	"$WINBUILD" plan img.yaml -O airgap.yaml --json >plan.json
	python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["artifacts"][0]["verify"]["cosign"]; assert c["rekor"]==["http://127.0.0.1:1"], c' plan.json
	# tlog_entry: no Rekor at all
	art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign 'tlog_entry: "${url}.rekor.json"')" | recipe
	wb plan img.yaml -O airgap.yaml
	assert_status 0
}

@test "cosign recipe: with sha256_url beside it (the shipped layout) it satisfies policy.require: signature" {
	start_rekor "$W/detached/entry.json"
	art kubelet.exe "$(H)/k/kubelet.exe" 'sha256_url: "${url}.sha256"' "$(cosign "rekor: \"$REKOR\"")" | recipe
	printf 'policy: {require: signature}\n' >>img.yaml
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	# the checksum file alone is no signature (a plan-time error)
	art kubelet.exe "$(H)/k/kubelet.exe" 'sha256_url: "${url}.sha256"' | recipe
	printf 'policy: {require: signature}\n' >>img.yaml
	wb fetch img.yaml --no-progress
	assert_status 2
	assert_output_has "policy.require is 'signature'"
}

# edit_ref WHAT: rewrite the cosign evidence kept in every cache ref: the
# signature, the certificate or the Rekor entry (another real one, or none)
edit_ref() {
	python3 - "$1" "$W" "$REAL" "$WINBUILD_CACHE"/refs/* <<-'PY'
		import json, sys
		what, w, real, refs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
		for f in refs:
		    d = json.load(open(f))
		    for x in d["evidence"]:
		        if x["method"] != "cosign":
		            continue
		        if what == "sig":      # another artifact's signature, same key
		            x["text"] = open(w + "/detached/other.sig").read()
		        elif what == "cert":   # a genuine certificate of another signer
		            x["more"][0]["text"] = open(real + "/cert.b64").read()
		        elif what == "drop":   # no entry kept at all
		            x["more"][1].pop("text", None)
		        else:                  # the late entry (after the cert expired)
		            x["more"][1]["text"] = open(w + "/detached/entry-late.json").read()
		    json.dump(d, open(f, "w"))
	PY
}

# locked_kubelet: kubelet.exe locked and fetched --locked (its ref keeps
# the evidence under the lock pin), the fake Rekor up
locked_kubelet() {
	start_rekor "$W/detached/entry.json"
	kubelet | recipe
	wb lock img.yaml --no-progress
	assert_status 0
	wb fetch img.yaml --locked --no-progress
	assert_status 0
}

@test "cosign recipe: a cache hit and --offline --locked check the kept .sig, .cert and entry again" {
	locked_kubelet
	n=$(nginx_requests /k/kubelet.exe)
	r=$(grep -c "POST /api/v1/index/retrieve" "$REKOR_LOG")
	wb fetch img.yaml --offline --locked --no-progress
	assert_status 0
	assert_output_has "cosign $ID"
	[ "$(nginx_requests /k/kubelet.exe)" = "$n" ]
	[ "$(grep -c "POST /api/v1/index/retrieve" "$REKOR_LOG")" = "$r" ]
	cp -r "$WINBUILD_CACHE/refs" refs.good
	for what in sig cert entry drop; do
		rm -rf "$WINBUILD_CACHE/refs"
		cp -r refs.good "$WINBUILD_CACHE/refs"
		edit_ref "$what"
		# the hit no longer verifies: the ref is ignored, and offline there
		# is no other way to the bytes
		wb fetch img.yaml --offline --locked --no-progress
		assert_status 3
		assert_output_has "ignoring a cache ref: artifact 'kubelet.exe'"
	done
	# online, the files are fetched and the entry looked up again
	wb fetch img.yaml --locked --no-progress
	assert_status 0
	[ "$(grep -c "POST /api/v1/index/retrieve" "$REKOR_LOG")" -gt "$r" ]
}

@test "cosign recipe: mirror exports .sig, .cert and .rekor.json; a build from it with tlog_entry verifies with Rekor stopped" {
	start_rekor "$W/detached/entry.json"
	kubelet | recipe
	wb stage img.yaml --no-progress
	assert_status 0
	python3 - out/t/sbom.cdx.json "$ID" "$ISS" <<-'PY'
		import json, sys
		c = [c for c in json.load(open(sys.argv[1]))["components"] if c["name"] == "kubelet.exe"][0]
		p = {x["name"]: x["value"] for x in c["properties"]}
		assert p["winbuild:verified_by"] == "cosign", p
		assert p["winbuild:cosign_identity"] == sys.argv[2], p
		assert p["winbuild:cosign_issuer"] == sys.argv[3], p
		assert p["winbuild:cosign_log_index"] == "5", p
		assert p["winbuild:cosign_integrated_time"] == "1735689600", p
	PY
	wb mirror img.yaml M --no-progress
	assert_status 0
	assert_output_has "1 artifacts, 1 signatures"
	d="M/127.0.0.1_$NGINX_PORT/k"
	cmp "$d/kubelet.exe" "$WWW/k/kubelet.exe"
	cmp "$d/kubelet.exe.sig" "$WWW/k/kubelet.exe.sig"
	cmp "$d/kubelet.exe.cert" "$WWW/k/kubelet.exe.cert"
	python3 - "$d/kubelet.exe.rekor.json" "$W/detached/entry.json" <<-'PY'
		import json, sys
		assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))
	PY
	# the exported entry verifies by hand too (sig sigstore --tlog-entry)
	run "$WINBUILD" sig sigstore "$d/kubelet.exe" --trusted-root "$W/root.json" \
		--signature "$d/kubelet.exe.sig" --certificate "$d/kubelet.exe.cert" \
		--tlog-entry "$d/kubelet.exe.rekor.json" --identity "$ID" --issuer "$ISS"
	assert_status 0
	# Rekor stopped; a fresh cache; every URL rewritten to the mirror only
	kill "$REKOR_PID"
	wait "$REKOR_PID" 2>/dev/null || true
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	art kubelet.exe "$(H)/k/kubelet.exe" "$(cosign 'tlog_entry: "${url}.rekor.json"')" | recipe
	printf 'kind: override\nmirror_only: true\nmirrors:\n  - {from: "%s/", to: "file://%s/"}\n' \
		"$(H)" "$PWD/M/127.0.0.1_$NGINX_PORT" >airgap.yaml
	n=$(nginx_requests /k/kubelet.exe)
	wb fetch img.yaml -O airgap.yaml --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	[ "$(nginx_requests /k/kubelet.exe)" = "$n" ]
	wb lock img.yaml -O airgap.yaml --no-progress
	assert_status 0
	python3 - t.lock "$PWD/M/127.0.0.1_$NGINX_PORT" <<-'PY'
		import json, sys
		c = json.load(open(sys.argv[1]))["artifacts"]["kubelet.exe"]["verified_by"]["cosign"]
		assert c["tlog_entry_url"] == "file://" + sys.argv[2] + "/k/kubelet.exe.rekor.json", c
		assert c["log_index"] == "5", c
	PY
	# the exported entry edited: exit 1
	edit_entry "$d/kubelet.exe.rekor.json"
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml -O airgap.yaml --no-progress
	assert_status 1
}

# exported ENTRY: the entry beside kubelet.exe and its copy kubeadm.exe
# (same bytes, same signature), where `winbuild mirror` puts it
exported() {
	for f in kubelet kubeadm; do
		cp "$1" "$WWW/k/$f.exe.rekor.json"
		[ "$f" = kubelet ] || for x in "" .sig .cert; do cp "$WWW/k/kubelet.exe$x" "$WWW/k/$f.exe$x"; done
	done
}

@test "issue 28: one line, components.<n>.tlog_source: exported, switches every Rekor lookup of the component to the exported entry; the entry is still checked" {
	exported "$W/detached/entry.json"
	# no Rekor runs: the component's own rekor URL answers nothing
	{ kubelet 'rekor: "http://127.0.0.1:9"'
	  art kubeadm.exe "$(H)/k/kubeadm.exe" "$(cosign 'rekor: "http://127.0.0.1:9"')"; } | recipe
	wb fetch img.yaml --no-progress
	assert_status 3
	assert_output_has "Couldn't connect"
	rm -rf "$WINBUILD_CACHE"
	printf 'kind: override\ncomponents:\n  demo: {tlog_source: exported}\n' >ov.yaml
	wb fetch img.yaml -O ov.yaml --no-progress
	assert_status 0
	[ "$(grep -c "cosign $ID ($ISS), log index 5" <<<"$output")" -eq 2 ]
	[ "$(nginx_requests /k/kubelet.exe.rekor.json)" -ge 1 ]
	[ "$(nginx_requests /k/kubeadm.exe.rekor.json)" -ge 1 ]
	wb plan img.yaml -O ov.yaml --explain
	assert_output_has "tlog_source"
	# --set is the same one line; the lock records the entry's URL
	rm -rf "$WINBUILD_CACHE"
	wb lock img.yaml --set components.demo.tlog_source=exported --no-progress
	assert_status 0
	python3 - t.lock "$(H)" <<-'PY'
		import json, sys
		a = json.load(open(sys.argv[1]))["artifacts"]
		for n in ("kubelet.exe", "kubeadm.exe"):
		    c = a[n]["verified_by"]["cosign"]
		    assert c["tlog_entry_url"] == sys.argv[2] + "/k/" + n + ".rekor.json", c
	PY
	# an edited entry fails as a lookup's answer would: exit 1, nothing cached
	edit_entry "$WWW/k/kubeadm.exe.rekor.json"
	rm -rf "$WINBUILD_CACHE"
	wb fetch img.yaml -O ov.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'kubeadm.exe'"
	! grep -qs '"artifact": "kubeadm.exe"' "$WINBUILD_CACHE"/refs/* || false
	# a value it does not know: where it was written
	printf 'kind: override\ncomponents:\n  demo: {tlog_source: offline}\n' >ov.yaml
	wb plan img.yaml -O ov.yaml
	assert_status 2
	assert_output_has "ov.yaml:3:"
	assert_output_has "lookup|exported"
	rm -f "$WWW"/k/kube*.exe.rekor.json "$WWW"/k/kubeadm.exe*
}

# last: it stops the file's nginx
@test "cosign recipe: stage --offline --locked replays the kept evidence with nginx and Rekor stopped" {
	locked_kubelet
	stop_servers
	unset REKOR_PID
	wb stage img.yaml --offline --locked --no-progress
	assert_status 0
	python3 - out/t/sbom.cdx.json <<-'PY'
		import json, sys
		c = [c for c in json.load(open(sys.argv[1]))["components"] if c["name"] == "kubelet.exe"][0]
		p = {x["name"]: x["value"] for x in c["properties"]}
		assert p["winbuild:cosign_log_index"] == "5", p
	PY
}

@test "issue 28: tampered bytes are reported as such before any Rekor wording: exit 1" {
	# bytes nobody signed (the log has no entry for them): said first
	start_rekor "$W/detached/entry-other.json"
	kubelet | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "winbuild: artifact 'kubelet.exe': the bytes differ from what was signed: no transparency-log entry for sha256:$SHA in rekor '$REKOR'"
	untouched kubelet.exe
	kill "$REKOR_PID"
	start_rekor "$W/detached/entry.json"
	# the published .sha256 names other bytes than served: a tampered kubelet
	other=$(printf 'not kubelet' | sha256sum | cut -c1-64)
	echo "$other" >"$WWW/k/kubelet-tampered.sha256"
	art kubelet.exe "$(H)/k/kubelet.exe" "sha256_url: \"$(H)/k/kubelet-tampered.sha256\"" \
		"$(cosign "rekor: \"$REKOR\"")" | recipe
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "did not verify: sha256 (from checksum file '$(H)/k/kubelet-tampered.sha256') mismatch"
	assert_output_has "expected $other"
	[[ "$output" != *rekor* ]]
	untouched kubelet.exe
	rm -f "$WWW/k/kubelet-tampered.sha256"
}

@test "issue 28: mirror's own override switches the Rekor lookup to the exported entry and copies the trusted root: moved, Rekor and nginx stopped, it verifies" {
	start_rekor "$W/detached/entry.json"
	kubelet | recipe
	wb mirror img.yaml M --no-progress
	assert_status 0
	o=M/winbuild-override.yaml
	# one line for the component's lookups, a stanza only for the root
	python3 - "$o" <<-'PY'
		import sys, yaml
		d = yaml.safe_load(open(sys.argv[1]))["components"]["demo"]
		assert d["tlog_source"] == "exported", d
		v = d["artifacts"]["kubelet.exe"]["verify"]["cosign"]
		assert v == {"trusted_root": "trust/root.json"}, v
	PY
	cmp M/trust/root.json "$W/root.json"
	mkdir -p "$BATS_TEST_TMPDIR/far"
	mv M "$BATS_TEST_TMPDIR/far/M"
	kill "$REKOR_PID"
	wait "$REKOR_PID" 2>/dev/null || true
	port=$NGINX_PORT
	stop_nginx
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache-far"
	wb stage img.yaml -O "$BATS_TEST_TMPDIR/far/M/winbuild-override.yaml" --no-progress
	assert_status 0
	assert_output_has "cosign $ID ($ISS), log index 5"
	# the exported entry is still checked: edited, it fails (exit 1)
	edit_entry "$BATS_TEST_TMPDIR/far/M/127.0.0.1_$port/k/kubelet.exe.rekor.json"
	rm -rf "$WINBUILD_CACHE" out
	wb fetch img.yaml -O "$BATS_TEST_TMPDIR/far/M/winbuild-override.yaml" --no-progress
	assert_status 1
}
