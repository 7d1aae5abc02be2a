#!/usr/bin/env bats
# winbuild emit: Packer inputs from a staged output. Until `winbuild stage`
# exists the staged output is written by fixtures/emit/make-staged.py
# (docs/manifest.md). External validators: Debian's Packer 1.6.6
# (`packer validate`, `packer fmt -check`, offline) and the tree-sitter
# PowerShell grammar (tests/ps, installed by `make deps`).

load helpers

BUILDERS="azure-arm vsphere-iso qemu hyperv-iso amazon-ebs"
PSPARSE="$WB_SRC/tests/ps/psparse.cjs"

setup() {
	common_setup
	# the shipped recipes leave the ISO digest to the user
	packer_setup secrets staged
}

# staged NAME VERSION [flags]: write out/NAME/{tree,manifest.json}
staged() {
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out "$@"
}

recipe() {
	echo "$WB_SRC/recipes/windows-$1-containerd.yaml"
}

@test "emit: every shipped image recipe x every builder passes packer validate and fmt -check" {
	need_dep command -v packer -- "packer not installed (make deps)"
	n=0
	for r in "$WB_SRC"/recipes/windows-*.yaml; do
		v=$(basename "$r" .yaml | sed -E 's/windows-([0-9]+)-.*/\1/')
		name=$(basename "$r" .yaml)
		for b in $BUILDERS; do
			rm -rf out
			staged "$name" "$v"
			wb emit "$r" --builder "$b"
			assert_status 0
			dir="out/$name/packer"
			run packer validate "$dir"
			if [ "$status" -ne 0 ]; then
				echo "packer validate $name $b:" >&2
				echo "$output" >&2
				return 1
			fi
			run packer fmt -check "$dir"
			[ "$status" -eq 0 ] || { echo "fmt $name $b: $output" >&2; return 1; }
			run packer fmt -check "$dir/init"
			[ "$status" -eq 0 ] || { echo "fmt init $name $b: $output" >&2; return 1; }
			grep -q "source \"$b\" \"node\"" "$dir/$name.pkr.hcl"
			[ "$(grep -c '^source ' "$dir/$name.pkr.hcl")" -eq 1 ]
			n=$((n + 1))
		done
	done
	[ "$n" -ge 15 ]
}

@test "emit: all builders at once validate; validate runs from another directory" {
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)"
	assert_status 0
	[ "$(grep -c '^source ' out/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl)" -eq 5 ]
	cd /
	run packer validate "$WORK/out/windows-2022-containerd/packer"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

@test "emit: CD for qemu/vsphere-iso/hyperv-iso, the archive only for azure-arm/amazon-ebs" {
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --builder qemu --builder hyperv-iso --builder vsphere-iso
	assert_status 0
	hcl=out/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl
	[ "$(grep -c 'cd_files' "$hcl")" -eq 3 ]
	grep -q 'cd_label *= "WINBUILD"' "$hcl"
	# no payload upload (the first-boot WinRM script has a file provisioner
	# of its own; as a bare "! grep" this line could not fail)
	! grep -qF '${path.root}/payload.zip' "$hcl" || false
	[ ! -e out/windows-2022-containerd/packer/payload.zip ]

	wb emit "$(recipe 2022)" --builder azure-arm --builder amazon-ebs
	assert_status 0
	! grep -q 'cd_files' "$hcl" || false
	grep -qF 'source      = "${path.root}/payload.zip"' "$hcl"
	grep -q 'only *= \["azure-arm.node", "amazon-ebs.node"\]' "$hcl"
	zip=out/windows-2022-containerd/packer/payload.zip
	[ -f "$zip" ]
	# the manifest travels with the payload, and every manifest file is in it
	bsdtar -tf "$zip" > list
	grep -qx manifest.json list
	python3 - out/windows-2022-containerd/manifest.json list <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
have = set(open(sys.argv[2]).read().split("\n"))
missing = [f["tree_path"] for f in m["files"] if "tree/" + f["tree_path"] not in have]
assert not missing, missing
PY
	# the archive holds the verified bytes
	mkdir x && bsdtar -xf "$zip" -C x
	diff -r x/tree out/windows-2022-containerd/tree
	cmp x/manifest.json out/windows-2022-containerd/manifest.json
}

