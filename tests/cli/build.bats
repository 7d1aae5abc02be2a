#!/usr/bin/env bats
# winbuild build: plan + fetch + stage + emit in one command, and emit
# staging on its own when nothing is staged yet.
load helpers
load ../lib/servers
load stage_fixtures

setup() {
	common_setup
	fixture_override >"$WORK/fixtures.yaml"
	packer_setup secrets
	export SOURCE_DATE_EPOCH=1700000000
}

O() { echo "$WORK/out/$NAME"; }

@test "build writes the tree, the manifest and Packer inputs that packer validates" {
	wb build "$RECIPE" -O fixtures.yaml --no-progress
	assert_status 0
	[ -f "$(O)/tree/k/kubelet.exe" ]
	[ -f "$(O)/tree/Program Files/containerd/containerd.exe" ]
	[ -f "$(O)/manifest.json" ]
	[ -f "$(O)/packer/$NAME.pkr.hcl" ]
	[ -f "$(O)/packer/$NAME.auto.pkrvars.hcl" ]
	ls "$(O)"/packer/scripts/*.ps1 >/dev/null
	cd "$(O)/packer"
	run packer validate .
	assert_status 0
	run packer fmt -check .
	assert_status 0
}

@test "build --builder narrows the Packer sources" {
	wb build "$RECIPE" -O fixtures.yaml --builder qemu --no-progress
	assert_status 0
	grep -q 'source "qemu" "node"' "$(O)/packer/$NAME.pkr.hcl"
	! grep -q 'source "azure-arm"' "$(O)/packer/$NAME.pkr.hcl" || false
}

@test "two builds of the same inputs give byte-identical outputs" {
	wb build "$RECIPE" -O fixtures.yaml --no-progress
	assert_status 0
	cp -a "$(O)" first
	rm -rf out
	wb build "$RECIPE" -O fixtures.yaml --no-progress
	assert_status 0
	# the answer files' one-off password is new each time, nothing else
	[ "$(iso_password first/packer)" != "$(iso_password "$(O)/packer")" ]
	mask_iso_password first/packer
	mask_iso_password "$(O)/packer"
	# .stage-stamp is host-local state (inode/ctime fingerprint), not output
	diff -r -x .stage-stamp first "$(O)"
}

@test "build picks up a changed recipe value (containerd 1.7 config)" {
	fixture_override containerd-1.7.28-windows-amd64.tar.gz >"$WORK/fix17.yaml"
	wb build "$RECIPE" -O fixtures.yaml --no-progress
	assert_status 0
	grep -q '^version = 3' "$(O)/tree/Program Files/containerd/config.toml"
	wb build "$RECIPE" -O fix17.yaml --set components.containerd.version=1.7.28 --no-progress
	assert_status 0
	grep -q '^version = 2' "$(O)/tree/Program Files/containerd/config.toml"
}

@test "emit stages first when nothing is staged yet" {
	[ ! -e "$(O)" ]
	wb emit "$RECIPE" -O fixtures.yaml --builder qemu --no-progress
	assert_status 0
	[ -f "$(O)/manifest.json" ]
	[ -f "$(O)/packer/$NAME.pkr.hcl" ]
}

@test "build on a tampered artifact exits 1 and writes no output" {
	python3 - fixtures.yaml <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
s = re.sub(r"(kubelet\.exe\n    verify: \{sha256: )([0-9a-f])",
           lambda m: m.group(1) + ("0" if m.group(2) != "0" else "1"), s)
open(p, "w").write(s)
PY
	wb build "$RECIPE" -O fixtures.yaml --no-progress
	assert_status 1
	assert_output_has "kubelet"
	[ ! -e "$(O)/tree" ]
	[ ! -e "$(O)/packer" ]
}

@test "build with a hostile archive exits 4 and emits nothing" {
	one_archive dotdot.tgz
	wb build img.yaml --no-progress
	assert_status 4
	[ ! -e out/t/packer ]
	[ ! -e out/t/tree ]
}

@test "build refuses --format (emit only) and a bad --set (exit 2)" {
	wb build "$RECIPE" --format image-builder
	assert_status 2
	assert_output_has "unknown option '--format'"
	wb build "$RECIPE" --set components.nope.version=1
	assert_status 2
}

@test "issue 15: build of every shipped recipe validates with only the environment's secrets; ISO builders attach a generated answer file" {
	need_dep command -v packer -- "packer not installed (make deps)"
	export PKR_VAR_winrm_password=EnvSecretWinrm-4711 PKR_VAR_vsphere_password=EnvSecretVsphere-4711 \
		PKR_VAR_azure_client_secret=EnvSecretAzure-4711
	for v in 2019 2022 2025; do
		r="$WB_SRC/recipes/windows-$v-containerd.yaml"
		n="windows-$v-containerd"
		rm -rf out
		wb build "$r" -O fixtures.yaml --no-progress
		assert_status 0
		pk="$WORK/out/$n/packer"
		# exactly the three secrets, from the environment, and nothing else
		(cd "$pk" && env -u PKR_VAR_iso_admin_password packer validate .) ||
			{ echo "packer validate $n failed" >&2; return 1; }
		run grep -rl EnvSecret "$WORK"
		[ "$status" -eq 1 ]
		for b in qemu vsphere-iso hyperv-iso; do
			python3 - "$pk/$n.pkr.hcl" "$b" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
block = re.search(r'source "%s" "node" \{(.*?)\n\}' % sys.argv[2], src, re.S).group(1)
cd = re.search(r'cd_files\s*=\s*\[(.*?)\]', block).group(1)
m = re.search(r'"\$\{path\.root\}/(answer/(bios|uefi)/Autounattend\.xml)"', cd)
assert m, (sys.argv[2], cd)
print(m.group(1))
PY
		done >answers
		while read -r a; do
			python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$pk/$a"
		done <answers
		grep -q "Windows Server $v SERVERDATACENTERCORE" "$pk/answer/uefi/Autounattend.xml"
	done
}

@test "build resolves the recipe once: each plan warning is printed once (text and --json)" {
	# crictl off Kubernetes' minor: a plan warning (versions.bats)
	wb build "$RECIPE" -O fixtures.yaml --no-progress --set components.crictl.version=1.34.1
	assert_status 0
	[ "$(grep -c "warning: .*crictl 1.34.1 is not on Kubernetes' minor" <<<"$output")" = 1 ]
	"$WINBUILD" build "$RECIPE" -O fixtures.yaml --no-progress --json \
		--set components.crictl.version=1.34.1 >"$WORK/b.json" 2>/dev/null
	[ "$(python3 -c 'import json, sys
print(sum("crictl 1.34.1" in w for w in json.load(open(sys.argv[1]))["warnings"]))' \
		"$WORK/b.json")" = 1 ]
	# emit over a staged tree resolves once too
	wb emit "$RECIPE" -O fixtures.yaml --set components.crictl.version=1.34.1
	assert_status 0
	[ "$(grep -c "warning: .*crictl 1.34.1" <<<"$output")" = 1 ]
}
