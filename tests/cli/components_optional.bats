#!/usr/bin/env bats
# issue 27 item 2: image-builder's optional Windows components as winbuild
# components, off in the shipped images: the debug tools
# (recipes/components/debug-tools.yaml) and the ACR and ECR credential
# providers (recipes/components/{acr,ecr}-credential-provider.yaml). Planned from the
# shipped YAML (real upstream URLs and pins), enabled with --set, fetched
# from the fixture server through `replace:`, staged where image-builder
# puts them; the kubelet argv with CAPZ's kubeadm flags is computed by
# tests/node/winnode.py.
load helpers
load ../lib/servers
load stage_fixtures

DEBUG_FILES="collectlogs.ps1 dumpVfpPolicies.ps1 portReservationTest.ps1 starthnstrace.cmd
startpacketcapture.cmd startpacketcapture.ps1 stoppacketcapture.cmd VFP.psm1 helper.psm1
hns.psm1 DebugWindowsNode.ps1"

setup_file() {
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	# stand-ins for the upstream files (the tests pin their own digests)
	for f in $DEBUG_FILES; do
		printf '# stand-in for %s\r\n' "$f" >"$WWW/good/$f"
	done
	cp "$WWW/good/kubectl.exe" "$WWW/good/azure-acr-credential-provider-windows-amd64.exe"
	cat >"$WWW/good/credential-provider-config-win.yaml" <<-'EOF'
	kind: CredentialProviderConfig
	apiVersion: kubelet.config.k8s.io/v1
	providers:
	- name: acr-credential-provider
	  apiVersion: credentialprovider.kubelet.k8s.io/v1
	  defaultCacheDuration: 10m
	  matchImages: ["*.azurecr.io"]
	  args: ['c:\k\azure.json']
	EOF
	# artifacts.k8s.io's layout, with the bare-digest .sha256 beside
	ecr="$WWW/mirror/cloud-provider-aws/v1.36.1/windows/amd64"
	mkdir -p "$ecr"
	cp "$WWW/good/kubeadm.exe" "$ecr/ecr-credential-provider-windows-amd64"
	sha256sum "$ecr/ecr-credential-provider-windows-amd64" | cut -d' ' -f1 \
		>"$ecr/ecr-credential-provider-windows-amd64.sha256"
	start_nginx "$WWW"
}

setup() {
	fixture_setup
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256"
}

O() { echo "$WORK/out/$NAME"; }
build() { wb build "$RECIPE" -O "$WORK/fixtures.yaml" --no-progress "$@"; }

# the debug-tools artifact key of upstream file F (as the component names it)
debug_key() {
	local b=${1%.*}
	b=$(echo "$b" | tr 'A-Z_' 'a-z-')
	case $1 in *.cmd) echo "debug-$b-cmd" ;; *) echo "debug-$b" ;; esac
}

# the fixtures override plus a mirror of artifacts.k8s.io's binaries
ecr_mirror() {
	printf 'mirrors:\n  - {from: "https://artifacts.k8s.io/binaries/", to: "%s/mirror/"}\n' "$(H)" \
		>>"$WORK/fixtures.yaml"
}

# plan_json ARGS...: the plan as JSON into $WORK/plan.json
plan_json() {
	"$WINBUILD" plan "$RECIPE" --json "$@" >"$WORK/plan.json"
}

