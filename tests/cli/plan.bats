#!/usr/bin/env bats
# winbuild plan: resolution, precedence, origins, JSON, and bad input.
load helpers

FIX="$BATS_TEST_DIRNAME/fixtures/plan"

setup() {
	common_setup
	cp -R "$FIX"/. "$WORK/"
}

# write_image BODY: an image recipe img2.yaml beside the fixture components
write_image() {
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\n%s\n' "$1" > bad.yaml
}

# expect_recipe_error FILE LINE COL KEY
expect_recipe_error() {
	assert_status 2
	assert_output_has "$1:$2:$3:"
	assert_output_has "$4"
}

@test "plan lists every artifact with URL, verification and destination" {
	wb plan img.yaml
	assert_status 0
	assert_output_has "containerd  (component containerd 2.1.4)"
	assert_output_has "https://github.com/containerd/containerd/releases/download/v2.1.4/containerd-2.1.4-windows-amd64.tar.gz"
	assert_output_has "sha256 from checksum file https://github.com/containerd/containerd/releases/download/v2.1.4/containerd-2.1.4-windows-amd64.tar.gz.sha256sum"
	assert_output_has 'into C:\Program Files\containerd (strip 1, include *.exe)'
	assert_output_has "kubelet  (component kubernetes 1.33.5)"
	assert_output_has 'to C:\k\kubelet.exe'
	assert_output_lacks "nssm"
}

@test "a disabled component can be enabled with --set and is reported as needing a pin" {
	wb plan img.yaml --set components.nssm.enabled=true
	assert_status 0
	assert_output_has "NEEDS PIN: nssm.cc publishes no checksum"
	assert_output_has "1 needs a pin (winbuild lock --accept-new): nssm"
}

@test "mirror override rewrites every URL and keeps upstream after it" {
	wb plan img.yaml -O override.yaml --json
	assert_status 0
	python3 - "$output" <<'PY'
import json, sys
p = json.loads(sys.argv[1])
for a in p["artifacts"]:
    assert a["urls"][0].startswith("https://mirror.corp/"), a["urls"]
    assert a["urls"][-1] == a["url"], a["urls"]
    assert len(a["urls"]) == 2
    for u in a["verify"]["sha256_urls"][:1]:
        assert u.startswith("https://mirror.corp/"), u
PY
}

@test "mirror_only drops upstream URLs" {
	wb plan img.yaml -O mirror-only.yaml --json
	assert_status 0
	python3 - "$output" <<'PY'
import json, sys
p = json.loads(sys.argv[1])
assert p["mirror_only"] is True
for a in p["artifacts"]:
    assert all(u.startswith("https://mirror.corp/") for u in a["urls"]), a["urls"]
    assert all(u.startswith("https://mirror.corp/") for u in a["verify"]["sha256_urls"])
PY
}

@test "mirror_only with a URL no rule covers is an error naming the URL" {
	wb plan img.yaml -O mirror-only.yaml --set components.nssm.enabled=true
	assert_status 2
	assert_output_has "no mirror rule covers URL 'https://nssm.cc/release/nssm-2.24.zip'"
}

@test "precedence: override file beats recipe, --set beats override, --explain shows origins" {
	wb plan img.yaml --explain
	assert_status 0
	assert_output_has "components.containerd.version = 2.1.4    <- components/containerd.yaml:3:10"
	wb plan img.yaml -O override.yaml --explain
	assert_status 0
	assert_output_has "containerd  (component containerd 2.1.3)"
	assert_output_has "components.containerd.version = 2.1.3    <- override.yaml:9:14"
	wb plan img.yaml -O override.yaml --set components.containerd.version=2.1.5 --explain
	assert_status 0
	assert_output_has "containerd  (component containerd 2.1.5)"
	assert_output_has "components.containerd.version = 2.1.5    <- --set #1"
}

