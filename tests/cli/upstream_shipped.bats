#!/usr/bin/env bats
# The shipped recipes verify what upstream signs (issue 17 item 4): the
# Kubernetes binaries by their cosign signatures (krel's identity, Google's
# issuer) plus the .sha256 file, containerd by its release workflow's build
# provenance plus the .sha256sum file, both under the Sigstore production
# trusted root shipped in recipes/trust/sigstore/ (README.md there: its
# provenance, its sha256 and tests/sigstore/update-trusted-root, tested here).
load helpers
load ../lib/servers

R="$WB_SRC/recipes"
O="$WB_SRC/overrides"
IMAGES="windows-2019-containerd windows-2022-containerd windows-2025-containerd"
ROOT="$R/trust/sigstore/trusted_root.json"
VEC="$WB_SRC/tests/vectors/sigstore"
GHA="https://token.actions.githubusercontent.com"
CTRD_ID="https://github.com/containerd/containerd/.github/workflows/release.yml@refs/tags/v"
KREL="krel-staging@k8s-releng-prod.iam.gserviceaccount.com"
GOOGLE="https://accounts.google.com"
KUBE="kubelet kubeadm kube-proxy kubectl kube-log-runner"
K8S="https://dl.k8s.io/release/v1.36.4/bin/windows/amd64"

setup() {
	common_setup
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256"
}

teardown() { stop_servers; }

@test "the shipped trusted root is the production root of the vectors, byte for byte, with the README's sha256" {
	cmp "$ROOT" "$VEC/trusted_root/production-sigstore-python.json"
	sum=$(sha256sum "$ROOT" | cut -d' ' -f1)
	grep -qx "sha256: $sum" "$R/trust/sigstore/README.md"
	# the README's provenance is the vectors' record of the file
	python3 - "$VEC/sources.json" "$R/trust/sigstore/README.md" "$sum" <<-'PY'
		import json, sys
		s = [x for x in json.load(open(sys.argv[1]))
		     if x["file"] == "trusted_root/production-sigstore-python.json"][0]
		readme = open(sys.argv[2]).read()
		assert s["sha256"] == sys.argv[3], s
		for k in ("repo", "commit", "path"):
		    assert s[k] in readme, (k, s[k])
		r = json.load(open(sys.argv[1].replace("sources.json", s["file"])))
		assert [t["baseUrl"] for t in r["tlogs"]][0] == "https://rekor.sigstore.dev", r["tlogs"]
	PY
}

@test "containerd: the release workflow's attestation plus the .sha256sum file, in every shipped image (text and --json)" {
	for img in $IMAGES; do
		wb plan "$R/$img.yaml"
		assert_status 0
		assert_output_has "sha256 from checksum file https://github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-windows-amd64.tar.gz.sha256sum"
		assert_output_has "build provenance attestation https://github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-attestation.intoto.jsonl"
		assert_output_has "identity ${CTRD_ID}2.3.5"
		assert_output_has "issuer $GHA"
		wb plan --json "$R/$img.yaml"
		assert_status 0
		printf '%s' "$output" >p.json
		python3 - "$ROOT" "${CTRD_ID}2.3.5" "$GHA" <<-'PY'
			import json, os, sys
			root, ident, iss = sys.argv[1:4]
			a = [a for a in json.load(open("p.json"))["artifacts"] if a["name"] == "containerd"][0]
			v = a["verify"]
			assert v["sha256_urls"] == [a["url"] + ".sha256sum"], v
			at = v["attestation"]
			assert at["urls"] == [a["url"].replace("windows-amd64.tar.gz", "attestation.intoto.jsonl")], at
			assert at["identity"] == ident and at["issuer"] == iss, at
			assert os.path.samefile(at["trusted_root"], root), at
		PY
	done
	# the version moves the identity with it
	wb plan --json "$R/windows-2022-containerd.yaml" --set components.containerd.version=2.0.6
	assert_status 0
	grep -qF "\"identity\": \"${CTRD_ID}2.0.6\"" <<<"$output"
}

