#!/usr/bin/env bats
# issue 14 item 7: node configuration as data. A component declares its
# services (and generated files) in YAML; one generic step, 05-services.ps1,
# registers every one. The argv each program receives is computed by
# tests/node/winnode.py (PowerShell 5.1, sc.exe binPath, CommandLineToArgvW,
# kube-log-runner, nssm) from what `winbuild build` writes.
load helpers
load ../lib/servers
load stage_fixtures

PSPARSE="$WB_SRC/tests/ps/psparse.cjs"
LINT="$WB_SRC/tests/ps/lint51.cjs"

setup() {
	fixture_setup
	# the shipped pause image is needs_pin: these emit over make-staged.py trees
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256;images.pause.enabled=false"
}

O() { echo "$WORK/out/$NAME"; }
S() { echo "$WORK/out/$NAME/packer/scripts"; }
build() { wb build "$RECIPE" -O "$WORK/fixtures.yaml" --no-progress "$@"; }
svc() { run python3 "$WB_SRC/tests/node/winnode.py" service "$(S)" "$(O)/tree" "$@"; }

# the names 05-services.ps1 registers, in order
registered() {
	python3 - "$(S)" <<-'PY'
	import os, sys
	sys.path.insert(0, os.environ["WB_SRC"] + "/tests/node")
	import winnode
	recs, _ = winnode.services(sys.argv[1])
	print(" ".join(recs))
	PY
}

# a made-up component "echo" (YAML and a template only) in an image that
# includes the shipped settings: one service with blanks in an argument,
# a dependency on containerd, and a generated config file
echo_recipe() {
	mkdir -p "$WORK/img/components"
	cat >"$WORK/img/components/echo.yaml" <<-EOF
	kind: component
	name: echo
	version: "0.4.1"
	vars:
	  conf: C:\\opt\\echo\\echo.conf
	artifacts:
	  echo:
	    url: $(H)/good/kubectl.exe
	    verify: {sha256: $(sha_www good/kubectl.exe)}
	    install:
	      to: C:\\opt\\echo\\echo.exe
	generate:
	  - template: echo.conf.in
	    to: C:\\opt\\echo\\echo.conf
	    vars: {greeting: "hello from \${version}"}
	directories: [C:\\var\\log\\echo]
	services:
	  - name: echo
	    binary: C:\\opt\\echo\\echo.exe
	    depends_on: [containerd]
	    sc_args: [--as-service]
	    args:
	      - --config=\${conf}
	      - --greeting=hello world
	      - --empty=
	      - --pipe=npipe:////./pipe/echo
	EOF
	cat >"$WORK/img/components/echo.conf.in" <<-'EOF'
	# {{comment:image}} {{comment:version}}
	greeting = {{toml:greeting}}
	EOF
	cat >"$WORK/img/echo.yaml" <<-EOF
	kind: image
	name: echo-node
	include: [$WB_SRC/recipes/common/containerd-node.yaml]
	windows: {version: "2022"}
	components:
	  echo: {file: components/echo.yaml}
	EOF
}