@test "debug tools: off in the shipped images; planned from pinned commits with a sha256 each, staged in C:\\k\\debug as image-builder's debug role puts them" {
	plan_json
	python3 - "$WORK/plan.json" <<-'PY'
	import json, sys
	p = json.load(open(sys.argv[1]))
	comps = {a["component"] for a in p["artifacts"]}
	assert "debug-tools" not in comps and "acr-credential-provider" not in comps, comps
	PY
	for r in "$WB_SRC"/recipes/windows-20*-containerd.yaml; do
		run "$WINBUILD" plan "$r"
		assert_status 0
		assert_output_lacks "component debug-tools"
		assert_output_lacks "component acr-credential-provider"
	done
	plan_json --set components.debug-tools.enabled=true
	python3 - "$WORK/plan.json" <<-'PY'
	import json, re, sys
	arts = [a for a in json.load(open(sys.argv[1]))["artifacts"] if a["component"] == "debug-tools"]
	assert len(arts) == 11, [a["name"] for a in arts]
	for a in arts:
	    url = a["urls"][0] if "urls" in a else a["url"]
	    # a commit, never a branch: image-builder's master URLs change under it
	    assert re.match(r"https://raw\.githubusercontent\.com/(microsoft/SDN|kubernetes-sigs/sig-windows-tools)/[0-9a-f]{40}/", url), url
	    assert "/master/" not in url, url
	    s = json.dumps(a)
	    assert re.search(r'"sha256": "[0-9a-f]{64}"', s), s
	    assert a["verify"]["needs_pin"] is None, s
	PY
	for f in $DEBUG_FILES; do
		replace_entry "$(debug_key "$f")" "$f" >>"$WORK/fixtures.yaml"
	done
	build --set components.debug-tools.enabled=true
	assert_status 0
	for f in $DEBUG_FILES; do
		cmp "$(O)/tree/k/debug/$f" "$WWW/good/$f"
		grep -qF "\"path\": \"C:\\\\k\\\\debug\\\\$f\"" "$(O)/manifest.json"
	done
	[ "$(ls "$(O)/tree/k/debug" | wc -l)" -eq 11 ]
	wb verify "$(O)"
	assert_status 0
}

@test "debug tools: a file that is not the pinned one fails (exit 1) and nothing is staged" {
	for f in $DEBUG_FILES; do
		replace_entry "$(debug_key "$f")" "$f" >>"$WORK/fixtures.yaml"
	done
	# the pin of hns.psm1 names other bytes (found nowhere)
	sed -i "s|$(sha_www good/hns.psm1)|$(printf 'other bytes' | sha256sum | cut -d' ' -f1)|" "$WORK/fixtures.yaml"
	build --set components.debug-tools.enabled=true
	assert_status 1
	assert_output_has "debug-hns"
	[ ! -e "$(O)/tree" ]
}

@test "ACR credential provider: binary and config where image-builder puts them; CAPZ's kubeadm flags point kubelet at them" {
	need_ps_node
	plan_json --set components.acr-credential-provider.enabled=true
	python3 - "$WORK/plan.json" <<-'PY'
	import json, sys
	a = {x["name"]: x for x in json.load(open(sys.argv[1]))["artifacts"]}
	b, c = a["acr-credential-provider"], a["acr-credential-provider-config"]
	s = json.dumps(b)
	assert "releases/download/v1.36.5/azure-acr-credential-provider-windows-amd64.exe" in s, s
	assert "needs_pin" in s, s
	s = json.dumps(c)
	assert "9da15999f3742db71ab75a6366b62454911fe5b7/examples/out-of-tree/credential-provider-config-win.yaml" in s, s
	PY
	replace_entry acr-credential-provider azure-acr-credential-provider-windows-amd64.exe >>"$WORK/fixtures.yaml"
	replace_entry acr-credential-provider-config credential-provider-config-win.yaml >>"$WORK/fixtures.yaml"
	build --set components.acr-credential-provider.enabled=true
	assert_status 0
	cmp "$(O)/tree/var/lib/kubelet/credential-provider/acr-credential-provider.exe" \
		"$WWW/good/azure-acr-credential-provider-windows-amd64.exe"
	cmp "$(O)/tree/var/lib/kubelet/credential-provider-config.yaml" \
		"$WWW/good/credential-provider-config-win.yaml"
	# the flags CAPZ's Windows template gives kubeadm (kubeletExtraArgs)
	printf '%s\n' 'KUBELET_KUBEADM_ARGS="--image-credential-provider-bin-dir=/var/lib/kubelet/credential-provider --image-credential-provider-config=/var/lib/kubelet/credential-provider-config.yaml"' >"$WORK/flags.env"
	run python3 "$WB_SRC/tests/node/winnode.py" service "$(O)/packer/scripts" "$(O)/tree" kubelet "$WORK/flags.env"
	echo "$output"
	assert_status 0
	python3 - "$(echo "$output" | tail -n 1)" "$(O)/tree" <<-'PY'
	import json, os, sys
	argv, tree = json.loads(sys.argv[1]), sys.argv[2]
	flags = dict(a[2:].split("=", 1) for a in argv if a.startswith("--image-credential-provider"))
	assert set(flags) == {"image-credential-provider-bin-dir", "image-credential-provider-config"}, argv
	# a rooted path without a drive is on the system drive, C: (the tree)
	conf = os.path.join(tree, flags["image-credential-provider-config"].lstrip("/"))
	bindir = os.path.join(tree, flags["image-credential-provider-bin-dir"].lstrip("/"))
	text = open(conf).read()
	name = [l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("- name:")][0]
	# kubelet runs NAME from the bin dir; Go's os/exec adds .exe on Windows
	assert os.path.isfile(os.path.join(bindir, name + ".exe")), (bindir, name)
	PY
	# nothing of it in the image without it
	fixture_override >"$WORK/fixtures.yaml"
	build
	assert_status 0
	[ ! -e "$(O)/tree/var/lib/kubelet/credential-provider" ]
}

