#!/usr/bin/env bats
# winbuild stage: the staged tree, generated files, manifest, hostile
# archives, determinism, kill safety, verified reads.
load helpers
load ../lib/servers
load stage_fixtures

setup() {
	common_setup
	fixture_override >"$WORK/fixtures.yaml"
}

M() { echo "$WORK/out/$NAME/manifest.json"; }
py() { python3 -c "$@"; }

# ---- the shipped recipe against fixtures shaped like upstream ------------

@test "staging windows-2022-containerd puts every file at its Windows path" {
	stage_shipped
	assert_status 0
	(cd "$(T)" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$WORK/files"
	cat >"$WORK/expected" <<-'LIST'
	Program Files/containerd/config.toml
	Program Files/containerd/containerd-shim-runhcs-v1.exe
	Program Files/containerd/containerd-stress.exe
	Program Files/containerd/containerd.exe
	Program Files/containerd/ctr.exe
	ProgramData/winbuild/cloudbase-init/aws/cloudbase-init-unattend.conf
	ProgramData/winbuild/cloudbase-init/aws/cloudbase-init.conf
	ProgramData/winbuild/cloudbase-init/azure/cloudbase-init-unattend.conf
	ProgramData/winbuild/cloudbase-init/azure/cloudbase-init.conf
	ProgramData/winbuild/cloudbase-init/nocloud/cloudbase-init-unattend.conf
	ProgramData/winbuild/cloudbase-init/nocloud/cloudbase-init.conf
	ProgramData/winbuild/cloudbase-init/vsphere/cloudbase-init-unattend.conf
	ProgramData/winbuild/cloudbase-init/vsphere/cloudbase-init.conf
	ProgramData/winbuild/installers/CloudbaseInitSetup_x64.msi
	k/StartKubelet.ps1
	k/crictl.exe
	k/kube-log-runner.exe
	k/kube-proxy.exe
	k/kubeadm.exe
	k/kubectl.exe
	k/kubelet.exe
	opt/cni/bin/host-local.exe
	opt/cni/bin/nat.exe
	opt/cni/bin/sdnbridge.exe
	opt/cni/bin/sdnoverlay.exe
	opt/cni/bin/win-bridge.exe
	opt/cni/bin/win-overlay.exe
	LIST
	diff -u "$WORK/expected" "$WORK/files"
	for d in var/lib/kubelet var/log/kubelet etc/kubernetes/manifests etc/kubernetes/pki \
		etc/cni/net.d ProgramData/containerd/root; do
		[ -d "$(T)/$d" ]
	done
	# the bytes are the fixtures' bytes
	cmp "$(T)/k/kubelet.exe" "$WWW/good/kubelet.exe"
	cmp "$(T)/ProgramData/winbuild/installers/CloudbaseInitSetup_x64.msi" \
		"$WWW/good/CloudbaseInitSetup_1_1_6_x64.msi"
	# nothing left beside the tree but the manifest and SBOM (and the lock and stamp)
	[ -z "$(ls -A "$WORK/out/$NAME" | grep -v -e '^tree$' -e '^manifest.json$' -e '^sbom.cdx.json$' -e '^.stage.lock$' -e '^.stage-stamp$')" ]
}

@test "manifest.json lists every file with Windows path, size, sha256, artifact, component" {
	stage_shipped
	assert_status 0
	py '
import json, hashlib, os, sys
t, m = sys.argv[1], json.load(open(sys.argv[2]))
assert list(m) == ["schema","image","windows_version","source_date_epoch","artifacts","files","directories"], list(m)
assert m["schema"] == 1 and m["image"] == "windows-2022-containerd" and m["windows_version"] == "2022"
names = [a["name"] for a in m["artifacts"]]
assert names == sorted(names) and len(names) == 10, names
paths = [f["tree_path"] for f in m["files"]]
assert paths == sorted(paths)
on_disk = sorted(os.path.relpath(os.path.join(d, f), t) for d, _, fs in os.walk(t) for f in fs)
assert on_disk == paths, (on_disk, paths)
for f in m["files"]:
    data = open(os.path.join(t, f["tree_path"]), "rb").read()
    assert f["sha256"] == hashlib.sha256(data).hexdigest() and f["size"] == len(data)
    assert f["path"] == "C:\\" + f["tree_path"].replace("/", "\\")
    assert f["generated"] == (f["artifact"] is None)
by = {f["tree_path"]: f for f in m["files"]}
assert by["k/kubelet.exe"]["artifact"] == "kubelet" and by["k/kubelet.exe"]["component"] == "kubernetes"
assert by["opt/cni/bin/nat.exe"]["artifact"] == "windows-cni"
c = by["Program Files/containerd/config.toml"]
assert c["generated"] and c["artifact"] is None and c["component"] == "containerd"
assert "C:\\var\\lib\\kubelet" in m["directories"] and m["directories"] == sorted(m["directories"])
' "$(T)" "$(M)"
	[ "$(tail -c1 "$(M)" | od -An -c | tr -d ' ')" = '\n' ]
}

# ---- generated files ----------------------------------------------------

toml_check() {
	py '
import sys, tomllib
d = tomllib.load(open(sys.argv[1], "rb")); v = int(sys.argv[2])
assert d["version"] == v, d["version"]
assert d["grpc"]["address"] == r"\\.\pipe\containerd-containerd", d["grpc"]["address"]
p = d["plugins"]
if v == 2:
    cri = p["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == sys.argv[3]
    assert cri["cni"]["bin_dir"] == "C:/opt/cni/bin" and cri["cni"]["conf_dir"] == "C:/etc/cni/net.d"
else:
    assert "io.containerd.grpc.v1.cri" not in p
    assert p["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == sys.argv[3]
    cni = p["io.containerd.cri.v1.runtime"]["cni"]
    assert cni["bin_dirs"] == ["C:/opt/cni/bin"] and cni["conf_dir"] == "C:/etc/cni/net.d"
' "$(T)/Program Files/containerd/config.toml" "$@"
}

@test "config.toml is version 3 for containerd 2.x (tomllib)" {
	stage_shipped
	assert_status 0
	toml_check 3 registry.k8s.io/pause:3.10
}

@test "config.toml is version 2 for containerd 1.7.x, with the recipe's pause image (tomllib)" {
	fixture_override containerd-1.7.28-windows-amd64.tar.gz >"$WORK/fixtures.yaml"
	stage_shipped --set components.containerd.version=1.7.28 \
		--set node.pause_image=registry.corp.example/pause:3.9
	assert_status 0
	toml_check 2 registry.corp.example/pause:3.9
}

@test "a pause image that could break out of the TOML string is refused (exit 2)" {
	stage_shipped --set 'node.pause_image=x"y'
	assert_status 2
	assert_output_has "node.pause_image"
	[ ! -e "$(T)" ]
}

@test "cloudbase-init conf files parse with configparser and carry each provider's metadata service" {
	for pv in azure:azure-arm:azureservice.AzureService aws:amazon-ebs:ec2service.EC2Service \
		vsphere:vsphere-iso:vmwareguestinfoservice.VMwareGuestInfoService \
		nocloud:hyperv-iso:nocloudservice.NoCloudConfigDriveService \
		openstack:qemu:httpservice.HttpService nutanix:qemu:configdrive.ConfigDriveService \
		generic-http:qemu:httpservice.HttpService; do
		prov=${pv%%:*} rest=${pv#*:}
		stage_shipped --set "cloudbase_init.provider=$prov" --set "packer.builders=[${rest%%:*}]"
		assert_status 0
		for f in cloudbase-init.conf cloudbase-init-unattend.conf; do
			py '
import configparser, sys
c = configparser.ConfigParser(interpolation=None)
c.read(sys.argv[1])
d = c["DEFAULT"]
ms = d["metadata_services"].split(",")
assert "cloudbaseinit.metadata.services." + sys.argv[2] in ms, ms
assert d["username"] and d["groups"] == "Administrators"
# Azure: COM2, COM1 is its serial console (issue 27, D26)
assert d["logging_serial_port_settings"].startswith("COM2" if sys.argv[2].startswith("azureservice.") else "COM1"), d["logging_serial_port_settings"]
assert all(p.startswith("cloudbaseinit.plugins.") for p in d["plugins"].split(","))
' "$(T)/ProgramData/winbuild/cloudbase-init/$prov/$f" "${rest#*:}"
		done
	done
}

@test "the azure provider adds the Azure guest agent plugin" {
	stage_shipped
	assert_status 0
	grep -q '^plugins=.*AzureGuestAgentPlugin' "$(T)/ProgramData/winbuild/cloudbase-init/azure/cloudbase-init.conf"
}

@test "a CNI conflist is written for nat and parses as JSON" {
	for cni in nat; do
		stage_shipped --set "node.cni=$cni"
		assert_status 0
		f="$(T)/etc/cni/net.d/10-$cni.conflist"
		py '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["name"] and d["cniVersion"] and d["plugins"][0]["type"] == sys.argv[2]
' "$f" "$cni"
		[ "$(ls "$(T)/etc/cni/net.d" | wc -l)" -eq 1 ]
	done
}

@test "no conflist when node.cni is none" {
	stage_shipped
	assert_status 0
	[ -z "$(ls -A "$(T)/etc/cni/net.d")" ]
}

@test "service_manager nssm: StartKubelet.ps1 reads kubeadm-flags.env, nssm.exe staged" {
	replace_entry nssm nssm-2.24.zip >>"$WORK/fixtures.yaml"
	stage_shipped --set node.service_manager=nssm --set components.nssm.enabled=true
	assert_status 0
	grep -q 'kubeadm-flags.env' "$(T)/k/StartKubelet.ps1"
	grep -q 'kubelet.exe' "$(T)/k/StartKubelet.ps1"
	[ -f "$(T)/Program Files/nssm/win64/nssm.exe" ]
	[ ! -e "$(T)/Program Files/nssm/win32" ]
	! grep -q -- '--windows-service' "$(T)/k/StartKubelet.ps1" || false
}

@test "service_manager sc: the same start script reads kubeadm-flags.env, kubelet answers the service manager" {
	stage_shipped
	assert_status 0
	grep -q 'kubeadm-flags.env' "$(T)/k/StartKubelet.ps1"
	grep -qF -- "\$KubeletArgs = @(@('--windows-service', '--cert-dir=" "$(T)/k/StartKubelet.ps1"
}

@test "an unknown placeholder in a template is an error (exit 2) and no tree is swapped in" {
	cp -r "$WB_SRC/recipes/templates" "$WORK/tpl"
	echo 'oops = {{toml:no_such_value}}' >>"$WORK/tpl/containerd/config.v3.toml"
	WINBUILD_TEMPLATES="$WORK/tpl" stage_shipped
	assert_status 2
	assert_output_has "unknown placeholder 'no_such_value'"
	assert_output_has "config.v3.toml"
	[ ! -e "$(T)" ]
	[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
	# no tree, so no lock file left behind either
	[ ! -e "$WORK/out/$NAME/.stage.lock" ]
	# once a tree exists its lock file stays beside it (the proof a stage
	# made it), also through a failed re-stage
	stage_shipped
	assert_status 0
	[ -f "$WORK/out/$NAME/.stage.lock" ]
	WINBUILD_TEMPLATES="$WORK/tpl" stage_shipped
	assert_status 2
	[ -f "$WORK/out/$NAME/.stage.lock" ]
	[ -d "$(T)" ]
	stage_shipped
	assert_status 0
}

# ---- determinism ----------------------------------------------------------

@test "two stages of the same inputs give identical trees (diff -r), modes, mtimes and manifests" {
	stage_shipped -o "$WORK/a"
	assert_status 0
	stage_shipped -o "$WORK/b" -j 1
	assert_status 0
	diff -r "$WORK/a/$NAME/tree" "$WORK/b/$NAME/tree"
	cmp "$WORK/a/$NAME/manifest.json" "$WORK/b/$NAME/manifest.json"
	l() { (cd "$1" && find . -printf '%p %M %T@ %s\n' | LC_ALL=C sort); }
	[ "$(l "$WORK/a/$NAME/tree")" = "$(l "$WORK/b/$NAME/tree")" ]
	# the default epoch is 1980-01-01, and no other time appears
	[ -z "$(find "$WORK/a/$NAME/tree" ! -newermt '1980-01-01 00:00:01 UTC' -newermt '1979-12-31 23:59:59 UTC' -prune -o -print)" ]
	grep -q '"source_date_epoch": 315532800' "$WORK/a/$NAME/manifest.json"
}

@test "SOURCE_DATE_EPOCH sets every mtime; modes are normalised" {
	SOURCE_DATE_EPOCH=1700000000 stage_shipped
	assert_status 0
	[ -z "$(find "$(T)" -printf '%T@\n' | grep -v '^1700000000')" ]
	grep -q '"source_date_epoch": 1700000000' "$(M)"
	[ "$(stat -c %a "$(T)/k/kubelet.exe")" = 755 ]
	[ "$(stat -c %a "$(T)/k/StartKubelet.ps1")" = 755 ]
	[ "$(stat -c %a "$(T)/Program Files/containerd/config.toml")" = 644 ]
	[ "$(stat -c %a "$(T)/ProgramData/winbuild/installers/CloudbaseInitSetup_x64.msi")" = 644 ]
	[ -z "$(find "$(T)" -type d ! -perm 755)" ]
	SOURCE_DATE_EPOCH=soon stage_shipped
	assert_status 2
}

# ---- verified reads -------------------------------------------------------

@test "a cache entry corrupted after fetch is caught while staging: exit 1, quarantined, old tree kept" {
	stage_shipped
	assert_status 0
	cp -a "$(T)" "$WORK/old"
	sha=$(sha_www good/kubelet.exe)
	entry="$WINBUILD_CACHE/sha256/${sha:0:2}/$sha"
	flip="printf X | dd of='$entry' bs=1 seek=100 conv=notrunc 2>/dev/null"
	# another epoch: no artifact of the previous tree is reused, so every
	# one is read from the cache
	SOURCE_DATE_EPOCH=1700000000 WINBUILD_TEST_RUN_AT="begin:$flip" \
		stage_shipped --set node.cni=nat
	assert_status 1
	assert_output_has "artifact 'kubelet'"
	assert_output_has "quarantined"
	[ ! -e "$entry" ]
	ls "$WINBUILD_CACHE/quarantine/$sha".*
	diff -r "$WORK/old" "$(T)"
	[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
	# the next stage fetches it again and succeeds
	stage_shipped --set node.cni=nat
	assert_status 0
	cmp "$(T)/k/kubelet.exe" "$WWW/good/kubelet.exe"
}

@test "a corrupted archive entry is caught by the one-pass hash during extraction (exit 1)" {
	stage_shipped
	assert_status 0
	sha=$(sha_www good/containerd-2.1.4-windows-amd64.tar.gz)
	entry="$WINBUILD_CACHE/sha256/${sha:0:2}/$sha"
	# another epoch, so containerd is unpacked again rather than reused
	SOURCE_DATE_EPOCH=1700000000 \
	WINBUILD_TEST_RUN_AT="begin:printf X | dd of='$entry' bs=1 seek=200 conv=notrunc 2>/dev/null" \
		stage_shipped
	assert_status 1
	assert_output_has "artifact 'containerd'"
	ls "$WINBUILD_CACHE/quarantine/$sha".*
}

@test "stage --offline uses the cache only" {
	stage_shipped
	assert_status 0
	stage_shipped --offline -o "$WORK/off"
	assert_status 0
	diff -r "$(T)" "$WORK/off/$NAME/tree"
}

# ---- atomic swap and kill safety ------------------------------------------

@test "a re-stage swaps the new tree in and leaves no temp dir" {
	stage_shipped
	assert_status 0
	stage_shipped --set node.cni=nat
	assert_status 0
	[ -f "$(T)/etc/cni/net.d/10-nat.conflist" ]
	[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
}

@test "SIGKILL at every point of a stage leaves the old tree, or the complete new one; the next run succeeds" {
	stage_shipped --set node.cni=nat -o "$WORK/ref"
	assert_status 0
	stage_shipped
	assert_status 0
	cp -a "$(T)" "$WORK/old"
	for point in begin artifact:1 artifact:4 artifact:10 generated before-swap after-swap done; do
		WINBUILD_TEST_KILL_AT=$point stage_shipped --set node.cni=nat
		[ "$status" -eq 137 ] || { echo "kill at $point: status $status: $output"; false; }
		if ! diff -r "$WORK/old" "$(T)" >/dev/null; then
			diff -r "$WORK/ref/$NAME/tree" "$(T)"
		fi
		case $point in
		after-swap|done) diff -r "$WORK/ref/$NAME/tree" "$(T)" ;;
		*) diff -r "$WORK/old" "$(T)" ;;
		esac
		stage_shipped
		assert_status 0
		diff -r "$WORK/old" "$(T)"
		[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
	done
}

@test "SIGKILL before the first tree exists leaves no tree at the final path" {
	for point in artifact:3 before-swap; do
		WINBUILD_TEST_KILL_AT=$point stage_shipped
		[ "$status" -eq 137 ]
		[ ! -e "$(T)" ]
		[ ! -e "$(M)" ]
		[ -n "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
	done
	stage_shipped
	assert_status 0
	[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
}

@test "SIGKILL after random delays never leaves a partial tree" {
	stage_shipped
	assert_status 0
	cp -a "$(T)" "$WORK/old"
	stage_shipped --set node.cni=nat -o "$WORK/ref"
	assert_status 0
	for ms in 5 10 20 30 40 60 80 120; do
		timeout -s KILL "0.$(printf '%03d' "$ms")" "$WINBUILD" stage "$RECIPE" \
			-O "$WORK/fixtures.yaml" --no-progress --set node.cni=nat -q 2>/dev/null || true
		diff -r "$WORK/old" "$(T)" >/dev/null || diff -r "$WORK/ref/$NAME/tree" "$(T)" >/dev/null
		stage_shipped
		assert_status 0
	done
}

# ---- hostile archives (exit 4, entry named, nothing outside the temp dir) --

# refused FILE ENTRY [UNPACK_YAML]: staging hostile/FILE fails with exit 4,
# names the entry, leaves no tree, no temp dir and nothing outside
refused() {
	one_archive "$1" "${3:-}"
	touch "$BATS_TEST_TMPDIR/.before"
	wb stage img.yaml --no-progress
	assert_status 4
	assert_output_has "$2"
	assert_output_has "artifact 'hostile'"
	[ ! -e "$WORK/out/t/tree" ]
	[ ! -e "$WORK/out/t/manifest.json" ]
	[ -z "$(ls -d "$WORK/out/t"/.tree.tmp.* 2>/dev/null)" ]
	[ ! -e "$WORK/out/t/.stage.lock" ]
	# nothing new anywhere in the test dir but the cache and out/t itself
	[ -z "$(find "$BATS_TEST_TMPDIR" ! -type d -newer "$BATS_TEST_TMPDIR/.before" \
		! -path "$WINBUILD_CACHE*" ! -path "$WORK/out*" -print)" ] || false
	# nor outside it, at the exact places an escape would reach: the
	# absolute name the fixture carries, and evil* beside each folder
	# above out/t that ../ climbs to; only files made since .before count,
	# so another program's evil* in /tmp cannot fail this test
	local d="$WORK/out/t" up
	for up in 1 2 3 4 5 6; do
		d=$(dirname "$d")
		[ -z "$(find "$d" -maxdepth 1 -name 'evil*' -newer "$BATS_TEST_TMPDIR/.before" 2>/dev/null)" ]
	done
	[ ! /tmp/evil-absolute.exe -nt "$BATS_TEST_TMPDIR/.before" ]
}

@test "hostile: ../ entry" { refused dotdot.tgz "../evil-dotdot.exe"; }
@test "hostile: absolute path" { refused absolute.tgz "/tmp/evil-absolute.exe"; }
@test "hostile: symlink escaping the destination" { refused symlink.tgz "evil-link"; }
@test "hostile: hardlink escaping the destination" { refused hardlink.tgz "evil-hardlink"; }
@test "hostile: symlink, then a file through it" { refused symdir.tgz "'d'"; }
@test "hostile: device node" { refused device.tgz "evil-dev"; }
@test "hostile: FIFO" { refused fifo.tgz "evil-fifo"; }
@test "hostile: bomb by size (limits.max_bytes)" {
	refused bomb-size.tgz "big.bin" "limits: {max_bytes: 100000, max_ratio: 100000}"
}
@test "hostile: bomb by entry count (limits.max_entries)" {
	refused bomb-entries.tgz "f0" "limits: {max_entries: 20}"
}
@test "hostile: bomb by compression ratio (default limit)" { refused bomb-ratio.tgz "zeros.bin"; }
@test "hostile: name Windows cannot hold (|)" { refused invalid-name.tgz "evil|name.exe"; }
@test "hostile: reserved device name in a zip (CON.exe)" { refused reserved-name.zip "CON.exe"; }
@test "hostile: names that differ only in case" { refused case.tgz "foo.exe"; }
@test "hostile: truncated archive" { refused truncated.tgz "truncated"; }
@test "hostile: ../ entry in a zip" { refused zip-dotdot.zip "../evil-zip.exe"; }
@test "hostile: symlink in a zip" { refused zip-symlink.zip "evil-ziplink"; }

@test "two artifacts writing the same path are refused (exit 4) naming both" {
	two_archives one-a.tgz one-b.tgz
	wb stage img.yaml --no-progress
	assert_status 4
	assert_output_has "artifact 'one-a'"
	assert_output_has "artifact 'one-b'"
	assert_output_has 'C:\h\tool.exe'
	[ ! -e "$WORK/out/t/tree" ]
}

@test "two artifacts whose paths differ only in case are refused (exit 4) naming both" {
	two_archives one-a.tgz case-b.tgz
	wb stage img.yaml --no-progress
	assert_status 4
	assert_output_has "artifact 'one-a'"
	assert_output_has "artifact 'case-b'"
	assert_output_has "only in case"
	[ ! -e "$WORK/out/t/tree" ]
}

@test "a hostile archive leaves the previous tree untouched" {
	two_archives one-a.tgz
	wb stage img.yaml --no-progress
	assert_status 0
	cp -a "$WORK/out/t/tree" "$WORK/old"
	one_archive dotdot.tgz
	wb stage img.yaml --no-progress
	assert_status 4
	diff -r "$WORK/old" "$WORK/out/t/tree"
}

# ---- doing nothing when nothing changed (stage/stamp.h) --------------------

requests() { wc -l <"$NGINX_LOG"; }

@test "an unchanged re-stage does nothing: no request, no new tree" {
	stage_shipped
	assert_status 0
	[ -f "$WORK/out/$NAME/.stage-stamp" ]
	ino=$(stat -c %i "$(T)/k/kubelet.exe")
	before=$(requests)
	stage_shipped
	assert_status 0
	assert_output_has "up to date"
	[ "$(requests)" = "$before" ]
	[ "$(stat -c %i "$(T)/k/kubelet.exe")" = "$ino" ]
}

@test "--locked: an unchanged re-stage is up to date too; an edited lock pin stages again" {
	wb lock "$RECIPE" -O "$WORK/fixtures.yaml" --no-progress
	assert_status 0
	stage_shipped --locked
	assert_status 0
	assert_output_lacks "up to date"
	before=$(requests)
	stage_shipped --locked
	assert_status 0
	assert_output_has "up to date"
	[ "$(requests)" = "$before" ]
	# the lock pins are in the stamp: another pin is another input
	lock=$(ls "$WORK"/*.lock)
	python3 - "$lock" <<-'PY'
	import json, sys
	l = json.load(open(sys.argv[1]))
	l["artifacts"]["kubectl"]["sha256"] = "0" * 64
	json.dump(l, open(sys.argv[1], "w"))
	PY
	stage_shipped --locked
	assert_status 1
	assert_output_lacks "up to date"
}

@test "a changed --set stages again" {
	stage_shipped
	assert_status 0
	stage_shipped --set node.cni=nat
	assert_status 0
	assert_output_has "staged"
	[ -f "$(T)/etc/cni/net.d/10-nat.conflist" ]
}

@test "a touched, edited, added or removed tree file stages again and restores the tree" {
	stage_shipped
	assert_status 0
	cp -a "$(T)" "$WORK/good"
	touch "$(T)/k/kubelet.exe"
	stage_shipped
	assert_output_has "staged"
	printf X | dd of="$(T)/k/kubeadm.exe" bs=1 seek=10 conv=notrunc 2>/dev/null
	stage_shipped
	assert_output_has "staged"
	diff -r "$WORK/good" "$(T)"
	echo extra >"$(T)/k/extra.txt"
	stage_shipped
	assert_output_has "staged"
	[ ! -e "$(T)/k/extra.txt" ]
	rm "$(T)/k/kubectl.exe"
	stage_shipped
	assert_output_has "staged"
	diff -r "$WORK/good" "$(T)"
	stage_shipped
	assert_output_has "up to date"
}

@test "a changed override file or manifest stages again" {
	stage_shipped
	assert_status 0
	echo "# a comment" >>"$WORK/fixtures.yaml"
	stage_shipped
	assert_output_has "staged"
	echo >>"$WORK/out/$NAME/manifest.json"
	stage_shipped
	assert_output_has "staged"
}

@test "a stage that fails removes the stamp; the next one stages" {
	stage_shipped
	assert_status 0
	WINBUILD_TEST_KILL_AT=before-swap stage_shipped
	[ "$status" -eq 137 ]
	[ ! -e "$WORK/out/$NAME/.stage-stamp" ]
	stage_shipped
	assert_status 0
	assert_output_has "staged"
	[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
}

@test "a cache entry from an earlier run is hashed while staging (once): corruption is caught" {
	stage_shipped
	assert_status 0
	sha=$(sha256sum "$WWW/good/kubectl.exe" | cut -d' ' -f1)
	entry="$WINBUILD_CACHE/sha256/${sha:0:2}/$sha"
	chmod u+w "$entry"
	printf X | dd of="$entry" bs=1 seek=100 conv=notrunc 2>/dev/null
	# another epoch: nothing is reused from the previous tree
	SOURCE_DATE_EPOCH=1700000000 stage_shipped --set node.cni=nat
	assert_status 1
	assert_output_has "artifact 'kubectl'"
	ls "$WINBUILD_CACHE/quarantine/$sha".*
}