@test "item 7: kubelet and containerd are registered by the generic step, from their YAML, with today's argv" {
	build
	assert_status 0
	[ "$(registered)" = "containerd kubelet" ]
	# containerd: what `containerd --register-service` stored, now data
	svc containerd
	echo "$output"
	assert_status 0
	[ "$(echo "$output" | sed -n 1p)" = '["sc.exe", "create", "containerd", "binPath=", "\"C:\\Program Files\\containerd\\containerd.exe\" --run-service --config \"C:\\Program Files\\containerd\\config.toml\" --log-file C:\\var\\log\\containerd\\containerd.log", "start=", "auto"]' ]
	[ "$(echo "$output" | tail -n 1)" = '["C:\\Program Files\\containerd\\containerd.exe", "--run-service", "--config", "C:\\Program Files\\containerd\\config.toml", "--log-file", "C:\\var\\log\\containerd\\containerd.log"]' ]
	# kubelet: sc.exe -> kube-log-runner -> powershell.exe -> StartKubelet.ps1 -> kubelet
	svc kubelet
	echo "$output"
	assert_status 0
	[ "$(echo "$output" | sed -n 1p)" = '["sc.exe", "create", "kubelet", "binPath=", "\"C:\\k\\kube-log-runner.exe\" --log-file=C:\\var\\log\\kubelet\\kubelet.log --log-file-size=100Mi --log-file-age=168h --flush-interval=5s \"%SystemRoot%\\System32\\WindowsPowerShell\\v1.0\\powershell.exe\" -NoProfile -NonInteractive -ExecutionPolicy Bypass -File \"C:\\k\\StartKubelet.ps1\"", "start=", "auto", "depend=", "containerd"]' ]
	[ "$(echo "$output" | tail -n 1)" = '["C:\\k\\kubelet.exe", "--windows-service", "--cert-dir=C:\\var\\lib\\kubelet\\pki", "--config=C:\\var\\lib\\kubelet\\config.yaml", "--bootstrap-kubeconfig=C:\\etc\\kubernetes\\bootstrap-kubelet.conf", "--kubeconfig=C:\\etc\\kubernetes\\kubelet.conf", "--container-runtime-endpoint=npipe:////./pipe/containerd-containerd", "--cgroups-per-qos=false", "--enforce-node-allocatable=", "--resolv-conf="]' ]
	# the special-cased registrations are gone
	! grep -rq -- '--register-service' "$(S)" || false
	# no kubelet in the step's own code: the emitted script names it only in
	# the services table generated from the recipe (this line was a bare
	# "! grep" over the emitted script, which could not fail, and was false)
	! grep -v '^[[:space:]]*#' "$WB_SRC/packer/scripts/05-services.ps1.in" | grep -qi "'kubelet'" || false
	# 04-containerd's own code registers nothing (the emitted script holds
	# common.ps1's Invoke-Native, so its template is what is read)
	! grep -qi "sc.exe\|Invoke-Native" "$WB_SRC/packer/scripts/04-containerd.ps1.in" || false
	[ ! -e "$(S)/05-kubelet.ps1" ]
}

@test "item 7: under nssm, kubelet (manager: node) moves to nssm and containerd (manager: sc) stays with sc.exe" {
	replace_entry nssm nssm-2.24.zip >>"$WORK/fixtures.yaml"
	build --set node.service_manager=nssm --set components.nssm.enabled=true
	assert_status 0
	svc kubelet
	echo "$output"
	assert_status 0
	[ "$(echo "$output" | sed -n 1p)" = '["nssm.exe", "set", "kubelet", "AppParameters", "-NoProfile -NonInteractive -ExecutionPolicy Bypass -File \"C:\\k\\StartKubelet.ps1\""]' ]
	last=$(echo "$output" | tail -n 1)
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert a[0] == "C:\\k\\kubelet.exe" and "--windows-service" not in a and "--resolv-conf=" in a, a' "$last"
	svc containerd
	assert_status 0
	assert_output_has '["sc.exe", "create", "containerd"'
}

@test "issue 43 item 5: kubelet is the service 'kubelet' that answers the SCM under sc.exe; under nssm the plan says graceful node shutdown cannot run" {
	# kubelet's graceful node shutdown runs from its preshutdown handler,
	# registered only with --windows-service and only for the service named
	# "kubelet" (kubernetes cmd/kubelet/app/init_windows.go serviceName,
	# pkg/kubelet/nodeshutdown/nodeshutdown_manager_windows.go), and it puts
	# the service's dependencies (containerd) after itself in
	# PreshutdownOrder, so containerd outlives the pods' drain
	build
	assert_status 0
	! echo "$output" | grep -q "graceful node shutdown" || false
	svc kubelet
	assert_status 0
	[ "$(echo "$output" | sed -n 1p | python3 -c 'import json,sys; a=json.load(sys.stdin); print(a[2], a[-2], a[-1])')" = "kubelet depend= containerd" ]
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert a[0] == "C:\\k\\kubelet.exe" and a[1] == "--windows-service", a' "$(echo "$output" | tail -n 1)"
	# under nssm: said at the sc_args line, for plan as for build
	replace_entry nssm nssm-2.24.zip >>"$WORK/fixtures.yaml"
	wb plan "$RECIPE" -O "$WORK/fixtures.yaml" --set node.service_manager=nssm --set components.nssm.enabled=true
	assert_status 0
	assert_output_has "kubernetes.yaml:128:14: service 'kubelet' runs under nssm"
	assert_output_has "no graceful node shutdown"
	"$WINBUILD" plan "$RECIPE" -O "$WORK/fixtures.yaml" --json --set node.service_manager=nssm \
		--set components.nssm.enabled=true 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); assert any("graceful node shutdown" in w["message"] for w in d["warnings"]), d["warnings"]'
}

