#!/usr/bin/env bats
# Red team, issue 13 classes 5 and 6, through the real CLI: recipe values
# that try to leave their sink (TOML, INI, PowerShell, native command lines,
# PATH, sc.exe binPath), and archives that try to get their file chosen in
# place of a component's own. Every case checks the exit code, the message,
# that nothing unsafe landed, and that the previous good output is intact.
load helpers
load ../lib/servers
load stage_fixtures

PSPARSE="$WB_SRC/tests/ps/psparse.cjs"
RECIPE_R() { echo "$WORK/r/windows-2022-containerd.yaml"; }
OUT() { echo "$WORK/out/$NAME"; }
P() { echo "$WORK/out/$NAME/packer/scripts"; }

setup() {
	common_setup
	fixture_override >"$WORK/fixtures.yaml"
	# the shipped recipes leave the Windows ISO digest to the user
	# the shipped pause image is needs_pin: these emit over make-staged.py trees
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256;images.pause.enabled=false"
}

build_shipped() { wb build "$RECIPE" -O "$WORK/fixtures.yaml" --no-progress "$@"; }

# snapshot: sha256 of every file under out/ (and the cache), to compare
# before and after an attack
snapshot() {
	(cd "$WORK" && find out -type f -print0 2>/dev/null | LC_ALL=C sort -z |
		xargs -0 -r sha256sum)
}

# a good staged output shaped like `winbuild stage` writes it, a copy of
# the shipped recipes to edit, and a good emit of it
good_emit() {
	cp -r "$WB_SRC/recipes" "$WORK/r"
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out "$NAME" 2022 "$@" >/dev/null
	wb emit "$(RECIPE_R)"
	assert_status 0
	snapshot >"$WORK/before"
}

# add_file WINPATH COMPONENT [ARTIFACT]: one more file in the staged tree and
# its manifest (sorted as winbuild sorts it)
add_file() {
	python3 - "$(OUT)" "$@" <<-'PY'
	import hashlib, json, os, sys
	base, win, comp = sys.argv[1:4]
	art = sys.argv[4] if len(sys.argv) > 4 else comp
	rel = win[3:].replace("\\", "/")
	data = ("planted by %s\n" % comp).encode()
	p = os.path.join(base, "tree", rel)
	os.makedirs(os.path.dirname(p), exist_ok=True)
	open(p, "wb").write(data)
	m = json.load(open(os.path.join(base, "manifest.json")))
	m["files"].append({"path": win, "tree_path": rel, "size": len(data),
	                   "sha256": hashlib.sha256(data).hexdigest(), "artifact": art,
	                   "component": comp, "generated": False, "lifetime": "node"})
	m["files"].sort(key=lambda f: f["tree_path"])
	if not any(a["name"] == art for a in m["artifacts"]):
	    m["artifacts"].append({"name": art, "component": comp, "version": "1.0",
	                           "url": "https://example.invalid/" + art,
	                           "sha256": hashlib.sha256(art.encode()).hexdigest(),
	                           "size": 1, "action": "unpack",
	                           "destination": win.rsplit("\\", 1)[0]})
	    m["artifacts"].sort(key=lambda a: a["name"])
	json.dump(m, open(os.path.join(base, "manifest.json"), "w"), indent=2, sort_keys=True)
	PY
}

# the previous good output is byte for byte what it was
assert_intact() {
	snapshot >"$WORK/after"
	if ! diff -u "$WORK/before" "$WORK/after"; then
		echo "the previous output changed" >&2
		return 1
	fi
}

# ---- class 5: values checked for where they land --------------------------

@test "class 5: a newline in the containerd version cannot add 'imports' to config.toml (exit 2, plan time)" {
	stage_shipped
	assert_status 0
	snapshot >"$WORK/before"
	stage_shipped --set 'components.containerd.version=2.1.4
imports = ["C:/ProgramData/evil.toml"]  #'
	assert_status 2
	assert_output_has "--set #1: components.containerd.version '2.1.4\\nimports"
	assert_output_has "is not a version"
	# nothing of it landed: the good tree (config.toml included) is unchanged
	! grep -rq "evil.toml" "$(OUT)" || false
	python3 -c 'import tomllib,sys; d=tomllib.load(open(sys.argv[1],"rb")); assert "imports" not in d' \
		"$(OUT)/tree/Program Files/containerd/config.toml"
	assert_intact
	# from a component file: the message points at the value
	cp -r "$WB_SRC/recipes" "$WORK/r"
	sed -i 's/^version: "2.3.5"/version: "2.3.5\\n[plugins.x]"/' "$WORK/r/components/containerd.yaml"
	wb stage "$WORK/r/windows-2022-containerd.yaml" -O "$WORK/fixtures.yaml" --no-progress
	assert_status 2
	l=$(grep -n '^version:' "$WB_SRC/recipes/components/containerd.yaml" | cut -d: -f1)
	assert_output_has "r/components/containerd.yaml:$l:10: components.containerd.version '2.3.5\\n[plugins.x]' is not a version"
	assert_intact
}

