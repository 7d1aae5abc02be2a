#!/usr/bin/env bats
# The shipped recipes (recipes/, overrides/) resolve, and their plans say
# where every artifact comes from, how it is verified and where it lands.
load helpers

R="$WB_SRC/recipes"
O="$WB_SRC/overrides"
IMAGES="windows-2019-containerd windows-2022-containerd windows-2025-containerd"

# Artifacts every shipped image contains (nssm is off by default).
# The shipped recipes leave the Windows ISO's digest to the user (it depends
# on which ISO they install from): these tests supply a stand-in.
setup() {
	common_setup
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256"
}

ARTIFACTS="cloudbase-init containerd kubelet kubeadm kube-proxy kubectl kube-log-runner crictl cni-plugins windows-cni"

# assert_urls_lack PREFIX: no artifact, checksum or signature line of the
# plan in $output names PREFIX (the "mirror: from -> to" header may, and so
# may a Sigstore identity: a certificate's SAN, not a URL anybody fetches).
assert_urls_lack() {
	if grep -v -e '^mirror: ' -e '^ *identity ' <<<"$output" | grep -qF -- "$1"; then
		echo "plan still lists a URL under $1:" >&2
		echo "$output" >&2
		return 1
	fi
}

# check_plan_json IMAGE [MODE]: the --json plan in $output is complete.
# MODE: "upstream" (default) or "mirror" (every URL on the mirror, no upstream).
check_plan_json() {
	printf '%s' "$output" > "$WORK/plan.json"
	python3 - "$WORK/plan.json" "$1" "${2:-upstream}" "$ARTIFACTS" <<'PY'
import json, sys
image, mode, want = sys.argv[2], sys.argv[3], sys.argv[4].split()
p = json.load(open(sys.argv[1]))
assert p["image"]["name"] == image, p["image"]
assert p["image"]["windows_version"] == image.split("-")[1], p["image"]
names = [a["name"] for a in p["artifacts"]]
assert sorted(names) == sorted(want), names
mirror = "https://artifacts.example.corp/"
for a in p["artifacts"]:
    n, v = a["name"], a["verify"]
    assert a["url"].startswith("https://"), (n, a["url"])
    assert a["urls"], n
    methods = [m for m in ("sha256", "sha512", "minisign", "needs_pin") if v.get(m)]
    methods += [m for m in ("sha256_urls", "sha512_urls") if v.get(m)]
    assert methods, (n, v)
    if v.get("sha256") or v.get("sha512"):
        assert v.get("source"), (n, "pinned digest without a source")
    assert a["destination"].startswith("C:\\"), (n, a["destination"])
    assert a["action"] in ("unpack", "install", "payload"), n
    # every method's files (attestation, cosign, ...): {"urls": [...]}
    aux = [u for m in v.values() if isinstance(m, dict) for u in m.get("urls", [])]
    if mode == "mirror":
        for u in a["urls"] + v["sha256_urls"] + v["sha512_urls"] + aux:
            assert u.startswith(mirror), (n, u)
        assert len(a["urls"]) == 1, (n, a["urls"])
    else:
        assert a["urls"][-1] == a["url"], (n, a["urls"])
pins = sorted(a["name"] for a in p["artifacts"] if a["verify"].get("needs_pin"))
assert pins == ["cloudbase-init"], pins
PY
}