@test "item 7: csi-proxy ships disabled and contributes nothing: no artifact, no service, no file, no directory" {
	run "$WINBUILD" plan "$RECIPE" --json
	assert_status 0
	python3 -c '
import json, sys
p = json.loads(sys.argv[1])
assert not [a for a in p["artifacts"] if a["component"] == "csi-proxy"], p["artifacts"]
assert "csi-proxy" not in [c["name"] for c in p["components"]]
assert [s["name"] for s in p["services"]] == ["containerd", "kubelet"], p["services"]
' "$output"
	build
	assert_status 0
	! grep -rqi 'csi-proxy\|csiproxy' "$(S)" "$(O)/manifest.json" "$(O)/sbom.cdx.json" || false
	[ ! -e "$(O)/tree/k/csi-proxy" ]
	# the shipped images all carry it, off
	for v in 2019 2022 2025; do
		run "$WINBUILD" plan "$WB_SRC/recipes/windows-$v-containerd.yaml" --explain
		assert_status 0
		assert_output_has "components.csi-proxy.enabled"
	done
}

@test "item 7: a disabled component is still parsed and checked: a bad key in csi-proxy.yaml is exit 2 at its file:line:col" {
	cp -r "$WB_SRC/recipes" "$WORK/r"
	sed -i 's|^    manager: sc$|    manager: sc\n    restart: always|' "$WORK/r/components/csi-proxy.yaml"
	line=$(grep -n '^    restart: always$' "$WORK/r/components/csi-proxy.yaml" | cut -d: -f1)
	[ -n "$line" ]
	run "$WINBUILD" plan "$WORK/r/windows-2022-containerd.yaml"
	echo "$output"
	assert_status 2
	assert_output_has "$WORK/r/components/csi-proxy.yaml:$line:5: unknown key 'components.csi-proxy.services[1].restart'"
}