@test "class 5: a pause image that breaks out of its TOML string is refused as an image reference (exit 2)" {
	stage_shipped
	assert_status 0
	snapshot >"$WORK/before"
	for bad in "registry.k8s.io/pause:3.10'
imports = ['C:/evil.toml']" 'x"y' 'registry.k8s.io/pause:3.10 #' 'Registry/Pause'; do
		stage_shipped --set "node.pause_image=$bad"
		assert_status 2
		assert_output_has "node.pause_image '"
		assert_output_has "is not an OCI image reference"
		! grep -rq "evil.toml" "$(OUT)" || false
		assert_intact
	done
}

@test "class 5: a template cannot splice a value raw: an untyped or unknown-sink placeholder is an error (exit 2)" {
	stage_shipped
	assert_status 0
	snapshot >"$WORK/before"
	for tag in '{{pause_image}}' '{{raw:pause_image}}' '{{trusted:pause_image}}'; do
		rm -rf "$WORK/tpl"
		cp -r "$WB_SRC/recipes/templates" "$WORK/tpl"
		echo "extra = $tag" >>"$WORK/tpl/containerd/config.v3.toml"
		WINBUILD_TEMPLATES="$WORK/tpl" stage_shipped
		assert_status 2
		assert_output_has "config.v3.toml"
		case "$tag" in
		'{{pause_image}}') assert_output_has "placeholder without a sink type" ;;
		'{{raw:'*) assert_output_has "unknown sink type 'raw'" ;;
		*) assert_output_has "cannot be rendered as trusted" ;;
		esac
		[ -z "$(ls -d "$(OUT)"/.tree.tmp.* 2>/dev/null)" ]
		# the stamp is dropped (the next stage redoes the work); the
		# tree, manifest and SBOM are as the good stage left them
		snapshot | grep -v '\.stage-stamp$' >"$WORK/after"
		diff <(grep -v '\.stage-stamp$' "$WORK/before") "$WORK/after"
	done
}

@test "class 5: an MSI property cannot inject msiexec arguments through PowerShell 5.1's unescaped quotes (exit 2)" {
	NAME=windows-2022-containerd
	good_emit
	sed -i 's|^        RUN_SERVICE_AS_LOCAL_SYSTEM: "1"|&\n        LOGGINGSERIALPORTNAME: '"'"'COM1" TRANSFORMS="C:\\evil.mst'"'"'|' \
		"$WORK/r/components/cloudbase-init.yaml"
	grep -q TRANSFORMS "$WORK/r/components/cloudbase-init.yaml"
	wb emit "$(RECIPE_R)"
	assert_status 2
	assert_output_has "artifacts.cloudbase-init.payload.properties at $WORK/r/components/cloudbase-init.yaml:"
	assert_output_has ": 'LOGGINGSERIALPORTNAME=COM1\" TRANSFORMS="
	assert_output_has "msiexec property argument (PowerShell 5.1)"
	assert_output_has "03-cloudbase-init.ps1.in' line 5"
	! grep -rq "evil.mst" "$(OUT)" || false
	assert_intact
}

@test "class 5: a PATH entry holding ';' is refused for the PATH sink (exit 2)" {
	NAME=windows-2022-containerd
	good_emit
	# the component owns the directory (lib/winreserved.c's rule for PATH
	# entries, checked at plan time), so the entry reaches the PATH sink
	sed -i '0,/^  - C:\\k$/s||  - C:\\k;x|' "$WORK/r/components/kubernetes.yaml"
	sed -i 's|^directories:$|directories:\n  - C:\\k;x|' "$WORK/r/components/kubernetes.yaml"
	[ "$(grep -c 'C:\\k;x' "$WORK/r/components/kubernetes.yaml")" -eq 2 ]
	wb emit "$(RECIPE_R)"
	assert_status 2
	assert_output_has "components.kubernetes.path in $WORK/r/components/kubernetes.yaml: 'C:\\x5ck;x' holds ; or \""
	assert_output_has "Windows PATH entry"
	! grep -rq 'k;x' "$(OUT)" || false
	assert_intact
}

