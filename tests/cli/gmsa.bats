#!/usr/bin/env bats
# Issue 27 item 2: the gMSA plugin of Container Credential Guard for Azure
# Key Vault (recipes/components/gmsa-ccg.yaml), off in the shipped images.
# Its fixture is the plugin zip's layout as image-builder's
# roles/gmsa/tasks/gmsa_keyvault.yml uses it: CCGAKVPlugin.dll, two event
# manifests and registerplugin.reg at the top. The component's registry
# writes are generic `registry:` entries (binary values, "(default)",
# take_ownership) and `event_manifests:`; the engine tier runs them
# against the simulated Windows, where CCG's COMClasses key is
# TrustedInstaller's and Administrators may only read it.
load helpers
load ../lib/servers
load stage_fixtures

export PATH="$PATH:$HOME/.dotnet/tools"

CCG='HKLM:\SYSTEM\CurrentControlSet\Control\CCG\COMClasses'
CLSID='{CCC2A336-D7F3-4818-A213-272B7924213E}'

# gmsa_zip NAME [FILE...]: $WWW/good/NAME with the plugin's files (all of
# them by default)
gmsa_zip() {
	local name=$1 d="$BATS_FILE_TMPDIR/z-$1"
	shift
	rm -rf "$d" && mkdir -p "$d"
	cp "$BATS_FILE_TMPDIR/www/good/kubectl.exe" "$d/CCGAKVPlugin.dll"
	for m in CCGEvents CCGAKVPluginEvents; do
		printf '<?xml version="1.0"?>\r\n<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events"><!-- stand-in for %s --></instrumentationManifest>\r\n' "$m" >"$d/$m.man"
	done
	printf 'Windows Registry Editor Version 5.00\r\n; stand-in\r\n' >"$d/registerplugin.reg"
	[ $# -eq 0 ] || (cd "$d" && ls | grep -vxF -f <(printf '%s\n' "$@") | xargs rm -f)
	(cd "$d" && zip -qX "$WWW/good/$name" ./*)
}

setup_file() {
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	gmsa_zip ccgakv.zip
	gmsa_zip nomans.zip CCGAKVPlugin.dll
	start_nginx "$WWW"
}

setup() {
	fixture_setup
}

O() { echo "$WORK/out/$NAME"; }

# gmsa_override ZIP: the fixtures plus the component on, both of its
# artifacts from ZIP
gmsa_override() {
	{
		cat "$WORK/fixtures.yaml"
		replace_entry ccgakvplugin "$1"
		replace_entry ccgakvplugin-manifests "$1"
		printf 'components:\n  gmsa-ccg:\n    enabled: true\n'
	} >"$WORK/gmsa.yaml"
}

@test "gMSA plugin: off in the shipped images; on, plan --json lists every registry write, the binary ones as hex, the COMClasses entry with the key it takes" {
	for r in "$WB_SRC"/recipes/windows-20*-containerd.yaml; do
		run "$WINBUILD" plan "$r"
		assert_status 0
		assert_output_lacks "component gmsa-ccg"
	done
	"$WINBUILD" plan "$RECIPE" --set components.gmsa-ccg.enabled=true --json >plan.json
	python3 - "$CCG" "$CLSID" plan.json <<-'PY'
	import json, sys
	ccg, clsid = sys.argv[1:3]
	c = next(c for c in json.load(open(sys.argv[3]))["components"] if c["name"] == "gmsa-ccg")
	assert c["event_manifests"] == ["C:\\Program Files\\CCGAKVPlugin\\CCGEvents.man",
	                                "C:\\Program Files\\CCGAKVPlugin\\CCGAKVPluginEvents.man"], c
	reg = {(r["key"], r["name"]): r for r in c["registry"]}
	sd = reg[("HKLM:\\SOFTWARE\\Classes\\AppID\\{557110E1-88BC-4583-8281-6AAC6F708584}", "AccessPermission")]
	assert sd["type"] == "binary" and sd["value"].startswith("010004804400000054") and len(sd["value"]) == 2 * 100, sd
	inproc = reg[("HKLM:\\SOFTWARE\\Classes\\CLSID\\" + clsid + "\\InprocServer32", "(default)")]
	assert inproc["value"] == "C:\\Windows\\System32\\CCGAKVPlugin.dll", inproc
	entry = reg[(ccg + "\\" + clsid, "(default)")]
	assert entry["take_ownership"] == ccg and entry["value"] == "", entry
	# only that one takes a key
	assert [r for r in c["registry"] if r["take_ownership"]] == [entry], c["registry"]
	PY
}

@test "gMSA plugin: stages the DLL in System32 and the manifests beside each other; the services step carries the writes" {
	gmsa_override ccgakv.zip
	wb build "$RECIPE" -O "$WORK/gmsa.yaml" --no-progress
	assert_status 0
	[ -f "$(O)/tree/Windows/System32/CCGAKVPlugin.dll" ]
	[ -f "$(O)/tree/Program Files/CCGAKVPlugin/CCGEvents.man" ]
	[ -f "$(O)/tree/Program Files/CCGAKVPlugin/CCGAKVPluginEvents.man" ]
	# the .reg of the download is not staged: its content is the recipe's
	[ ! -e "$(O)/tree/Program Files/CCGAKVPlugin/registerplugin.reg" ]
	local s="$(O)/packer/scripts/05-services.ps1"
	grep -qF "'HKLM:\\SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses'" "$s"
	grep -qF "'C:\\Program Files\\CCGAKVPlugin\\CCGEvents.man'" "$s"
	wb verify "$(O)"
	assert_status 0
}

@test "gMSA plugin: a zip without the event manifests fails emit naming the component and the manifest (exit 4)" {
	gmsa_override nomans.zip
	wb build "$RECIPE" -O "$WORK/gmsa.yaml" --no-progress
	assert_status 4
	assert_output_has "component 'gmsa-ccg' registers the event manifest 'C:\\Program Files\\CCGAKVPlugin\\CCGEvents.man', which it did not stage"
}

@test "registry: take_ownership off the key's path, bad binary values, (default) that is not a string: plan errors at file:line:col (exit 2)" {
	local bad
	for bad in 'key: HKLM:\SOFTWARE\A\B|name: N|type: string|value: v|take_ownership: HKLM:\SOFTWARE\C|14:|must be the registry key' \
		'key: HKLM:\SOFTWARE\A\B|name: N|type: string|value: v|take_ownership: HKLM:\SOFTWARE\A\Bc|14:|must be the registry key' \
		'key: HKLM:\SOFTWARE\A|name: N|type: string|value: v|take_ownership: HKCU:\SOFTWARE|14:|must be the registry key' \
		'key: HKLM:\SOFTWARE\A|name: N|type: binary|value: "01,0g"|take_ownership: HKLM:\SOFTWARE|13:|hex bytes' \
		'key: HKLM:\SOFTWARE\A|name: N|type: binary|value: "0100"|take_ownership: HKLM:\SOFTWARE|13:|hex bytes' \
		'key: HKLM:\SOFTWARE\A|name: N|type: binary|value: "01,"|take_ownership: HKLM:\SOFTWARE|13:|hex bytes' \
		'key: HKLM:\SOFTWARE\A|name: (default)|type: dword|value: "1"|take_ownership: HKLM:\SOFTWARE|11:|(default) value'; do
		IFS='|' read -r k n t v o line why <<<"$bad"
		demo_component_plan "$(printf 'registry:\n  - %s\n    %s\n    %s\n    %s\n    %s\n' "$k" "$n" "$t" "$v" "$o")"
		assert_status 2
		assert_output_has "demo.yaml:$line"
		assert_output_has "$why"
	done
	# 4096 bytes is the most a binary value takes
	big=$(python3 -c 'print(",".join(["ab"] * 4097))')
	demo_component_plan "$(printf 'registry:\n  - {key: '"'"'HKLM:\\SOFTWARE\\A'"'"', name: N, type: binary, value: "%s"}\n' "$big")"
	assert_status 2
	assert_output_has "at most 4096"
}

# The engine tier: the 2022 image with the component on, run as Packer runs
# it against the simulated Windows; tests/win/check.py holds every registry
# value to the plan (the binary ones byte for byte), COMClasses' owner and
# access to what they were, and the manifests to wevtutil's list.
@test "gMSA engine tier: COM registration written, COMClasses taken for the write and given back, manifests installed, twice" {
	need_pwsh || return 1
	mkdir -p "$WORK/www"
	cp "$WWW/good/ccgakv.zip" "$WORK/www/"
	{
		printf 'kind: override\nreplace:\n'
		for a in ccgakvplugin ccgakvplugin-manifests; do
			printf '  %s:\n    url: @HTTP@/good/ccgakv.zip\n' "$a"
			printf '    verify: {sha256: %s}\n' "$(sha_www good/ccgakv.zip)"
		done
		printf 'components:\n  gmsa-ccg:\n    enabled: true\n'
	} >"$WORK/extra.yaml"
	WINTIER_WWW="$WORK/www" WINTIER_OVERRIDE="$WORK/extra.yaml" WINTIER_MANAGERS=sc \
		WINTIER_BUILDERS=qemu run bash "$WB_SRC/tests/win/run" -p 2 -w "$WORK/tier" 2022
	echo "$output"
	assert_status 0
	assert_output_has "1 passed, 0 failed"
	local sim="$WORK/tier/2022-sc/sim/qemu"
	# the script's own C# compiled (each pass), and every take was given back
	[ "$(grep -c 'WbRegOwner compiled' "$sim/addtype.log")" -ge 2 ]
	[ "$(grep -cxF "take $CCG" "$sim/regowner.log")" = 2 ]
	[ "$(grep -cxF "restore $CCG" "$sim/regowner.log")" = 2 ]
}