@test "emit: a tree file changed after staging is refused when archived (exit 1)" {
	staged windows-2022-containerd 2022
	echo tampered >> "out/windows-2022-containerd/tree/k/kubelet.exe"
	wb emit "$(recipe 2022)" --builder azure-arm
	assert_status 1
	assert_output_has "k/kubelet.exe"
	assert_output_has "does not match the manifest"
	[ ! -e out/windows-2022-containerd/packer ]
	# same size, one byte flipped
	rm -rf out && staged windows-2022-containerd 2022
	python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[0]^=1; open(p,"wb").write(b)' \
		out/windows-2022-containerd/tree/opt/cni/bin/win-bridge.exe
	wb emit "$(recipe 2022)" --builder amazon-ebs
	assert_status 1
	assert_output_has "opt/cni/bin/win-bridge.exe"
	[ ! -e out/windows-2022-containerd/packer ]
}

@test "emit: the var file holds editable values and no secret; secrets are sensitive variables" {
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)"
	assert_status 0
	vars=out/windows-2022-containerd/packer/windows-2022-containerd.auto.pkrvars.hcl
	hcl=out/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl
	! grep -Eq '^(winrm_password|vsphere_password|azure_client_secret)' "$vars" || false
	! grep -q secret "$vars" || ! grep -Eq '_secret *=' "$vars" || false
	for v in winrm_password vsphere_password azure_client_secret; do
		python3 - "$hcl" "$v" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r'variable "%s" \{(.*?)\n\}' % sys.argv[2], text, re.S)
assert m, sys.argv[2]
assert re.search(r'sensitive\s*=\s*true', m.group(1)), sys.argv[2]
# no value of its own: unset (null) so the other builders validate without it
d = re.search(r'default\s*=\s*(\S+)', m.group(1))
assert d is None or d.group(1) == "null", sys.argv[2]
PY
	done
	# the shipped 2022 recipe is Server Core: so are the cloud base images
	grep -q 'azure_image_sku *= "2022-datacenter-core-g2"' "$vars"
	grep -q 'aws_source_ami_name *= "Windows_Server-2022-English-Core-Base-\*"' "$vars"
	grep -q 'communicator *= "winrm"' "$hcl"
}

