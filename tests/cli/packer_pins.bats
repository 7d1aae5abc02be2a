#!/usr/bin/env bats
# Issue 43 item 2: plugin pins that hold at build time. Packer >= 1.7
# reads `packer { required_plugins }` from the template it builds; without
# one it loads the newest plugin installed (Packer v1.16.0
# packer/plugin.go, Discover), so the pins of init/required_plugins.pkr.hcl
# held only for `packer init`. `packer.version` names the Packer the
# template is for: from 1.7.0 on the main template carries the block with
# the platform table's exact pins for the builders emitted (and only
# those); below it (default 1.6.6, Debian's, which rejects the block:
# v1.6.6 hcl2template/parser.go, packerBlockSchema) the template stays as
# 1.6.6 validates it.

load helpers

TABLE="$WB_SRC/builder/lib/platform.c"
ATTRS="$WB_SRC/tests/packer/plugin-attrs.json"
PK=out/windows-2022-containerd/packer
HCL=$PK/windows-2022-containerd.pkr.hcl
ALL='packer.builders=[azure-arm, vsphere-iso, qemu, hyperv-iso, amazon-ebs, oracle-oci]'

setup() {
	common_setup
	packer_setup staged
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out windows-2022-containerd 2022
}

recipe() { echo "$WB_SRC/recipes/windows-2022-containerd.yaml"; }

# pins FILE BUILDER...: FILE's top-level `packer {}` block holds
# required_version ">= 1.7.0" and exactly the table's (key, source,
# version) of the plugins of BUILDER..., each version recorded in
# plugin-attrs.json (the attribute set checked against its hcl2spec.go)
pins() {
	python3 - "$TABLE" "$ATTRS" "$@" <<-'PY'
	import json, re, sys
	table, attrs = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
	text, builders = open(sys.argv[3]).read(), sys.argv[4:]
	rows = re.findall(r'\.name = "([^"]+)".*?\.plugin = "([^"]+)", \.plugin_source = "([^"]+)",'
	                  r'\s*\.plugin_version = "([^"]+)"', table, re.S)
	assert len(rows) == 6, rows
	want = sorted(set((p, s, v) for b, p, s, v in rows if b in builders))
	assert want, builders
	blocks = re.findall(r'^packer \{\n(.*?)^\}\n', text, re.S | re.M)
	assert len(blocks) == 1, blocks
	body = blocks[0]
	assert re.search(r'^  required_version = ">= 1\.7\.0"$', body, re.M), body
	got = sorted(re.findall(r'\n    (\S+) = \{\n      source  = "([^"]+)"\n'
	                        r'      version = "(\d+\.\d+\.\d+)"\n    \}', body))
	assert got == want, (got, want)
	for b, p, s, v in rows:
	    if b in builders:
	        assert attrs[b]["version"] == v and attrs[b]["tag"] == "v" + v, (b, v)
	print(len(got))
	PY
}

@test "i43.2: packer.version 1.16.0: the main template pins every builder's plugin exactly, as the table and plugin-attrs.json" {
	wb emit "$(recipe)" --set windows.desktop_experience=true --set "$ALL" \
		--set packer.version=1.16.0
	assert_status 0
	run pins "$HCL" azure-arm vsphere-iso qemu hyperv-iso amazon-ebs oracle-oci
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[ "$output" = 6 ]
	# the block is the template's first: before any source Packer resolves
	[ "$(grep -v '^#' "$HCL" | grep -m1 -v '^$')" = 'packer {' ]
	# the same pins as `packer init` reads from init/
	diff <(sed -n '/^packer {$/,/^}$/p' "$HCL" | sed -n '/^    [a-z]* = {$/,/^    }$/p') \
		<(sed -n '/^    [a-z]* = {$/,/^    }$/p' "$PK/init/required_plugins.pkr.hcl")
	# the sources still hold to the pinned plugins' attributes
	run python3 "$WB_SRC/tests/packer/check-attrs.py" "$HCL" "$ATTRS"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[[ "$output" == "6 sources, "* ]]
	# the header tells the modern way, not the init/ detour
	grep -q '^#   packer init \.$' "$HCL"
}

@test "i43.2: the block names only the builders emitted (--builder and packer.builders)" {
	wb emit "$(recipe)" --set 'packer.builders=[qemu, amazon-ebs]' --set packer.version=1.9.5
	assert_status 0
	run pins "$HCL" qemu amazon-ebs
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[ "$output" = 2 ]
	! grep -nE 'hashicorp/(azure|hyperv|oracle)|vmware/vsphere' "$HCL" || false
	wb emit "$(recipe)" --builder hyperv-iso --set packer.version=1.7.0
	assert_status 0
	run pins "$HCL" hyperv-iso
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[ "$output" = 1 ]
	# the check is not vacuous: a pin that is not the table's fails it
	sed 's/^      version = "1\.1\.4"$/      version = "1.1.5"/' "$HCL" >bumped.hcl
	! cmp -s "$HCL" bumped.hcl || false
	run pins bumped.hcl hyperv-iso
	assert_status 1
}

@test "i43.2: below 1.7.0 (default 1.6.6) no packer block; Packer 1.6.6 validates both, and rejects the modern one" {
	need_dep command -v packer -- "packer not installed (make deps)"
	for v in "" 1.6.6 1.6.0; do
		wb emit "$(recipe)" --builder qemu ${v:+--set packer.version=$v}
		assert_status 0
		! grep -nE '^[[:space:]]*packer[[:space:]]*\{|^[[:space:]]*required_' "$HCL" || false
		grep -q '^#   packer init init/required_plugins.pkr.hcl$' "$HCL"
		run packer validate "$PK"
		[ "$status" -eq 0 ] || { echo "$v: $output" >&2; return 1; }
	done
	# init/ keeps the pins for `packer init` either way
	grep -q '^    qemu = {$' "$PK/init/required_plugins.pkr.hcl"
	# the modern template is what 1.6.6 cannot read: why the choice exists
	wb emit "$(recipe)" --builder qemu --set packer.version=1.16.0
	assert_status 0
	run packer validate "$PK"
	[ "$status" -ne 0 ]
	[[ "$output" == *'Blocks of type "required_plugins" are not expected here'* ]] ||
		{ echo "$output" >&2; return 1; }
	[[ "$output" == *'Unsupported Packer Core version'* ]]
}

@test "i43.2: packer.version must be MAJOR.MINOR.PATCH: file:line:col, exit 2; plan shows the choice" {
	for bad in 1.16 v1.16.0 '>= 1.7' 1.16.0-rc1 latest; do
		wb plan "$(recipe)" --set "packer.version=$bad"
		assert_status 2
		assert_output_has "'packer.version' must be a Packer release as MAJOR.MINOR.PATCH"
	done
	cat >img.yaml <<-EOF
	kind: override
	packer:
	  version: "1.9"
	EOF
	wb plan "$(recipe)" -O img.yaml
	assert_status 2
	assert_output_has "img.yaml:3:12: 'packer.version' must be"
	wb plan "$(recipe)" --json --set packer.version=1.9.5
	assert_status 0
	python3 -c 'import json,sys; p=json.loads(sys.argv[1]); assert p["image"]["packer"] == {"version": "1.9.5", "required_plugins": True}, p["image"]' "$output"
	wb plan "$(recipe)" --json
	assert_status 0
	python3 -c 'import json,sys; p=json.loads(sys.argv[1]); assert p["image"]["packer"] == {"version": "1.6.6", "required_plugins": False}, p["image"]' "$output"
}
