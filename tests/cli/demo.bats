#!/usr/bin/env bats
# make demo (tests/demo/run): the whole product against a demo mirror,
# twice, with byte-identical outputs. The Kubernetes binaries and containerd
# are verified as the shipped recipe verifies them upstream: cosign (.sig,
# .cert, a Rekor entry looked up in a fake Rekor) and build provenance,
# under a Sigstore world made at demo time.
load helpers
load ../lib/servers

@test "the demo builds, verifies, validates, and a second run is byte-identical" {
	export DEMO_DIR="$WORK/demo" DEMO_PORT DEMO_REKOR_PORT
	DEMO_PORT=$(free_port)
	DEMO_REKOR_PORT=$(free_port)
	[ "$DEMO_REKOR_PORT" != "$DEMO_PORT" ] || DEMO_REKOR_PORT=$(free_port)
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	mkdir "$WORK/tmp"
	TMPDIR="$WORK/tmp" run bash "$WB_SRC/tests/demo/run"
	assert_status 0
	assert_output_has "packer validate: ok"
	# the server's files are gone: none in the demo dir, none in TMPDIR
	[ -z "$(ls -d "$DEMO_DIR"/nginx.* 2>/dev/null)" ]
	[ -z "$(ls -d "$WORK/tmp"/winbuild-demo.* 2>/dev/null)" ]
	O="$DEMO_DIR/out/windows-2022-containerd"
	[ -f "$O/manifest.json" ] && [ -f "$O/packer/windows-2022-containerd.pkr.hcl" ]
	[ -f "$O/tree/k/kubelet.exe" ]
	file "$O/tree/ProgramData/winbuild/installers/CloudbaseInitSetup_x64.msi" | grep -q 'MSI Installer' ||
		head -c 8 "$O/tree/ProgramData/winbuild/installers/CloudbaseInitSetup_x64.msi" | od -An -tx1 | grep -q 'd0 cf 11 e0'
	# the SBOM carries the demo key and trusted comments (the Kubernetes
	# binaries: the cosign signer and its Rekor entry), and validates; the
	# lock shows verified_by.cosign, with the entry, for every kube binary
	KUBE="kubelet kubeadm kube-proxy kubectl kube-log-runner"
	python3 - "$O/sbom.cdx.json" "$(tail -n1 "$DEMO_DIR/keys/demo.pub")" "$DEMO_DIR/winbuild.lock" \
		"$KUBE" "$WB_SRC/overrides/demo.yaml" <<-'PY'
		import base64, json, re, sys
		sbom = json.load(open(sys.argv[1]))
		keyid = base64.b64decode(sys.argv[2])[2:10][::-1].hex().upper()
		kube = sys.argv[4].split()
		demo = open(sys.argv[5]).read()
		ident = re.search(r"demo_identity: (\S+)", demo).group(1)
		iss = re.search(r"demo_issuer: (\S+)", demo).group(1)
		ctrd = "https://github.com/containerd/containerd/.github/workflows/release.yml@refs/tags/v2.3.5"
		apps = [c for c in sbom["components"] if c["type"] == "application"]
		assert len(apps) == 10, len(apps)
		seen = set()
		for c in apps:
		    p = {x["name"]: x["value"] for x in c["properties"]}
		    if p["winbuild:file_name"] in [k + ".exe" for k in kube]:
		        seen.add(p["winbuild:file_name"])
		        assert p["winbuild:verified_by"] == "cosign", p
		        assert p["winbuild:cosign_identity"] == ident, p
		        assert p["winbuild:cosign_issuer"] == iss, p
		        assert p["winbuild:cosign_integrated_time"] == "1735689600", p
		        assert "winbuild:signer_key_id" not in p, p
		        continue
		    if p["winbuild:file_name"] == "containerd-2.3.5-windows-amd64.tar.gz":
		        assert p["winbuild:verified_by"] == "attestation", p
		        assert p["winbuild:attestation_identity"] == ctrd, p
		        assert p["winbuild:attestation_source"] == "https://github.com/containerd/containerd", p
		        assert p["winbuild:attestation_ref"] == "refs/tags/v2.3.5", p
		        continue
		    assert p["winbuild:signer_key_id"] == keyid, (p, keyid)
		    assert "file:" + p["winbuild:file_name"] in p["winbuild:trusted_comment"]
		assert len(seen) == 5, seen
		lock = json.load(open(sys.argv[3]))["artifacts"]
		for k in kube:
		    v = lock[k]["verified_by"]
		    assert list(v) == ["cosign"], (k, v)
		    c = v["cosign"]
		    assert c["identity"] == ident and c["issuer"] == iss, c
		    if k == "kube-log-runner":
		        # signed the cosign v3 way: its bundle alone, no lookup
		        assert c["bundle_url"].endswith("/dl.k8s.io/release/v1.36.4/bin/windows/amd64/%s.exe.sigstore.json" % k), c
		        assert c["bundle_version"] == "0.3" and c["log_index"], c
		        assert "signature_url" not in c and "tlog_entry" not in c, c
		        continue
		    assert c["signature_url"].endswith("/dl.k8s.io/release/v1.36.4/bin/windows/amd64/%s.exe.sig" % k), c
		    assert c["certificate_url"] == c["signature_url"][:-4] + ".cert", c
		    uuid, e = next(iter(c["tlog_entry"].items()))
		    assert c["tlog_entry_url"].endswith("/api/v1/log/entries/" + uuid), c
		    assert str(e["logIndex"]) == c["log_index"], (e, c)
		# containerd: its build provenance (the demo's release workflow)
		v = lock["containerd"]["verified_by"]
		assert list(v) == ["attestation"], v
		assert v["attestation"]["identity"] == ctrd, v
		assert v["attestation"]["attestation_url"].endswith(
		    "/github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-attestation.intoto.jsonl"), v
	PY
	# the demo's world is not the production one: the shipped root refuses it
	f="$(find "$DEMO_DIR/mirror" -name kubelet.exe)"
	run "$WINBUILD" sig sigstore "$f" --trusted-root "$WB_SRC/recipes/trust/sigstore/trusted_root.json" \
		--signature "$f.sig" --certificate "$f.cert" --tlog-entry "$DEMO_DIR/keys/sigstore/entries/kubelet.exe.json" \
		--identity krel-demo@winbuild.invalid --issuer https://oidc.winbuild.invalid
	assert_status 1
	run "$WINBUILD" sig sigstore "$f" --trusted-root "$DEMO_DIR/keys/sigstore/root.json" \
		--signature "$f.sig" --certificate "$f.cert" --tlog-entry "$DEMO_DIR/keys/sigstore/entries/kubelet.exe.json" \
		--identity krel-demo@winbuild.invalid --issuer https://oidc.winbuild.invalid
	assert_status 0
	need_dep test -d "$WB_SRC/tests/sbom/node_modules/ajv-formats" -- "run make deps (npm ci in tests/sbom)"
	node "$WB_SRC/tests/sbom/validate.cjs" "$O/sbom.cdx.json"
	cp -a "$O" "$WORK/first"
	cp "$DEMO_DIR/winbuild.lock" "$WORK/first.lock"
	rm -rf "$DEMO_DIR/cache"
	run bash "$WB_SRC/tests/demo/run"
	assert_status 0
	# the answer files' one-off password is new each run, nothing else
	mask_iso_password "$WORK/first/packer"
	mask_iso_password "$O/packer"
	diff -r -x .stage-stamp "$WORK/first" "$O"
	cmp "$WORK/first.lock" "$DEMO_DIR/winbuild.lock"
}