@test "containerd 1.7 (no provenance upstream) is a plan-time error naming the fix; overrides/containerd-1.7.yaml says what it gives up" {
	for v in 1.7.28 1.6.0; do
		wb plan "$R/windows-2022-containerd.yaml" --set components.containerd.version=$v
		assert_status 2
		assert_output_has "winbuild: --set #1: containerd $v publishes no build provenance"
		assert_output_has "artifact 'containerd' requires it (verify.attestation, "
		assert_output_has "components/containerd.yaml:"
		assert_output_has "use containerd 2.0 or later, or -O overrides/containerd-1.7.yaml"
	done
	# from a layer (WINBUILD_SET) too, named as such
	WINBUILD_SET="$WINBUILD_SET;components.containerd.version=1.7.27" wb plan "$R/windows-2022-containerd.yaml"
	assert_status 2
	assert_output_has "containerd 1.7.27 publishes no build provenance"
	# the override: 1.7.28, the checksum file alone, nothing else dropped
	# (stdout only: the plan warns that Kubernetes 1.36 wants containerd 2)
	"$WINBUILD" plan --json "$R/windows-2022-containerd.yaml" -O "$O/containerd-1.7.yaml" >p.json 2>err
	grep -qF "Kubernetes 1.35 was the last release to support containerd 1.x" err
	python3 - <<-'PY'
		import json, sys
		p = json.load(open("p.json"))
		a = {a["name"]: a for a in p["artifacts"]}
		c = a["containerd"]
		assert c["version"] == "1.7.28", c
		assert c["url"] == "https://github.com/containerd/containerd/releases/download/v1.7.28/containerd-1.7.28-windows-amd64.tar.gz", c
		assert c["verify"]["sha256_urls"] == [c["url"] + ".sha256sum"], c["verify"]
		assert c["verify"]["attestation"] is None, c["verify"]
		for n, x in a.items():
		    if n != "containerd":
		        assert not x["replaced"], n
	PY
	grep -qi "gives up" "$O/containerd-1.7.yaml"
	# another 1.7 through the override
	wb plan "$R/windows-2022-containerd.yaml" -O "$O/containerd-1.7.yaml" --set components.containerd.version=1.7.27
	assert_status 0
	assert_output_has "containerd-1.7.27-windows-amd64.tar.gz.sha256sum"
	# a fixture-style replace with its own verify needs no override
	printf 'kind: override\nreplace:\n  containerd: {url: "https://example.test/c.tgz", verify: {sha256: %s}}\n' \
		"$TEST_ISO_SHA256" >r.yaml
	wb plan "$R/windows-2022-containerd.yaml" -O r.yaml --set components.containerd.version=1.7.28
	assert_status 0
}

@test "tests/sigstore/update-trusted-root: accepts a production root (and records its sha256), refuses broken ones writing nothing" {
	need_dep python3 -c 'import json' -- python3
	mkdir -p t
	cp "$ROOT" "$R/trust/sigstore/README.md" t/
	export TRUST_DIR="$WORK/t"
	# the shipped one passes --check and changes nothing
	run "$WB_SRC/tests/sigstore/update-trusted-root" --check "$ROOT"
	assert_status 0
	assert_output_has "sha256: $(sha256sum "$ROOT" | cut -d' ' -f1)"
	cmp t/trusted_root.json "$ROOT"
	# broken roots: each refused (exit 1), nothing written
	printf '{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1", ' >trunc.json
	python3 - "$ROOT" <<-'PY'
		import base64, json, sys
		r = json.load(open(sys.argv[1]))
		def save(name, x):
		    json.dump(x, open(name, "w"))
		x = json.loads(json.dumps(r)); x["tlogs"] = []; save("notlog.json", x)
		# Rekor v1's key replaced by the Rekor v2 log's: parses, proves nothing
		x = json.loads(json.dumps(r))
		x["tlogs"][0]["publicKey"]["rawBytes"] = x["ctlogs"][1]["publicKey"]["rawBytes"]
		save("rekorkey.json", x)
		# Fulcio's chain swapped for the other (expired) one
		x = json.loads(json.dumps(r))
		x["certificateAuthorities"][1]["certChain"] = x["certificateAuthorities"][0]["certChain"]
		save("fulcio.json", x)
		# the CT logs' keys swapped: SCTs no longer verify
		x = json.loads(json.dumps(r))
		a, b = x["ctlogs"][0]["publicKey"]["rawBytes"], x["ctlogs"][1]["publicKey"]["rawBytes"]
		x["ctlogs"][0]["publicKey"]["rawBytes"], x["ctlogs"][1]["publicKey"]["rawBytes"] = b, a
		save("ctkeys.json", x)
		x = json.loads(json.dumps(r)); x["mediaType"] = "application/json"; save("media.json", x)
	PY
	# CT keys swapped between entries: winbuild refuses a log whose logId
	# is not its key's hash (the independent verifier does too)
	bad="trunc notlog rekorkey fulcio media ctkeys"
	for f in $bad; do
		run "$WB_SRC/tests/sigstore/update-trusted-root" "$f.json"
		echo "$f: $output"
		assert_status 1
		assert_output_has "rejected"
		cmp t/trusted_root.json "$ROOT"
		cmp t/README.md "$R/trust/sigstore/README.md"
	done
	run "$WB_SRC/tests/sigstore/update-trusted-root" "$WORK/rekorkey.json"
	assert_output_has "winbuild does not verify the conformance case 'happy-path-v0.1'"
	# a valid root (sigstore-go's copy) is installed and its sha256 recorded
	new="$VEC/trusted_root/public-good.json"
	run "$WB_SRC/tests/sigstore/update-trusted-root" "$new"
	assert_status 0
	sum=$(sha256sum "$new" | cut -d' ' -f1)
	assert_output_has "sha256: $sum"
	cmp t/trusted_root.json "$new"
	grep -qx "sha256: $sum" t/README.md
	[ "$(diff t/README.md "$R/trust/sigstore/README.md" | grep -c '^[<>]')" = 2 ]
	# usage
	run "$WB_SRC/tests/sigstore/update-trusted-root"
	assert_status 2
	run "$WB_SRC/tests/sigstore/update-trusted-root" no-such.json
	assert_status 2
}