@test "every shipped image recipe plans, listing URL, verification and destination of each artifact" {
	for img in $IMAGES; do
		wb plan "$R/$img.yaml"
		assert_status 0
		assert_output_has "image $img: Windows Server ${img:8:4} (datacenter)"
		assert_output_has "10 artifacts from 6 components, 1 container image; 2 need a pin (winbuild lock --accept-new): cloudbase-init, image pause"
		assert_output_lacks "the ISO builders need"
		assert_output_has "https://github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-windows-amd64.tar.gz"
		assert_output_has "sha256 from checksum file https://github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-windows-amd64.tar.gz.sha256sum"
		assert_output_has 'into C:\Program Files\containerd (strip 1, include *.exe)'
		for b in kubelet kubeadm kube-proxy kubectl kube-log-runner; do
			assert_output_has "https://dl.k8s.io/release/v1.36.4/bin/windows/amd64/$b.exe"
			assert_output_has "sha256 from checksum file https://dl.k8s.io/release/v1.36.4/bin/windows/amd64/$b.exe.sha256"
			assert_output_has "to C:\\k\\$b.exe"
		done
		assert_output_has "crictl-v1.36.0-windows-amd64.tar.gz.sha256"
		assert_output_has "cni-plugins-windows-amd64-v1.9.1.tgz.sha256"
		assert_output_has 'into C:\opt\cni\bin'
		assert_output_has "windows-container-networking-cni-amd64-v0.3.3.zip.sha256"
		assert_output_has "CloudbaseInitSetup_1_1_8_x64.msi"
		assert_output_has 'to C:\ProgramData\winbuild\installers\CloudbaseInitSetup_x64.msi (msi RUN_SERVICE_AS_LOCAL_SYSTEM=1)'
		assert_output_lacks "nssm"
	done
}

@test "--json of every shipped image: all artifacts, each verified and placed on C:" {
	for img in $IMAGES; do
		wb plan --json "$R/$img.yaml"
		assert_status 0
		check_plan_json "$img"
	done
}

@test "--json lists the components' PATH, directories, Defender exclusions and firewall" {
	wb plan --json "$R/windows-2022-containerd.yaml"
	assert_status 0
	printf '%s' "$output" > "$WORK/plan.json"
	python3 - "$WORK/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in p["components"]}
assert "C:\\Program Files\\containerd" in c["containerd"]["path"]
assert "C:\\ProgramData\\containerd" in c["containerd"]["defender_exclusions"]
assert "C:\\k" in c["kubernetes"]["path"]
for d in ("C:\\var\\lib\\kubelet", "C:\\var\\log\\kubelet", "C:\\etc\\kubernetes\\manifests",
          "C:\\etc\\kubernetes\\pki", "C:\\k"):
    assert d in c["kubernetes"]["directories"], d
assert {"name": "kubelet", "port": 10250, "protocol": "TCP"} in c["kubernetes"]["firewall"]
assert p["image"]["service_manager"] == "sc"
assert p["image"]["cloudbase_init_provider"] == "auto"
assert p["policy"]["require"] == "digest"
PY
}

@test "--explain traces values to the component files and the shared fragment" {
	wb plan --explain "$R/windows-2025-containerd.yaml"
	assert_status 0
	assert_output_has "components/containerd.yaml:"
	assert_output_has "components/kubernetes.yaml:"
	assert_output_has "cloudbase_init.provider = auto"
	assert_output_has "common/containerd-node.yaml:"
}

@test "needs_pin artifacts are reported as such (cloudbase-init; nssm when enabled)" {
	wb plan "$R/windows-2022-containerd.yaml" --set components.nssm.enabled=true --set node.service_manager=nssm
	assert_status 0
	assert_output_has "NEEDS PIN: cloudbase-init publishes no checksum"
	assert_output_has "NEEDS PIN: nssm.cc publishes no checksum"
	assert_output_has "https://nssm.cc/release/nssm-2.24.zip"
	assert_output_has 'into C:\Program Files\nssm (strip 1, include win64/nssm.exe)'
	assert_output_has "11 artifacts from 7 components, 1 container image; 3 need a pin (winbuild lock --accept-new): cloudbase-init, nssm, image pause"
}

@test "vars.kubernetes_version moves every Kubernetes binary" {
	wb plan --json "$R/windows-2022-containerd.yaml" --set vars.kubernetes_version=1.34.1
	assert_status 0
	printf '%s' "$output" > "$WORK/plan.json"
	python3 - "$WORK/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
k = [a for a in p["artifacts"] if a["component"] == "kubernetes"]
assert len(k) == 5, k
for a in k:
    assert a["version"] == "1.34.1", a
    assert a["url"] == "https://dl.k8s.io/release/v1.34.1/bin/windows/amd64/%s.exe" % a["name"], a["url"]
    assert a["verify"]["sha256_urls"] == [a["url"] + ".sha256"], a["verify"]
PY
}