@test "WINBUILD_SET sits between override files and --set" {
	WINBUILD_SET="components.containerd.version=2.0.0;vars.k8s=1.34.1" wb plan img.yaml -O override.yaml --explain
	assert_status 0
	assert_output_has "containerd  (component containerd 2.0.0)"
	assert_output_has "kubelet  (component kubernetes 1.34.1)"
	assert_output_has "vars.k8s = 1.34.1    <- env WINBUILD_SET #2"
	WINBUILD_SET="components.containerd.version=2.0.0" wb plan img.yaml --set components.containerd.version=2.1.9
	assert_output_has "containerd  (component containerd 2.1.9)"
}

@test "later override files win over earlier ones" {
	printf 'kind: override\ncomponents:\n  containerd:\n    version: "9.9.9"\n' > o2.yaml
	wb plan img.yaml -O override.yaml -O o2.yaml
	assert_status 0
	assert_output_has "containerd  (component containerd 9.9.9)"
	wb plan img.yaml -O o2.yaml -O override.yaml
	assert_output_has "containerd  (component containerd 2.1.3)"
}

@test "--set takes a YAML flow list" {
	wb plan img.yaml --set 'components.containerd.artifacts.containerd.unpack.include=[ctr.exe, containerd.exe]'
	assert_status 0
	assert_output_has "include ctr.exe containerd.exe"
}

@test "replace swaps URL and verification; upstream trust stays without its own verify" {
	cat > rep.yaml <<'Y'
kind: override
replace:
  containerd:
    url: https://corp.example/containerd.tar.gz
    verify:
      sha256: "0000000000000000000000000000000000000000000000000000000000000000"
  kubelet:
    url: https://corp.example/kubelet.exe
Y
	wb plan img.yaml -O rep.yaml --json
	assert_status 0
	python3 - "$output" <<'PY'
import json, sys
a = {x["name"]: x for x in json.loads(sys.argv[1])["artifacts"]}
c, k = a["containerd"], a["kubelet"]
assert c["urls"] == ["https://corp.example/containerd.tar.gz"] and c["replaced"]
assert c["verify"]["sha256"] == "0" * 64 and c["verify"]["sha256_urls"] == []
assert k["urls"] == ["https://corp.example/kubelet.exe"]
assert k["verify"]["sha256_urls"] == ["https://corp.example/kubelet.exe.sha256"]
PY
}

@test "require: signature from an override cannot be loosened by --set or WINBUILD_SET" {
	wb plan img.yaml -O require-signature.yaml
	assert_status 2
	assert_output_has "has no signature (minisign, sigstore, attestation, cosign), but policy.require is 'signature' (require-signature.yaml:3:12)"
	wb plan img.yaml -O require-signature.yaml --set policy.require=digest
	assert_status 2
	WINBUILD_SET="policy.require=digest" wb plan img.yaml -O require-signature.yaml
	assert_status 2
}

@test "allow_http: false refuses an http mirror" {
	printf 'kind: override\nmirrors:\n  - {from: "https://github.com/", to: "http://m.corp/gh/"}\npolicy: {allow_http: false}\n' > h.yaml
	wb plan img.yaml -O h.yaml
	assert_status 2
	assert_output_has "is plain http and policy.allow_http is false"
}