@test "ECR credential provider: verified by its .sha256 file, installed as .exe beside ACR's, its config generated as JSON with AWS_PROFILE escaped" {
	need_ps_node
	ecr_mirror
	build --set components.ecr-credential-provider.enabled=true \
		--set 'components.ecr-credential-provider.vars.aws_profile=ops "blue"'
	assert_status 0
	assert_output_has "checksum file $(H)/mirror/cloud-provider-aws/v1.36.1/windows/amd64/ecr-credential-provider-windows-amd64.sha256)"
	cmp "$(O)/tree/var/lib/kubelet/credential-provider/ecr-credential-provider.exe" "$WWW/good/kubeadm.exe"
	conf="$(O)/tree/var/lib/kubelet/ecr-credential-provider-config.json"
	python3 - "$conf" <<-'PY'
	import json, sys
	c = json.load(open(sys.argv[1]))
	assert (c["apiVersion"], c["kind"]) == ("kubelet.config.k8s.io/v1", "CredentialProviderConfig"), c
	p = c["providers"][0]
	assert p["name"] == "ecr-credential-provider", p
	assert p["matchImages"] == ["*.dkr.ecr.*.amazonaws.com", "*.dkr.ecr.*.amazonaws.com.cn"], p
	assert p["defaultCacheDuration"] == "12h", p
	assert p["env"] == [{"name": "AWS_PROFILE", "value": 'ops "blue"'}], p
	PY
	printf '%s\n' 'KUBELET_KUBEADM_ARGS="--image-credential-provider-bin-dir=/var/lib/kubelet/credential-provider --image-credential-provider-config=/var/lib/kubelet/ecr-credential-provider-config.json"' >"$WORK/flags.env"
	run python3 "$WB_SRC/tests/node/winnode.py" service "$(O)/packer/scripts" "$(O)/tree" kubelet "$WORK/flags.env"
	assert_status 0
	python3 - "$(echo "$output" | tail -n 1)" "$(O)/tree" <<-'PY'
	import json, os, sys
	argv, tree = json.loads(sys.argv[1]), sys.argv[2]
	flags = dict(a[2:].split("=", 1) for a in argv if a.startswith("--image-credential-provider"))
	conf = json.load(open(os.path.join(tree, flags["image-credential-provider-config"].lstrip("/"))))
	bindir = os.path.join(tree, flags["image-credential-provider-bin-dir"].lstrip("/"))
	for p in conf["providers"]:
	    assert os.path.isfile(os.path.join(bindir, p["name"] + ".exe")), p["name"]
	PY
}

@test "ECR credential provider: a binary that does not match its .sha256 file fails (exit 1)" {
	ecr_mirror
	ecr="$WWW/mirror/cloud-provider-aws/v1.36.1/windows/amd64"
	cp "$ecr/ecr-credential-provider-windows-amd64.sha256" "$BATS_TEST_TMPDIR/keep"
	sha256sum "$WWW/good/kubectl.exe" | cut -d' ' -f1 >"$ecr/ecr-credential-provider-windows-amd64.sha256"
	build --set components.ecr-credential-provider.enabled=true
	cp "$BATS_TEST_TMPDIR/keep" "$ecr/ecr-credential-provider-windows-amd64.sha256"
	assert_status 1
	assert_output_has "ecr-credential-provider"
	[ ! -e "$(O)/tree" ]
}
