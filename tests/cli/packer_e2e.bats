#!/usr/bin/env bats
# Issue 15: Packer builds that run end to end. The Windows ISO is pinned by
# windows.iso_sha256 (plan, --explain, --json, the lock, the var file); every
# ISO builder attaches a generated Autounattend.xml (checked with python's
# xml.etree); each builder runs its own sysprep path; no secret the user
# supplies lands in an emitted file. Oracles: Debian's Packer 1.6.6
# (`packer validate`), python3 xml.etree, the tree-sitter PowerShell grammar.
# A real Windows Setup cannot run here.

load helpers

FIX="$BATS_TEST_DIRNAME/fixtures/plan"
PSPARSE="$WB_SRC/tests/ps/psparse.cjs"
ISO_BUILDERS="qemu vsphere-iso hyperv-iso"

setup() {
	common_setup
	cp -R "$FIX"/. "$WORK/"
	packer_setup
	# the shipped pause image is needs_pin: these emit over make-staged.py trees
	export WINBUILD_SET="images.pause.enabled=false"
}

# image WINDOWS_MAP [MORE_YAML]: img2.yaml beside the fixture components
image() {
	printf 'kind: image\nname: t\nwindows: %s\ncomponents:\n  containerd: {}\n%s\n' \
		"$1" "${2:-}" >img2.yaml
}

staged() {
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out "$@"
}

recipe() { echo "$WB_SRC/recipes/windows-$1-containerd.yaml"; }
PK=out/windows-2022-containerd/packer

# ---- the Windows ISO is verified ----

@test "iso: an ISO builder without windows.iso_sha256: plan warns, emit and build refuse with file:line:col" {
	image '{version: "2022"}'
	# plan downloads nothing: it says what a build will need
	wb plan img2.yaml
	assert_status 0
	assert_output_has "winbuild: warning: img2.yaml:3:10: the Windows ISO of the ISO builders (vsphere-iso, qemu, hyperv-iso) is not pinned"
	assert_output_has "(emit and build refuse until then)"
	assert_output_has "windows iso: NOT PINNED: emit and build need 'windows.iso_sha256' for vsphere-iso qemu hyperv-iso"
	"$WINBUILD" plan img2.yaml --json >plan.json 2>/dev/null
	python3 -c 'import json; i = json.load(open("plan.json"))["image"]["windows_iso"]; assert i["missing"] is True and i["sha256"] is None, i'
	# build refuses before anything is fetched or written
	wb build img2.yaml --builder qemu
	assert_status 2
	assert_output_has "img2.yaml:3:10: the Windows ISO of the ISO builders (qemu) is not pinned"
	assert_output_has "or build only cloud builders (--builder azure-arm, --builder amazon-ebs)"
	# only those with an image of the recipe's Windows: OCI has no Server Core
	wb build img2.yaml --builder qemu --set windows.desktop_experience=true
	assert_status 2
	assert_output_has "or build only cloud builders (--builder azure-arm, --builder amazon-ebs, --builder oracle-oci)"
	[[ "$output" != *"warning"* ]]
	[ ! -e out ]
	[ ! -e winbuild.lock ]
	[ ! -e t.lock ]
	wb emit img2.yaml --builder hyperv-iso --json
	assert_status 2
	assert_output_has '"exit": 2'
	assert_output_has "img2.yaml:3:10: the Windows ISO of the ISO builders (hyperv-iso) is not pinned"
	[ ! -e out ]
	# the shipped recipes leave it to the user: plan works out of the box
	wb plan "$(recipe 2022)"
	assert_status 0
	assert_output_has "warning: $(recipe 2022):13:3: the Windows ISO"
}

