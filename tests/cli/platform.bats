#!/usr/bin/env bats
# Issue 26: every builder from one platform table (builder/lib/platform.c).
# The table is the only place builder/ names a builder, a cloudbase-init
# provider or a Windows version; each builder's HCL is judged by Debian's
# Packer 1.6.6 (`packer validate`, alone and with only its own secrets) and
# by node facts over the emitted files (python3), defect by defect (D2,
# D14, D15, D16, D17 in the issue).

load helpers

TABLE="$WB_SRC/builder/lib/platform.c"
PK=out/windows-2022-containerd/packer
HCL=$PK/windows-2022-containerd.pkr.hcl
VARS=$PK/windows-2022-containerd.auto.pkrvars.hcl

setup() {
	common_setup
	packer_setup staged
}

staged() {
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out "$@"
}

recipe() { echo "$WB_SRC/recipes/windows-$1-containerd.yaml"; }

# var_value FILE NAME: the value NAME is given in the var file FILE
var_value() {
	sed -n "s/^$2 *= *//p" "$1"
}

# the names the table holds: builders, providers, Windows versions
table_names() {
	sed -n 's/.*\.name = "\([^"]*\)".*/\1/p' "$TABLE"
	sed -n '/^static const char \*const providers\[\] = {/,/^};/p' "$TABLE" |
		grep -o '"[^"]*"' | tr -d '"'
	sed -n '/^const struct platform_windows platform_windows\[\] = {/,/^};/p' "$TABLE" |
		sed -n 's/^	{ "\([0-9]*\)".*/\1/p'
}

# stray_names SRC: every line of SRC's C sources outside the table that
# names one of the table's names (a builder or provider anywhere, a Windows
# version inside a string literal)
stray_names() {
	local src="$1" n
	while read -r n; do
		[ -n "$n" ] || continue
		if [[ "$n" =~ ^[0-9]+$ ]]; then
			grep -rnE --include='*.[ch]' "\"[^\"]*\\b$n\\b[^\"]*\"" "$src"
		else
			grep -rnwF --include='*.[ch]' -- "$n" "$src"
		fi | grep -v '^[^:]*lib/platform\.[ch]:'
	done < <(table_names)
	return 0
}

@test "platform: the table is the only place builder/ names a builder, a provider or a Windows version" {
	run table_names
	assert_status 0
	# the table really has them all (the grep below would pass on an empty list)
	for n in azure-arm vsphere-iso qemu hyperv-iso amazon-ebs nocloud openstack nutanix \
		 generic-http vsphere azure aws 2019 2022 2025; do
		grep -qx -- "$n" <<<"$output" || { echo "table_names lacks $n" >&2; return 1; }
	done
	run stray_names "$WB_SRC/builder"
	[ -z "$output" ] || { echo "names outside lib/platform.c:" >&2; echo "$output" >&2; return 1; }
}

@test "platform: the grep catches a builder, provider or version named outside the table" {
	for stray in 'static const char *b = "qemu";' '/* the nocloud provider */' \
		     'static const char *v = "2025";'; do
		rm -rf src && cp -R "$WB_SRC/builder" src
		echo "$stray" >>src/emit/packer.c
		run stray_names src
		[[ "$output" == *"emit/packer.c"* ]] || { echo "missed: $stray" >&2; return 1; }
	done
}

@test "platform: schema, plan and emit take their names from the table (messages list them)" {
	staged windows-2022-containerd 2022
	printf 'kind: image\nname: t\nwindows: {version: "2023"}\ncomponents: {}\n' >bad.yaml
	wb plan bad.yaml
	assert_status 2
	assert_output_has "bad.yaml:3:20: 'windows.version' must be one of 2019|2022|2025, not '2023'"
	printf 'kind: image\nname: t\nwindows: {version: "2022"}\ncloudbase_init: {provider: gce}\ncomponents: {}\n' >bad.yaml
	wb plan bad.yaml
	assert_status 2
	assert_output_has "'cloudbase_init.provider' must be one of auto|azure|aws|vsphere|nocloud|openstack|nutanix|generic-http, not 'gce'"
	wb plan "$(recipe 2022)" --set 'packer.builders=[qemu, oci]'
	assert_status 2
	assert_output_has "unknown Packer builder 'oci' (azure-arm, vsphere-iso, qemu, hyperv-iso, amazon-ebs, oracle-oci)"
	wb emit "$(recipe 2022)" --builder oci
	assert_status 2
	assert_output_has "unknown builder 'oci' (azure-arm, vsphere-iso, qemu, hyperv-iso, amazon-ebs, oracle-oci)"
}