@test "enterprise-mirror: every URL starts with the mirror and no upstream URL is listed" {
	for img in $IMAGES; do
		wb plan -O "$O/enterprise-mirror.yaml" --json "$R/$img.yaml"
		assert_status 0
		check_plan_json "$img" mirror
		wb plan -O "$O/enterprise-mirror.yaml" "$R/$img.yaml"
		assert_status 0
		assert_output_has "mirror only: upstream is never contacted"
		assert_output_has "policy: require digest; http refused"
		assert_urls_lack "https://github.com/"
		assert_urls_lack "https://dl.k8s.io/"
	done
	# nssm.cc is mirrored too
	wb plan -O "$O/enterprise-mirror.yaml" --set components.nssm.enabled=true "$R/windows-2022-containerd.yaml"
	assert_status 0
	assert_output_has "https://artifacts.example.corp/nssm.cc/release/nssm-2.24.zip"
	assert_urls_lack "https://nssm.cc/"
}

@test "enterprise-replace: containerd and Kubernetes binaries come from the corp build, signed by the corp key" {
	wb plan -O "$O/enterprise-replace.yaml" --json "$R/windows-2022-containerd.yaml"
	assert_status 0
	printf '%s' "$output" > "$WORK/plan.json"
	python3 - "$WORK/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["policy"]["require"] == "signature", p["policy"]
assert p["policy"]["checksum_urls"] == "forbid", p["policy"]
replaced = {"containerd", "kubelet", "kubeadm", "kube-proxy", "kubectl", "kube-log-runner"}
for a in p["artifacts"]:
    ms = a["verify"]["minisign"]
    assert ms, (a["name"], "no minisign")
    assert "231351CE8E7A3CB0" in json.dumps(ms).upper(), (a["name"], ms)
    if a["name"] in replaced:
        assert a["replaced"], a["name"]
        assert a["url"].startswith("https://artifacts.example.corp/builds/"), a["url"]
        assert not a["verify"]["sha256_urls"], (a["name"], "upstream checksum kept")
    else:
        assert not a["replaced"], a["name"]
PY
}

@test "enterprise-mirror and enterprise-replace combine (air gap with signed rebuilds)" {
	wb plan -O "$O/enterprise-mirror.yaml" -O "$O/enterprise-replace.yaml" "$R/windows-2019-containerd.yaml"
	assert_status 0
	assert_output_has "policy: require signature; http refused; checksum files forbidden"
	assert_output_has "https://artifacts.example.corp/builds/containerd/"
	assert_urls_lack "https://github.com/"
	assert_urls_lack "https://dl.k8s.io/"
}

@test "shipped files: component files explain provenance; no secret key is shipped" {
	for f in "$R"/components/*.yaml; do
		head -1 "$f" | grep -q '^# ' || { echo "$f: no header comment" >&2; return 1; }
		grep -qi 'provenance' "$f" || { echo "$f: no provenance note" >&2; return 1; }
	done
	if grep -rlE 'minisign encrypted secret key|^RWQAAEIy' "$WB_SRC/overrides" "$R"; then
		echo "a minisign secret key is shipped" >&2
		return 1
	fi
}

@test "issue 28: overrides/enterprise-replace.yaml points at builds of the plan's own versions, and follows a version change" {
	R="$WB_SRC/recipes/windows-2022-containerd.yaml"
	run "$WINBUILD" plan "$R" -O "$WB_SRC/overrides/enterprise-mirror.yaml" -O "$WB_SRC/overrides/enterprise-replace.yaml"
	assert_status 0
	assert_output_has "/builds/kubernetes/v1.36.4-corp1/windows/amd64/kubelet.exe"
	assert_output_has "/builds/containerd/2.3.5-corp1/containerd-2.3.5-corp1-windows-amd64.tar.gz"
	[[ "$output" != *1.33.5* ]]
	run "$WINBUILD" plan "$R" -O "$WB_SRC/overrides/enterprise-replace.yaml" --set vars.kubernetes_version=1.35.2
	assert_status 0
	assert_output_has "/builds/kubernetes/v1.35.2-corp1/windows/amd64/kubelet.exe"
}
