# ISO 9660 images laid out as the driver ISOs the shipped components unpack
# (recipes/components/virtio-win.yaml, vmware-tools.yaml), made with xorriso;
# used by tests/cli/drivers.bats, packer_cd.bats and payload_buildonly.bats.

# virtio_iso DIR: an ISO 9660 image laid out as virtio-win's (Rock Ridge +
# Joliet, as xorriso writes it), with drivers for two Windows versions and
# files the component must leave out; prints its path
virtio_iso() {
	local src="$1/src"
	for d in viostor vioscsi NetKVM; do
		for os in 2k19 2k22; do
			mkdir -p "$src/$d/$os/amd64" "$src/$d/$os/x86"
			for ext in inf sys cat; do
				echo "$d $os amd64 $ext" >"$src/$d/$os/amd64/$(tr A-Z a-z <<<"$d").$ext"
				echo "$d $os x86 $ext" >"$src/$d/$os/x86/$(tr A-Z a-z <<<"$d").$ext"
			done
		done
	done
	mkdir -p "$src/guest-agent" && echo msi >"$src/guest-agent/qemu-ga-x86_64.msi"
	echo "readme" >"$src/README.md"
	xorriso -as mkisofs -r -J -V virtio-win -o "$1/virtio-win.iso" "$src" >/dev/null 2>&1
	echo "$1/virtio-win.iso"
}

# tools_iso DIR: an ISO laid out as VMware's Windows Tools ISO: setup64.exe
# at the root, drivers under Program Files/VMware/VMware Tools/Drivers
tools_iso() {
	local src="$1/tsrc" d="Program Files/VMware/VMware Tools/Drivers"
	mkdir -p "$src/$d/pvscsi/Win10/amd64" "$src/$d/pvscsi/Win8/amd64" "$src/$d/vmxnet3/Win10/amd64"
	for ext in inf sys cat; do
		echo "pvscsi Win10 $ext" >"$src/$d/pvscsi/Win10/amd64/pvscsi.$ext"
		echo "pvscsi Win8 $ext" >"$src/$d/pvscsi/Win8/amd64/pvscsi.$ext"
		echo "vmxnet3 $ext" >"$src/$d/vmxnet3/Win10/amd64/vmxnet3.$ext"
	done
	echo "MZ setup64" >"$src/setup64.exe"
	echo "MZ setup" >"$src/setup.exe"
	xorriso -as mkisofs -r -J -V VMware-Tools -o "$1/VMware-tools.iso" "$src" >/dev/null 2>&1
	echo "$1/VMware-tools.iso"
}

# virtio_recipe ISO_URL SHA256: img.yaml with the shipped virtio-win
# component for the qemu builder, and fixture.yaml replacing its URL
virtio_recipe() {
	cat >img.yaml <<-EOF
		kind: image
		name: t
		windows: {version: "2022", iso_sha256: $TEST_ISO_SHA256}
		vars: {virtio_win_os: 2k22}
		components:
		  virtio-win:
		    file: $WB_SRC/recipes/components/virtio-win.yaml
		packer: {builders: [qemu]}
	EOF
	cat >fixture.yaml <<-EOF
		kind: override
		replace:
		  virtio-win:
		    url: $1
		    verify: {sha256: $2}
	EOF
}