@test "D17: packer validate -only=<builder>.node passes for every builder alone with only that builder's secrets" {
	need_dep command -v packer -- "packer not installed (make deps)"
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)"
	assert_status 0
	declare -A secret=([azure-arm]=azure_client_secret [vsphere-iso]=vsphere_password
			   [amazon-ebs]=winrm_password [qemu]= [hyperv-iso]=)
	for b in azure-arm vsphere-iso qemu hyperv-iso amazon-ebs; do
		s=${secret[$b]}
		if [ -n "$s" ]; then
			run env "PKR_VAR_$s=only-mine" packer validate -only="$b.node" "$PK"
		else
			run packer validate -only="$b.node" "$PK"
		fi
		[ "$status" -eq 0 ] || { echo "$b alone: $output" >&2; return 1; }
	done
	# a builder's own secret is still needed by that builder: Packer says so
	run packer validate -only=vsphere-iso.node "$PK"
	[ "$status" -ne 0 ] && [[ "$output" == *"'password' is required"* ]]
	run packer validate -only=azure-arm.node "$PK"
	[ "$status" -ne 0 ] && [[ "$output" == *"client_secret"* ]]
	# every secret variable is sensitive and holds no value of its own
	python3 - "$HCL" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
for v in ("azure_client_secret", "vsphere_password", "winrm_password"):
    block = re.search(r'variable "%s" \{(.*?)\n\}' % v, src, re.S).group(1)
    assert re.search(r'sensitive\s*=\s*true', block), v
    assert re.search(r'default\s*=\s*null', block), v
PY
}

# source_block NAME: the body of source "NAME" "node" in $HCL
source_block() {
	python3 - "$HCL" "$1" <<'PY'
import re, sys
m = re.search(r'^source "%s" "node" \{\n(.*?)\n\}' % re.escape(sys.argv[2]), open(sys.argv[1]).read(), re.S | re.M)
print(m.group(1) if m else "")
PY
}

@test "D2: the UEFI ISO builders (vsphere-iso efi, hyperv-iso generation 2) press a key for cdboot.efi" {
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)"
	assert_status 0
	for b in vsphere-iso hyperv-iso; do
		run source_block "$b"
		[[ "$output" == *'boot_command = ["<wait><enter><return>"]'* ]] || { echo "$b: $output" >&2; return 1; }
		[[ "$output" == *'boot_wait    = "2s"'* ]]
	done
	run source_block vsphere-iso
	grep -qE '^  firmware += "efi"$' <<<"$output"
	run source_block hyperv-iso
	[[ "$output" == *'generation           = 2'* ]]
	# qemu boots SeaBIOS, which starts the CD without a key
	run source_block qemu
	[[ "$output" != *boot_command* ]]
}

@test "D14: product keys: the edition's GVLK by default, none for evaluation media, the user's own from the environment only" {
	need_dep command -v packer -- "packer not installed (make deps)"
	staged windows-2022-containerd 2022
	# gvlk (default): checked per version x edition by packer_e2e.bats; none:
	wb emit "$(recipe 2022)" --builder qemu --set windows.product_key=none
	assert_status 0
	! grep -q ProductKey "$PK/answer/bios/Autounattend.xml" || false
	! grep -q windows_product_key "$HCL" || false
	# env: Setup gets the GVLK, the build installs the user's key, which
	# no output holds
	wb emit "$(recipe 2022)" --set windows.product_key=env
	assert_status 0
	grep -q '<Key>WX4NM-KYWYW-QJJR4-XV3QB-6VM33</Key>' "$PK/answer/uefi/Autounattend.xml"
	python3 - "$HCL" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
v = re.search(r'variable "windows_product_key" \{(.*?)\n\}', src, re.S).group(1)
assert re.search(r'sensitive\s*=\s*true', v) and re.search(r'default\s*=\s*null', v), v
prov = [p for p in re.findall(r'\n  provisioner "powershell" \{(.*?)\n  \}', src, re.S) if "windows_product_key" in p]
assert len(prov) == 1, prov
p = prov[0]
assert 'only             = ["vsphere-iso.node", "qemu.node", "hyperv-iso.node"]' in p, p
assert 'environment_vars = ["WINBUILD_PRODUCT_KEY=${var.windows_product_key}"]' in p, p
assert "slmgr.vbs" in p and "/ipk $env:WINBUILD_PRODUCT_KEY" in p and "exit $LASTEXITCODE" in p, p
PY
	export PKR_VAR_windows_product_key=USERK-EYABC-DEFGH-IJKLM-NOPQR
	wb emit "$(recipe 2022)" --set windows.product_key=env
	assert_status 0
	! grep -rq USERK-EYABC out || false
	run env PKR_VAR_vsphere_password=s PKR_VAR_azure_client_secret=s packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run "$WINBUILD" plan "$(recipe 2022)" --json --set windows.product_key=none
	assert_status 0
	[ "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["image"]["windows_product_key"])' <<<"$output")" = none ]
	wb plan "$(recipe 2022)" --set windows.product_key=retail
	assert_status 2
	assert_output_has "'windows.product_key' must be one of gvlk|none|env, not 'retail'"
}

