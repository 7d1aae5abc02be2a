#!/usr/bin/env bats
# Issue 40 (the CD part): Packer's own CD step carries the payload. Every
# shipped image (recipes/windows-20xx-containerd.yaml, built over the stage
# fixtures with the pause image from make demo's mirror, as tests/win/run
# builds them), and the 2022 image with virtio-win and vmware-tools, is
# emitted; Debian's Packer 1.6.6 runs `packer build -only=qemu.node` on it
# with stub qemu-img / qemu-system-x86_64 (the stub keeps the CD Packer
# attached and stops the build), from the documented working directory and
# from another one. The ISO is read back with xorriso (Joliet names: what
# Windows reads) and checked against manifest.json; nothing may be written
# outside Packer's staging folder. The engine tier's CD model
# (tests/win/packercd.ps1) must give the same file list as the real ISO.

load helpers
load ../lib/servers
load ../lib/driver_isos
load stage_fixtures

SIGNER=pause-signer@winbuild.invalid
ISSUER=https://oidc.winbuild.invalid
IMAGES="windows-2019-containerd windows-2022-containerd windows-2025-containerd drivers-2022"
# pwsh: `dotnet tool install --global PowerShell` (setup moves HOME)
PWSH_DIR="$HOME/.dotnet/tools"

setup_file() {
	[ "${CI:-}" = true ] || { command -v packer && command -v xorriso; } >/dev/null 2>&1 || return 0
	local F="$BATS_FILE_TMPDIR" v
	make_stage_fixtures "$F"
	make_pause_mirror "$SIGNER" "$ISSUER"
	virtio_iso "$WWW/good" >/dev/null
	tools_iso "$WWW/good" >/dev/null
	WB_NGINX_INCLUDE="$PAUSE_INCLUDE" start_nginx "$WWW" >/dev/null
	fixture_override >"$F/fixtures.yaml"
	pause_override "$SIGNER" "$ISSUER" pin >"$F/pause.yaml"
	{
		echo "kind: override"
		echo "components:"
		echo "  virtio-win: {enabled: true}"
		echo "  vmware-tools: {enabled: true}"
		echo "replace:"
		replace_entry virtio-win virtio-win.iso
		replace_entry vmware-tools VMware-tools.iso
		replace_entry pvscsi VMware-tools.iso
	} >"$F/drivers.yaml"
	export WINBUILD_CACHE="$F/cache" SOURCE_DATE_EPOCH=1700000000 NO_COLOR=1
	unset WINBUILD_SET
	for v in 2019 2022 2025; do
		"$WINBUILD" build "$WB_SRC/recipes/windows-$v-containerd.yaml" -O "$F/fixtures.yaml" \
			-O "$F/pause.yaml" --no-progress -o "$F/out" >"$F/build-$v.log" 2>&1 ||
			{ cat "$F/build-$v.log" >&2; stop_servers; return 1; }
	done
	"$WINBUILD" build "$WB_SRC/recipes/windows-2022-containerd.yaml" -O "$F/fixtures.yaml" \
		-O "$F/pause.yaml" -O "$F/drivers.yaml" --no-progress -o "$F/drv" >"$F/build-drivers.log" 2>&1 ||
		{ cat "$F/build-drivers.log" >&2; stop_servers; return 1; }
	# one place per image: out/<name>, and drivers-2022 beside them
	ln -s ../drv/windows-2022-containerd "$F/out/drivers-2022"
	stop_servers
	# the Windows ISO Packer checks against iso_checksum before it makes the CD
	echo "not a Windows ISO" >"$F/windows.iso"
	mkdir -p "$F/stub"
	printf '#!/bin/sh\nexit 0\n' >"$F/stub/qemu-img"
	# Packer asks `-version` first, then starts the VM with its CDs as
	# `-drive file=PATH,media=cdrom`: keep every CD in $CD_KEEP, then fail
	cat >"$F/stub/qemu-system-x86_64" <<-'EOF'
		#!/bin/sh
		case "$1" in -version) echo "QEMU emulator version 5.2.0"; exit 0 ;; esac
		for a in "$@"; do
			case "$a" in
			file=*,media=cdrom) f=${a#file=}; f=${f%,media=cdrom}; cp "$f" "$CD_KEEP/" ;;
			esac
		done
		exit 1
	EOF
	chmod +x "$F/stub/qemu-img" "$F/stub/qemu-system-x86_64"
}