@test "--builder narrows packer.builders on plan, fetch, stage, emit, build: only ISO builders ask for the ISO" {
	image '{version: "2022"}'
	for cmd in plan fetch stage; do
		"$WINBUILD" help $cmd | grep -q -- "-b, --builder NAME"
	done
	wb plan img2.yaml --builder azure-arm -b amazon-ebs --json
	assert_status 0
	[[ "$output" != *"winbuild: warning"* ]]
	python3 -c 'import json,sys; p = json.loads(sys.argv[1]); assert p["image"]["builders"] == ["azure-arm", "amazon-ebs"], p["image"]["builders"]; assert p["image"]["windows_iso"]["missing"] is False' "$output"
	wb plan img2.yaml --builder qemu
	assert_status 0
	assert_output_has "ISO builders (qemu) is not pinned"
	# a name outside packer.builders (or unknown) is a usage error naming the list
	wb plan img2.yaml --set 'packer.builders=[azure-arm]' --builder qemu
	assert_status 2
	assert_output_has "--builder 'qemu' is not one of the recipe's packer.builders (azure-arm; --set #1)"
	wb fetch img2.yaml --builder nosuch --no-progress
	assert_status 2
	assert_output_has "unknown builder 'nosuch' (azure-arm, vsphere-iso, qemu, hyperv-iso, amazon-ebs, oracle-oci)"
	# a cloud-only build of an unpinned recipe gets as far as emit
	staged t 2022
	wb emit img2.yaml --builder azure-arm
	assert_status 0
	assert_output_has "builders: azure-arm"
	[ ! -e out/t/packer/answer ]
}

@test "iso: iso_sha256 none and a malformed digest are refused where they are written" {
	image '{version: "2022", iso_sha256: none}'
	wb plan img2.yaml
	assert_status 0
	assert_output_has "warning: img2.yaml:3:40: the Windows ISO of the ISO builders (vsphere-iso, qemu, hyperv-iso) is not verified (iso_sha256: none)"
	wb emit img2.yaml
	assert_status 2
	assert_output_has "img2.yaml:3:40: the Windows ISO of the ISO builders (vsphere-iso, qemu, hyperv-iso) is not verified (iso_sha256: none)"
	image '{version: "2022"}'
	wb build img2.yaml --set windows.iso_sha256=none
	assert_status 2
	assert_output_has "--set #1: the Windows ISO of the ISO builders (vsphere-iso, qemu, hyperv-iso) is not verified"
	for bad in 1234 "sha256:$TEST_ISO_SHA256" "${TEST_ISO_SHA256}0" "${TEST_ISO_SHA256:1}g"; do
		wb plan img2.yaml --set "windows.iso_sha256=$bad"
		assert_status 2
		assert_output_has "'windows.iso_sha256' must be 64 hex digits"
	done
}

@test "iso: cloud-only builders need no ISO digest" {
	image '{version: "2022"}' 'packer: {builders: [azure-arm, amazon-ebs]}'
	wb plan img2.yaml
	assert_status 0
	[[ "$output" != *"windows iso"* ]]
	# ... until an ISO builder is added
	wb plan img2.yaml --set 'packer.builders=[azure-arm, qemu]'
	assert_status 0
	assert_output_has "ISO builders (qemu) is not pinned"
}

@test "iso: the digest is shown by plan, --explain and --json, lowercased" {
	upper=$(tr a-f A-F <<<"$TEST_ISO_SHA256")
	image "{version: \"2022\", iso_sha256: $upper}"
	wb plan img2.yaml
	assert_status 0
	assert_output_has "windows iso: sha256 $TEST_ISO_SHA256"
	wb plan img2.yaml --explain
	assert_status 0
	assert_output_has "windows iso: sha256 $TEST_ISO_SHA256    <- img2.yaml:3:40"
	assert_output_has "windows.iso_sha256 = $upper    <- img2.yaml:3:40"
	wb plan img2.yaml --json
	assert_status 0
	python3 - "$output" "$TEST_ISO_SHA256" <<'PY'
import json, sys
p = json.loads(sys.argv[1])
assert p["image"]["windows_iso"] == {"sha256": sys.argv[2], "verified": True, "missing": False,
                                     "origin": "img2.yaml:3:40"}, p["image"]["windows_iso"]
assert p["policy"]["unverified_iso"] == "forbid"
PY
}