@test "emit: no construct Packer 1.6.6 rejects in the template; plugins in init/ only" {
	staged windows-2025-containerd 2025
	wb emit "$(recipe 2025)"
	assert_status 0
	dir=out/windows-2025-containerd/packer
	for f in "$dir"/*.pkr.hcl "$dir"/*.pkrvars.hcl; do
		# (comments aside: the header tells the user to run packer init on
		# init/required_plugins.pkr.hcl)
		! grep -vE '^[[:space:]]*#' "$f" | grep -nE 'required_plugins|^[[:space:]]*data[[:space:]]+"|templatefile[[:space:]]*\(|^[[:space:]]*content[[:space:]]*=|use_pwsh|cd_content' || false
		! grep -nE '^[[:space:]]*packer[[:space:]]*\{' "$f" || false
	done
	grep -q required_plugins "$dir/init/required_plugins.pkr.hcl"
	for p in hashicorp/azure vmware/vsphere hashicorp/qemu hashicorp/hyperv hashicorp/amazon; do
		grep -q "github.com/$p\"" "$dir/init/required_plugins.pkr.hcl"
	done
	grep -q 'packer init init/required_plugins.pkr.hcl' "$dir/README.md"
	grep -q 'packer init' "$dir/windows-2025-containerd.pkr.hcl"
}

@test "emit: two emits of the same inputs are byte-identical" {
	staged windows-2019-containerd 2019 --sbom
	wb emit "$(recipe 2019)"
	assert_status 0
	cp -a out/windows-2019-containerd/packer first
	sleep 1
	wb emit "$(recipe 2019)"
	assert_status 0
	# the one-off Administrator password of the answer files is new each
	# time; every other byte is the same
	[ "$(iso_password first)" != "$(iso_password out/windows-2019-containerd/packer)" ]
	mask_iso_password first
	mask_iso_password out/windows-2019-containerd/packer
	diff -r first out/windows-2019-containerd/packer
	cmp first/payload.zip out/windows-2019-containerd/packer/payload.zip
	# and in another output directory, at another time
	mkdir other && cd other
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out windows-2019-containerd 2019 --sbom
	run "$WINBUILD" emit "$(recipe 2019)"
	[ "$status" -eq 0 ]
	mask_iso_password out/windows-2019-containerd/packer
	diff -r ../first out/windows-2019-containerd/packer
}

@test "emit: every emitted .ps1 parses with tree-sitter-powershell (no ERROR/MISSING node)" {
	need_dep test -d "$WB_SRC/tests/ps/node_modules/web-tree-sitter" -- "run make deps (npm ci in tests/ps)"
	staged windows-2022-containerd 2022 --nssm
	wb emit "$(recipe 2022)" --set node.service_manager=nssm --set components.nssm.enabled=true
	assert_status 0
	files=(out/windows-2022-containerd/packer/scripts/*.ps1)
	[ "${#files[@]}" -eq 9 ]   # 01-08 and firstboot-winrm (issue 40)
	run node "$PSPARSE" "${files[@]}"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	rm -rf out && staged windows-2019-containerd 2019
	wb emit "$(recipe 2019)" --set 'node.windows_features=[Containers,Hyper-V]'
	assert_status 0
	run node "$PSPARSE" out/windows-2019-containerd/packer/scripts/*.ps1
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	grep -q "'Hyper-V'" out/windows-2019-containerd/packer/scripts/01-windows-features.ps1
}

@test "emit: the PowerShell parser check catches a broken script" {
	need_dep test -d "$WB_SRC/tests/ps/node_modules/web-tree-sitter" -- "run make deps (npm ci in tests/ps)"
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --builder qemu
	assert_status 0
	# drop the closing brace of the first block of a real emitted script
	sed '0,/^}$/{/^}$/d}' out/windows-2022-containerd/packer/scripts/05-services.ps1 > broken.ps1
	! cmp -s broken.ps1 out/windows-2022-containerd/packer/scripts/05-services.ps1 || false
	run node "$PSPARSE" broken.ps1
	[ "$status" -eq 1 ]
	[[ "$output" == *"broken.ps1:"*"ERROR"* || "$output" == *"broken.ps1:"*"MISSING"* ]]
	printf 'if ($x -eq 1 {\n  Write-Host "a"\n' > broken2.ps1
	run node "$PSPARSE" broken2.ps1
	[ "$status" -eq 1 ]
}

@test "emit: scripts are strict, check exit codes and do what the recipe says" {
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --builder qemu
	assert_status 0
	s=out/windows-2022-containerd/packer/scripts
	for f in "$s"/*.ps1; do
		grep -qx "\$ErrorActionPreference = 'Stop'" "$f"
		grep -qx 'Set-StrictMode -Version Latest' "$f"
		grep -q 'Write-Step' "$f"
		# native commands only through Invoke-Native, which checks $LASTEXITCODE
		# (or, with -AnyCode, logs it for a caller that judges the state)
		! grep -nE '^[[:space:]]*&[[:space:]]' "$f" | grep -v '& \$FilePath @ArgumentList' || false
		! grep -nE '^[[:space:]]*(sc|msiexec|nssm|sysprep|containerd)(\.exe)?[[:space:]]' "$f" || false
		grep -q 'if (\$Ok -notcontains \$code)' "$f"
	done
	grep -q "Get-FileHash -Algorithm SHA256" "$s/02-payload.ps1"
	grep -q "'/qn'" "$s/03-cloudbase-init.ps1"
	grep -q "'/l\*v'" "$s/03-cloudbase-init.ps1"
	grep -q "RUN_SERVICE_AS_LOCAL_SYSTEM=1" "$s/03-cloudbase-init.ps1"
	grep -q "SetSetupComplete.cmd" "$s/03-cloudbase-init.ps1"
	grep -q "cloudbase-init.conf" "$s/03-cloudbase-init.ps1"
	grep -q "Name = 'containerd'; Manager = 'sc'" "$s/05-services.ps1"
	grep -q -- "--run-service --config" "$s/05-services.ps1"
	grep -q "C:\\\\Program Files\\\\containerd\\\\config.toml" "$s/04-containerd.ps1"
	grep -q "Add-MpPreference" "$s/04-containerd.ps1"
	grep -q "Port = 10250; Protocol = 'TCP'" "$s/05-services.ps1"
	grep -q "kube-log-runner.exe" "$s/05-services.ps1"
	grep -q "DependOn = @('containerd')" "$s/05-services.ps1"
	grep -q "'C:\\\\var\\\\lib\\\\kubelet'" "$s/05-services.ps1"
	grep -q "'/generalize', '/oobe', '/mode:vm'" "$s/08-sysprep.ps1"
	grep -q 'Unattend.xml' "$s/08-sysprep.ps1"
	grep -q '"windows-2022-containerd"' "$s/07-provenance.ps1"
}

@test "emit: nssm service manager needs nssm staged" {
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --set node.service_manager=nssm
	assert_status 2
	assert_output_has "nssm"
	rm -rf out && staged windows-2022-containerd 2022 --nssm
	wb emit "$(recipe 2022)" --set node.service_manager=nssm --set components.nssm.enabled=true --builder qemu
	assert_status 0
	grep -q "'C:\\\\Program Files\\\\nssm\\\\win64\\\\nssm.exe'" out/windows-2022-containerd/packer/scripts/05-services.ps1
	grep -q "StartKubelet.ps1" out/windows-2022-containerd/packer/scripts/05-services.ps1
}

@test "emit: usage errors (unknown builder, builder outside the recipe); no staged output stages first" {
	# nothing staged: emit stages first, and offline on an empty cache
	# that fails listing what is missing, before any packer/ is written
	wb emit "$(recipe 2022)" --offline --set components.cloudbase-init.enabled=false
	assert_status 3
	assert_output_has "kubelet"
	[ ! -e out/windows-2022-containerd/packer ]
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --builder virtualbox-iso
	assert_status 2
	assert_output_has "unknown builder 'virtualbox-iso'"
	wb emit "$(recipe 2022)" --set 'packer.builders=[qemu]' --builder azure-arm
	assert_status 2
	assert_output_has "not one of the recipe's packer.builders"
	wb emit "$(recipe 2022)" --set 'packer.builders=[qemu]'
	assert_status 0
	[ "$(grep -c '^source ' out/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl)" -eq 1 ]
	wb emit
	assert_status 2
	wb emit "$(recipe 2022)" --format image-builder
	assert_status 2
	assert_output_has "--mirror-url"
}

@test "emit: a manifest for another image is refused" {
	staged windows-2019-containerd 2019
	mkdir -p out/windows-2022-containerd
	cp out/windows-2019-containerd/manifest.json out/windows-2022-containerd/
	wb emit "$(recipe 2022)"
	assert_status 4
	assert_output_has "stage again"
}

# lock NAME...: the image's lock (windows-2022-containerd.lock) with a random digest per artifact
write_lock() {
	python3 - "$@" <<'PY'
import hashlib, json, sys
arts = {}
for n in sys.argv[1:]:
    arts[n] = {"url": "https://example.invalid/" + n, "size": 10,
               "sha256": hashlib.sha256(("lock " + n).encode()).hexdigest(),
               "verified_by": {"pinned": ["sha256"]}}
json.dump({"version": 1, "recipe": "windows-2022-containerd", "artifacts": arts},
          open("windows-2022-containerd.lock", "w"), indent=2, sort_keys=True)
PY
}

@test "emit --format image-builder: JSON with image-builder's names, mirror URLs, digests from the lock" {
	write_lock cloudbase-init cni-plugins containerd crictl kube-log-runner kube-proxy kubeadm kubectl kubelet windows-cni
	wb emit "$(recipe 2022)" --format image-builder --mirror-url http://mirror.example:8080/winbuild/
	assert_status 0
	f=out/windows-2022-containerd/image-builder/windows-2022-containerd.json
	[ -f "$f" ]
	python3 - "$f" windows-2022-containerd.lock <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
lock = json.load(open(sys.argv[2]))["artifacts"]
assert v["containerd_sha256_windows"] == lock["containerd"]["sha256"], v
assert v["containerd_url"] == "http://mirror.example:8080/winbuild/github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-windows-amd64.tar.gz", v["containerd_url"]
assert v["kubernetes_base_url"] == "http://mirror.example:8080/winbuild/dl.k8s.io/release/v1.36.4/bin/windows/amd64", v["kubernetes_base_url"]
assert v["kubernetes_semver"] == "v1.36.4"
assert v["cloudbase_init_url"].endswith("/github.com/cloudbase/cloudbase-init/releases/download/1.1.8/CloudbaseInitSetup_1_1_8_x64.msi")
assert v["cloudbase_init_version"] == "1.1.8"
assert v["containerd_version"] == "2.3.5"
assert v["runtime"] == "containerd"
assert v["pause_image"] == "registry.k8s.io/pause:3.10"
for k, x in v.items():
    assert isinstance(x, str), k
PY
	# deterministic
	cp "$f" first.json
	wb emit "$(recipe 2022)" --format image-builder --mirror-url http://mirror.example:8080/winbuild
	assert_status 0
	cmp first.json "$f"
}

@test "emit --format image-builder: an upstream host:port maps to the mirror's host_port directory" {
	write_lock cloudbase-init cni-plugins containerd crictl kube-log-runner kube-proxy kubeadm kubectl kubelet windows-cni
	printf 'kind: override\nreplace:\n  containerd: {url: "https://up.example:8443/c/containerd.tar.gz?x=1"}\n' >port.yaml
	wb emit "$(recipe 2022)" -O port.yaml --format image-builder --mirror-url http://m.example/w/
	assert_status 0
	python3 - out/windows-2022-containerd/image-builder/windows-2022-containerd.json <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
assert v["containerd_url"] == "http://m.example/w/up.example_8443/c/containerd.tar.gz", v["containerd_url"]
PY
}

@test "emit --format image-builder: a --mirror-url that is not UTF-8 is refused, not dropped from the JSON" {
	write_lock cloudbase-init cni-plugins containerd crictl kube-log-runner kube-proxy kubeadm kubectl kubelet windows-cni
	wb emit "$(recipe 2022)" --format image-builder --mirror-url "$(printf 'http://m.example/\xff/')"
	assert_status 2
	assert_output_has "--mirror-url is not valid UTF-8"
	[ ! -e out/windows-2022-containerd/image-builder/windows-2022-containerd.json ]
}

@test "emit --format image-builder: needs the lock, and every used artifact in it" {
	wb emit "$(recipe 2022)" --format image-builder --mirror-url http://m/
	assert_status 2
	assert_output_has "winbuild lock"
	write_lock containerd
	wb emit "$(recipe 2022)" --format image-builder --mirror-url http://m/
	assert_status 2
	assert_output_has "is not in the lock"
	write_lock cloudbase-init cni-plugins containerd crictl kube-log-runner kube-proxy kubeadm kubectl kubelet windows-cni
	wb emit "$(recipe 2022)" --format image-builder --mirror-url ftp://m/
	assert_status 2
	wb emit "$(recipe 2022)" --format rpm --mirror-url http://m/
	assert_status 2
}

# emit_blocked SIGNAL: emit for azure-arm with one staged file turned into
# a FIFO, so emit blocks in the payload archive with its temp dir (and the
# one-off password files) written; SIGNAL it; sets $status and $output
emit_blocked() {
	staged windows-2022-containerd 2022
	f=out/windows-2022-containerd/tree/k/kubelet.exe
	mv "$f" kubelet.keep && mkfifo "$f"
	"$WINBUILD" emit "$(recipe 2022)" --builder azure-arm --builder qemu >emit.out 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		[ -n "$(ls -d out/windows-2022-containerd/.packer.tmp.* 2>/dev/null)" ] &&
			[ -e out/windows-2022-containerd/.packer.tmp.$pid/payload.zip ] && break
		sleep 0.05
	done
	[ -e out/windows-2022-containerd/.packer.tmp.$pid/iso-admin.auto.pkrvars.hcl ]
	sleep 0.2
	kill -"$1" "$pid"
	# an emit that ignores the signal (a background job inherits SIGINT
	# ignored) would block on the FIFO for ever: give it 10 s
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid" || true
		echo "emit did not stop on SIG$1" >&2
		return 1
	fi
	status=0
	wait "$pid" || status=$?
	output=$(cat emit.out)
}

@test "issue 28: SIGINT or SIGTERM during emit: exit 130, no temp dir (nor its one-off password) left, no packer/" {
	for sig in INT TERM; do
		rm -rf out
		emit_blocked "$sig"
		assert_status 130
		assert_output_has "interrupted while archiving 'k/kubelet.exe'"
		[ -z "$(ls -A out/windows-2022-containerd | grep -v -x -e tree -e manifest.json)" ] || {
			ls -la out/windows-2022-containerd >&2; return 1; }
		! grep -rq "AdministratorPassword\|iso_admin_password" out/windows-2022-containerd --include='*.hcl' --include='*.xml' || false
	done
}

@test "issue 28: what a killed emit left (.packer.tmp.PID of a dead process) is removed by the next emit; a live run's is kept" {
	emit_blocked KILL
	assert_status 137
	dead=$(ls -d out/windows-2022-containerd/.packer.tmp.*)
	[ -e "$dead/iso-admin.auto.pkrvars.hcl" ]
	# a live process's temp dir (this shell's) is not ours to remove
	mkdir out/windows-2022-containerd/.packer.tmp.$$ out/windows-2022-containerd/.packer.old.999999999
	rm out/windows-2022-containerd/tree/k/kubelet.exe
	mv kubelet.keep out/windows-2022-containerd/tree/k/kubelet.exe
	wb emit "$(recipe 2022)" --builder qemu
	assert_status 0
	[ ! -e "$dead" ]
	[ ! -e out/windows-2022-containerd/.packer.old.999999999 ]
	[ -d out/windows-2022-containerd/.packer.tmp.$$ ]
	[ -f out/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl ]
}
