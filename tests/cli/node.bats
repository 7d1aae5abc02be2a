#!/usr/bin/env bats
# issue 14: the node the image boots into. The argv each program receives
# on Windows is computed by the model in tests/node/winnode.py (PowerShell
# 5.1 argument passing, CommandLineToArgvW, Go's EscapeArg) from the files
# `winbuild build` writes.
load helpers
load ../lib/servers
load stage_fixtures

setup() {
	fixture_setup
	# the shipped recipes leave the Windows ISO's digest to the user
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256"
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
	[ "$(echo "$output" | sed -n 2p)" = '["C:\\k\\kube-log-runner.exe", "--log-file=C:\\var\\log\\kubelet\\kubelet.log", "--log-file-size=100Mi", "--log-file-age=168h", "--flush-interval=5s", "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File", "C:\\k\\StartKubelet.ps1"]' ]
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
	grep -qF 'Remove-ServiceAndWait -Name $name' "$s/05-services.ps1"
	# the wait loop polls Get-Service until the service is gone
	sed -n '/^function Remove-ServiceAndWait/,/^}/p' "$s/05-services.ps1" >"$WORK/f"
	grep -q "'delete', \$Name" "$WORK/f"
	grep -q 'Get-Service -Name \$Name' "$WORK/f"
	grep -q 'Start-Sleep' "$WORK/f"
}

@test "item 4/8: every emitted .ps1 (Packer steps and the tree's scripts) passes the PowerShell 5.1 lint" {
	need_ps_node
	cp "$WORK/fixtures.yaml" "$WORK/fix-sc.yaml"
	replace_entry nssm nssm-2.24.zip >>"$WORK/fixtures.yaml"
	for sm in sc nssm; do
		if [ $sm = sc ]; then
			wb build "$RECIPE" -O "$WORK/fix-sc.yaml" --no-progress -o "$WORK/o-$sm"
		else
			build --set node.service_manager=nssm --set components.nssm.enabled=true -o "$WORK/o-$sm"
		fi
		assert_status 0
		mapfile -t files < <(find "$WORK/o-$sm/$NAME/packer" "$WORK/o-$sm/$NAME/tree" -iname '*.ps1' | sort)
		[ "${#files[@]}" -ge 9 ]
		run node "$WB_SRC/tests/ps/lint51.cjs" "${files[@]}"
		echo "$output"
		assert_status 0
	done
}

@test "item 8: the lint finds 2>&1 under Stop, && / || / ?? / ?: / -Parallel and unchecked native calls" {
	need_ps_node
	cat >"$WORK/bad.ps1" <<-'PS'
	$ErrorActionPreference = 'Stop'
	& $exe @a 2>&1 | Out-Null
	if ($LASTEXITCODE -ne 0) { throw 'x' }
	sc.exe stop kubelet
	Write-Host 'no check'
	git status && Write-Host ok
	$x = $y ?? 3
	1..3 | ForEach-Object -Parallel { $_ }
	netsh int ipv4 set dynamicport tcp start=34000 num=31536
	if ($LASTEXITCODE -ne 0) { throw 'netsh' }
	PS
	run node "$WB_SRC/tests/ps/lint51.cjs" "$WORK/bad.ps1"
	echo "$output"
	assert_status 1
	assert_output_has "bad.ps1:2:11: redirect 2>&1 under"
	assert_output_has "bad.ps1:4:1: unchecked exit code of \"sc.exe stop kubelet"
	assert_output_has "bad.ps1:6:12: pwsh7 && is PowerShell 7-only"
	assert_output_has "bad.ps1:7:"
	assert_output_has "bad.ps1:8:23: pwsh7 -Parallel"
	assert_output_lacks "bad.ps1:2:1: unchecked"
	assert_output_lacks "bad.ps1:9:"
}