@test "plan --json has the documented fields" {
	wb plan img.yaml --set components.nssm.enabled=true --json
	assert_status 0
	python3 - "$output" <<'PY'
import json, sys
p = json.loads(sys.argv[1])
assert p["schema"] == 1
assert p["image"]["name"] == "test-img" and p["image"]["windows_version"] == "2022"
assert p["policy"] == {"require": "digest", "allow_http": True, "checksum_urls": "allow",
                       "unverified_iso": "forbid", "locked_urls": "report", "tlog_threshold": 1}
assert p["image"]["windows_iso"] == {"sha256": "eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12", "verified": True, "missing": False,
                                     "origin": "img.yaml:5:33"}, p["image"]["windows_iso"]
names = [a["name"] for a in p["artifacts"]]
assert names == sorted(names) == ["containerd", "kubelet", "nssm"], names
a = {x["name"]: x for x in p["artifacts"]}
c = a["containerd"]
assert c["component"] == "containerd" and c["version"] == "2.1.4"
assert c["filename"] == "containerd-2.1.4-windows-amd64.tar.gz"
assert c["action"] == "unpack" and c["destination"] == "C:\\Program Files\\containerd"
assert c["tree_path"] == "Program Files/containerd"
assert c["unpack"]["strip"] == 1 and c["unpack"]["include"] == ["*.exe"]
assert c["origins"]["url"].startswith("components/containerd.yaml:")
assert a["kubelet"]["action"] == "install" and a["kubelet"]["tree_path"] == "k/kubelet.exe"
assert a["nssm"]["verify"]["needs_pin"].startswith("nssm.cc")
comp = {x["name"]: x for x in p["components"]}
assert comp["kubernetes"]["firewall"] == [{"name": "kubelet", "port": 10250, "protocol": "TCP"}]
assert any(v["key"] == "vars.k8s" and v["origin"] == "img.yaml:7:8" for v in p["values"])
PY
}

@test "plan needs exactly one recipe" {
	wb plan
	assert_status 2
	assert_output_has "usage: winbuild plan RECIPE"
}

@test "plan refuses an option it does not take" {
	wb plan img.yaml --offline
	assert_status 2
	assert_output_has "unknown option '--offline'"
}

@test "a missing recipe file exits 2" {
	wb plan nothere.yaml
	assert_status 2
	assert_output_has "nothere.yaml"
}

# ---- bad recipes: each exits 2 naming file:line:col and the key ----

@test "bad: unknown key" {
	write_image 'components:
  containerd: {verison: "1"}'
	wb plan bad.yaml
	expect_recipe_error bad.yaml 6 16 "unknown key 'components.containerd.verison'"
}

@test "bad: unknown key in a component file" {
	sed -i 's/^vars:/varz:/' components/containerd.yaml
	wb plan img.yaml
	expect_recipe_error components/containerd.yaml 4 1 "unknown key 'components.containerd.varz'"
}

@test "bad: wrong type" {
	write_image 'components:
  containerd:
    version: [1, 2]'
	wb plan bad.yaml
	expect_recipe_error bad.yaml 7 14 "'components.containerd.version' must be a string, not a list"
}

@test "bad: wrong type for an integer" {
	sed -i 's/strip: 1/strip: one/' components/containerd.yaml
	wb plan img.yaml
	expect_recipe_error components/containerd.yaml 12 14 "'components.containerd.artifacts.containerd.unpack.strip' must be a non-negative integer"
}

@test "bad: missing url" {
	sed -i '/^    url:/d' components/containerd.yaml
	wb plan img.yaml
	expect_recipe_error components/containerd.yaml 8 5 "missing required key 'url' in 'components.containerd.artifacts.containerd'"
}

@test "bad: missing verify" {
	sed -i '/^    verify:/d; /sha256_url/d' components/containerd.yaml
	wb plan img.yaml
	expect_recipe_error components/containerd.yaml 8 5 "missing required key 'verify'"
}

@test "bad: verify with no method" {
	sed -i 's/^      sha256_url:.*/      source: "nowhere"/' components/containerd.yaml
	wb plan img.yaml
	expect_recipe_error components/containerd.yaml 10 7 "has no verification"
}

@test "bad: undefined variable" {
	sed -i 's/windows-${arch}/windows-${platform}/' components/containerd.yaml
	wb plan img.yaml
	expect_recipe_error components/containerd.yaml 8 10 "undefined variable '\${platform}'"
}

@test "bad: include cycle" {
	printf 'kind: image\ninclude: [b.yaml]\nname: x\n' > a.yaml
	printf 'kind: image\ninclude:\n  - a.yaml\n' > b.yaml
	wb plan a.yaml
	expect_recipe_error b.yaml 3 5 "include cycle"
}