teardown_file() { stop_servers; }

setup() {
	need_dep command -v packer -- "packer not installed (make deps)"
	need_dep command -v xorriso -- "xorriso not installed (make deps)"
	common_setup
	F="$BATS_FILE_TMPDIR"
	packer_setup
}

# cd_build IMAGE SANDBOX CWD DIR: Packer 1.6.6's qemu build of IMAGE's emitted
# directory, run in CWD as `packer build DIR`, with TMPDIR=SANDBOX/tmp; the
# CD it attached is kept as SANDBOX/cd.iso
cd_build() {
	local img=$1 s=$2 iso
	mkdir -p "$s/tmp" "$s/keep"
	(cd "$3" && PATH="$F/stub:$PATH" CD_KEEP="$s/keep" TMPDIR="$s/tmp" \
		packer build -only=qemu.node -var "qemu_iso_url=$F/windows.iso" \
		-var "qemu_iso_checksum=sha256:$(sha256sum "$F/windows.iso" | cut -d' ' -f1)" \
		-var "qemu_output_directory=$s/output-qemu" "$4") >"$s/packer.log" 2>&1 || true
	grep -q "Creating CD disk" "$s/packer.log" || { cat "$s/packer.log" >&2; return 1; }
	iso=$(find "$s/keep" -name 'packer*.iso')
	[ -n "$iso" ] || { echo "no CD reached the stub" >&2; cat "$s/packer.log" >&2; return 1; }
	mv "$iso" "$s/cd.iso"
}

# want_cd IMAGE: the files the qemu CD must hold, as Windows Setup and
# 02-payload.ps1 look for them: the answer file, manifest and SBOM at the
# root, every manifest file under tree\, and qemu's windowsPE folders
# ($WinPEDriver$) at the root
want_cd() {
	python3 - "$F/out/$1" <<-'PY'
		import json, os, sys
		base = sys.argv[1]
		m = json.load(open(os.path.join(base, "manifest.json")))
		out = ["Autounattend.xml", "manifest.json"]
		if os.path.exists(os.path.join(base, "sbom.cdx.json")):
		    out.append("sbom.cdx.json")
		out += ["tree/" + f["tree_path"] for f in m["files"]]
		w = "ProgramData/winbuild/winpe/qemu/"
		out += [f["tree_path"][len(w):] for f in m["files"] if f["tree_path"].startswith(w)]
		print("\n".join(sorted(out)))
	PY
}

# iso_files ISO: the files on ISO by their Joliet names, sorted
iso_files() {
	xorriso -rockridge off -joliet on -indev "$1" -find / -type f 2>/dev/null |
		sed -e "s/^'//" -e "s/'\$//" -e 's|^/||' | sort
}

# check_cd IMAGE SANDBOX: the CD holds exactly want_cd's files, each with the
# manifest's sha256 under tree\, the label 02-payload looks for; Packer
# wrote nothing outside its staging folder (TMPDIR holds only that folder
# and the ISO: Packer 1.6.6's Cleanup leaves packer_to_cdrom*, the SDK's
# removes it since ac048b4d) and nothing into the output it read
check_cd() {
	local img=$1 s=$2 d
	want_cd "$img" >"$s/want"
	iso_files "$s/cd.iso" >"$s/got"
	diff -u "$s/want" "$s/got" || { echo "$img: the CD differs from manifest.json" >&2; return 1; }
	xorriso -indev "$s/cd.iso" -pvd_info 2>/dev/null | grep -qx 'Volume Id    : WINBUILD' ||
		{ echo "$img: CD label is not WINBUILD (02-payload's \$CdLabel)" >&2; return 1; }
	mkdir "$s/x"
	xorriso -osirrox on -indev "$s/cd.iso" -extract /tree "$s/x" >/dev/null 2>&1
	python3 - "$F/out/$img/manifest.json" "$s/x" <<-'PY'
		import hashlib, json, os, sys
		m = json.load(open(sys.argv[1]))
		for f in m["files"]:
		    got = hashlib.sha256(open(os.path.join(sys.argv[2], f["tree_path"]), "rb").read()).hexdigest()
		    assert got == f["sha256"], (f["tree_path"], got, f["sha256"])
	PY
	# an escape lands at $TMPDIR/tree (path.root "."), or under the staging
	# folder at the path as given (caught by the diff above)
	[ ! -e "$s/tmp/tree" ] || { echo "$img: Packer wrote the tree to \$TMPDIR/tree" >&2; return 1; }
	for d in "$s"/tmp/*; do
		case "${d##*/}" in packer_to_cdrom*) ;; *) echo "$img: Packer left $d outside its staging folder" >&2; return 1 ;; esac
	done
	(cd "$F/out/$img" && find . | sort) >"$s/after"
	diff -u "$F/$img.files" "$s/after" || { echo "$img: Packer wrote into the staged output" >&2; return 1; }
}