# issue 40 item 3: one broken script per class that pwsh 7 runs and Windows
# PowerShell 5.1 does not (or runs differently); each is caught, with its
# place, by a rule built from 5.1's own cmdlet reference (tests/ps/
# ps51-reference.json, made by gen-ps51-reference.py from PowerShell-Docs)
lint_one() {
	printf '%s\n' "$@" >"$WORK/slip.ps1"
	run node "$WB_SRC/tests/ps/lint51.cjs" "$WORK/slip.ps1"
	echo "$output"
	assert_status 1
}

@test "issue 40 item 3: the 5.1 lint catches each class pwsh 7 accepts and 5.1 does not, with its place" {
	need_ps_node
	stop="\$ErrorActionPreference = 'Stop'"
	# a parameter 5.1's cmdlet lacks
	lint_one '$h = Get-Content -Raw -LiteralPath c.json | ConvertFrom-Json -AsHashtable'
	assert_output_has "slip.ps1:1:62: param51 -AsHashtable is not a parameter of ConvertFrom-Json in Windows PowerShell 5.1 (reference/5.1/Microsoft.PowerShell.Utility/ConvertFrom-Json.md)"
	lint_one '$b = Get-Content -LiteralPath f.bin -AsByteStream'
	assert_output_has "slip.ps1:1:37: param51 -AsByteStream is not a parameter of Get-Content"
	lint_one '$n = Split-Path -LiteralPath C:\k\kubelet.exe -LeafBase'
	assert_output_has "slip.ps1:1:47: param51 -LeafBase is not a parameter of Split-Path"
	# an abbreviation that is ambiguous in 5.1
	lint_one 'Get-ChildItem -LiteralPath C:\k -Fi x'
	assert_output_has "slip.ps1:1:33: param51 -Fi is ambiguous"
	# more positional arguments than 5.1 binds (-AdditionalChildPath is 7's)
	lint_one '$p = Join-Path $env:ProgramFiles containerd bin'
	assert_output_has "slip.ps1:1:6: args51 Join-Path takes at most 2 positional arguments in Windows PowerShell 5.1, given 3"
	# a value 5.1 does not accept
	lint_one "'x' | Out-File -LiteralPath c.toml -Encoding utf8NoBOM"
	assert_output_has "slip.ps1:1:36: value51 -Encoding utf8NoBOM is not a value Windows PowerShell 5.1's Out-File accepts"
	lint_one "Set-Content -LiteralPath c.toml -Value x -Encoding:utf8BOM"
	assert_output_has "slip.ps1:1:42: value51 -Encoding utf8BOM"
	# a file write without an explicit encoding (5.1: UTF-16LE or ANSI)
	lint_one "'x' | Out-File -LiteralPath config.toml"
	assert_output_has "slip.ps1:1:7: encoding Out-File without -Encoding writes UTF-16LE in Windows PowerShell 5.1"
	lint_one "Set-Content -LiteralPath config.toml -Value x"
	assert_output_has "slip.ps1:1:1: encoding Set-Content without -Encoding writes the ANSI code page"
	lint_one "Add-Content -LiteralPath kubeadm-flags.env -Value x"
	assert_output_has "slip.ps1:1:1: encoding Add-Content without -Encoding"
	lint_one "Get-Service | Export-Csv -LiteralPath s.csv"
	assert_output_has "slip.ps1:1:15: encoding Export-Csv without -Encoding writes ASCII"
	lint_one "Get-Service | Tee-Object -FilePath s.txt"
	assert_output_has "slip.ps1:1:15: encoding Tee-Object writes UTF-16LE"
	lint_one "'x' > config.toml"
	assert_output_has "slip.ps1:1:5: encoding > writes UTF-16LE in Windows PowerShell 5.1"
	lint_one "'x' >> config.toml"
	assert_output_has "slip.ps1:1:5: encoding >> writes UTF-16LE"
	# a native program's stderr redirected under Stop (5.1: NativeCommandError)
	lint_one "$stop" 'sc.exe query kubelet 2>$null' 'if ($LASTEXITCODE -ne 0) { throw "x" }'
	assert_output_has "slip.ps1:2:22: redirect 2>\$null on a native program under \$ErrorActionPreference = 'Stop'"
	lint_one "$stop" 'dism.exe /Online /Get-Features 2> $null' 'if ($LASTEXITCODE -ne 0) { throw "x" }'
	assert_output_has "slip.ps1:2:32: redirect 2> \$null on a native program"
	lint_one "$stop" '& $ctr images ls *>$null' 'if ($LASTEXITCODE -ne 0) { throw "x" }'
	assert_output_has "slip.ps1:2:18: redirect *>\$null on a native program"
	# cmdlets and variables only 7 has
	lint_one 'Test-Json -Json $s'
	assert_output_has "slip.ps1:1:1: pwsh7 test-json is not in Windows PowerShell 5.1"
	lint_one 'if ($IsWindows) { $d = "C:\k" }'
	assert_output_has "slip.ps1:1:5: pwsh7 \$IsWindows is not defined in Windows PowerShell 5.1"
	lint_one '$PSNativeCommandUseErrorActionPreference = $false'
	assert_output_has "slip.ps1:1:1: pwsh7 \$PSNativeCommandUseErrorActionPreference"
	# Server Core has no Internet Explorer
	lint_one 'Invoke-WebRequest -Uri http://127.0.0.1/x -OutFile f'
	assert_output_has "slip.ps1:1:1: param51 Invoke-WebRequest without -UseBasicParsing"
	# and the right forms pass: what 5.1 has, written the 5.1 way
	printf '%s\n' "$stop" \
		'$h = Get-Content -Raw -LiteralPath c.json | ConvertFrom-Json' \
		'$p = Join-Path (Join-Path $env:ProgramFiles containerd) bin' \
		"'x' | Out-File -LiteralPath c.toml -Encoding ascii" \
		'Set-Content -LiteralPath c.toml -Value x -Encoding UTF8' \
		'[IO.File]::WriteAllText("c.toml", "x")' \
		'& sc.exe query kubelet | Out-Null' 'if ($LASTEXITCODE -ne 0) { throw "x" }' \
		'Get-Item -LiteralPath C:\k 2>$null | Out-Null' \
		'$x = $null' \
		'Write-Host a b c' >"$WORK/ok.ps1"
	run node "$WB_SRC/tests/ps/lint51.cjs" "$WORK/ok.ps1"
	echo "$output"
	assert_status 0
}