@test "iso: policy.unverified_iso: allow lets none through with a warning; a forbid in any layer holds" {
	image '{version: "2022", iso_sha256: none}' 'policy: {unverified_iso: allow}'
	wb plan img2.yaml
	assert_status 0
	assert_output_has "winbuild: warning: the Windows ISO of the ISO builders is not verified"
	assert_output_has "policy.unverified_iso: allow at img2.yaml:6:26"
	assert_output_has "windows iso: NOT VERIFIED"
	"$WINBUILD" plan img2.yaml --json >plan.json 2>err.txt
	grep -q "warning: the Windows ISO" err.txt
	python3 - <<'PY'
import json
p = json.load(open("plan.json"))
assert p["image"]["windows_iso"]["verified"] is False and p["image"]["windows_iso"]["sha256"] is None
assert p["policy"]["unverified_iso"] == "allow"
PY
	# an override that forbids it wins, and a later --set cannot undo that
	printf 'kind: override\npolicy: {unverified_iso: forbid}\n' >strict.yaml
	wb emit img2.yaml -O strict.yaml --set policy.unverified_iso=allow
	assert_status 2
	assert_output_has "is not verified (iso_sha256: none)"
	assert_output_has "policy.unverified_iso: forbid (strict.yaml:2:26)"
	# and an allow in a later layer cannot undo an earlier forbid either
	image '{version: "2022", iso_sha256: none}' 'policy: {unverified_iso: forbid}'
	printf 'kind: override\npolicy: {unverified_iso: allow}\n' >loose.yaml
	wb emit img2.yaml -O loose.yaml
	assert_status 2
	assert_output_has "is not verified"
}

@test "iso: the lock records the digest; the var file pins each ISO builder's iso_checksum" {
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --set "windows.iso_sha256=$TEST_ISO_SHA256"
	assert_status 0
	vars=$PK/windows-2022-containerd.auto.pkrvars.hcl
	for v in qemu_iso_checksum hyperv_iso_checksum vsphere_iso_checksum; do
		grep -Eq "^$v +=  *\"sha256:$TEST_ISO_SHA256\"\$" "$vars" || { cat "$vars" >&2; return 1; }
	done
	! grep -q '"none"' "$vars" || false
	# the template reads them, for every ISO builder
	hcl=$PK/windows-2022-containerd.pkr.hcl
	for v in qemu_iso_checksum hyperv_iso_checksum vsphere_iso_checksum; do
		grep -Eq "iso_checksum += var\.$v\$" "$hcl"
	done
	# under policy.unverified_iso: allow the var file says none
	rm -rf out && staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --builder qemu --set policy.unverified_iso=allow
	assert_status 0
	assert_output_has "warning: the Windows ISO of the ISO builders is not verified"
	grep -Eq '^qemu_iso_checksum += "none"$' "$vars"
}

@test "iso: winbuild lock writes windows_iso.sha256 (and none when no ISO builder asks)" {
	mkdir -p components
	printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n  a:\n    url: file://%s/a.bin\n    verify: {sha256: %s}\n    install: {to: C:/k/a.bin}\n' \
		"$WORK" "$(printf 'a' | sha256sum | cut -c1-64)" >components/demo.yaml
	printf a >a.bin
	image "{version: \"2022\", iso_sha256: $TEST_ISO_SHA256}"
	sed -i 's/containerd: {}/demo: {}/' img2.yaml
	wb lock img2.yaml --no-progress
	if [ "$status" -ne 0 ] && [[ "$output" == *"scheme"* ]]; then
		skip "file:// URLs are not fetched"
	fi
	assert_status 0
	python3 - "$TEST_ISO_SHA256" <<'PY'
import json, sys
d = json.load(open("t.lock"))
assert d["windows_iso"] == {"sha256": sys.argv[1]}, d
PY
	wb fetch img2.yaml --locked --no-progress
	assert_status 0
	# --locked holds the ISO to the lock as well
	other=$(printf 'another iso' | sha256sum | cut -c1-64)
	wb fetch img2.yaml --locked --no-progress --set "windows.iso_sha256=$other"
	assert_status 1
	assert_output_has "--locked: the lock file 't.lock' pins the Windows ISO at '$TEST_ISO_SHA256', the plan at '$other'"
	# a lock with a malformed ISO digest is refused
	python3 -c 'import json; d=json.load(open("t.lock")); d["windows_iso"]["sha256"]="none"; json.dump(d, open("t.lock","w"))'
	wb fetch img2.yaml --locked --no-progress
	assert_status 2
	assert_output_has '"windows_iso" needs a lowercase hex "sha256"'
}