@test "class 5: a kubelet path with % (expanded in sc.exe binPath) is refused at plan time (exit 2)" {
	NAME=windows-2022-containerd
	good_emit
	sed -i 's|C:\\k\\kubelet.exe|C:\\k%SystemRoot%\\kubelet.exe|' "$WORK/r/components/kubernetes.yaml"
	grep -q SystemRoot "$WORK/r/components/kubernetes.yaml"
	line=$(grep -n '    binary: C:.k%SystemRoot%' "$WORK/r/components/kubernetes.yaml" | cut -d: -f1)
	wb emit "$(RECIPE_R)"
	assert_status 2
	assert_output_has "$WORK/r/components/kubernetes.yaml:$line:13: 'components.kubernetes.services[1]': 'C:\\x5ck%SystemRoot%\\x5ckubelet.exe' holds a %"
	assert_output_has "sc.exe binPath"
	# the planted path reaches no output (kubelet's own binPath names
	# %SystemRoot%\System32\...\powershell.exe, so the path itself is
	# looked for; as a bare "! grep" the broader line could not fail)
	! grep -rqF 'k%SystemRoot%' "$(OUT)" || false
	assert_intact
}

@test "class 5: a firewall rule name: quotes are escaped and parse; a typographic quote (non-ASCII, read as ANSI by PowerShell 5.1) is refused" {
	need_ps_node
	NAME=windows-2022-containerd
	good_emit
	cp "$WORK/r/components/kubernetes.yaml" "$WORK/kubernetes.yaml.good"
	sed -i "s|{name: kubelet, port: 10250, protocol: TCP}|{name: \"kube'let\\\\\"; rm -r C:\\\\\\\\\", port: 10250, protocol: TCP}|" \
		"$WORK/r/components/kubernetes.yaml"
	grep -q "kube'let" "$WORK/r/components/kubernetes.yaml"
	wb emit "$(RECIPE_R)"
	assert_status 0
	grep -qF "@(@{ Name = 'kube''let\"; rm -r C:\\'; Port = 10250; Protocol = 'TCP' })" "$(P)/05-services.ps1"
	node "$PSPARSE" "$(P)"/*.ps1
	snapshot >"$WORK/before"
	# U+2019 ends a single-quoted string in PowerShell; its UTF-8 bytes
	# read in the ANSI code page (no BOM) hold another quote (0x92)
	python3 -c 'import sys; open(sys.argv[2], "w").write(open(sys.argv[1]).read().replace(
		"{name: kubelet,", "{name: \"kube\u2019let; rm -r C:/\","))' \
		"$WORK/kubernetes.yaml.good" "$WORK/r/components/kubernetes.yaml"
	grep -q "kube.*let; rm" "$WORK/r/components/kubernetes.yaml"
	wb emit "$(RECIPE_R)"
	assert_status 2
	assert_output_has "components.kubernetes.firewall in $WORK/r/components/kubernetes.yaml: 'kube\xe2\x80\x99let"
	assert_output_has "non-ASCII character"
	assert_output_has "05-services.ps1.in' line 13"
	assert_intact
}

@test "class 5: the renderer fuzzer (fixed seed): every output parses with its sink's parser and decodes to the value, or is refused" {
	need_ps_node
	need_dep command -v packer -- "packer not installed (make deps)"
	# built by make unit (make check builds it first)
	[ -x "$WB_SRC/build/tests/render_oracle" ]
	run python3 "$WB_SRC/tests/fuzz/render_fuzz.py" --seed 13 --count 20 \
		--oracle "$WB_SRC/build/tests/render_oracle"
	assert_status 0
	assert_output_has "render_fuzz: seed 13: 2142 values through 17 sinks, no finding"
}

@test "class 5: the sc.exe binPath 05-services.ps1 registers reaches kube-log-runner and kubelet as written (PowerShell 5.1 + CommandLineToArgvW model)" {
	# the chain sc.exe -> kube-log-runner -> StartKubelet.ps1 -> kubelet is
	# computed by tests/node/winnode.py (issue 14 moved the flags out of the
	# binPath; tests/cli/node.bats asserts kubeadm's flags)
	build_shipped
	assert_status 0
	printf 'KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.5 --node-labels=a=b,c=d"\n' >"$WORK/flags.env"
	run python3 "$WB_SRC/tests/node/winnode.py" kubelet-sc "$(OUT)/packer/scripts" "$(OUT)/tree" "$WORK/flags.env"
	assert_status 0
	last=$(echo "$output" | tail -n 1)
	python3 -c 'import json,sys; a=json.loads(sys.argv[1]); assert "--enforce-node-allocatable=" in a and "--resolv-conf=" in a and "--node-labels=a=b,c=d" in a and "--node-ip=10.0.0.5" in a, a' "$last"
}

# ---- class 6: files chosen by identity -------------------------------------

@test "class 6: another component's config.toml and containerd.exe earlier in sort order are not picked" {
	NAME=windows-2022-containerd
	good_emit
	add_file 'C:\Program Files\aaa\config.toml' crictl
	add_file 'C:\Program Files\aaa\containerd.exe' crictl
	add_file 'C:\Program Files\Containerd0\config.toml' crictl
	wb emit "$(RECIPE_R)"
	assert_status 0
	assert_output_lacks "aaa"
	grep -qxF "\$ContainerdDir = 'C:\\Program Files\\containerd'" "$(P)/04-containerd.ps1"
	grep -qxF "\$Config = 'C:\\Program Files\\containerd\\config.toml'" "$(P)/04-containerd.ps1"
	! grep -q 'aaa\|Containerd0' "$(P)/04-containerd.ps1" || false
	# the scripts that do not count files are as the good emit wrote them
	snapshot >"$WORK/after"
	diff <(grep 'scripts/0[13568]-' "$WORK/before") <(grep 'scripts/0[13568]-' "$WORK/after")
}

@test "class 6: under nssm, another component's nssm.exe and StartKubelet.ps1 are not picked" {
	NAME=windows-2022-containerd
	good_emit --nssm
	add_file 'C:\Program Files\aaa\nssm.exe' crictl
	add_file 'C:\aaa\StartKubelet.ps1' crictl
	wb emit "$(RECIPE_R)" --set node.service_manager=nssm --set components.nssm.enabled=true
	assert_status 0
	grep -qxF "\$Nssm = 'C:\\Program Files\\nssm\\win64\\nssm.exe'" "$(P)/05-services.ps1"
	grep -qF -- '-File "C:\k\StartKubelet.ps1"' "$(P)/05-services.ps1"
	! grep -q 'aaa' "$(P)/05-services.ps1" || false
	# without nssm's own nssm.exe, another component's does not stand in
	python3 - "$(OUT)/manifest.json" <<-'PY'
	import json, sys
	m = json.load(open(sys.argv[1]))
	m["files"] = [f for f in m["files"] if f["component"] != "nssm"]
	m["artifacts"] = [a for a in m["artifacts"] if a["component"] != "nssm"]
	json.dump(m, open(sys.argv[1], "w"), indent=2, sort_keys=True)
	PY
	rm -rf "$(OUT)/tree/Program Files/nssm"
	snapshot >"$WORK/before"
	wb emit "$(RECIPE_R)" --set node.service_manager=nssm --set components.nssm.enabled=true
	assert_status 2
	assert_output_has "no nssm.exe is staged"
	assert_intact
}

@test "class 6: a component that stages two containerd.exe is ambiguous and refused (exit 4)" {
	NAME=windows-2022-containerd
	good_emit
	add_file 'C:\Program Files\containerd\bin\containerd.exe' containerd containerd
	snapshot >"$WORK/before"
	wb emit "$(RECIPE_R)"
	assert_status 4
	assert_output_has "component 'containerd' stages two files named containerd.exe"
	assert_output_has "C:\\Program Files\\containerd\\bin\\containerd.exe"
	assert_intact
}

@test "class 6: a cloudbase-init conf overlay planted by another component is not copied into cloudbase-init" {
	NAME=windows-2022-containerd
	good_emit
	add_file 'C:\ProgramData\winbuild\cloudbase-init\cloudbase-init.conf.d' crictl
	add_file 'C:\ProgramData\winbuild\cloudbase-init\aaa-plugins.conf' crictl
	wb emit "$(RECIPE_R)"
	assert_status 0
	grep -q "cloudbase-init-unattend.conf" "$(P)/03-cloudbase-init.ps1"
	! grep -q 'aaa-plugins\|conf.d' "$(P)/03-cloudbase-init.ps1" || false
}