@test "issue 40 item 3: the lint's 5.1 reference names its source and covers the cmdlets the steps call" {
	need_ps_node
	ref="$WB_SRC/tests/ps/ps51-reference.json"
	run python3 - "$ref" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["source"]["repo"] == "MicrosoftDocs/PowerShell-Docs", d["source"]
	assert len(d["source"]["commit"]) == 40, d["source"]
	c = d["cmdlets"]
	# the cmdlets the emitted steps call most, with the parameters they pass
	for name, params in {"get-content": ["Raw", "LiteralPath", "Encoding"],
	                     "join-path": ["Path", "ChildPath"],
	                     "set-content": ["Encoding", "Value", "LiteralPath"],
	                     "out-file": ["Encoding", "LiteralPath"],
	                     "start-process": ["Wait", "PassThru", "ArgumentList"],
	                     "copy-item": ["LiteralPath", "Destination", "Force"]}.items():
	    for p in params:
	        assert p in c[name]["params"], (name, p)
	assert "AsHashtable" not in c["convertfrom-json"]["params"]
	assert "UTF8" in c["out-file"]["params"]["Encoding"]["accepted"]
	assert "test-json" not in c and "Test-Json" in d["only_in_7"]
	assert "iswindows" in d["variables_only_in_7"]
	print(len(c), "cmdlets")
	PY
	echo "$output"
	assert_status 0
}