@test "packer's CD step: every shipped image's qemu CD holds every manifest file where 02-payload and Setup look, built from the documented directory and another one" {
	for img in $IMAGES; do
		(cd "$F/out/$img" && find . | sort) >"$F/$img.files"
		# docs/packer.md: cd out/<image>/packer && packer build -only=qemu.node .
		cd_build "$img" "$WORK/$img-here" "$F/out/$img/packer" .
		check_cd "$img" "$WORK/$img-here"
		# from the directory holding out/, the path as the user types it
		cd_build "$img" "$WORK/$img-there" "$F" "out/$img/packer"
		check_cd "$img" "$WORK/$img-there"
		cmp "$WORK/$img-here/got" "$WORK/$img-there/got"
	done
	# the images with drivers carry them where Setup looks: $WinPEDriver$ at
	# the root of qemu's CD (vsphere-iso's pvscsi and VMwareTools are on its
	# own CD only: the next test)
	grep -qx '\$WinPEDriver\$/viostor/2k22/amd64/viostor.inf' "$WORK/drivers-2022-here/got"
	# (at the CD root: under tree\ every builder's windowsPE folder rides
	# along as build-only payload; a bare "! grep" could not fail, and this
	# one, unanchored, was false)
	! grep -qE '^(VMwareTools|\$WinPEDriver\$/pvscsi)' "$WORK/drivers-2022-here/got" || false
	! grep -q '^\$WinPEDriver\$' "$WORK/windows-2022-containerd-here/got" || false
}

