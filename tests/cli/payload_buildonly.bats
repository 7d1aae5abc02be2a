#!/usr/bin/env bats
# Issue 40: the build-only payload. manifest.json says of every file
# whether the node keeps it ("lifetime": "node") or only the build uses it
# ("lifetime": "build": container image tars, Windows update packages,
# every builder's windowsPE folder, the cloudbase-init MSI and conf pairs
# step 03 consumes); the emitted scripts remove a build-only file once its
# step used it, and `winbuild verify OUTDIR --node DRIVE` holds an image's
# system drive to the manifest: kept files present and unchanged,
# build-only files absent. The engine tier runs the combined case (updates,
# a container image and OpenSSH in one image) and checks both.
load helpers
load ../lib/servers
load ../lib/driver_isos
load ../lib/authenticode
load ../lib/updates
load ../lib/openssh
load stage_fixtures

export PATH="$PATH:$HOME/.dotnet/tools"

setup() {
	fixture_setup
}

O() { echo "$WORK/out/$NAME"; }

# lifetimes OUTDIR: "<lifetime> <tree_path>" per manifest file, sorted
lifetimes() {
	python3 - "$1/manifest.json" <<-'PY'
	import json, sys
	for f in json.load(open(sys.argv[1]))["files"]:
	    print(f.get("lifetime"), f["tree_path"])
	PY
}

@test "manifest: every file says whether the node keeps it; the cloudbase-init MSI and conf pairs are build-only, binaries kept" {
	wb build "$RECIPE" -O fixtures.yaml --builder qemu --no-progress
	assert_status 0
	lifetimes "$(O)" >got
	# every entry has one of the two values
	! grep -v '^node \|^build ' got || false
	grep -qx 'node k/kubelet.exe' got
	grep -qx 'node Program Files/containerd/containerd.exe' got
	grep '^build ' got | cut -d' ' -f2- >build
	# step 03 installs the MSI and lays its provider's conf pair; nothing else
	grep -q '^ProgramData/winbuild/installers/.*\.msi$' build
	grep -q '^ProgramData/winbuild/cloudbase-init/nocloud/cloudbase-init.conf$' build
	! grep -v '^ProgramData/winbuild/installers/\|^ProgramData/winbuild/cloudbase-init/' build || false
	# the SBOM says the same of each file (property winbuild:lifetime)
	python3 - "$(O)/manifest.json" "$(O)/sbom.cdx.json" <<-'PY'
	import json, sys
	m = json.load(open(sys.argv[1]))
	s = json.load(open(sys.argv[2]))
	want = {f["path"]: f["lifetime"] for f in m["files"]}
	got = {}
	def walk(cs):
	    for c in cs:
	        props = {p["name"]: p["value"] for p in c.get("properties", [])}
	        if c.get("type") == "file" and "winbuild:tree_path" in props:
	            got[c["name"]] = props.get("winbuild:lifetime")
	        walk(c.get("components", []))
	walk(s.get("components", []))
	assert got == want, sorted(set(got.items()) ^ set(want.items()))[:6]
	PY
}

@test "manifest: a builder's windowsPE folder is build-only (Windows Setup reads it from the CD)" {
	need_dep command -v xorriso -- "xorriso not installed"
	mkdir www
	iso=$(virtio_iso www)
	start_nginx "$WORK/www"
	virtio_recipe "http://127.0.0.1:$NGINX_PORT/virtio-win.iso" "$(sha256sum "$iso" | cut -d' ' -f1)"
	wb stage img.yaml -O fixture.yaml --no-progress --set images.pause.enabled=false
	assert_status 0
	lifetimes out/t >got
	n=$(grep -c '^build ProgramData/winbuild/winpe/qemu/\$WinPEDriver\$/' got)
	[ "$n" -eq 9 ]
	! grep -q '^node ProgramData/winbuild/winpe/' got || false
}

# node_drive OUTDIR DRIVE: DRIVE laid out as a built image's system drive:
# the tree without its build-only files, manifest.json where step 02 puts it
node_drive() {
	cp -R "$1/tree" "$2"
	python3 - "$1/manifest.json" "$2" <<-'PY'
	import json, os, sys
	for f in json.load(open(sys.argv[1]))["files"]:
	    if f["lifetime"] == "build":
	        os.unlink(os.path.join(sys.argv[2], f["tree_path"]))
	PY
	cp "$1/manifest.json" "$2/ProgramData/winbuild/manifest.json"
}