@test "item 7: --set components.csi-proxy.enabled=true adds it: artifact planned and fetched, service registered by the generic step" {
	need_ps_node
	replace_entry csi-proxy csi-proxy-v1.1.2-hotfix.20230807.tar.gz >>"$WORK/fixtures.yaml"
	# planned from the shipped YAML (Microsoft's AKS build, pinned by the lock)
	run "$WINBUILD" plan "$RECIPE" --set components.csi-proxy.enabled=true
	assert_status 0
	assert_output_has "csi-proxy  (component csi-proxy 1.1.2-hotfix.20230807)"
	assert_output_has "https://packages.aks.azure.com/csi-proxy/v1.1.2-hotfix.20230807/binaries/csi-proxy-v1.1.2-hotfix.20230807.tar.gz"
	assert_output_has "NEEDS PIN"
	run "$WINBUILD" plan "$RECIPE" --set components.csi-proxy.enabled=true --json
	assert_status 0
	python3 -c '
import json, sys
s = {x["name"]: x for x in json.loads(sys.argv[1])["services"]}
c = s["csiproxy"]
assert (c["component"], c["manager"], c["binary"]) == ("csi-proxy", "sc", "C:\\k\\csi-proxy\\csi-proxy.exe"), c
assert c["sc_args"] == ["-windows-service"] and c["origin"].endswith(":57:5"), c
' "$output"
	build --set components.csi-proxy.enabled=true
	assert_status 0
	[ -f "$(O)/tree/k/csi-proxy/csi-proxy.exe" ]
	grep -q '"path": "C:\\\\k\\\\csi-proxy\\\\csi-proxy.exe"' "$(O)/manifest.json"
	[ "$(registered)" = "containerd kubelet csiproxy" ]
	svc csiproxy
	echo "$output"
	assert_status 0
	[ "$(echo "$output" | sed -n 1p)" = '["sc.exe", "create", "csiproxy", "binPath=", "\"C:\\k\\csi-proxy\\csi-proxy.exe\" -windows-service -log_file=C:\\var\\log\\csi-proxy\\csi-proxy.log -logtostderr=false", "start=", "auto"]' ]
	[ "$(echo "$output" | tail -n 1)" = '["C:\\k\\csi-proxy\\csi-proxy.exe", "-windows-service", "-log_file=C:\\var\\log\\csi-proxy\\csi-proxy.log", "-logtostderr=false"]' ]
	grep -qF "'C:\\var\\log\\csi-proxy'" "$(S)/05-services.ps1"
	grep -qF "'C:\\k\\csi-proxy'" "$(S)/04-containerd.ps1"
	node "$PSPARSE" "$(S)"/*.ps1
	run node "$LINT" "$(S)"/*.ps1
	echo "$output"
	assert_status 0
	# the provenance names the component in the image
	grep -q '"component": "csi-proxy"' "$(S)/07-provenance.ps1"
}

@test "item 7: a made-up service in YAML only is built, generated and registered with the exact argv (sc and nssm)" {
	need_ps_node
	echo_recipe
	NAME=echo-node
	wb build "$WORK/img/echo.yaml" -O "$WORK/fixtures.yaml" --no-progress
	echo "$output"
	assert_status 0
	[ "$(registered)" = "containerd kubelet echo" ]
	svc echo
	echo "$output"
	assert_status 0
	[ "$(echo "$output" | sed -n 1p)" = '["sc.exe", "create", "echo", "binPath=", "\"C:\\opt\\echo\\echo.exe\" --as-service --config=C:\\opt\\echo\\echo.conf \"--greeting=hello world\" --empty= --pipe=npipe:////./pipe/echo", "start=", "auto", "depend=", "containerd"]' ]
	[ "$(echo "$output" | tail -n 1)" = '["C:\\opt\\echo\\echo.exe", "--as-service", "--config=C:\\opt\\echo\\echo.conf", "--greeting=hello world", "--empty=", "--pipe=npipe:////./pipe/echo"]' ]
	# the generated file, rendered with the entry's vars, claimed for echo
	[ "$(cat "$(O)/tree/opt/echo/echo.conf")" = "$(printf '# echo-node 0.4.1\ngreeting = "hello from 0.4.1"')" ]
	python3 - "$(O)/manifest.json" <<-'PY'
	import json, sys
	m = json.load(open(sys.argv[1]))
	f = [f for f in m["files"] if f["path"] == "C:\\opt\\echo\\echo.conf"]
	assert f and f[0]["component"] == "echo" and f[0]["generated"], f
	PY
	grep -qF "'C:\\var\\log\\echo'" "$(S)/05-services.ps1"
	node "$PSPARSE" "$(S)"/*.ps1
	run node "$LINT" "$(S)"/*.ps1
	assert_status 0
	# the same service under nssm: sc_args dropped, nssm's own command line
	replace_entry nssm nssm-2.24.zip >>"$WORK/fixtures.yaml"
	wb build "$WORK/img/echo.yaml" -O "$WORK/fixtures.yaml" --no-progress \
		--set node.service_manager=nssm --set components.nssm.enabled=true \
		--set 'components.echo.services=[{name: echo, binary: "C:\\opt\\echo\\echo.exe", manager: node, depends_on: [containerd], sc_args: [--as-service, "--scm=two words"], args: ["--greeting=hello world", --empty=]}]'
	assert_status 0
	# the warning names every sc_arg left out, quoted as a command line would
	assert_output_has "its sc_args (--as-service \"--scm=two words\") are not passed"
	svc echo
	echo "$output"
	assert_status 0
	[ "$(echo "$output" | sed -n 1p)" = '["nssm.exe", "set", "echo", "AppParameters", "\"--greeting=hello world\" --empty="]' ]
	[ "$(echo "$output" | tail -n 1)" = '["C:\\opt\\echo\\echo.exe", "--greeting=hello world", "--empty="]' ]
}

@test "item 7: a service binary its component does not stage (inside its unpack directory, not in the archive) stops the build (exit 4)" {
	replace_entry csi-proxy csi-proxy-v1.1.2-hotfix.20230807.tar.gz >>"$WORK/fixtures.yaml"
	build --set components.csi-proxy.enabled=true \
		--set 'components.csi-proxy.services=[{name: csiproxy, binary: "C:\\k\\csi-proxy\\nope.exe", manager: sc}]'
	echo "$output"
	assert_status 4
	assert_output_has "service 'csiproxy' runs 'C:\k\csi-proxy\nope.exe', which component 'csi-proxy' did not stage"
	[ ! -e "$(S)/05-services.ps1" ]
}

@test "item 7 (class 6): a file a service runs counts only when its own component staged it" {
	# a staged output shaped like `winbuild stage` writes it (emit alone)
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out "$NAME" 2022 >/dev/null
	wb emit "$RECIPE"
	assert_status 0
	# the runner at the same path, but claimed by another component
	python3 - "out/$NAME/manifest.json" <<-'PY'
	import json, sys
	m = json.load(open(sys.argv[1]))
	for f in m["files"]:
	    if f["path"] == "C:\\k\\kube-log-runner.exe":
	        f["component"] = "crictl"
	json.dump(m, open(sys.argv[1], "w"), indent=2, sort_keys=True)
	PY
	wb emit "$RECIPE"
	echo "$output"
	assert_status 4
	assert_output_has "service 'kubelet' runs 'C:\k\kube-log-runner.exe', which component 'kubernetes' did not stage"
}

# bad_decl SED_EXPR MESSAGE: edit the echo component, plan; exit 2 with
# MESSAGE at the edited line's file:line:col, nothing written
bad_decl() {
	echo_recipe
	sed -i "$1" "$WORK/img/components/echo.yaml"
	run "$WINBUILD" plan "$WORK/img/echo.yaml"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"$2"* ]]
}

line_of() { grep -n -- "$1" "$WORK/img/components/echo.yaml" | head -1 | cut -d: -f1; }

@test "item 7: bad service declarations are refused at file:line:col (exit 2)" {
	F="$WORK/img/components/echo.yaml"
	bad_decl 's|    depends_on: \[containerd\]|    manager: systemd\n&|' "must be one of node|sc|nssm, not 'systemd'"
	[[ "$output" == *"$F:$(line_of 'manager: systemd'):14:"* ]]
	bad_decl 's|depends_on: \[containerd\]|depends_on: [containerd, nosuch]|' \
		"service 'echo' depends on 'nosuch', which no enabled component declares"
	[[ "$output" == *"$F:$(line_of 'nosuch'):30:"* ]]
	# a service of a disabled component does not count
	bad_decl 's|depends_on: \[containerd\]|depends_on: [csiproxy]|' \
		"depends on 'csiproxy', which no enabled component declares"
	bad_decl 's|    binary: C:\\opt\\echo\\echo.exe|    binary: D:\\echo.exe|' "bad Windows path 'D:\\echo.exe'"
	[[ "$output" == *"$F:$(line_of 'binary: D:'):13:"* ]]
	bad_decl 's|    binary: C:\\opt\\echo\\echo.exe|    binary: C:\\Windows\\System32\\cmd.exe|' \
		"binary 'C:\\Windows\\System32\\cmd.exe' is not a file component 'echo' stages"
	[[ "$output" == *"$F:$(line_of 'cmd.exe'):13:"* ]]
	bad_decl 's|      - --empty=|      - '"'"'--say="hi"'"'"'|' "holds a \", which PowerShell 5.1 passes to a native program unescaped"
	[[ "$output" == *"$F:$(line_of 'say='):9:"* ]]
	bad_decl 's|      - --empty=|      - --dir=C:\\x\\|' "ends in \\, which escapes the quote"
	bad_decl 's|      - --empty=|      - ""|' "is empty, and PowerShell 5.1 drops an empty argument"
	bad_decl 's|      - --empty=|      - --path=%PATH%|' "holds a %, which the service manager expands"
	bad_decl 's|      - --empty=|      - --name=caf\xc3\xa9|' "non-ASCII character"
	bad_decl 's|    sc_args: \[--as-service\]|    sc_args: [--as-service]\n    kubeadm_flags: true|' \
		"kubeadm_flags: true needs 'wrapper'"
	bad_decl 's|  - name: echo|  - name: kubelet|' "service 'kubelet' is declared twice"
	bad_decl 's|depends_on: \[containerd\]|depends_on: [echo]|' "service 'echo' is in a dependency cycle"
	bad_decl 's|    sc_args: \[--as-service\]|    manager: nssm|' "runs under nssm, and component 'nssm' is not enabled"
	bad_decl 's|  - template: echo.conf.in|  - template: ../../etc/passwd|' "is not a template path relative to the component file"
	bad_decl 's|    binary: C:\\opt\\echo\\echo.exe|    binary: C:\\opt\\echo\\echo.exe\n    restart: always|' "unknown key 'components.echo.services[1].restart'"
	# nothing was written by any of them
	[ ! -e "$WORK/out" ]
}
