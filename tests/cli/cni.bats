#!/usr/bin/env bats
# The CNI directories are the component data's (issue 29): each component's
# `cni: {bin_dir, conf_dir}` (containerd's config names them, the CNI
# components unpack there), all of them the same, and what stage writes
# into config.toml and where the network config goes; no CNI path is named
# in winbuild's C code.
load helpers
load ../lib/servers
load stage_fixtures

setup() {
	common_setup
	fixture_override >"$WORK/fixtures.yaml"
}


# every place of the node's CNI moved to C:\k\cni\{bin,conf}
moved_cni() {
	local c
	echo "kind: override"
	echo "components:"
	for c in containerd cni-plugins windows-cni; do
		echo "  $c:"
		echo "    cni: {bin_dir: 'C:\\k\\cni\\bin', conf_dir: 'C:\\k\\cni\\conf'}"
		[ "$c" = containerd ] && continue
		echo "    artifacts: {$c: {unpack: {into: 'C:\\k\\cni\\bin'}}}"
		echo "    directories: ['C:\\k\\cni\\bin', 'C:\\k\\cni\\conf']"
		echo "    defender_exclusions: ['C:\\k\\cni\\bin']"
	done
}

@test "cni: containerd's config and the network config follow the components' cni directories" {
	moved_cni >"$WORK/cni.yaml"
	stage_shipped -O "$WORK/cni.yaml" --set node.cni=nat
	assert_status 0
	[ -f "$(T)/k/cni/bin/win-bridge.exe" ]
	[ -f "$(T)/k/cni/bin/sdnbridge.exe" ]
	[ -f "$(T)/k/cni/conf/10-nat.conflist" ]
	[ ! -e "$(T)/etc/cni" ] && [ ! -e "$(T)/opt/cni" ]
	python3 -c '
import sys, tomllib
cni = tomllib.load(open(sys.argv[1], "rb"))["plugins"]["io.containerd.cri.v1.runtime"]["cni"]
assert cni["bin_dirs"] == ["C:/k/cni/bin"] and cni["conf_dir"] == "C:/k/cni/conf", cni
' "$(T)/Program Files/containerd/config.toml"
}

@test "cni: two enabled components that name different CNI directories are a plan error at the later one (exit 2)" {
	wb plan "$RECIPE" --set 'components.windows-cni.cni.bin_dir=C:\cni'
	assert_status 2
	assert_output_has "--set #1: components.windows-cni.cni.bin_dir is 'C:\\cni', but another enabled component says the node's CNI plugin directory is 'C:\\opt\\cni\\bin' ("
	assert_output_has "recipes/components/containerd.yaml:"
	# the same directory spelled another way is the same directory
	wb plan "$RECIPE" --set 'components.windows-cni.cni.conf_dir=c:\ETC\cni\NET.D'
	assert_status 0
	wb plan "$RECIPE" --set 'components.cni-plugins.cni.conf_dir=C:\etc\cni\net.d\x'
	assert_status 2
	assert_output_has "components.cni-plugins.cni.conf_dir is 'C:\\etc\\cni\\net.d\\x', but another enabled component says the node's CNI configuration directory is 'C:\\etc\\cni\\net.d'"
}

@test "cni: containerd with no component declaring the CNI directories is refused by stage (exit 2), no tree written" {
	# containerd's own file without its cni map, the CNI components off
	sed '/^cni:/,/^$/d' "$WB_SRC/recipes/components/containerd.yaml" >"$WORK/containerd.yaml"
	! grep -q '^cni:' "$WORK/containerd.yaml" || false
	printf '%s\n' "kind: override" "components:" \
		"  containerd: {file: '$WORK/containerd.yaml'}" \
		"  cni-plugins: {enabled: false}" "  windows-cni: {enabled: false}" >"$WORK/nocni.yaml"
	# and no replace: for their artifacts
	sed -i '/^  cni-plugins:$/,+2d; /^  windows-cni:$/,+2d' "$WORK/fixtures.yaml"
	stage_shipped -O "$WORK/nocni.yaml"
	assert_status 2
	assert_output_has "containerd's config names the CNI plugin and configuration directories, and no enabled component declares them"
	[ ! -e "$(T)" ]
}

@test "cni: the emitted CNI step creates and lists the components' directories, no other" {
	moved_cni >"$WORK/cni.yaml"
	wb build "$RECIPE" -O "$WORK/fixtures.yaml" -O "$WORK/cni.yaml" --no-progress \
		--set "windows.iso_sha256=$TEST_ISO_SHA256"
	assert_status 0
	local s="$WORK/out/$NAME/packer/scripts/06-cni.ps1"
	grep -qF "'C:\\k\\cni\\bin'" "$s"
	grep -qF "'C:\\k\\cni\\conf'" "$s"
	! grep -qi 'opt.cni\|etc.cni' "$s" || false
}
