#!/usr/bin/env bats
# Drivers in Windows Setup (issue 26 items D3, D18; docs/packer.md "Drivers
# in Setup"): each ISO builder's CD carries its own $WinPEDriver$ folder
# (lib/platform.c platform_winpe_dir) when the image holds drivers for it,
# and its source picks the paravirtual devices only then. Node facts over
# the emitted HCL, Debian's `packer validate` where 1.6.6 can judge.

load helpers
load ../lib/servers
load ../lib/driver_isos

setup() {
	common_setup
	packer_setup staged
	R="$WB_SRC/recipes/windows-2022-containerd.yaml"
	PK=out/windows-2022-containerd/packer
	HCL=$PK/windows-2022-containerd.pkr.hcl
}

teardown() { stop_servers; }

# packer_ok DIR: Debian's Packer 1.6.6 validates DIR and finds it fmt-clean
packer_ok() {
	need_dep command -v packer -- "packer not installed (make deps)"
	PKR_VAR_vsphere_password=s run packer validate "$1"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run packer fmt -check "$1"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

staged() {
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out windows-2022-containerd 2022 "$@"
}

# facts BUILDER...: for each, "<builder> <cd entries>|<disk>|<net>" from the HCL
facts() {
	python3 - "$HCL" "$@" <<-'PY'
		import re, sys
		src = open(sys.argv[1]).read()
		for b in sys.argv[2:]:
		    block = re.search(r'source "%s" "node" \{(.*?)\n\}' % b, src, re.S).group(1)
		    # each entry as written: "path" unquoted, abspath("path") kept whole
		    cd = [a or b for a, b in re.findall(r'(abspath\("[^"]*"\))|"([^"]*)"',
		                                        re.search(r'cd_files\s*=\s*\[(.*?)\]', block).group(1))]
		    key = {"qemu": ("disk_interface", "net_device"),
		           "vsphere-iso": ("disk_controller_type", "network_card"),
		           "hyperv-iso": (None, None)}[b]
		    dev = []
		    for k in key:
		        m = re.search(r'^\s*%s\s*=\s*(.*)$' % k, block, re.M) if k else None
		        dev.append(m.group(1).strip() if m else "-")
		    print("%s %s|%s|%s" % (b, " ".join(cd), dev[0], dev[1]))
	PY
}

@test "drivers: a builder's windowsPE drivers ride on its own CD root as \$WinPEDriver\$, no other builder's" {
	# hyperv-iso-x: a look-alike of hyperv-iso's folder, which is not its
	staged --winpe-qemu --winpe-vsphere-iso --winpe-hyperv-iso-x
	wb emit "$R" --builder qemu --builder vsphere-iso --builder hyperv-iso
	assert_status 0
	run facts qemu vsphere-iso hyperv-iso
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	echo "$output"
	tree='abspath("${path.root}/../tree/ProgramData/winbuild/winpe'
	ab='abspath("${path.root}/../tree") abspath("${path.root}/../manifest.json")'
	grep -qF "qemu \${path.root}/answer/bios/Autounattend.xml $ab $tree/qemu/\$WinPEDriver\$\")|\"virtio\"|\"virtio-net\"" <<<"$output"
	grep -qF "vsphere-iso \${path.root}/answer/uefi/Autounattend.xml $ab $tree/vsphere-iso/\$WinPEDriver\$\")|[\"pvscsi\"]|\"e1000e\"" <<<"$output"
	# hyperv-iso has no drivers staged: its CD is the plain one
	grep -qxF "hyperv-iso \${path.root}/answer/uefi/Autounattend.xml $ab|-|-" <<<"$output"
	# Packer's CD step puts a directory at the CD root under its own name
	# (step_create_cdrom.go): the folder exists where the list points
	for b in qemu vsphere-iso; do
		[ -f "out/windows-2022-containerd/tree/ProgramData/winbuild/winpe/$b/\$WinPEDriver\$/drv/drv.inf" ]
	done
	packer_ok "$PK"
}

@test "drivers: without staged drivers qemu and vsphere-iso use devices Setup has inbox drivers for" {
	staged
	wb emit "$R" --builder qemu --builder vsphere-iso
	assert_status 0
	run facts qemu vsphere-iso
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	echo "$output"
	grep -q '^qemu .*manifest.json")|"ide"|"e1000"$' <<<"$output"
	grep -q '^vsphere-iso .*manifest.json")|\["lsilogic-sas"\]|"e1000e"$' <<<"$output"
	! grep -q 'WinPEDriver' "$HCL" || false
	packer_ok "$PK"
}

# serve_iso MAKER: $iso made by MAKER (virtio_iso, tools_iso) in www/,
# served by nginx (needs xorriso)
serve_iso() {
	need_dep command -v xorriso -- "xorriso not installed"
	mkdir www
	iso=$("$1" www)
	start_nginx "$WORK/www"
}

@test "drivers: the shipped virtio-win component stages an ISO's drivers for the recipe's Windows into qemu's windowsPE folder, and qemu goes virtio" {
	serve_iso virtio_iso
	virtio_recipe "http://127.0.0.1:$NGINX_PORT/virtio-win.iso" "$(sha256sum "$iso" | cut -d' ' -f1)"
	wb stage img.yaml -O fixture.yaml --no-progress
	assert_status 0
	wp='out/t/tree/ProgramData/winbuild/winpe/qemu/$WinPEDriver$'
	(cd "$wp" && find . -type f | sort) >got
	for d in viostor vioscsi NetKVM; do
		l=$(tr A-Z a-z <<<"$d")
		for ext in cat inf sys; do echo "./$d/2k22/amd64/$l.$ext"; done
	done | sort >want
	diff want got
	grep -qx "viostor 2k22 amd64 sys" "$wp/viostor/2k22/amd64/viostor.sys"
	# the manifest records them, and emit puts the folder on qemu's CD
	grep -q 'ProgramData/winbuild/winpe/qemu/\$WinPEDriver\$/NetKVM/2k22/amd64/netkvm.inf' out/t/manifest.json
	wb emit img.yaml -O fixture.yaml --builder qemu
	assert_status 0
	HCL=out/t/packer/t.pkr.hcl
	run facts qemu
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	grep -qF 'abspath("${path.root}/../tree/ProgramData/winbuild/winpe/qemu/$WinPEDriver$")|"virtio"|"virtio-net"' <<<"$output"
	packer_ok out/t/packer
}

@test "drivers: virtio-win's ISO with another digest is refused (exit 1), no tree" {
	serve_iso virtio_iso
	virtio_recipe "http://127.0.0.1:$NGINX_PORT/virtio-win.iso" "$(printf '%064d' 0)"
	wb stage img.yaml -O fixture.yaml --no-progress
	assert_status 1
	assert_output_has "virtio-win"
	[ ! -e out/t/tree ]
}

@test "drivers: virtio-win without vars.virtio_win_os is a recipe error naming the variable" {
	virtio_recipe "http://127.0.0.1:1/virtio-win.iso" "$(printf '%064d' 0)"
	sed -i '/virtio_win_os/d' img.yaml
	wb plan img.yaml -O fixture.yaml
	assert_status 2
	assert_output_has "virtio_win_os"
}

@test "drivers: an ISO 9660 artifact is extracted under the same rules as tar and zip (symlink refused, format enforced)" {
	need_dep command -v xorriso -- "xorriso not installed"
	mkdir -p www src/viostor/2k22/amd64
	echo inf >src/viostor/2k22/amd64/viostor.inf
	ln -s /etc/passwd src/viostor/2k22/amd64/evil-link.sys
	xorriso -as mkisofs -r -J -V x -o www/virtio-win.iso src >/dev/null 2>&1
	start_nginx "$WORK/www"
	virtio_recipe "http://127.0.0.1:$NGINX_PORT/virtio-win.iso" "$(sha256sum www/virtio-win.iso | cut -d' ' -f1)"
	wb stage img.yaml -O fixture.yaml --no-progress
	assert_status 4
	assert_output_has "evil-link.sys"
	[ ! -e out/t/tree ]
	# a tarball where the component says iso is refused before extraction
	rm src/viostor/2k22/amd64/evil-link.sys
	tar -C src -czf www/virtio-win.iso .
	virtio_recipe "http://127.0.0.1:$NGINX_PORT/virtio-win.iso" "$(sha256sum www/virtio-win.iso | cut -d' ' -f1)"
	wb stage img.yaml -O fixture.yaml --no-progress
	assert_status 4
	assert_output_has "unpack.format is 'iso' but the file is a gzip stream"
}

@test "drivers: the shipped vmware-tools component puts pvscsi and Tools on the vsphere-iso CD only; tools.conf excludes HNS and CNI NICs; the answer file installs Tools" {
	serve_iso tools_iso
	sum=$(sha256sum "$iso" | cut -d' ' -f1)
	cat >img.yaml <<-EOF2
		kind: image
		name: t
		windows: {version: "2022", iso_sha256: $TEST_ISO_SHA256}
		components:
		  vmware-tools:
		    file: $WB_SRC/recipes/components/vmware-tools.yaml
		packer: {builders: [vsphere-iso, hyperv-iso]}
	EOF2
	cat >fixture.yaml <<-EOF2
		kind: override
		replace:
		  vmware-tools: {url: "http://127.0.0.1:$NGINX_PORT/VMware-tools.iso", verify: {sha256: $sum}}
		  pvscsi: {url: "http://127.0.0.1:$NGINX_PORT/VMware-tools.iso", verify: {sha256: $sum}}
	EOF2
	wb stage img.yaml -O fixture.yaml --no-progress
	assert_status 0
	t=out/t/tree/ProgramData
	(cd "$t/winbuild/winpe/vsphere-iso" && find . -type f | sort) >got
	printf '%s\n' './$WinPEDriver$/Program Files/VMware/VMware Tools/Drivers/pvscsi/Win10/amd64/pvscsi.cat' \
		'./$WinPEDriver$/Program Files/VMware/VMware Tools/Drivers/pvscsi/Win10/amd64/pvscsi.inf' \
		'./$WinPEDriver$/Program Files/VMware/VMware Tools/Drivers/pvscsi/Win10/amd64/pvscsi.sys' \
		./VMwareTools/setup64.exe >want
	diff want got
	grep -qx 'exclude-nics=vEthernet\*,antrea-\*,cali\*,cilium\*,lxc\*,ovs-system,flannel\*,veth\*,vxlan_sys_\*,genev_sys_\*,gre_sys_\*,stt_sys_\*,????????-??????' \
		"$t/VMware/VMware Tools/tools.conf"
	grep -qx '\[guestinfo\]' "$t/VMware/VMware Tools/tools.conf"
	wb emit img.yaml -O fixture.yaml
	assert_status 0
	HCL=out/t/packer/t.pkr.hcl
	run facts vsphere-iso hyperv-iso
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	echo "$output"
	w='abspath("${path.root}/../tree/ProgramData/winbuild/winpe/vsphere-iso'
	grep -qF "sbom.cdx.json\") $w/\$WinPEDriver\$\") $w/VMwareTools\")|[\"pvscsi\"]|\"vmxnet3\"" <<<"$output"
	grep -qxF 'hyperv-iso ${path.root}/answer/uefi/Autounattend.xml abspath("${path.root}/../tree") abspath("${path.root}/../manifest.json") abspath("${path.root}/../sbom.cdx.json")|-|-' <<<"$output"
	# the answer file: Tools from the CD's \VMwareTools, else the host's ISO,
	# after the WinRM commands
	python3 - out/t/packer/answer/uefi/Autounattend.xml <<-'PY'
		import sys, xml.etree.ElementTree as ET
		U = "{urn:schemas-microsoft-com:unattend}"
		cmds = {}
		for c in ET.parse(sys.argv[1]).getroot().iter(U + "SynchronousCommand"):
		    cmds[int(c.find(U + "Order").text)] = c.find(U + "CommandLine").text
		assert sorted(cmds) == list(range(1, 9)), sorted(cmds)
		assert r'%d:\VMwareTools\setup64.exe /s /v "/qn REBOOT=R"' in cmds[7], cmds[7]
		assert r'if not exist "C:\Program Files\VMware\VMware Tools\vmtoolsd.exe"' in cmds[8], cmds[8]
		assert r'%d:\setup64.exe /s /v "/qn REBOOT=R"' in cmds[8], cmds[8]
	PY
	packer_ok out/t/packer
}