# ---- the generated answer file ----

# check_answer FILE VERSION EDITION DESKTOP FIRMWARE LOCALE: the answer file
# parses, and its passes, components, disk layout, image and WinRM are right
check_answer() {
	python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
path, version, edition, desktop, firmware, locale = sys.argv[1:]
U = "{urn:schemas-microsoft-com:unattend}"
W = "{http://schemas.microsoft.com/WMIConfig/2002/State}"
root = ET.parse(path).getroot()
assert root.tag == U + "unattend", root.tag
passes = {s.get("pass"): s for s in root.findall(U + "settings")}
assert sorted(passes) == ["oobeSystem", "specialize", "windowsPE"], sorted(passes)
comps = {p: {c.get("name"): c for c in s.findall(U + "component")} for p, s in passes.items()}
for p, cs in comps.items():
    for name, c in cs.items():
        assert c.get("processorArchitecture") == "amd64", (p, name)
        assert c.get("publicKeyToken") == "31bf3856ad364e35", (p, name)
        assert c.get("language") == "neutral" and c.get("versionScope") == "nonSxS", (p, name)
assert set(comps["windowsPE"]) == {"Microsoft-Windows-International-Core-WinPE",
                                   "Microsoft-Windows-Setup"}, comps["windowsPE"].keys()
assert "Microsoft-Windows-Shell-Setup" in comps["specialize"]
assert set(comps["oobeSystem"]) == {"Microsoft-Windows-International-Core",
                                    "Microsoft-Windows-Shell-Setup"}, comps["oobeSystem"].keys()
def text(el, path):
    x = el.find(path.replace("/", "/" + U).join(["", ""]) if False else "/".join(U + p for p in path.split("/")))
    assert x is not None, path
    return x.text
pe_intl = comps["windowsPE"]["Microsoft-Windows-International-Core-WinPE"]
for k in ("InputLocale", "SystemLocale", "UILanguage", "UserLocale", "SetupUILanguage/UILanguage"):
    assert text(pe_intl, k) == locale, (k, locale)
for k in ("InputLocale", "SystemLocale", "UILanguage", "UserLocale"):
    assert text(comps["oobeSystem"]["Microsoft-Windows-International-Core"], k) == locale
setup = comps["windowsPE"]["Microsoft-Windows-Setup"]
# the image by name
md = setup.find(f"{U}ImageInstall/{U}OSImage/{U}InstallFrom/{U}MetaData")
assert md.get(W + "action") == "add"
assert text(md, "Key") == "/IMAGE/NAME"
want = "Windows Server %s SERVER%s%s" % (version, edition.upper(), "" if desktop == "true" else "CORE")
assert text(md, "Value") == want, (text(md, "Value"), want)
# the disk
disk = setup.find(f"{U}DiskConfiguration/{U}Disk")
assert text(disk, "DiskID") == "0" and text(disk, "WillWipeDisk") == "true"
creates = [(text(c, "Order"), c.find(U + "Type").text) for c in disk.findall(f"{U}CreatePartitions/{U}CreatePartition")]
mods = {text(m, "PartitionID"): m for m in disk.findall(f"{U}ModifyPartitions/{U}ModifyPartition")}
install_to = text(setup, "ImageInstall/OSImage/InstallTo/PartitionID")
if firmware == "uefi":
    assert creates == [("1", "EFI"), ("2", "MSR"), ("3", "Primary")], creates
    assert text(mods["1"], "Format") == "FAT32"
    assert text(mods["3"], "Format") == "NTFS" and text(mods["3"], "Letter") == "C"
    assert mods["1"].find(U + "Active") is None
    assert install_to == "3"
else:
    assert creates == [("1", "Primary"), ("2", "Primary")], creates
    assert text(mods["1"], "Active") == "true" and text(mods["1"], "Format") == "NTFS"
    assert text(mods["2"], "Letter") == "C"
    assert install_to == "2"
last = disk.findall(f"{U}CreatePartitions/{U}CreatePartition")[-1]
assert text(last, "Extend") == "true"
assert text(setup, "UserData/AcceptEula") == "true"
# D14: the edition's KMS client setup key (GVLK), in windowsPE and
# specialize, as Microsoft publishes them ("Key Management Services (KMS)
# client activation and product keys", learn.microsoft.com)
GVLK = {("2019", "standard"): "N69G4-B89J2-4G8F4-WWYCC-J464C",
        ("2019", "datacenter"): "WMDGN-G9PQG-XVVXX-R3X43-63DFG",
        ("2022", "standard"): "VDYBN-27WPP-V4HQT-9VMD4-VMK7H",
        ("2022", "datacenter"): "WX4NM-KYWYW-QJJR4-XV3QB-6VM33",
        ("2025", "standard"): "TVRH6-WHNXV-R9WG3-9XRFY-MY832",
        ("2025", "datacenter"): "D764K-2NDRG-47T6Q-P8T8W-YP6DF"}
assert text(setup, "UserData/ProductKey/Key") == GVLK[(version, edition)]
assert text(comps["specialize"]["Microsoft-Windows-Shell-Setup"], "ProductKey") == GVLK[(version, edition)]
# the Administrator password and WinRM
shell = comps["oobeSystem"]["Microsoft-Windows-Shell-Setup"]
pw = text(shell, "UserAccounts/AdministratorPassword/Value")
assert text(shell, "AutoLogon/Password/Value") == pw and text(shell, "AutoLogon/Username") == "Administrator"
cmds = [text(c, "CommandLine") for c in shell.findall(f"{U}FirstLogonCommands/{U}SynchronousCommand")]
orders = [int(text(c, "Order")) for c in shell.findall(f"{U}FirstLogonCommands/{U}SynchronousCommand")]
assert orders == list(range(1, len(orders) + 1)), orders
joined = "\n".join(cmds)
assert "winrm quickconfig -q" in joined
assert "localport=5985" in joined and "localport=5986" in joined
assert "Transport HTTPS" in joined and "Basic=\"true\"" in joined
print(pw)
PY
}

