#!/usr/bin/env bats
# issue 14: the node the image boots into. The argv each program receives
# on Windows is computed by the model in tests/node/winnode.py (PowerShell
# 5.1 argument passing, CommandLineToArgvW, Go's EscapeArg) from the files
# `winbuild build` writes.
load helpers
load ../lib/servers
load stage_fixtures

setup() {
	common_setup
	fixture_override >"$WORK/fixtures.yaml"
	export SOURCE_DATE_EPOCH=1700000000
}

O() { echo "$WORK/out/$NAME"; }
build() { wb build "$RECIPE" -O "$WORK/fixtures.yaml" --no-progress "$@"; }
model() { run python3 "$WB_SRC/tests/node/winnode.py" "$@"; }

flags_env() {
	printf 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --node-ip=10.0.0.5 --node-labels=node.kubernetes.io/role=win,a=b --register-with-taints=os=windows:NoSchedule --cloud-provider=external --pod-infra-container-image=mcr.microsoft.com/oss/v2/kubernetes/pause:3.10.1-3"\r\n' >"$WORK/kubeadm-flags.env"
}

# the kubelet argv (last line of the model's output) holds every kubeadm flag,
# after the defaults, and the empty values exactly
assert_kubeadm_flags() {
	python3 - "$1" <<-'PY'
	import json, sys
	argv = json.loads(sys.argv[1])
	want = ['--node-ip=10.0.0.5', '--node-labels=node.kubernetes.io/role=win,a=b',
	        '--register-with-taints=os=windows:NoSchedule', '--cloud-provider=external',
	        '--pod-infra-container-image=mcr.microsoft.com/oss/v2/kubernetes/pause:3.10.1-3']
	for w in want:
	    assert w in argv, (w, argv)
	    assert argv.index(w) > argv.index('--config=C:\\var\\lib\\kubelet\\config.yaml'), argv
	assert '--enforce-node-allocatable=' in argv and '--resolv-conf=' in argv, argv
	assert not any(a.startswith('--enforce-node-allocatable=') and a != '--enforce-node-allocatable=' for a in argv), argv
	assert argv[0] == 'C:\\k\\kubelet.exe', argv
	PY
}

@test "item 1, sc.exe: the kubelet service runs StartKubelet.ps1 through kube-log-runner, which reads kubeadm-flags.env at every start" {
	build
	assert_status 0
	flags_env
	model kubelet-sc "$(O)/packer/scripts" "$(O)/tree" "$WORK/kubeadm-flags.env"
	echo "$output"
	assert_status 0
	# sc.exe -> kube-log-runner -> powershell.exe -File StartKubelet.ps1 -> kubelet
	[ "$(echo "$output" | sed -n 2p)" = '["C:\\k\\kube-log-runner.exe", "--log-file=C:\\var\\log\\kubelet\\kubelet.log", "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File", "C:\\k\\StartKubelet.ps1"]' ]
	last=$(echo "$output" | tail -n 1)
	assert_kubeadm_flags "$last"
	# kubelet itself answers the service manager under sc.exe
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert a[1] == "--windows-service", a' "$last"
	# before kubeadm join: the defaults alone
	model kubelet-sc "$(O)/packer/scripts" "$(O)/tree"
	assert_status 0
	last=$(echo "$output" | tail -n 1)
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert "--config=C:\\var\\lib\\kubelet\\config.yaml" in a and not any(x.startswith("--node-ip") for x in a), a' "$last"
	# the start script is in the manifest, as component kubernetes
	grep -q '"path": "C:\\\\k\\\\StartKubelet.ps1"' "$(O)/manifest.json"
}

@test "item 1, nssm: the kubelet service runs the same StartKubelet.ps1, without --windows-service" {
	replace_entry nssm nssm-2.24.zip >>"$WORK/fixtures.yaml"
	build --set node.service_manager=nssm --set components.nssm.enabled=true
	assert_status 0
	flags_env
	model kubelet-nssm "$(O)/packer/scripts" "$(O)/tree" "$WORK/kubeadm-flags.env"
	echo "$output"
	assert_status 0
	last=$(echo "$output" | tail -n 1)
	assert_kubeadm_flags "$last"
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert "--windows-service" not in a, a' "$last"
}

@test "item 1: a service the other manager registered is deleted and waited for before it is created again (error 1072)" {
	build
	assert_status 0
	s="$(O)/packer/scripts"
	grep -q "Remove-ServiceAndWait -Name 'kubelet'" "$s/05-kubelet.ps1"
	# the wait loop polls Get-Service until the service is gone
	sed -n '/^function Remove-ServiceAndWait/,/^}/p' "$s/05-kubelet.ps1" >"$WORK/f"
	grep -q "'delete', \$Name" "$WORK/f"
	grep -q 'Get-Service -Name \$Name' "$WORK/f"
	grep -q 'Start-Sleep' "$WORK/f"
}