@test "bad: include not found" {
	printf 'kind: image\nname: x\ninclude:\n  - missing.yaml\n' > a.yaml
	wb plan a.yaml
	expect_recipe_error a.yaml 4 5 "include 'missing.yaml' not found"
}

@test "bad: component file not found" {
	write_image 'components:
  nosuch: {}'
	wb plan bad.yaml
	expect_recipe_error bad.yaml 6 3 "unknown component 'nosuch': no file 'components/nosuch.yaml'; valid names: containerd, kubernetes, nssm"
}

@test "bad: destination with .." {
	sed -i 's/into: .*/into: '"'"'C:\\k\\..\\Windows'"'"'/' components/containerd.yaml
	wb plan img.yaml
	expect_recipe_error components/containerd.yaml 14 13 "'.' or '..' component"
}

@test "bad: destination on D:" {
	sed -i 's/into: .*/into: '"'"'D:\\containerd'"'"'/' components/containerd.yaml
	wb plan img.yaml
	expect_recipe_error components/containerd.yaml 14 13 "only the system drive C: can be staged"
}

@test "bad: reserved name CON" {
	sed -i 's/to: .*/to: '"'"'C:\\k\\CON'"'"' }/' components/kubernetes.yaml
	wb plan img.yaml
	expect_recipe_error components/kubernetes.yaml 8 20 "reserved device name"
}

@test "bad: a character Windows forbids" {
	sed -i 's/to: .*/to: '"'"'C:\\k\\kube?let.exe'"'"' }/' components/kubernetes.yaml
	wb plan img.yaml
	expect_recipe_error components/kubernetes.yaml 8 20 "character Windows forbids"
}

@test "bad: YAML syntax error" {
	printf 'kind: image\nname: x\nwindows: {version: "2022"\ncomponents: {}\n' > bad.yaml
	wb plan bad.yaml
	assert_status 2
	assert_output_has "bad.yaml:4:"
	assert_output_has "YAML syntax error"
}

@test "bad: duplicate artifact name across components" {
	cat >> components/kubernetes.yaml <<'Y'
Y
	sed -i 's/^  kubelet:/  containerd:/' components/kubernetes.yaml
	wb plan img.yaml
	expect_recipe_error components/kubernetes.yaml 5 3 "duplicate artifact name 'containerd' (also in component 'containerd'"
}

@test "bad: duplicate key in one map" {
	printf 'kind: image\nname: x\nname: y\n' > bad.yaml
	wb plan bad.yaml
	expect_recipe_error bad.yaml 3 1 "duplicate key 'name' (first at line 2)"
}

@test "bad: empty file" {
	: > bad.yaml
	wb plan bad.yaml
	expect_recipe_error bad.yaml 1 1 "empty file"
}

@test "bad: binary garbage" {
	printf 'kind: image\n\x00\xff\xfe\x01garbage' > bad.yaml
	wb plan bad.yaml
	expect_recipe_error bad.yaml 2 1 "not valid UTF-8 YAML text"
}

@test "bad: a 10 MB file is refused quickly" {
	python3 -c 'import sys; sys.stdout.write("kind: image\nvars:\n" + "".join("  v%d: x\n" % i for i in range(800000)))' > big.yaml
	[ "$(stat -c %s big.yaml)" -gt 10000000 ]
	timeout 10 "$WINBUILD" plan big.yaml > out.txt 2>&1 && status=0 || status=$?
	output=$(cat out.txt)
	assert_status 2
	assert_output_has "big.yaml"
	assert_output_has "larger than the limit"
}

@test "bad: a deeply nested file neither hangs nor crashes" {
	python3 -c 'print("kind: image\nvars: " + "[" * 100000 + "]" * 100000)' > deep.yaml
	timeout 10 "$WINBUILD" plan deep.yaml > out.txt 2>&1 && status=0 || status=$?
	output=$(cat out.txt)
	assert_status 2
	assert_output_has "deep.yaml:2:"
	assert_output_has "nested deeper than 32 levels"
}