@test "answer: every version x edition x desktop x firmware parses and is right" {
	n=0
	for v in 2019 2022 2025; do
		rm -rf out && staged "windows-$v-containerd" "$v"
		for ed in standard datacenter; do
			for desk in false true; do
				# the cloud builders start from Datacenter images only
				wb emit "$(recipe "$v")" --builder qemu --builder hyperv-iso --builder vsphere-iso \
					--set 'packer.builders=[qemu, hyperv-iso, vsphere-iso]' \
					--set "windows.iso_sha256=$TEST_ISO_SHA256" --set "windows.edition=$ed" \
					--set "windows.desktop_experience=$desk" --set windows.locale=de-DE
				assert_status 0
				pk="out/windows-$v-containerd/packer"
				pw=$(iso_password "$pk")
				for fw in bios uefi; do
					run check_answer "$pk/answer/$fw/Autounattend.xml" "$v" "$ed" "$desk" "$fw" de-DE
					[ "$status" -eq 0 ] || { echo "$v $ed $desk $fw: $output" >&2; return 1; }
					# the answer file's password is the var file's
					[ "$output" = "$pw" ]
					n=$((n + 1))
				done
			done
		done
	done
	[ "$n" -eq 24 ]
}

@test "answer: each ISO builder's CD carries the answer file for its firmware; packer validate accepts" {
	need_dep command -v packer -- "packer not installed (make deps)"
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --set "windows.iso_sha256=$TEST_ISO_SHA256"
	assert_status 0
	hcl=$PK/windows-2022-containerd.pkr.hcl
	python3 - "$hcl" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
want = {"qemu": "bios", "hyperv-iso": "uefi", "vsphere-iso": "uefi"}
for b, fw in want.items():
    block = re.search(r'source "%s" "node" \{(.*?)\n\}' % b, src, re.S).group(1)
    cd = re.search(r'cd_files\s*=\s*\[(.*?)\]', block).group(1)
    assert '"${path.root}/answer/%s/Autounattend.xml"' % fw in cd, (b, cd)
    assert 'winrm_password = var.iso_admin_password' in block, b
    assert 'winrm_username = "Administrator"' in block, b
    assert '-Mode shutdown -Platform iso' in block, b
for b in ("azure-arm", "amazon-ebs"):
    block = re.search(r'source "%s" "node" \{(.*?)\n\}' % b, src, re.S).group(1)
    assert "cd_files" not in block and "iso_admin_password" not in block, b
# firmware as the answer file expects it
assert re.search(r'generation\s*=\s*2', src) and re.search(r'firmware\s*=\s*"efi"', src)
PY
	# only the secrets the user supplies by environment, and no winrm_password
	# unless amazon-ebs is built
	for b in qemu vsphere-iso hyperv-iso; do
		wb emit "$(recipe 2022)" --builder "$b" --set "windows.iso_sha256=$TEST_ISO_SHA256"
		assert_status 0
		[ -f "$PK/answer/$([ "$b" = qemu ] && echo bios || echo uefi)/Autounattend.xml" ]
		PKR_VAR_vsphere_password=s run packer validate "$PK"
		[ "$status" -eq 0 ] || { echo "$b: $output" >&2; return 1; }
	done
	# the cloud builders get no answer file and no one-off password (the
	# digest is still asked for: the recipe's packer.builders has ISO builders)
	wb emit "$(recipe 2022)" --builder azure-arm --builder amazon-ebs \
		--set "windows.iso_sha256=$TEST_ISO_SHA256"
	assert_status 0
	[ ! -e "$PK/answer" ] && [ ! -e "$PK/iso-admin.auto.pkrvars.hcl" ]
	! grep -q iso_admin_password "$PK/windows-2022-containerd.pkr.hcl" || false
}