@test "item 4: SetSetupComplete.cmd runs after SetupComplete.cmd is removed, so a second run does not stack it" {
	build
	assert_status 0
	s="$(O)/packer/scripts/03-cloudbase-init.ps1"
	rm_line=$(grep -n 'Remove-Item -LiteralPath \$setupScript -Force' "$s" | cut -d: -f1)
	run_line=$(grep -n 'Invoke-Native -FilePath \$setupComplete$' "$s" | cut -d: -f1)
	[ -n "$rm_line" ] && [ -n "$run_line" ] && [ "$rm_line" -lt "$run_line" ]
	grep -qF '$setupScript = "$env:SystemRoot\Setup\Scripts\SetupComplete.cmd"' "$s"
}

@test "item 3: containerd 1.7 gets config v2 + bin_dir, 2.0.x v3 + bin_dir, 2.1+ v3 + bin_dirs (key tables per version)" {
	fixture_override containerd-1.7.28-windows-amd64.tar.gz >"$WORK/fix17.yaml"
	for v in 1.7.28 2.0.6 2.1.4 2.3.0; do
		if [ $v = 1.7.28 ]; then f="$WORK/fix17.yaml"; else f="$WORK/fixtures.yaml"; fi
		wb stage "$RECIPE" -O "$f" --no-progress --set components.containerd.version=$v -o "$WORK/o-$v"
		assert_status 0
		run python3 "$WB_SRC/tests/node/keytables.py" containerd $v \
			"$WORK/o-$v/$NAME/tree/Program Files/containerd/config.toml"
		echo "$v: $output"
		assert_status 0
	done
	# the table refuses the other version's key
	run python3 "$WB_SRC/tests/node/keytables.py" containerd 2.0.6 \
		"$WORK/o-2.1.4/$NAME/tree/Program Files/containerd/config.toml"
	assert_status 1
	assert_output_has "bin_dirs"
}

@test "item 3: the 2025 image's pause image has a Windows Server 2025 variant (3.10.2 or image-builder's 3.10.1-3)" {
	run "$WINBUILD" plan "$WB_SRC/recipes/windows-2025-containerd.yaml" --json
	assert_status 0
	python3 -c '
import json, sys
img = json.loads(sys.argv[1])["image"]["pause_image"]
assert img in ("registry.k8s.io/pause:3.10.2", "mcr.microsoft.com/oss/v2/kubernetes/pause:3.10.1-3"), img
' "$output"
}

@test "item 2: the default build of the five builders gives each its platform's metadata service, never HttpService; Azure reports provisioning" {
	build
	assert_status 0
	d="$(O)/tree/ProgramData/winbuild/cloudbase-init"
	for pb in azure:azure-arm aws:amazon-ebs vsphere:vsphere-iso nocloud:qemu nocloud:hyperv-iso; do
		p=${pb%%:*}
		run python3 "$WB_SRC/tests/node/keytables.py" cloudbase-init "$p" \
			"$d/$p/cloudbase-init.conf" "$d/$p/cloudbase-init-unattend.conf"
		echo "$p: $output"
		assert_status 0
		# the emitted step maps the builder to that provider
		grep -qF "'${pb#*:}=$p'" "$(O)/packer/scripts/03-cloudbase-init.ps1"
	done
	! grep -rqi httpservice "$d" || false
	[ "$(ls "$d")" = "$(printf 'aws\nazure\nnocloud\nvsphere')" ]
	python3 - "$d/azure/cloudbase-init.conf" "$d/azure/cloudbase-init-unattend.conf" <<-'PY'
	import configparser, sys
	c = configparser.ConfigParser(interpolation=None); c.read(sys.argv[1]); d = c["DEFAULT"]
	assert d.getboolean("metadata_report_provisioning_started"), dict(d)
	assert d.getboolean("metadata_report_provisioning_completed"), dict(d)
	assert d["san_policy"] == "OnlineAll" and d["first_logon_behaviour"] == "no"
	assert not d.getboolean("inject_user_password")
	u = configparser.ConfigParser(interpolation=None); u.read(sys.argv[2]); u = u["DEFAULT"]
	assert not u.getboolean("allow_reboot") and not u.getboolean("stop_service_on_exit")
	PY
	# the step picks the conf by PACKER_BUILDER_TYPE (Packer sets it)
	grep -qF '$builder = "$env:PACKER_BUILDER_TYPE"' "$(O)/packer/scripts/03-cloudbase-init.ps1"
}