@test "D15: the cloud builders start from the recipe's installation type (Server Core or Desktop Experience); Standard is refused for them" {
	staged windows-2022-containerd 2022
	for v in 2019 2022 2025; do
		rm -rf out && staged "windows-$v-containerd" "$v"
		for desk in false true; do
			wb emit "$(recipe "$v")" --set "windows.desktop_experience=$desk"
			assert_status 0
			pk="out/windows-$v-containerd/packer"
			vars="$pk/windows-$v-containerd.auto.pkrvars.hcl"
			if [ "$desk" = true ]; then
				sku=$([ "$v" = 2019 ] && echo "$v-datacenter-gensecond" || echo "$v-datacenter-g2")
				ami="Windows_Server-$v-English-Full-Base-*"
				img="SERVERDATACENTER<"
			else
				sku="$v-datacenter-core-g2"
				ami="Windows_Server-$v-English-Core-Base-*"
				img="SERVERDATACENTERCORE<"
			fi
			[ "$(var_value "$vars" azure_image_sku)" = "\"$sku\"" ]
			[ "$(var_value "$vars" aws_source_ami_name)" = "\"$ami\"" ]
			# the ISO builders install the same type
			grep -qF "$img" "$pk/answer/uefi/Autounattend.xml"
		done
	done
	cp -R "$BATS_TEST_DIRNAME/fixtures/plan"/. .
	printf 'kind: image\nname: t\nwindows: {version: "2022", edition: standard}\ncomponents:\n  containerd: {}\npacker: {builders: [qemu, azure-arm]}\n' >std.yaml
	wb plan std.yaml
	assert_status 2
	assert_output_has "std.yaml:3:37: windows.edition 'standard': Packer builder 'azure-arm' starts from the cloud's Windows Server image, which is published as Datacenter only"
	wb plan std.yaml --set 'packer.builders=[qemu]'
	assert_status 0
}