@test "answer: no secret the user supplies is written; the one-off password is new each emit" {
	need_dep command -v packer -- "packer not installed (make deps)"
	staged windows-2022-containerd 2022
	export PKR_VAR_winrm_password=UserWinrmSecret-7f3a PKR_VAR_vsphere_password=UserVsphereSecret-91bc \
		PKR_VAR_azure_client_secret=UserAzureSecret-c0de PKR_VAR_iso_admin_password=UserIsoSecret-55aa
	wb emit "$(recipe 2022)" --set "windows.iso_sha256=$TEST_ISO_SHA256" --set vars.note=UserSetSecret-0042
	assert_status 0
	run grep -rlE 'User(Winrm|Vsphere|Azure|Iso|Set)Secret' "$WORK"
	[ "$status" -eq 1 ] || { echo "a user secret was written: $output" >&2; return 1; }
	first=$(iso_password "$PK")
	[[ "$first" =~ ^[A-Za-z0-9]{24}Aa1-$ ]]
	mask_iso_password "$PK"
	# validates with exactly the environment's secrets (the var file wins over
	# PKR_VAR_iso_admin_password: Packer's precedence)
	run packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	wb emit "$(recipe 2022)" --set "windows.iso_sha256=$TEST_ISO_SHA256"
	assert_status 0
	[ "$(iso_password "$PK")" != "$first" ]
}

# ---- sysprep per platform ----