@test "item 2: a provider that contradicts a builder is refused at plan time with file:line:col" {
	cp -r "$WB_SRC/recipes" "$WORK/r"
	sed -i 's/^  provider: auto$/  provider: generic-http/' "$WORK/r/common/containerd-node.yaml"
	line=$(grep -n '^  provider: generic-http$' "$WORK/r/common/containerd-node.yaml" | cut -d: -f1)
	wb plan "$WORK/r/windows-2022-containerd.yaml"
	assert_status 2
	assert_output_has "containerd-node.yaml:$line:13: cloudbase_init.provider 'generic-http' contradicts Packer builder 'azure-arm'"
	wb build "$RECIPE" -O "$WORK/fixtures.yaml" --no-progress --set cloudbase_init.provider=azure
	assert_status 2
	assert_output_has "cloudbase_init.provider 'azure' contradicts Packer builder 'vsphere-iso'"
	[ ! -e "$(O)" ]
	# asked for explicitly, with a builder it fits: OpenStack's HttpService
	build --set cloudbase_init.provider=openstack --set 'packer.builders=[qemu]'
	assert_status 0
	run python3 "$WB_SRC/tests/node/keytables.py" cloudbase-init openstack \
		"$(O)/tree/ProgramData/winbuild/cloudbase-init/openstack/cloudbase-init.conf"
	assert_status 0
}

@test "item 5: win-bridge and sdnbridge conflists (a fixed pod subnet, an HNS network nothing creates) are refused at plan time" {
	for cni in win-bridge sdnbridge; do
		wb plan "$RECIPE" --set node.cni=$cni
		assert_status 2
		assert_output_has "node.cni"
		assert_output_has "$cni"
	done
	[ ! -e "$WB_SRC/recipes/templates/cni/win-bridge.conflist" ]
	[ ! -e "$WB_SRC/recipes/templates/cni/sdnbridge.conflist" ]
}

@test "item 5: node settings: dynamic port range, HNS flags per Windows version, EnableCompartmentNamespace, Hyper-V management via dism" {
	for v in 2019 2022; do
		wb build "$WB_SRC/recipes/windows-$v-containerd.yaml" -O "$WORK/fixtures.yaml" --no-progress -o "$WORK/o$v"
		assert_status 0
		s="$WORK/o$v/windows-$v-containerd/packer/scripts/01-windows-features.ps1"
		for proto in tcp udp; do
			grep -qF "Invoke-Native -FilePath \"\$env:SystemRoot\\System32\\netsh.exe\" -ArgumentList @('int', 'ipv4', 'set', 'dynamicport', '$proto', 'start=34000', 'num=31536')" "$s"
		done
		grep -qF "Invoke-Native -FilePath \"\$env:SystemRoot\\System32\\dism.exe\" -ArgumentList @('/online', '/enable-feature', '/featurename:Microsoft-Hyper-V', '/all', '/NoRestart') -Ok @(0, 1, 3010)" "$s"
		grep -qF "Set-RegistryDword -Path \$HnsState -Name 'EnableCompartmentNamespace' -Value 1" "$s"
		grep -qF "\$WindowsVersion = '$v'" "$s"
		# netsh and dism receive exactly the arguments written
		run python3 "$WB_SRC/tests/node/winnode.py" native "$WORK/o$v/windows-$v-containerd/packer/scripts/"*.ps1
		assert_status 0
		assert_output_has '"dynamicport", "udp", "start=34000", "num=31536"]'
		assert_output_has '"/featurename:Microsoft-Hyper-V", "/all", "/NoRestart"]'
	done
	# msiexec: the MSI, the log and the recipe's properties, one argument each
	run python3 "$WB_SRC/tests/node/winnode.py" msiexec "$WORK/o2022/windows-2022-containerd/packer/scripts"
	assert_status 0
	[ "$output" = '["msiexec.exe", "/i", "C:\\ProgramData\\winbuild\\installers\\CloudbaseInitSetup_x64.msi", "/qn", "/norestart", "/l*v", "C:\\ProgramData\\winbuild\\cloudbase-init-install.log", "RUN_SERVICE_AS_LOCAL_SYSTEM=1"]' ]
	# 2019 only: HNSControlFlag 0x50 and the WCIFS fix, inside the version test
	for v in 2019 2022; do
		sed -n "/^if (\$WindowsVersion -eq '2019') {/,/^}/p" \
			"$WORK/o$v/windows-$v-containerd/packer/scripts/01-windows-features.ps1" >"$WORK/b$v"
		grep -qF "Set-RegistryDword -Path \$HnsState -Name 'HNSControlFlag' -Value 0x50" "$WORK/b$v"
		grep -qF -- "-Name 'WcifsSOPCountDisabled' -Value 0" "$WORK/b$v"
	done
}