# cd_shape IMAGE: "<builder> <entry>..." for each ISO builder of IMAGE's
# template, read by hashicorp/hcl (tests/win/hclplan.cjs's parser), each
# entry with the builder's own name and firmware made generic
cd_shape() {
	node -e '
		const fs = require("fs"), { parse } = require("@cdktf/hcl2json");
		(async () => {
			const dir = process.argv[1], f = fs.readdirSync(dir).find((n) => n.endsWith(".pkr.hcl"));
			const j = await parse(f, fs.readFileSync(dir + "/" + f, "utf8"));
			for (const b of ["qemu", "vsphere-iso", "hyperv-iso"]) {
				const cd = j.source[b].node[0].cd_files;
				console.log(b + " " + cd.map((e) => e.split(b).join("BUILDER")
					.replace(/answer\/(bios|uefi)\//, "answer/FW/")).join(" "));
			}
		})().catch((e) => { console.error(e); process.exit(1); });
	' "$1"
}

@test "packer's CD step: vsphere-iso and hyperv-iso list the same cd_files entries as qemu, each folder and file through the same path" {
	need_dep test -d "$WB_SRC/tests/win/node_modules/@cdktf/hcl2json" -- "tests/win/node_modules missing (make deps)"
	for img in windows-2022-containerd drivers-2022; do
		NODE_PATH="$WB_SRC/tests/win/node_modules" run cd_shape "$F/out/$img/packer"
		[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
		echo "$output"
		q=$(sed -n 's/^qemu //p' <<<"$output")
		# a tree entry: abspath() of the path beside packer/ (the fix of issue 40)
		grep -qF '${abspath("${path.root}/../tree")}' <<<"$q"
		# every entry outside packer/ goes through abspath(); none holds a bare ..
		! grep -qE '(^| )"?\$\{path\.root\}/\.\.' <<<"$q" || false
		for b in vsphere-iso hyperv-iso; do
			e=$(sed -n "s/^$b //p" <<<"$output")
			# the same entries, in the same order, plus the builder's own
			# windowsPE folders (each under its own winpe/<builder>/)
			[ "${e:0:${#q}}" = "$q" ] || [ "$img" = drivers-2022 ]
			for w in $e; do
				case "$w" in
				*answer/FW/Autounattend.xml*) ;;
				'${abspath("${path.root}/../'*'")}') ;;
				*) echo "$b: entry $w is not of qemu's shapes" >&2; return 1 ;;
				esac
			done
		done
	done
	# vsphere-iso's CD gets pvscsi and VMwareTools, hyperv-iso's nothing
	grep -qF 'vsphere-iso ' <<<"$output"
	grep '^vsphere-iso ' <<<"$output" | grep -qF 'winpe/BUILDER/$WinPEDriver$")}'
	grep '^vsphere-iso ' <<<"$output" | grep -qF 'winpe/BUILDER/VMwareTools")}'
	! grep '^hyperv-iso ' <<<"$output" | grep -q winpe || false
}

# models IMAGE_DIR=DEST[=SOURCE]...: the engine tier's CD model
# (tests/win/packercd.ps1) of IMAGE_DIR/packer's SOURCE (qemu.node), as
# `packer build .` in packer/ runs it, into DEST, its file list in
# DEST.list; one pwsh for all
models() {
	local cmd='$ErrorActionPreference = "Stop"' a dir dest src
	for a in "$@"; do
		IFS== read -r dir dest src <<<"$a"
		(cd "$WB_SRC/tests/win" && node hclplan.cjs "$dir/packer") >"$dest.plan.json" || return 1
		cmd+="; & '$WB_SRC/tests/win/packercd.ps1' -Plan '$dest.plan.json' -Source ${src:-qemu.node}"
		cmd+=" -PathRoot . -Cwd '$dir/packer' -Dest '$dest' | Set-Content -LiteralPath '$dest.list'"
	done
	pwsh -NoProfile -Command "$cmd"
}

@test "packer's CD step: the engine tier's CD model lists the files of the ISO Packer 1.6.6 makes, and refuses where Packer writes outside its staging folder" {
	export PATH="$PATH:$PWSH_DIR"
	need_dep command -v pwsh -- "pwsh not installed (make deps)"
	need_dep test -d "$WB_SRC/tests/win/node_modules/@cdktf/hcl2json" -- "tests/win/node_modules missing (make deps)"
	local m=()
	for img in $IMAGES; do
		cd_build "$img" "$WORK/$img" "$F/out/$img/packer" .
		iso_files "$WORK/$img/cd.iso" | LC_ALL=C sort >"$WORK/$img/real"
		m+=("$F/out/$img=$WORK/$img/model")
	done
	# vsphere-iso's CD, by the same rules (its entries have qemu's shapes)
	models "${m[@]}" "$F/out/drivers-2022=$WORK/vsphere=vsphere-iso.node"
	grep -qx 'VMwareTools/setup64.exe' "$WORK/vsphere.list"
	grep -qx '\$WinPEDriver\$/Program Files/VMware/VMware Tools/Drivers/pvscsi/Win10/amd64/pvscsi.inf' "$WORK/vsphere.list"
	grep -q '^tree/k/kubelet.exe$' "$WORK/vsphere.list"
	for img in $IMAGES; do
		LC_ALL=C sort "$WORK/$img/model.list" >"$WORK/$img/modelled"
		diff -u "$WORK/$img/real" "$WORK/$img/modelled"
		[ "$(wc -l <"$WORK/$img/real")" -gt 25 ]
	done
	# the entries as emitted before issue 40: Packer puts the tree in
	# $TMPDIR/tree, the model refuses naming that path
	cp -a "$F/out/windows-2022-containerd/." "$WORK/bare"
	sed -i -E 's/abspath\(("[^"]*")\)/\1/g' "$WORK/bare/packer/windows-2022-containerd.pkr.hcl"
	grep -qF '"${path.root}/../tree", "${path.root}/../manifest.json"' "$WORK/bare/packer/windows-2022-containerd.pkr.hcl"
	cd_build bare "$WORK/bare-run" "$WORK/bare/packer" .
	[ -f "$WORK/bare-run/tmp/tree/k/kubelet.exe" ]
	iso_files "$WORK/bare-run/cd.iso" >"$WORK/bare-run/real"
	! grep -q '^tree/' "$WORK/bare-run/real" || false
	run models "$WORK/bare=$WORK/bare-model"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Packer's CD step writes '../tree/"*"outside its staging folder"* ]]
}