@test "verify --node: build-only files absent is a clean image; a kept file missing, changed, or a build-only file left is not" {
	wb build "$RECIPE" -O fixtures.yaml --builder qemu --no-progress
	assert_status 0
	node_drive "$(O)" "$WORK/C"
	wb verify "$(O)" --node "$WORK/C"
	assert_status 0
	assert_output_has "absent    C:\\ProgramData\\winbuild\\cloudbase-init\\nocloud\\cloudbase-init.conf  (build-only)"
	assert_output_has "match manifest.json"
	wb verify "$(O)" --node "$WORK/C" --json
	assert_status 0
	python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["mode"] == "node" and d["problems"] == [], d
assert any(p.endswith("cloudbase-init.conf") for p in d["build_only_absent"]), d' <<<"$output"
	# a kept file missing is still an error
	mv "$WORK/C/k/kubelet.exe" "$WORK/kubelet.exe"
	wb verify "$(O)" --node "$WORK/C"
	assert_status 1
	assert_output_has "missing   C:\\k\\kubelet.exe"
	mv "$WORK/kubelet.exe" "$WORK/C/k/kubelet.exe"
	flip_byte "$WORK/C/k/kubelet.exe" 100
	wb verify "$(O)" --node "$WORK/C"
	assert_status 1
	assert_output_has "modified  C:\\k\\kubelet.exe"
	cp "$(O)/tree/k/kubelet.exe" "$WORK/C/k/kubelet.exe"
	# a build-only file the build left on the node
	cp "$(O)/tree/ProgramData/winbuild/cloudbase-init/nocloud/cloudbase-init.conf" \
		"$WORK/C/ProgramData/winbuild/cloudbase-init/nocloud/cloudbase-init.conf"
	wb verify "$(O)" --node "$WORK/C"
	assert_status 1
	assert_output_has "leftover  C:\\ProgramData\\winbuild\\cloudbase-init\\nocloud\\cloudbase-init.conf"
	assert_output_has "1 build-only left"
	# the node's manifest must be the build's
	rm "$WORK/C/ProgramData/winbuild/cloudbase-init/nocloud/cloudbase-init.conf"
	printf ' ' >>"$WORK/C/ProgramData/winbuild/manifest.json"
	wb verify "$(O)" --node "$WORK/C"
	assert_status 1
	assert_output_has "modified  C:\\ProgramData\\winbuild\\manifest.json"
	# the tree check still wants every file, build-only ones included
	rm "$(O)/tree/ProgramData/winbuild/cloudbase-init/nocloud/cloudbase-init.conf"
	wb verify "$(O)"
	assert_status 1
	assert_output_has "missing   tree/ProgramData/winbuild/cloudbase-init/nocloud/cloudbase-init.conf"
}

# The engine tier's combined case: the shipped 2025 image with two Windows
# updates, the pause image and the OpenSSH server, one builder (qemu), two
# passes. No service of the image is registered before the last update's
# restart, none is started by a restart, and after the build every
# build-only file is gone from the simulated C: while every kept one is in
# place (`winbuild verify --node`).
@test "engine tier: updates + container image + OpenSSH: no service before the last update restart; build-only payload gone, kept files in place" {
	need_pwsh || return 1
	[ -d "$WB_SRC/tests/win/node_modules/@cdktf/hcl2json" ] || skip "tests/win/node_modules missing (make deps)"
	export FX="$BATS_TEST_TMPDIR/fx"
	(upd_make_fixtures "$FX") >"$WORK/fixtures.log" 2>&1 || { cat "$WORK/fixtures.log"; return 1; }
	# shellcheck disable=SC1091
	source "$FX/upd.env"
	mkdir -p "$WORK/www/updates"
	cp -R "$FX/www/." "$WORK/www/"
	# OpenSSH's release layout, signed with Microsoft's subject under the
	# updates' test CA
	(ossh_ms_cert && ossh_zip "$WORK/www/OpenSSH-Win64.zip" ms) >>"$WORK/fixtures.log" 2>&1 ||
		{ cat "$WORK/fixtures.log"; return 1; }
	{
		upd_tier_override
		printf 'replace:\n  openssh:\n    url: @HTTP@/good/OpenSSH-Win64.zip\n'
		printf '    verify: {sha256: %s}\n' "$(sha256sum "$WORK/www/OpenSSH-Win64.zip" | cut -d' ' -f1)"
		printf 'components:\n  openssh:\n    enabled: true\n    authenticode: {roots: %s}\n' "$FX/ca.pem"
	} >"$WORK/extra.yaml"
	printf '%s\n' '{"KB5043080": {"exit": [3010], "build": "26100.1742"}, "KB5050009": {"exit": [3010], "build": "26100.2894"}}' >"$WORK/dism.json"
	WINTIER_PAUSE=1 WINTIER_MANAGERS=sc WINTIER_BUILDERS=qemu WINTIER_WWW="$WORK/www" \
		WINTIER_OVERRIDE="$WORK/extra.yaml" WBSIM_DISM_SCRIPT="$WORK/dism.json" \
		run bash "$WB_SRC/tests/win/run" -p 2 -w "$WORK/tier" 2025
	echo "$output"
	assert_status 0
	assert_output_has "1 passed, 0 failed"
	out="$WORK/tier/2025-sc/out/windows-2025-containerd"
	sim="$WORK/tier/2025-sc/sim/qemu"
	# the case holds what it claims to: a tar, two updates, sshd
	lifetimes "$out" >got
	grep -q '^build ProgramData/winbuild/images/pause.tar$' got
	[ "$(grep -c '^build ProgramData/winbuild/updates/' got)" -eq 2 ]
	grep -q '^node Program Files/OpenSSH/sshd.exe$' got
	# the order of the template's provisioners and the machine's own log
	python3 - "$sim" <<-'PY'
	import json, os, sys
	sim = sys.argv[1]
	st = json.load(open(os.path.join(sim, "pass1.json")))["state"]
	dism = st["package_log"]
	assert [x["kb"] for x in dism] == ["KB5043080", "KB5050009"], dism
	last_update_restart = dism[-1]["restarts"] + 1
	assert st["restarts"] >= last_update_restart, st["restarts"]
	for r in st["restart_starts"]:
	    assert r["services"] == [], r
	regs = {r["name"].lower(): r["restarts"] for r in st["service_registrations"]}
	for name in ("sshd", "kubelet", "containerd"):
	    assert regs[name] >= last_update_restart, (name, regs[name], last_update_restart)
	PY
	# build-only payload gone, kept files in place, on the simulated C:
	wb verify "$out" --node "$sim/C"
	echo "$output"
	assert_status 0
	assert_output_has "absent    C:\\ProgramData\\winbuild\\images\\pause.tar  (build-only)"
	assert_output_has "absent    C:\\ProgramData\\winbuild\\updates\\"
	[ ! -e "$sim/C/ProgramData/winbuild/images" ]
	[ ! -e "$sim/C/ProgramData/winbuild/updates" ]
}