@test "bad: YAML aliases are refused" {
	printf 'kind: image\nname: x\nvars: &a {a: b}\nwindows: *a\n' > bad.yaml
	wb plan bad.yaml
	expect_recipe_error bad.yaml 4 10 "YAML aliases are not supported"
}

@test "bad: --set with a malformed key" {
	wb plan img.yaml --set 'components..version=1'
	assert_status 2
	assert_output_has "--set #1: bad key 'components..version'"
}

@test "bad: --set naming an unknown key" {
	wb plan img.yaml --set components.containerd.verison=1
	assert_status 2
	assert_output_has "--set #1: unknown key 'components.containerd.verison'"
}

@test "bad: --set without =" {
	wb plan img.yaml --set components.containerd.version
	assert_status 2
	assert_output_has "--set #1: 'components.containerd.version' is not KEY=VALUE"
}

@test "bad: override file with the wrong kind" {
	wb plan img.yaml -O img.yaml
	expect_recipe_error img.yaml 2 7 "'kind' must be 'override'"
}

@test "bad: replace naming no artifact" {
	printf 'kind: override\nreplace:\n  kubelett:\n    url: https://x.example/k.exe\n' > o.yaml
	wb plan img.yaml -O o.yaml
	expect_recipe_error o.yaml 3 3 "'replace.kubelett' names no artifact"
}

@test "bad: a minisign key that does not parse" {
	printf 'kind: override\nsignatures:\n  keys:\n    - key: "RWQnotakey"\n' > o.yaml
	wb plan img.yaml -O o.yaml
	expect_recipe_error o.yaml 4 12 "bad minisign public key"
}

@test "mirror_only forbids upstream but keeps a URL that replace supplied" {
	printf 'kind: override\nreplace:\n  kubelet:\n    url: https://corp.example/kubelet.exe\n    verify: {sha256: "%064d"}\n' 0 > rep.yaml
	wb plan img.yaml -O mirror-only.yaml -O rep.yaml --json
	assert_status 0
	python3 - "$output" <<'PY'
import json, sys
a = {x["name"]: x for x in json.loads(sys.argv[1])["artifacts"]}
assert a["kubelet"]["urls"] == ["https://corp.example/kubelet.exe"], a["kubelet"]["urls"]
assert a["containerd"]["urls"][0].startswith("https://mirror.corp/")
assert len(a["containerd"]["urls"]) == 1
PY
}

@test "paths through includes are shown normalised" {
	mkdir -p common
	printf 'kind: image\ncomponents:\n  containerd:\n    file: ../components/containerd.yaml\n' > common/base.yaml
	printf 'kind: image\nname: n\ninclude: [common/base.yaml]\nwindows: {version: "2019", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\n' > n.yaml
	wb plan n.yaml --json
	assert_status 0
	assert_output_has '"url": "components/containerd.yaml:8:10"'
}

@test "a component set in an override still finds its file beside the image recipe" {
	mkdir -p ov
	printf 'kind: override\ncomponents:\n  containerd:\n    version: "2.0.1"\n' > ov/o.yaml
	wb plan img.yaml -O ov/o.yaml
	assert_status 0
	assert_output_has "containerd  (component containerd 2.0.1)"
}

# shipped_url ARTIFACT --set...: the shipped recipe's planned URL of ARTIFACT
shipped_url() {
	local a="$1"
	shift
	"$WINBUILD" plan "$WB_SRC/recipes/windows-2022-containerd.yaml" \
		--set windows.iso_sha256=$TEST_ISO_SHA256 "$@" --json 2>"$WORK/plan.err" |
		python3 -c 'import json, sys
print([a["url"] for a in json.load(sys.stdin)["artifacts"] if a["name"] == sys.argv[1]][0])' "$a"
}