@test "Kubernetes: every binary verified by cosign (krel's identity, Google's issuer, Rekor) plus its .sha256, in every shipped image (text and --json)" {
	for img in $IMAGES; do
		wb plan "$R/$img.yaml"
		assert_status 0
		for b in $KUBE; do
			# the block of this artifact in the text plan
			blk=$(sed -n "/^$b  (component kubernetes/,/^\$/p" <<<"$output")
			grep -qF "sha256 from checksum file $K8S/$b.exe.sha256" <<<"$blk"
			grep -qF "cosign signature $K8S/$b.exe.sig" <<<"$blk"
			grep -qF "cosign certificate $K8S/$b.exe.cert" <<<"$blk"
			grep -qF "identity $KREL" <<<"$blk"
			grep -qF "issuer $GOOGLE" <<<"$blk"
			grep -qF "rekor https://rekor.sigstore.dev (searched by the artifact's sha256 at fetch time)" <<<"$blk"
			grep -qF "trusted_root $R/trust/sigstore/trusted_root.json" <<<"$blk"
		done
		assert_output_lacks "tlog: none"
		wb plan --json "$R/$img.yaml"
		assert_status 0
		printf '%s' "$output" >p.json
		python3 - "$ROOT" "$KREL" "$GOOGLE" "$KUBE" <<-'PY'
			import json, os, sys
			root, ident, iss, kube = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
			p = json.load(open("p.json"))
			assert p["warnings"] == [], p["warnings"]
			k = {a["name"]: a for a in p["artifacts"] if a["component"] == "kubernetes"}
			assert sorted(k) == sorted(kube), sorted(k)
			for n, a in k.items():
			    v = a["verify"]
			    assert a["url"] == "https://dl.k8s.io/release/v1.36.4/bin/windows/amd64/%s.exe" % n, a["url"]
			    assert v["sha256_urls"] == [a["url"] + ".sha256"], v
			    c = v["cosign"]
			    assert c["identity"] == ident and c["issuer"] == iss, c
			    assert c["urls"] == [a["url"] + ".sig"], c
			    assert c["certificate"] == [a["url"] + ".cert"], c
			    assert c["rekor"] == ["https://rekor.sigstore.dev"] and c["tlog_entry"] == [], c
			    assert c["tlog"] is None and c["tlog_warning"] is None, c
			    assert os.path.samefile(c["trusted_root"], root), c
			# nothing else is signed by krel
			for a in p["artifacts"]:
			    if a["component"] != "kubernetes":
			        assert not a["verify"].get("cosign"), a["name"]
		PY
	done
	# enterprise-mirror: signatures, certificates and the Rekor lookup on the mirror
	wb plan --json "$R/windows-2022-containerd.yaml" -O "$O/enterprise-mirror.yaml"
	assert_status 0
	printf '%s' "$output" >p.json
	python3 - <<-'PY'
		import json
		for a in json.load(open("p.json"))["artifacts"]:
		    c = a["verify"]["cosign"]
		    if c:
		        for u in c["urls"] + c["certificate"] + c["rekor"]:
		            assert u.startswith("https://artifacts.example.corp/"), u
		        assert c["rekor"] == ["https://artifacts.example.corp/rekor.sigstore.dev"], c
	PY
}

