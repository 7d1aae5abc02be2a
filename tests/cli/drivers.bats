#!/usr/bin/env bats
# Drivers in Windows Setup (issue 26 items D3, D18; docs/packer.md "Drivers
# in Setup"): each ISO builder's CD carries its own $WinPEDriver$ folder
# (lib/platform.c platform_winpe_dir) when the image holds drivers for it,
# and its source picks the paravirtual devices only then. Node facts over
# the emitted HCL, Debian's `packer validate` where 1.6.6 can judge.

load helpers

setup() {
	common_setup
	export CHECKPOINT_DISABLE=1 PACKER_CACHE_DIR="$BATS_TEST_TMPDIR/packer_cache"
	export PACKER_CONFIG_DIR="$BATS_TEST_TMPDIR/packer_config" HOME="$BATS_TEST_TMPDIR"
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256"
	R="$WB_SRC/recipes/windows-2022-containerd.yaml"
	PK=out/windows-2022-containerd/packer
	HCL=$PK/windows-2022-containerd.pkr.hcl
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
		    cd = re.findall(r'"([^"]*)"', re.search(r'cd_files\s*=\s*\[(.*?)\]', block).group(1))
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
	tree='${path.root}/../tree/ProgramData/winbuild/winpe'
	grep -qF "qemu \${path.root}/answer/bios/Autounattend.xml \${path.root}/../tree \${path.root}/../manifest.json $tree/qemu/\$WinPEDriver\$|\"virtio\"|\"virtio-net\"" <<<"$output"
	grep -qF "vsphere-iso \${path.root}/answer/uefi/Autounattend.xml \${path.root}/../tree \${path.root}/../manifest.json $tree/vsphere-iso/\$WinPEDriver\$|[\"pvscsi\"]|\"vmxnet3\"" <<<"$output"
	# hyperv-iso has no drivers staged: its CD is the plain one
	grep -qxF "hyperv-iso \${path.root}/answer/uefi/Autounattend.xml \${path.root}/../tree \${path.root}/../manifest.json|-|-" <<<"$output"
	# Packer's CD step puts a directory at the CD root under its own name
	# (step_create_cdrom.go): the folder exists where the list points
	for b in qemu vsphere-iso; do
		[ -f "out/windows-2022-containerd/tree/ProgramData/winbuild/winpe/$b/\$WinPEDriver\$/drv/drv.inf" ]
	done
	need_dep command -v packer -- "packer not installed (make deps)"
	PKR_VAR_vsphere_password=s run packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run packer fmt -check "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

@test "drivers: without staged drivers qemu and vsphere-iso use devices Setup has inbox drivers for" {
	staged
	wb emit "$R" --builder qemu --builder vsphere-iso
	assert_status 0
	run facts qemu vsphere-iso
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	echo "$output"
	grep -q '^qemu .*manifest.json|"ide"|"e1000"$' <<<"$output"
	grep -q '^vsphere-iso .*manifest.json|\["lsilogic-sas"\]|"e1000e"$' <<<"$output"
	! grep -q 'WinPEDriver' "$HCL"
	need_dep command -v packer -- "packer not installed (make deps)"
	PKR_VAR_vsphere_password=s run packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run packer fmt -check "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}