@test "issue 18: file names follow versions: the cloudbase-init MSI, crictl on Kubernetes' minor unless set" {
	run shipped_url cloudbase-init --set components.cloudbase-init.version=1.1.7
	assert_status 0
	[ "$output" = https://github.com/cloudbase/cloudbase-init/releases/download/1.1.7/CloudbaseInitSetup_1_1_7_x64.msi ]
	run shipped_url crictl --set vars.kubernetes_version=1.35.2
	assert_status 0
	[ "$output" = https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.35.0/crictl-v1.35.0-windows-amd64.tar.gz ]
	# set explicitly, it is what was set
	run shipped_url crictl --set vars.kubernetes_version=1.35.2 --set components.crictl.version=1.34.1
	assert_status 0
	[ "$output" = https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.34.1/crictl-v1.34.1-windows-amd64.tar.gz ]
	# ... with a warning on stderr (crictl off Kubernetes' minor: versions.bats)
	grep -q "warning: .*crictl 1.34.1 is not on Kubernetes' minor 1.35" "$WORK/plan.err"
	# an unknown transform is an error at its place (exit 2)
	wb plan "$WB_SRC/recipes/windows-2022-containerd.yaml" --set windows.iso_sha256=$TEST_ISO_SHA256 \
		--set 'components.crictl.version=${kubernetes_version:major}'
	assert_status 2
	assert_output_has "unknown transform ':major'"
	assert_output_has "components.crictl.version"
}

@test "a component directory that is, or lies beneath, a file an artifact installs: plan-time error at the directory" {
	# same place spelled in another case, and a directory beneath the file
	for d in 'C:\K\KUBELET.EXE' 'C:\k\kubelet.exe\logs'; do
		printf 'directories:\n  - C:\\var\n  - %s\n' "$d" >> components/kubernetes.yaml
		wb plan img.yaml
		assert_status 2
		assert_output_has "kubernetes.yaml:12:5: directory '$d' of component 'kubernetes'"
		assert_output_has "the file artifact 'kubelet' installs ('C:\\k\\kubelet.exe')"
		cp "$FIX/components/kubernetes.yaml" components/
	done
	# a directory beside the file, or its parent, is fine
	printf 'directories:\n  - C:\\k\n  - C:\\k\\kubelet.exe.d\n' >> components/kubernetes.yaml
	wb plan img.yaml
	assert_status 0
}

@test "verify.<method>.since: an older component version stops the plan at the version, naming the requirement and the way out; a newer one plans" {
	cat > components/kubernetes.yaml <<Y
kind: component
name: kubernetes
version: "1.33.5"
artifacts:
  kubelet:
    url: https://dl.k8s.io/release/v\${version}/bin/windows/amd64/kubelet.exe
    verify:
      sha256_url: "\${url}.sha256"
      cosign:
        trusted_root: $WB_SRC/recipes/trust/sigstore/trusted_root.json
        identity: someone@example.test
        issuer: https://issuer.example.test
        since: {version: "1.34", missing: signatures before 1.34, instead: an override}
    install: { to: 'C:\k\kubelet.exe' }
Y
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:11:14: kubernetes 1.33.5 publishes no signatures before 1.34, but artifact 'kubelet' requires it (verify.cosign, components/kubernetes.yaml:10:9): use kubernetes 1.34 or later, or an override"
	wb plan img.yaml --set vars.k8s=1.34.0
	assert_status 0
	wb plan img.yaml --set vars.k8s=2.0.0
	assert_status 0
	# not a version, and a missing key: recipe errors at their place
	sed -i 's/version: "1.34"/version: "soon"/' components/kubernetes.yaml
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/kubernetes.yaml:13:26: components.kubernetes.artifacts.kubelet.verify.cosign.since.version: 'soon' is not a version"
	sed -i 's/missing: signatures before 1.34, //' components/kubernetes.yaml
	wb plan img.yaml
	assert_status 2
	assert_output_has "missing required key 'missing'"
}

@test "issue 28: a later replace.X.verify replaces an earlier one whole (doc, --explain, behaviour agree); null unsets, never trust" {
	R="$WB_SRC/recipes/windows-2022-containerd.yaml"
	D=$(printf x | sha256sum | cut -c1-64)
	printf 'kind: override\nreplace:\n  containerd:\n    url: https://a.example/c.tgz\n    verify:\n      sha256_url: https://a.example/c.tgz.sha256\n' >r1.yaml
	printf 'kind: override\nreplace:\n  containerd:\n    verify:\n      sha256: %s\n' "$D" >r2.yaml
	"$WINBUILD" plan "$R" -O r1.yaml -O r2.yaml --json >p.json 2>/dev/null
	python3 - "$(cat p.json)" "$D" <<-'PY'
		import json, sys
		p = json.loads(sys.argv[1])
		a = next(a for a in p["artifacts"] if a["name"] == "containerd")
		v = a["verify"]
		assert v["sha256"] == sys.argv[2], v
		# r1's checksum file is gone: replaced, not merged
		assert v["sha256_urls"] == [], v
		vals = {x["key"]: x["origin"] for x in p["values"]}
		assert not any(k.startswith("replace.containerd.verify.sha256_url") for k in vals), vals
		assert vals["replace.containerd.verify.sha256"].startswith("r2.yaml:5:"), vals
		assert vals["replace.containerd.url"].startswith("r1.yaml:4:"), vals
	PY
	wb plan "$R" -O r1.yaml -O r2.yaml --explain
	assert_output_has "verify:  sha256 $D    <- r2.yaml:5:15"
	[[ "$output" != *"c.tgz.sha256"* ]]
	# null unsets an ordinary value (its default comes back) ...
	printf 'kind: override\nnode:\n  pause_image: example.com/p:1\n' >o1.yaml
	printf 'kind: override\nnode:\n  pause_image: ~\n' >o2.yaml
	"$WINBUILD" plan "$R" -O o1.yaml -O o2.yaml --json >p.json 2>/dev/null
	python3 -c 'import json,sys; p = json.load(open("p.json")); assert p["image"]["pause_image"] == "registry.k8s.io/pause:3.10", p["image"]["pause_image"]' 
	# ... and the component file's transparency-log source, so a layer can give the entry instead
	wb plan "$R" --set 'components.kubernetes.artifacts.kubelet.verify.cosign.rekor=~'
	assert_status 0
	# never trust: a pin, a requirement, the policy, mirror_only
	for k in components.kubernetes.artifacts.kubelet.verify.sha256_url \
		components.kubernetes.artifacts.kubelet.verify.cosign \
		components.kubernetes.artifacts.kubelet.verify policy.require mirror_only \
		replace.containerd.verify windows.iso_sha256; do
		wb plan "$R" -O r1.yaml --set "$k=~"
		assert_status 2
		assert_output_has "--set #1: '$k' cannot be unset (null): that would loosen"
	done
	printf 'kind: override\npolicy:\n  require: null\n' >o3.yaml
	wb plan "$R" -O o3.yaml
	assert_status 2
	assert_output_has "o3.yaml:3:12: 'policy.require' cannot be unset"
}

@test "issue 41: plan, plan --explain and plan --json never print a --set URL's password or signed query" {
	local u='components.containerd.artifacts.containerd.url=https://user:Passw0rdPlanted41@example.com/c.tgz?se=1&sig=SigPlanted41'
	local s='components.containerd.artifacts.containerd.verify.sha256_url=https://example.com/c.sha'
	for m in "" --explain --json; do
		wb plan img.yaml $m --set "$u" --set "$s"
		assert_status 0
		assert_output_has "example.com/c.tgz?se=1&sig=REDACTED"
		assert_output_lacks Passw0rdPlanted41
		assert_output_lacks SigPlanted41
	done
	# the value as given (the --explain origin list, --json "values")
	wb plan img.yaml --explain --set "$u" --set "$s"
	assert_output_has "components.containerd.artifacts.containerd.url = https://example.com/c.tgz?se=1&sig=REDACTED    <- --set #1"
}
