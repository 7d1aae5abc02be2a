#!/usr/bin/env bats
# make demo (tests/demo/run): the whole product against a demo mirror,
# twice, with byte-identical outputs.
load helpers
load ../lib/servers

@test "the demo builds, verifies, validates, and a second run is byte-identical" {
	export DEMO_DIR="$WORK/demo" DEMO_PORT
	DEMO_PORT=$(free_port)
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
	# the SBOM carries the demo key and trusted comments, and validates
	python3 - "$O/sbom.cdx.json" "$(tail -n1 "$DEMO_DIR/keys/demo.pub")" <<-'PY'
		import base64, json, sys
		sbom = json.load(open(sys.argv[1]))
		keyid = base64.b64decode(sys.argv[2])[2:10][::-1].hex().upper()
		apps = [c for c in sbom["components"] if c["type"] == "application"]
		assert len(apps) == 10, len(apps)
		for c in apps:
		    p = {x["name"]: x["value"] for x in c["properties"]}
		    assert p["winbuild:signer_key_id"] == keyid, (p, keyid)
		    assert "file:" + p["winbuild:file_name"] in p["winbuild:trusted_comment"]
	PY
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