@test "D16: azure-arm: a unique managed image name, tags, disk size and an optional Azure Compute Gallery output" {
	need_dep command -v packer -- "packer not installed (make deps)"
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --builder azure-arm
	assert_status 0
	run source_block azure-arm
	block="$output"
	python3 - "$block" <<'PY'
import re, sys
b = sys.argv[1]
name = re.search(r'managed_image_name\s*=\s*(.*)', b).group(1)
assert "timestamp()" in name and name.startswith('"windows-2022-containerd-'), name
assert re.search(r'os_disk_size_gb\s*=\s*var\.azure_os_disk_size_gb', b)
tags = re.search(r'azure_tags = merge\(\{(.*?)\}, var\.azure_tags\)', b, re.S).group(1)
assert '"winbuild-image"   = "windows-2022-containerd"' in tags and '"windows-version"  = "2022"' in tags, tags
g = re.search(r'dynamic "shared_image_gallery_destination" \{(.*?)\n  \}', b, re.S).group(1)
assert 'for_each = var.azure_gallery_name == "" ? [] : [var.azure_gallery_name]' in g, g
for k in ("subscription", "resource_group", "gallery_name", "image_name", "image_version", "replication_regions"):
    assert re.search(r'\n\s+%s\s+=' % k, g), k
PY
	export PKR_VAR_azure_client_secret=s
	run packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run packer validate -var azure_gallery_name=g -var azure_gallery_resource_group=rg \
		-var azure_gallery_image_name=win -var 'azure_tags={team="k8s"}' "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

@test "modern Packer: required_plugins pin exact versions from the table; vSphere from github.com/vmware/vsphere" {
	staged windows-2022-containerd 2022
	# every builder of the table: oracle-oci needs the Desktop Experience
	wb emit "$(recipe 2022)" --set windows.desktop_experience=true \
		--set 'packer.builders=[azure-arm, vsphere-iso, qemu, hyperv-iso, amazon-ebs, oracle-oci]'
	assert_status 0
	python3 - "$PK/init/required_plugins.pkr.hcl" "$TABLE" <<'PY'
import re, sys
plug = open(sys.argv[1]).read()
table = open(sys.argv[2]).read()
want = re.findall(r'\.plugin = "([^"]+)", \.plugin_source = "([^"]+)",\s*\.plugin_version = "([^"]+)"', table)
assert len(want) == 6, want
got = re.findall(r'\n    (\S+) = \{\n      source  = "([^"]+)"\n      version = "([^"]+)"\n    \}', plug)
assert sorted(got) == sorted(want), (got, want)
for _, src, ver in got:
    assert re.fullmatch(r'\d+\.\d+\.\d+', ver), ver      # exact: no >=, ~>
assert ("vsphere", "github.com/vmware/vsphere", "2.0.0") in got
PY
}

@test "modern Packer: every attribute and block the templates use is declared by the pinned plugin (its hcl2spec.go)" {
	staged windows-2022-containerd 2022
	attrs="$WB_SRC/tests/packer/plugin-attrs.json"
	check="$WB_SRC/tests/packer/check-attrs.py"
	# the recorded attributes are those of the versions the table pins
	python3 - "$attrs" "$TABLE" <<'PY'
import json, re, sys
attrs = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
pins = dict((n, v) for n, v in re.findall(r'\.name = "([^"]+)".*?\.plugin_version = "([^"]+)"', table, re.S))
assert sorted(attrs) == sorted(pins), (sorted(attrs), sorted(pins))
for b, e in attrs.items():
    assert e["version"] == pins[b] and e["tag"] == "v" + pins[b], (b, e["version"], pins[b])
    assert re.fullmatch(r"[0-9a-f]{40}", e["commit"]) and e["file"].endswith(".hcl2spec.go"), b
    assert "communicator" in e["attrs"] and "winrm_password" in e["attrs"], b
PY
	for pk in gvlk env; do
		wb emit "$(recipe 2022)" --set "windows.product_key=$pk"
		assert_status 0
		run python3 "$check" "$HCL" "$attrs"
		[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
		[[ "$output" == "5 sources, "* ]]
	done
	# a renamed attribute or block is caught
	sed 's/^  cd_label /  cd_labels/; s/network_card = /network_kard = /; s/^  source_ami_filter {/  source_ami_filters {/' \
		"$HCL" >renamed.hcl
	run python3 "$check" renamed.hcl "$attrs"
	assert_status 1
	assert_output_has "qemu: attribute 'cd_labels' is not declared"
	assert_output_has "vsphere-iso.network_adapters: attribute 'network_kard' is not declared"
	assert_output_has "amazon-ebs: block 'source_ami_filters' is not declared"
}

@test "D6/D7: amazon-ebs: WinRM bootstrap user data, disable_stop_instance, EC2Launch v1 outside the script's StrictMode" {
	need_dep command -v packer -- "packer not installed (make deps)"
	need_ps_node   # the user data is parsed with tests/ps's grammar
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --builder amazon-ebs
	assert_status 0
	run source_block amazon-ebs
	[[ "$output" == *'disable_stop_instance = true'* ]] || { echo "$output" >&2; return 1; }
	[[ "$output" == *'user_data_file = var.aws_user_data_file != "" ? var.aws_user_data_file : "${path.root}/winrm-bootstrap.txt"'* ]]
	# the user data: EC2Launch's <powershell> block making the HTTPS
	# listener and its firewall rule Packer connects through
	ud=$PK/winrm-bootstrap.txt
	[ "$(head -1 "$ud")" = '<powershell>' ] && [ "$(tail -1 "$ud")" = '</powershell>' ]
	grep -q 'New-Item -Path .WSMan:\\localhost\\Listener. -Transport HTTPS' "$ud"
	grep -q 'LocalPort 5986' "$ud"
	sed -e 1d -e '$d' "$ud" >ud.ps1
	run node "$WB_SRC/tests/ps/psparse.cjs" ud.ps1
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	# not emitted for the other builders
	wb emit "$(recipe 2022)" --builder qemu
	assert_status 0
	[ ! -e "$PK/winrm-bootstrap.txt" ]
	# no winrm_password: Packer reads EC2's generated one
	wb emit "$(recipe 2022)" --builder amazon-ebs
	run packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	run node "$WB_SRC/tests/ps/lint51.cjs" "$PK/scripts/08-sysprep.ps1"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

# issue 43 item 1: the base image follows the platform. The oracle is
# upstream's own choice, written here with its source, not winbuild's table:
# kubernetes-sigs/image-builder images/capi/packer/azure/windows-<v>-containerd.json
# (ae63061ef; 2022 moved to "windowsserver2022" in d380641ae, 2026-06-05).
@test "issue 43: every shipped recipe's azure-arm image starts from its version's offer (2022: windowsserver2022), Packer told NTLM explicitly" {
	need_dep command -v packer -- "packer not installed (make deps)"
	declare -A offer=([2019]=WindowsServer [2022]=windowsserver2022 [2025]=WindowsServer)
	staged windows-2022-containerd 2022
	for v in 2019 2022 2025; do
		rm -rf out && staged "windows-$v-containerd" "$v"
		wb emit "$(recipe "$v")"
		assert_status 0
		pk="out/windows-$v-containerd/packer"
		vars="$pk/windows-$v-containerd.auto.pkrvars.hcl"
		[ "$(var_value "$vars" azure_image_offer)" = "\"${offer[$v]}\"" ]
		HCL="$pk/windows-$v-containerd.pkr.hcl" run source_block azure-arm
		grep -qE '^\s*image_offer\s*=\s*var\.azure_image_offer\s*$' <<<"$output"
		grep -qE '^\s*image_publisher\s*=\s*"MicrosoftWindowsServer"\s*$' <<<"$output"
		grep -qE '^\s*winrm_use_ntlm\s*=\s*true\s*$' <<<"$output"
	done
	# Packer 1.6.6 reads the template with the offer from the var-file
	run env PKR_VAR_azure_client_secret=s packer validate -only=azure-arm.node "$pk"
	assert_status 0
}

# issue 43 item 1: Windows Server 2025 Datacenter: Azure Edition, the edition
# Azure hotpatches. The oracle: the SKUs Azure accepts enableHotpatching for,
# as hashicorp/terraform-provider-azurerm lists them
# (internal/services/compute/helpers/shared_schema.go, 2b7827cf), under the
# WindowsServer offer. No ISO holds the edition: every other builder refuses it.
@test "issue 43: edition datacenter-azure-edition starts azure-arm from 2025's Azure Edition SKUs; ISO builders, other clouds and 2022 refuse it at plan time" {
	staged windows-2025-containerd 2025
	for desk in false true; do
		wb emit "$(recipe 2025)" --builder azure-arm \
			--set windows.edition=datacenter-azure-edition --set "windows.desktop_experience=$desk"
		assert_status 0
		vars="out/windows-2025-containerd/packer/windows-2025-containerd.auto.pkrvars.hcl"
		want=$([ "$desk" = true ] && echo 2025-datacenter-azure-edition || echo 2025-datacenter-azure-edition-core)
		[ "$(var_value "$vars" azure_image_sku)" = "\"$want\"" ]
		[ "$(var_value "$vars" azure_image_offer)" = '"WindowsServer"' ]
	done
	wb plan "$(recipe 2025)" --builder qemu --set windows.edition=datacenter-azure-edition
	assert_status 2
	assert_output_has "windows.edition 'datacenter-azure-edition': Packer builder 'qemu' installs from the Windows Server ISO, which holds no Azure Edition (use edition: datacenter, or narrow packer.builders to a builder the platform table has its image for: azure-arm 2025)"
	wb plan "$(recipe 2025)" --builder amazon-ebs --set windows.edition=datacenter-azure-edition
	assert_status 2
	assert_output_has "Packer builder 'amazon-ebs' has no Azure Edition image of Windows Server 2025 to start from (the platform table has: azure-arm 2025; use edition: datacenter)"
	wb plan "$(recipe 2022)" --builder azure-arm --set windows.edition=datacenter-azure-edition
	assert_status 2
	assert_output_has "Packer builder 'azure-arm' has no Azure Edition image of Windows Server 2022"
	# a recipe that names no builders gets the one that can build it
	printf 'kind: image\nname: t\nwindows: {version: "2025", edition: datacenter-azure-edition}\ncomponents:\n  containerd: {}\n' >ae.yaml
	cp -R "$BATS_TEST_DIRNAME/fixtures/plan"/. .
	wb plan ae.yaml --json
	assert_status 0
	python3 -c 'import json,sys; assert json.loads(sys.argv[1])["image"]["builders"] == ["azure-arm"]' "$output"
}
