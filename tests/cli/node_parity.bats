#!/usr/bin/env bats
# issue 27, item 1: the node on par with image-builder's Windows image. Node
# facts over what `winbuild build` emits; the script behaviour (D5, D8, D11,
# D12, D24, D25) is held by the engine tier (tests/win/check.py, run by
# tests/cli/wintier.bats and tests/win/run). docs/node.md has the table.
load helpers
load ../lib/servers
load stage_fixtures

setup() {
	fixture_setup
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256"
}

O() { echo "$WORK/out/$NAME"; }
S() { echo "$(O)/packer/scripts"; }
build() { wb build "$RECIPE" -O "$WORK/fixtures.yaml" --no-progress "$@"; }
model() { run python3 "$WB_SRC/tests/node/winnode.py" "$@"; }

@test "D9: kube-log-runner rotates kubelet.log (size, age, flush) and still runs the start script" {
	build
	assert_status 0
	model kubelet-sc "$(S)" "$(O)/tree"
	echo "$output"
	assert_status 0
	python3 - "$(echo "$output" | sed -n 2p)" <<-'PY'
	import json, sys
	a = json.loads(sys.argv[1])
	assert a[0] == 'C:\\k\\kube-log-runner.exe', a
	# its own flags, all before the command it runs (Go's flag package stops
	# at the first non-flag)
	flags = a[1:a.index('C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe')]
	assert flags == ['--log-file=C:\\var\\log\\kubelet\\kubelet.log', '--log-file-size=100Mi',
	                 '--log-file-age=168h', '--flush-interval=5s'], flags
	PY
}

@test "D9: log_runner_args without a log_runner is refused at file:line:col (exit 2)" {
	cp -r "$WB_SRC/recipes" "$WORK/r"
	f="$WORK/r/components/kubernetes.yaml"
	sed -i '/^    log_runner: /d; /^    log_file: /d' "$f"
	line=$(grep -n '^    log_runner_args:' "$f" | cut -d: -f1)
	wb plan "$WORK/r/windows-2022-containerd.yaml" --set node.service_manager=nssm --set components.nssm.enabled=true
	echo "$output"
	assert_status 2
	assert_output_has "kubernetes.yaml:$line:"
	assert_output_has "'log_runner_args' are flags of 'log_runner', and none is declared"
}

@test "D13: kubelet gets no NetBIOS --hostname-override; kubeadm's own override is passed once" {
	build
	assert_status 0
	model kubelet-sc "$(S)" "$(O)/tree"
	assert_status 0
	last=$(echo "$output" | tail -n 1)
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert not any(x.startswith("--hostname-override") for x in a), a' "$last"
	# (code lines only: the D13 comment names $env:COMPUTERNAME to say why
	# it is not used; the bare "! grep" could not fail, and was false)
	! grep -v '^[[:space:]]*#' "$(O)/tree/k/StartKubelet.ps1" | grep -qi 'COMPUTERNAME' || false
	printf 'KUBELET_KUBEADM_ARGS="--hostname-override=node-a.example --node-ip=10.0.0.5"\r\n' >"$WORK/flags.env"
	model kubelet-sc "$(S)" "$(O)/tree" "$WORK/flags.env"
	assert_status 0
	last=$(echo "$output" | tail -n 1)
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert [x for x in a if x.startswith("--hostname-override")] == ["--hostname-override=node-a.example"], a' "$last"
}

@test "D21: containerd 2.x's runhcs-wcow-process keeps the default's annotations and ScrubLogs; a bare redeclaration is refused" {
	build
	assert_status 0
	cfg="$(O)/tree/Program Files/containerd/config.toml"
	run python3 "$WB_SRC/tests/node/keytables.py" containerd 2.3.5 "$cfg"
	echo "$output"
	assert_status 0
	# what the issue found: the runtime with runtime_type only
	sed -e '/container_annotations/d' -e '/ScrubLogs/d' "$cfg" >"$WORK/bare.toml"
	run python3 "$WB_SRC/tests/node/keytables.py" containerd 2.3.5 "$WORK/bare.toml"
	echo "$output"
	assert_status 1
	assert_output_has "container_annotations"
	assert_output_has "options.ScrubLogs"
}

