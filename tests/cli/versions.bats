#!/usr/bin/env bats
# Every derived value has one source (issue 18 item 3): vars.kubernetes_version
# and components.kubernetes.version cannot disagree; a value that cannot be
# derived and looks inconsistent gets a warning from plan (stderr, and
# `warnings` in plan --json).
load helpers

setup() {
	common_setup
	R="$WB_SRC/recipes/windows-2022-containerd.yaml"
	ISO=(--set "windows.iso_sha256=$TEST_ISO_SHA256")
	COMMON="$WB_SRC/recipes/common/containerd-node.yaml"
	# where the shipped recipe sets vars.kubernetes_version: file:line:col
	VAR_AT="$COMMON:$(grep -n '^  kubernetes_version:' "$COMMON" | cut -d: -f1):23"
}

# plan_json ARGS...: plan --json of the shipped recipe; stdout in $WORK/p.json,
# stderr in $WORK/err, exit status in $status
plan_json() {
	run bash -c 'w=$1; shift; "$w" plan "$@" --json >"$0/p.json" 2>"$0/err"' \
		"$WORK" "$WINBUILD" "$R" "${ISO[@]}" "$@"
}

# warnings: the plan's warnings as "ORIGIN|MESSAGE" lines (python's json)
warnings() {
	python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
assert isinstance(p["warnings"], list), p["warnings"]
for w in p["warnings"]:
    assert sorted(w) == ["message", "origin"], w
    print(w["origin"] + "|" + w["message"])' "$WORK/p.json"
}

# no_warnings: the plan --json lists none (and has the list)
no_warnings() {
	local out
	out=$(warnings) || return 1
	[ -z "$out" ] || { echo "unexpected warnings: $out" >&2; return 1; }
}

@test "vars.kubernetes_version and components.kubernetes.version cannot disagree: both origins named" {
	wb plan "$R" "${ISO[@]}" --set components.kubernetes.version=1.35.2
	assert_status 2
	assert_output_has "--set #2: components.kubernetes.version is '1.35.2', but vars.kubernetes_version is '1.36.4' ($VAR_AT)"
	assert_output_has 'set vars.kubernetes_version (components.kubernetes.version follows it as "${kubernetes_version}")'
	# from an override file: its file:line:col
	printf 'kind: override\ncomponents:\n  kubernetes:\n    version: "1.35.2"\n' >"$WORK/o.yaml"
	wb plan "$R" "${ISO[@]}" -O "$WORK/o.yaml"
	assert_status 2
	assert_output_has "$WORK/o.yaml:4:14: components.kubernetes.version is '1.35.2'"
	assert_output_has "($VAR_AT)"
	# the other way round: a recipe that pins the component, a --set that
	# moves only the variable
	printf 'kind: override\ncomponents:\n  kubernetes:\n    version: "1.36.4"\n' >"$WORK/pin.yaml"
	wb plan "$R" "${ISO[@]}" -O "$WORK/pin.yaml" --set vars.kubernetes_version=1.35.2
	assert_status 2
	assert_output_has "$WORK/pin.yaml:4:14: components.kubernetes.version is '1.36.4', but vars.kubernetes_version is '1.35.2' (--set #2)"
}

@test "one source: the same value twice is fine, and the variable moves everything" {
	wb plan "$R" "${ISO[@]}" --set components.kubernetes.version=1.36.4
	assert_status 0
	plan_json --set vars.kubernetes_version=1.35.2
	assert_status 0
	python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
v = {c["name"]: c["version"] for c in p["components"]}
assert v["kubernetes"] == "1.35.2" and v["crictl"] == "1.35.0", v' "$WORK/p.json"
	no_warnings
	[ ! -s "$WORK/err" ]
}

@test "plan warns when crictl is set off Kubernetes' minor (stderr and --json warnings)" {
	plan_json --set vars.kubernetes_version=1.35.2 --set components.crictl.version=1.34.1
	assert_status 0
	run warnings
	assert_status 0
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "--set #3|crictl 1.34.1 is not on Kubernetes' minor 1.35 (components.kubernetes.version 1.35.2, $COMMON:"* ]]
	grep -qF "winbuild: warning: --set #3: crictl 1.34.1 is not on Kubernetes' minor 1.35" "$WORK/err"
	# on the same minor: no warning
	plan_json --set vars.kubernetes_version=1.35.2 --set components.crictl.version=1.35.1
	assert_status 0
	no_warnings
	[ ! -s "$WORK/err" ]
}

@test "plan warns about a containerd the node config or Kubernetes does not fit" {
	# (1.7 publishes no build provenance: overrides/containerd-1.7.yaml drops that requirement)
	plan_json -O "$WB_SRC/overrides/containerd-1.7.yaml" --set components.containerd.version=1.7.28
	assert_status 0
	run warnings
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "--set #2|containerd 1.7.28 with Kubernetes 1.36.4 ("*"Kubernetes 1.35 was the last release to support containerd 1.x"* ]]
	grep -qF "winbuild: warning: --set #2: containerd 1.7.28 with Kubernetes 1.36.4" "$WORK/err"
	# with Kubernetes 1.35 containerd 1.7 is fine
	plan_json -O "$WB_SRC/overrides/containerd-1.7.yaml" --set components.containerd.version=1.7.28 \
		--set vars.kubernetes_version=1.35.2
	assert_status 0
	no_warnings
	# a major the node config has no template for
	plan_json --set components.containerd.version=3.0.0
	assert_status 0
	run warnings
	[[ "${lines[0]}" == "--set #2|containerd 3.0.0: the node config winbuild writes knows containerd 1.x (config version 2) and 2.x (version 3) only"* ]]
	# the shipped recipe as it is: no warnings, an empty list
	plan_json
	assert_status 0
	no_warnings
	[ ! -s "$WORK/err" ]
	# the text plan warns on stderr too
	wb plan "$R" "${ISO[@]}" --set components.containerd.version=3.0.0
	assert_status 0
	assert_output_has "winbuild: warning: --set #2: containerd 3.0.0"
}

@test "issue 28: a version with a leading 'v' is refused where the 'v' was written (file:line:col), never planned as .../vv1.35.2/..." {
	wb plan "$R" --set vars.kubernetes_version=v1.35.2
	assert_status 2
	assert_output_has "--set #1: vars.kubernetes_version is 'v1.35.2' (giving components.kubernetes.version 'v1.35.2'): write versions without a leading 'v' ('1.35.2')"
	[[ "$output" != *vv1.35* ]]
	wb plan "$R" --set components.containerd.version=v2.1.5 --json
	assert_status 2
	assert_output_has "components.containerd.version is 'v2.1.5': write versions without a leading 'v' ('2.1.5')"
	# in an override file: its own file:line:col
	printf 'kind: override\nvars:\n  kubernetes_version: v1.35.2\n' >"$WORK/semver.yaml"
	wb plan "$R" -O "$WORK/semver.yaml"
	assert_status 2
	assert_output_has "$WORK/semver.yaml:3:23: vars.kubernetes_version is 'v1.35.2'"
	# without the v all is well, and URLs carry exactly one
	wb plan "$R" --set vars.kubernetes_version=1.35.2 --json
	assert_status 0
	assert_output_has "/release/v1.35.2/"
	assert_output_has "crictl-v1.35.0-windows-amd64"
}