# kube_site: the shipped kubernetes and containerd components (a small image
# of its own: fetch takes every artifact) with dl.k8s.io and Rekor mirrored
# to loopback: nginx serving the five binaries with their .sha256 and a
# .sig/.cert minted by forge.py --sign as IDENTITY (default krel's) from a
# test Fulcio CA not in the production root, a fake Rekor serving the
# entries; containerd from a fixture pinned by digest
kube_site() {
	local d="$WORK/www/dl.k8s.io/release/v1.36.4/bin/windows/amd64"
	mkdir -p "$d"
	for b in $KUBE; do
		printf 'MZ winbuild stand-in for %s.exe\n' "$b" >"$d/$b.exe"
		sha256sum "$d/$b.exe" | cut -d' ' -f1 >"$d/$b.exe.sha256"
	done
	printf 'containerd stand-in\n' >"$WORK/www/c.tgz"
	python3 "$WB_SRC/tests/sigstore/forge.py" --sign "$WORK/w" "${1:-$KREL}" "$GOOGLE" "$d"/*.exe
	start_nginx "$WORK/www"
	start_rekor "$WORK/w"/entries/*.json
	cat >img.yaml <<-EOF
		kind: image
		name: k
		windows: {version: "2022", iso_sha256: $TEST_ISO_SHA256}
		components:
		  containerd: {file: $R/components/containerd.yaml}
		  kubernetes: {file: $R/components/kubernetes.yaml}
		mirrors:
		  - {from: "https://dl.k8s.io/", to: "http://127.0.0.1:$NGINX_PORT/dl.k8s.io/"}
		  - {from: "https://rekor.sigstore.dev", to: "$REKOR"}
		mirror_only: true
	EOF
	cat >site.yaml <<-EOF
		kind: override
		replace:
		  containerd: {url: "http://127.0.0.1:$NGINX_PORT/c.tgz", verify: {sha256: $(sha256sum "$WORK/www/c.tgz" | cut -d' ' -f1)}}
	EOF
}

# kwb CMD [ARGS]: winbuild CMD on the kube_site image
kwb() { local c=$1; shift; wb "$c" img.yaml -O site.yaml --no-progress "$@"; }

# kube_cached: how many cache refs name a Kubernetes binary
kube_cached() { cat "$WINBUILD_CACHE"/refs/* 2>/dev/null | grep -cE '"(kubelet|kubeadm|kube-proxy|kubectl|kube-log-runner)"' || true; }

@test "Kubernetes: a server with matching .sha256 files and signatures from another CA (krel's identity) cannot pass the shipped recipe; the same signatures under their own root show the check runs" {
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	kube_site
	kwb fetch
	assert_status 1
	# (its Rekor log is the first thing the production root does not know)
	assert_output_has "(not in the trusted root)"
	[ "$(kube_cached)" = 0 ]
	# the checksum files were there and matched: they alone do not suffice
	for b in $KUBE; do [ "$(grep -c "GET /dl.k8s.io/release/v1.36.4/bin/windows/amd64/$b.exe.sha256 " "$NGINX_LOG")" -ge 1 ]; done
	# under the test root (a site's own Sigstore, one --set) the same files
	# verify with krel's identity, each looked up in Rekor by its sha256
	kwb fetch --set components.kubernetes.vars.sigstore_trusted_root="$WORK/w/root.json"
	assert_status 0
	for b in $KUBE; do
		assert_output_has "fetched $b ("
	done
	[ "$(grep -o "cosign $KREL ($GOOGLE), log index" <<<"$output" | wc -l)" = 5 ]
	[ "$(grep -c "POST /api/v1/index/retrieve" "$REKOR_LOG")" -ge 5 ]
	kwb lock --set components.kubernetes.vars.sigstore_trusted_root="$WORK/w/root.json"
	assert_status 0
	python3 - k.lock "$KREL" "$GOOGLE" "$KUBE" <<-'PY'
		import json, sys
		l = json.load(open(sys.argv[1]))["artifacts"]
		for k in sys.argv[4].split():
		    v = l[k]["verified_by"]
		    assert sorted(v) == ["checksum_url", "cosign"], (k, v)
		    assert v["checksum_url"].endswith("/%s.exe.sha256" % k), v
		    assert v["cosign"]["identity"] == sys.argv[2] and v["cosign"]["issuer"] == sys.argv[3], v
		    assert v["cosign"]["tlog_entry"], v
	PY
}

@test "Kubernetes: the shipped recipe refuses another signer's identity and a binary without its signature (exit 1, nothing cached)" {
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	kube_site "krel-staging@k8s-releng-prod.iam.gserviceaccount.com.evil.example"
	kwb fetch --set components.kubernetes.vars.sigstore_trusted_root="$WORK/w/root.json"
	assert_status 1
	assert_output_has "$KREL"
	[ "$(kube_cached)" = 0 ]
	# krel's identity again, but kubelet.exe's signature removed
	stop_servers
	rm -rf "$WORK/w" "$WORK/www"
	kube_site
	rm "$WORK/www/dl.k8s.io/release/v1.36.4/bin/windows/amd64/kubelet.exe.sig"
	kwb fetch --set components.kubernetes.vars.sigstore_trusted_root="$WORK/w/root.json"
	assert_status 1
	assert_output_has "kubelet.exe.sig"
	! grep -qs '"kubelet"' "$WINBUILD_CACHE"/refs/* || false
}

# ctrd_site [IDENTITY]: the shipped containerd component alone, github.com
# mirrored to loopback nginx serving a stand-in 2.3.5 tarball, its
# .sha256sum and the build provenance forge.py --sign --attest mints for it
# as IDENTITY (default: the release workflow at v2.3.5) from a test Fulcio
# CA not in the production root
ctrd_site() {
	local d="$WORK/www/github.com/containerd/containerd/releases/download/v2.3.5"
	local t="containerd-2.3.5-windows-amd64.tar.gz"
	mkdir -p "$d"
	printf 'containerd 2.3.5 stand-in\n' >"$d/$t"
	(cd "$d" && sha256sum "$t" >"$t.sha256sum")
	printf 'x\n' >"$WORK/unused"
	python3 "$WB_SRC/tests/sigstore/forge.py" --sign "$WORK/w" "$KREL" "$GOOGLE" "$WORK/unused" \
		--attest "${1:-${CTRD_ID}2.3.5}" "$GHA" "$d/containerd-2.3.5-attestation.intoto.jsonl" "$d/$t"
	start_nginx "$WORK/www"
	cat >img.yaml <<-EOF
		kind: image
		name: c
		windows: {version: "2022", iso_sha256: $TEST_ISO_SHA256}
		components:
		  containerd: {file: $R/components/containerd.yaml}
		mirrors:
		  - {from: "https://github.com/", to: "http://127.0.0.1:$NGINX_PORT/github.com/"}
		mirror_only: true
	EOF
}

@test "containerd: a server with a matching .sha256sum and provenance from another CA cannot pass the shipped recipe; under that CA's root the release workflow's attestation verifies, another workflow's does not" {
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	ctrd_site
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "no line of the attestation"
	[ "$(find "$WINBUILD_CACHE/sha256" -type f 2>/dev/null | wc -l)" = 0 ]
	grep -q "GET /github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-windows-amd64.tar.gz.sha256sum " "$NGINX_LOG"
	# under the test root (one --set) the shipped identity and issuer hold
	wb fetch img.yaml --no-progress --set components.containerd.vars.sigstore_trusted_root="$WORK/w/root.json"
	assert_status 0
	assert_output_has "attestation by ${CTRD_ID}2.3.5 ($GHA), builder ${CTRD_ID}2.3.5, source https://github.com/containerd/containerd@refs/tags/v2.3.5"
	# the same, attested by another workflow of the repository
	stop_servers
	rm -rf "$WORK/w" "$WORK/www" "$WINBUILD_CACHE"
	ctrd_site "https://github.com/containerd/containerd/.github/workflows/evil.yml@refs/tags/v2.3.5"
	wb fetch img.yaml --no-progress --set components.containerd.vars.sigstore_trusted_root="$WORK/w/root.json"
	assert_status 1
	assert_output_has "no line of the attestation"
	[ "$(find "$WINBUILD_CACHE/sha256" -type f 2>/dev/null | wc -l)" = 0 ]
}
