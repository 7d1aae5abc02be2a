#!/usr/bin/env bats
# Issue 26 item 1: a new builder is one platform-table entry plus its
# templates. oracle-oci (image-builder images/capi/packer/oci/) end to end:
# plan, emit, Debian's Packer 1.6.6 `packer validate` alone with only its
# own secret, its attributes against the pinned plugin's hcl2spec.go, and
# the engine tier (tests/win) for its sysprep path and cloudbase-init's
# OpenStack HttpService (OCI's OpenStack-compatible metadata endpoint, as
# image-builder configures it: packer/oci/packer-windows.json).

load helpers

export PATH="$PATH:$HOME/.dotnet/tools"
PK=out/windows-2022-containerd/packer
HCL=$PK/windows-2022-containerd.pkr.hcl

setup() {
	common_setup
	packer_setup staged
	R="$WB_SRC/recipes/windows-2022-containerd.yaml"
	OCI=(--set 'packer.builders=[oracle-oci]' --set windows.desktop_experience=true)
}

staged() {
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out windows-2022-containerd 2022 "$@"
}

# an OCI CLI config with an API key (PKCS#1, as the OCI SDK reads it): the
# builder refuses to validate without one; nothing in it is a secret of
# the build
oci_config() {
	mkdir -p oci
	openssl genrsa -traditional -out oci/key.pem 2048 2>/dev/null
	printf '[DEFAULT]\nuser=ocid1.user.oc1..test\nfingerprint=11:22:33:44:55:66:77:88:99:00:aa:bb:cc:dd:ee:ff\nkey_file=%s\ntenancy=ocid1.tenancy.oc1..test\nregion=eu-frankfurt-1\n' \
		"$WORK/oci/key.pem" >oci/config
	export PKR_VAR_oci_access_cfg_file="$WORK/oci/config"
}

@test "oracle-oci: plan and emit; packer validate -only=oracle-oci.node with only its own secret; fmt; its attributes are the pinned plugin's" {
	need_dep command -v packer -- "packer not installed (make deps)"
	wb plan "$R" "${OCI[@]}" --json
	assert_status 0
	python3 -c 'import json,sys; v=[x["value"] for x in json.loads(sys.stdin.read())["values"] if x["key"] == "packer.builders"]; assert v == ["[oracle-oci]"], v' <<<"$output"
	staged
	wb emit "$R" "${OCI[@]}"
	assert_status 0
	oci_config
	run env PKR_VAR_oci_winrm_password="it's-mine" packer validate -only=oracle-oci.node "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run packer fmt -check "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run packer fmt -check "$PK/init"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run python3 "$WB_SRC/tests/packer/check-attrs.py" "$HCL" "$WB_SRC/tests/packer/plugin-attrs.json"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[[ "$output" == "1 sources, "* ]]
	# the pinned plugin, exact
	grep -A3 '^    oracle = {' "$PK/init/required_plugins.pkr.hcl" | grep -q 'source  = "github.com/hashicorp/oracle"'
	grep -A3 '^    oracle = {' "$PK/init/required_plugins.pkr.hcl" | grep -q 'version = "1.1.2"'
}

@test "oracle-oci: node facts: OCI's Windows image of the recipe's version, WinRM as opc over HTTPS set up by user data, payload.zip, sysprep /quit" {
	need_ps_node   # the user data is parsed with tests/ps's grammar
	for v in 2019 2025 2022; do
		rm -rf out
		python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out "windows-$v-containerd" "$v"
		wb emit "$WB_SRC/recipes/windows-$v-containerd.yaml" "${OCI[@]}"
		assert_status 0
		grep -qx "oci_operating_system_version = \"Server $v Datacenter\"" \
			"out/windows-$v-containerd/packer/windows-$v-containerd.auto.pkrvars.hcl"
	done
	python3 - "$HCL" <<-'PY'
		import re, sys
		src = open(sys.argv[1]).read()
		block = re.search(r'^source "oracle-oci" "node" \{\n(.*?)\n\}', src, re.S | re.M).group(1)
		assert re.search(r'^  winrm_username = "opc"$', block, re.M), block
		assert re.search(r'^  winrm_password = var.oci_winrm_password$', block, re.M)
		assert re.search(r'^  winrm_use_ssl  = var.winrm_use_ssl$', block, re.M)
		assert 'operating_system         = "Windows"' in block
		assert 'operating_system_version = var.oci_operating_system_version' in block
		assert 'user_data = replace(file(abspath("${path.root}/oci-winrm-bootstrap.txt")), "@WINRM_PASSWORD@"' in block
		assert "cd_files" not in block
		# the payload travels as payload.zip, uploaded to this builder too
		up = re.search(r'provisioner "file" \{(.*?)\n  \}', src, re.S).group(1)
		assert '"oracle-oci.node"' in up, up
		# its own sysprep path
		sp = [b for b in re.findall(r'provisioner "powershell" \{(.*?)\n  \}', src, re.S) if "08-sysprep" in b]
		# (issue 40: the values in execute_command, not environment_vars)
		assert len(sp) == 1 and "$env:WINBUILD_PLATFORM='oci';" in sp[0] and "$env:WINBUILD_SYSPREP_MODE='quit';" in sp[0], sp
		assert 'only             = ["oracle-oci.node"]' in sp[0], sp
		# the secret is sensitive and holds no value
		v = re.search(r'variable "oci_winrm_password" \{(.*?)\n\}', src, re.S).group(1)
		assert re.search(r'sensitive\s*=\s*true', v) and re.search(r'default\s*=\s*null', v), v
	PY
	[ -f "$PK/payload.zip" ]
	ud=$PK/oci-winrm-bootstrap.txt
	[ "$(head -1 "$ud")" = '<powershell>' ] && [ "$(tail -1 "$ud")" = '</powershell>' ]
	grep -q "SetPassword('@WINRM_PASSWORD@')" "$ud"
	grep -q 'LocalPort 5986' "$ud"
	# issue 40: opc over NTLM as image-builder; Basic never turned on
	! grep -q 'Auth\\Basic' "$ud" || false
	grep -q "LocalAccountTokenFilterPolicy' -PropertyType DWord -Value 1" "$ud"
	grep -q '^  winrm_use_ntlm = true$' "$HCL"
	sed -e 1d -e '$d' "$ud" >ud.ps1
	run node "$WB_SRC/tests/ps/psparse.cjs" ud.ps1
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

@test "oracle-oci: a Server Core recipe is refused at plan (OCI publishes no Server Core image; never the Desktop Experience instead)" {
	wb plan "$R" --set 'packer.builders=[oracle-oci]'
	assert_status 2
	assert_output_has "Packer builder 'oracle-oci' has no Server Core image of Windows Server 2022 to start from (use windows.desktop_experience: true"
	# the other cloud builders still take Server Core
	wb plan "$R" --set 'packer.builders=[amazon-ebs, azure-arm]'
	assert_status 0
}

@test "oracle-oci: the engine tier runs its provisioners through Packer's wrapper and checks the end state (sysprep /quit with cloudbase-init's Unattend.xml)" {
	need_pwsh || return 1
	run env WINTIER_MANAGERS=sc WINTIER_BUILDERS=oracle-oci \
		WINTIER_SET="packer.builders=[oracle-oci] windows.desktop_experience=true" \
		bash "$WB_SRC/tests/win/run" -p 1 -w "$WORK/tier" 2022
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^ok 2022 sc oracle-oci: 1 passes' <<<"$output"
	grep -qx '1 passed, 0 failed' <<<"$output"
}