@test "sysprep: each builder has its own sysprep path in the template" {
	need_dep command -v packer -- "packer not installed (make deps)"
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --set "windows.iso_sha256=$TEST_ISO_SHA256"
	assert_status 0
	python3 - "$PK/windows-2022-containerd.pkr.hcl" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
provs = re.findall(r'provisioner "powershell" \{(.*?)\n  \}', src, re.S)
sysprep = [p for p in provs if "08-sysprep.ps1" in p]
by = {}
for p in sysprep:
    only = re.search(r'only\s*=\s*\[(.*?)\]', p).group(1)
    # (issue 40: the values in execute_command's command line)
    env = ' '.join(re.findall(r"\$env:(WINBUILD_[A-Z_]+='[a-z]+');", p))
    for b in re.findall(r'"([a-z-]+)\.node"', only):
        assert b not in by, ("two sysprep provisioners for", b)
        by[b] = env
assert by["azure-arm"] == "WINBUILD_SYSPREP_MODE='quit' WINBUILD_PLATFORM='azure'", by
assert by["amazon-ebs"] == "WINBUILD_SYSPREP_MODE='quit' WINBUILD_PLATFORM='aws'", by
for b in ("qemu", "vsphere-iso", "hyperv-iso"):
    assert by[b] == "WINBUILD_SYSPREP_MODE='prepare' WINBUILD_PLATFORM='iso'", (b, by)
PY
	PKR_VAR_winrm_password=s PKR_VAR_vsphere_password=s PKR_VAR_azure_client_secret=s run packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

@test "sysprep: the script does each platform's steps, parses, and judges natives by exit code" {
	need_dep test -d "$WB_SRC/tests/ps/node_modules/web-tree-sitter" -- "run make deps (npm ci in tests/ps)"
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --set "windows.iso_sha256=$TEST_ISO_SHA256"
	assert_status 0
	s=$PK/scripts/08-sysprep.ps1
	run node "$PSPARSE" "$PK"/scripts/*.ps1
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	python3 - "$s" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
def block(platform):
    m = re.search(r"\nif \(\$Platform -eq '%s'\) \{\n(.*?)\n\}\n" % platform, src, re.S)
    assert m, platform
    return m.group(1)
iso, azure = block("iso"), block("azure")
aws = src[src.index("\n# aws\n"):]
# iso: cloudbase-init's Unattend.xml, the one-off password replaced first,
# /quit, the image state judged, then the power-off (issue 40)
assert "Reset-AdministratorPassword" in iso and "Remove-LeftoverUnattend" in iso
assert re.search(r"'/generalize', '/oobe', '/mode:vm', '/quiet', \"/unattend:\$unattend\", '/quit'", iso)
assert iso.index("Reset-AdministratorPassword") < iso.index("$Sysprep") < iso.index("Wait-Generalized") < iso.index("shutdown.exe")
# azure: both agents, the leftover unattend removed, /quit, then the image state
for svc in ("RdAgent", "WindowsAzureGuestAgent"):
    assert "'%s'" % svc in azure
assert azure.index("WindowsAzureGuestAgent") < azure.index("Remove-LeftoverUnattend") < azure.index("$Sysprep") < azure.index("Wait-Generalized")
assert "'/generalize', '/oobe', '/quiet', '/quit', '/mode:vm'" in azure
assert "IMAGE_STATE_GENERALIZE_RESEAL_TO_OOBE" in src
assert "Panther\\unattend.xml" in src
# aws: EC2Launch v2 first, v1's scripts where v1 is what the image carries
assert "Amazon\\EC2Launch\\ec2launch.exe" in aws and "@('sysprep', '--shutdown')" in aws
# v1's scripts shut the instance down themselves (disable_stop_instance, D7)
# and run in a powershell.exe of their own: not under this script's
# StrictMode and Stop (D6), judged by their exit code
assert "@('InitializeInstance.ps1', '-Schedule')" in aws and "@('SysprepInstance.ps1')" in aws
assert "-NoShutdown" not in aws and "& (Join-Path $ec2launch1" not in aws
assert "@('-NoProfile', '-ExecutionPolicy', 'Bypass', '-File', (Join-Path $ec2launch1 $step[0]))" in aws
assert "Invoke-Native -FilePath $powershell -ArgumentList $args1" in aws
assert aws.index("ec2launch2") < aws.index("InitializeInstance")
# natives by $LASTEXITCODE (Invoke-Native), never a bare sysprep.exe call
assert not re.search(r"^\s*&\s*\$Sysprep", src, re.M)
assert src.count("Invoke-Native -FilePath $Sysprep") == 3
# oci (oracle-oci): cloudbase-init's Unattend.xml, /quit, then the image
# state (image-builder packer/oci/scripts/sysprep.ps1)
oci = block("oci")
assert oci.index("Remove-LeftoverUnattend") < oci.index("$Sysprep") < oci.index("Wait-Generalized")
assert re.search(r"'/generalize', '/oobe', '/mode:vm', '/quiet', '/quit', \"/unattend:\$unattend\"", oci)
PY
	# a mode that does not fit the platform is refused before anything runs
	grep -q "does not fit platform" "$s"
}

# ---- getting the payload into a cloud build VM ----

@test "payload: step 02 pins the manifest's sha256 in every mode" {
	staged windows-2022-containerd 2022
	wb emit "$(recipe 2022)" --set "windows.iso_sha256=$TEST_ISO_SHA256"
	assert_status 0
	want=$(sha256sum out/windows-2022-containerd/manifest.json | cut -c1-64)
	grep -qx "\$ManifestSha256 = '$want'" "$PK/scripts/02-payload.ps1"
	grep -qx "\$PayloadUrl = ''" "$PK/scripts/02-payload.ps1"
	# the check comes before the payload's manifest is read (common.ps1's
	# Remove-BuildOnly, which reads the node's copy later, is defined above)
	python3 - "$PK/scripts/02-payload.ps1" <<'PY'
import sys
s = open(sys.argv[1]).read()
assert s.index("-ne $ManifestSha256") < s.index("-LiteralPath $manifestPath | ConvertFrom-Json")
PY
	# the upload mode still uploads the zip (a file provisioner whose source
	# is payload.zip: the first-boot WinRM script has one of its own)
	grep -qF 'source      = "${path.root}/payload.zip"' "$PK/windows-2022-containerd.pkr.hcl"
}

@test "payload: packer.payload: pull fetches payload.zip from the user's storage instead of a WinRM upload" {
	need_dep command -v packer -- "packer not installed (make deps)"
	need_dep test -d "$WB_SRC/tests/ps/node_modules/web-tree-sitter" -- "run make deps (npm ci in tests/ps)"
	staged windows-2022-containerd 2022
	url=https://store.corp.example/winbuild/windows-2022-containerd/payload.zip
	wb emit "$(recipe 2022)" --set "windows.iso_sha256=$TEST_ISO_SHA256" \
		--set packer.payload=pull --set "packer.payload_url=$url"
	assert_status 0
	# no WinRM upload of the zip (this line could never fail while it was a
	# bare "! grep"; the first-boot script's own file provisioner is not the
	# payload)
	! grep -qF '${path.root}/payload.zip' "$PK/windows-2022-containerd.pkr.hcl" || false
	# the zip is still written: the user puts it on their storage
	[ -f "$PK/payload.zip" ]
	grep -qx "\$PayloadUrl = '$url'" "$PK/scripts/02-payload.ps1"
	run node "$PSPARSE" "$PK"/scripts/*.ps1
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	PKR_VAR_winrm_password=s PKR_VAR_vsphere_password=s PKR_VAR_azure_client_secret=s run packer validate "$PK"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

@test "payload: pull needs an http(s) URL the VM can reach; allow_http: false holds" {
	image "{version: \"2022\", iso_sha256: $TEST_ISO_SHA256}" 'packer: {payload: pull}'
	wb plan img2.yaml
	assert_status 2
	assert_output_has "img2.yaml:6:19: 'packer.payload: pull' needs 'packer.payload_url'"
	wb plan img2.yaml --set packer.payload_url=file:///srv/payload.zip
	assert_status 2
	assert_output_has "'packer.payload_url' must be an https or http URL"
	wb plan img2.yaml --set "packer.payload_url=ftp://x/payload.zip"
	assert_status 2
	wb plan img2.yaml --set packer.payload_url=http://store/payload.zip --set policy.allow_http=false
	assert_status 2
	assert_output_has "'packer.payload_url' is plain http and policy.allow_http is false"
	wb plan img2.yaml --set packer.payload_url=https://store/payload.zip
	assert_status 0
}

@test "payload: the transfer benchmark runs and pull beats the WinRM-style upload" {
	run timeout 120 python3 "$WB_SRC/tests/bench/payload-transfer.py" --size 2
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[[ "$output" == *"upload "*"requests"* && "$output" == *"pull "*"1 requests"* ]]
	[[ "$output" =~ pull\ is\ ([0-9]+)x\ faster ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]
}