@test "D22: containerd logs to a file (--log-file), in a directory the image creates" {
	build
	assert_status 0
	model service "$(S)" "$(O)/tree" containerd
	echo "$output"
	assert_status 0
	[ "$(echo "$output" | tail -n 1)" = '["C:\\Program Files\\containerd\\containerd.exe", "--run-service", "--config", "C:\\Program Files\\containerd\\config.toml", "--log-file", "C:\\var\\log\\containerd\\containerd.log"]' ]
	grep -qF "'C:\\var\\log\\containerd'" "$(S)/05-services.ps1"
}

@test "D25: under nssm the kubelet log rotates while the service runs (AppRotateOnline)" {
	replace_entry nssm nssm-2.24.zip >>"$WORK/fixtures.yaml"
	build --set node.service_manager=nssm --set components.nssm.enabled=true
	assert_status 0
	grep -qF "@('AppRotateOnline', '1')" "$(S)/05-services.ps1"
	grep -qF "@('AppRotateFiles', '1')" "$(S)/05-services.ps1"
}

@test "D26: cloudbase-init logs to COM2 on Azure (COM1 is its serial console), COM1 elsewhere" {
	build
	assert_status 0
	d="$(O)/tree/ProgramData/winbuild/cloudbase-init"
	for p in azure aws vsphere nocloud; do
		for f in cloudbase-init.conf cloudbase-init-unattend.conf; do
			want=COM1
			[ $p = azure ] && want=COM2
			[ "$(grep -c '^logging_serial_port_settings=' "$d/$p/$f")" = 1 ]
			grep -qx "logging_serial_port_settings=$want,115200,N,8" "$d/$p/$f"
		done
		run python3 "$WB_SRC/tests/node/keytables.py" cloudbase-init "$p" "$d/$p/cloudbase-init.conf" "$d/$p/cloudbase-init-unattend.conf"
		assert_status 0
	done
}

@test "D24: the manifest marks the cloudbase-init MSI and every provider's conf pair build-only, and step 07 removes every build-only file" {
	build
	assert_status 0
	python3 - "$(O)/manifest.json" "$(S)/07-provenance.ps1" <<-'PY'
	import json, re, sys
	m = json.load(open(sys.argv[1]))
	src = open(sys.argv[2], encoding='utf-8').read()
	build = [f['path'] for f in m['files'] if f['lifetime'] == 'build']
	want = [f['path'] for f in m['files'] if f.get('component') == 'cloudbase-init']
	assert sorted(build) == sorted(want), (build, want)
	assert any(p.endswith('CloudbaseInitSetup_x64.msi') for p in build)
	# step 07 removes them by the manifest on the node, no list of its own
	assert re.search(r"^Remove-BuildOnly -All$", src, re.M), src
	assert 'ConsumedFiles' not in src
	PY
}

@test "D8: Azure's sysprep passes cloudbase-init's Unattend.xml and blocks the WireServer; no other platform does" {
	build
	assert_status 0
	s="$(S)/08-sysprep.ps1"
	sed -n "/^if (\$Platform -eq 'azure') {/,/^}/p" "$s" >"$WORK/azure"
	grep -qF 'Block-WireServer' "$WORK/azure"
	grep -qF 'Disable-LocalUser' "$WORK/azure"
	grep -qF '"/unattend:$unattend"' "$WORK/azure"
	sed -n "/^if (\$Platform -eq 'iso') {/,/^}/p" "$s" >"$WORK/iso"
	! grep -qF 'Block-WireServer' "$WORK/iso" || false
	run python3 "$WB_SRC/tests/node/winnode.py" native "$s"
	assert_status 0
	assert_output_has '["\"$env:SystemRoot\\System32\\net.exe\"", "accounts", "/maxpwage:unlimited"]'
}