@test "item 6: the shipped images use Kubernetes 1.36 and a crictl of the same minor, with the source recorded; containerd 1.7 and 2.0 stay selectable" {
	run "$WINBUILD" plan "$RECIPE" --json
	assert_status 0
	python3 -c '
import json, sys
p = json.loads(sys.argv[1])
v = {c["name"]: c["version"] for c in p["components"]}
k, c = v["kubernetes"].split("."), v["crictl"].split(".")
assert (int(k[0]), int(k[1])) >= (1, 36), v
assert k[:2] == c[:2], v
assert tuple(map(int, v["cloudbase-init"].split("."))) >= (1, 1, 8), v
assert tuple(map(int, v["containerd"].split(".")[:2])) >= (2, 3), v
assert tuple(map(int, v["cni-plugins"].split(".")[:2])) >= (1, 9), v
' "$output"
	grep -q 'Source: https://kubernetes.io/releases/1.36/' "$WB_SRC/recipes/common/containerd-node.yaml"
	# 1.7 publishes no build provenance: it plans through the override that
	# says so (tests/cli/upstream_shipped.bats checks the error without it)
	run "$WINBUILD" plan "$RECIPE" -O "$WB_SRC/overrides/containerd-1.7.yaml"
	assert_status 0
	assert_output_has "component containerd 1.7.28"
	run "$WINBUILD" plan "$RECIPE" --set components.containerd.version=2.0.6
	assert_status 0
	assert_output_has "component containerd 2.0.6"
}

@test "item 5: the FeatureManagement overrides image-builder applies: 1114842764=0 on 2022, 520997518=1 on 2025, none on 2019" {
	for v in 2019 2022 2025; do
		wb build "$WB_SRC/recipes/windows-$v-containerd.yaml" -O "$WORK/fixtures.yaml" --no-progress -o "$WORK/o$v"
		assert_status 0
		s="$WORK/o$v/windows-$v-containerd/packer/scripts/01-windows-features.ps1"
		grep -qF "\$FeatureOverrides = 'HKLM:\\SYSTEM\\CurrentControlSet\\Policies\\Microsoft\\FeatureManagement\\Overrides'" "$s"
		for w in 2022 2025; do
			sed -n "/^if (\$WindowsVersion -eq '$w') {/,/^}/p" "$s" >"$WORK/b$v-$w"
		done
		grep -qxF "    Set-RegistryDword -Path \$FeatureOverrides -Name '1114842764' -Value 0" "$WORK/b$v-2022"
		grep -qxF "    Set-RegistryDword -Path \$FeatureOverrides -Name '520997518' -Value 1" "$WORK/b$v-2025"
		# each override only inside its own version test
		[ "$(grep -c 'FeatureOverrides -Name' "$s")" = 2 ]
		grep -qF "\$WindowsVersion = '$v'" "$s"
	done
	# the source is cited where they are applied
	grep -q 'images/capi/ansible/windows/roles/' "$WB_SRC/packer/scripts/01-windows-features.ps1.in"
}
