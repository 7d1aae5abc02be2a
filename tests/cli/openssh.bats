#!/usr/bin/env bats
# Issue 27 D10: the OpenSSH server component (recipes/components/openssh.yaml),
# off in the shipped images. Its fixture is Win32-OpenSSH's release layout
# (OpenSSH-Win64/ in a zip) whose .exe and .dll are signed by a test CA
# certificate with Microsoft's subject, so the component's publisher pin
# matches and the site's roots (the test CA) decide. The engine tier then
# runs the emitted scripts with it enabled (tests/win/run).
load helpers
load ../lib/servers
load ../lib/authenticode
load ../lib/openssh
load stage_fixtures

export PATH="$PATH:$HOME/.dotnet/tools"

setup_file() {
	ac_setup_file
	ossh_ms_cert || return 1
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	ossh_zip "$WWW/good/OpenSSH-Win64.zip" ms
	ossh_zip "$WWW/good/unsigned.zip" -
	ossh_zip "$WWW/good/example.zip" cs
	start_nginx "$WWW"
}

setup() {
	fixture_setup
}

O() { echo "$WORK/out/$NAME"; }

# ossh_override ZIP: the fixtures plus the component on, from ZIP, under
# the test CA's roots
ossh_override() {
	{
		cat "$WORK/fixtures.yaml"
		replace_entry openssh "$1"
		printf 'components:\n  openssh:\n    enabled: true\n'
		printf '    authenticode: {roots: %s}\n' "$FX/ca.pem"
	} >"$WORK/ossh.yaml"
}

@test "OpenSSH: off in the shipped images; enabled without roots for Microsoft's signature, the plan says where and what is missing (exit 2)" {
	for r in "$WB_SRC"/recipes/windows-20*-containerd.yaml; do
		run "$WINBUILD" plan "$r"
		assert_status 0
		assert_output_lacks "component openssh"
	done
	wb plan "$RECIPE" --set components.openssh.enabled=true
	assert_status 2
	assert_output_has "recipes/components/openssh.yaml:"
	assert_output_has "'components.openssh.authenticode' needs 'roots'"
}

@test "OpenSSH: a Microsoft-signed release stages key-only: sshd in Program Files, its config, a service, port 22, PowerShell as the shell, ProgramData\\ssh for admins only" {
	ossh_override OpenSSH-Win64.zip
	wb build "$RECIPE" -O "$WORK/ossh.yaml" --no-progress
	assert_status 0
	for f in sshd.exe ssh.exe ssh-keygen.exe sftp-server.exe libcrypto.dll install-sshd.ps1; do
		[ -f "$(O)/tree/Program Files/OpenSSH/$f" ]
	done
	# the manifest records Microsoft as the signer of every PE
	python3 - "$(O)/manifest.json" "$MS_PUBLISHER" <<-'PY'
	import json, sys
	m = json.load(open(sys.argv[1]))
	pes = [f for f in m["files"] if f["path"].lower().startswith("c:\\program files\\openssh\\")
	       and f["path"].lower().endswith((".exe", ".dll"))]
	assert len(pes) == 5, [f["path"] for f in pes]
	for f in pes:
	    assert sys.argv[2] in json.dumps(f), f
	PY
	# sshd_config as sshd reads it: keyword, argument; no Match block
	python3 - "$(O)/tree/ProgramData/ssh/sshd_config" <<-'PY'
	import sys
	kv = {}
	for line in open(sys.argv[1]):
	    line = line.strip()
	    if line and not line.startswith("#"):
	        k, v = line.split(None, 1)
	        assert k.lower() != "match", line
	        kv[k.lower()] = v
	assert kv["passwordauthentication"] == "no", kv
	assert kv["pubkeyauthentication"] == "yes", kv
	assert kv["authorizedkeysfile"] == ".ssh/authorized_keys", kv
	assert kv["subsystem"].split() == ["sftp", "sftp-server.exe"], kv
	PY
	local s="$(O)/packer/scripts/05-services.ps1"
	grep -qF "'HKLM:\\SOFTWARE\\OpenSSH'" "$s"
	grep -qF "'DefaultShell'" "$s"
	grep -qF "'C:\\ProgramData\\ssh'" "$s"
	# the argv sshd gets from the service manager (winnode.py, the argv model)
	run python3 "$WB_SRC/tests/node/winnode.py" service "$(O)/packer/scripts" "$(O)/tree" sshd
	assert_status 0
	[ "$(echo "$output" | tail -n1)" = '["C:\\Program Files\\OpenSSH\\sshd.exe"]' ]
	wb verify "$(O)"
	assert_status 0
}

@test "OpenSSH: an unsigned sshd.exe fails the stage (exit 1) naming the file; nothing is staged" {
	ossh_override unsigned.zip
	wb build "$RECIPE" -O "$WORK/ossh.yaml" --no-progress
	assert_status 1
	assert_output_has "artifact 'openssh': 'Program Files/OpenSSH/"
	assert_output_has "not signed"
	[ ! -e "$(O)/tree" ]
}

@test "OpenSSH: a sound signature by another publisher under the same roots fails the stage (the publisher pin)" {
	ossh_override example.zip
	wb build "$RECIPE" -O "$WORK/ossh.yaml" --no-progress
	assert_status 1
	assert_output_has "Example Code Signing"
	[ ! -e "$(O)/tree" ]
}

@test "registry and admin_directories: a key outside HKLM, a wildcard, an empty name, a dword out of range are plan errors at file:line:col (exit 2)" {
	mkdir -p "$WORK/components"
	local bad
	for bad in 'key: HKCU:\Software\X|name: A|type: string|value: v|10:|registry key' \
		'key: HKLM:\SOFTWARE\X*|name: A|type: string|value: v|10:|registry key' \
		'key: HKLM:\SOFTWARE\\X|name: A|type: string|value: v|10:|registry key' \
		'key: HKLM:\SOFTWARE\X|name: A:B|type: string|value: v|11:|registry value name' \
		'key: HKLM:\SOFTWARE\X|name: A|type: dword|value: "4294967296"|13:|dword' \
		'key: HKLM:\SOFTWARE\X|name: A|type: dword|value: "-1"|13:|dword' \
		'key: HKLM:\SOFTWARE\X|name: A|type: qword|value: "1"|12:|type'; do
		IFS='|' read -r k n t v line why <<<"$bad"
		demo_component_plan "$(printf 'registry:\n  - %s\n    %s\n    %s\n    %s\n' "$k" "$n" "$t" "$v")"
		assert_status 2
		assert_output_has "demo.yaml:$line"
		assert_output_has "$why"
	done
	# and a sound one plans, its value in plan --json
	printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n  a:\n    url: %s/good/kubectl.exe\n    verify: {sha256: %s}\n    install: {to: '"'"'C:\\k\\a.exe'"'"'}\nregistry:\n  - {key: '"'"'HKLM:\\SOFTWARE\\demo\\Demo Key'"'"', name: Level, type: dword, value: "4294967295"}\nadmin_directories: ['"'"'C:\\ProgramData\\demo'"'"']\n' \
		"$(H)" "$(sha_www good/kubectl.exe)" >"$WORK/components/demo.yaml"
	run "$WINBUILD" plan "$WORK/img.yaml" --json
	assert_status 0
	python3 -c '
import json, sys
c = next(c for c in json.load(sys.stdin)["components"] if c["name"] == "demo")
assert c["registry"] == [{"key": "HKLM:\\SOFTWARE\\demo\\Demo Key", "name": "Level", "type": "dword", "value": "4294967295", "take_ownership": None}], c
assert c["admin_directories"] == ["C:\\ProgramData\\demo"], c' <<<"$output"
}

# The engine tier: the 2022 image with the component on, run as Packer runs
# it against the simulated Windows; tests/win/check.py holds the end state
# to the plan (sshd registered, auto, from the staged sshd.exe; the registry
# value; ProgramData\ssh's ACL: nothing inherited, SYSTEM and Administrators
# the only writers; port 22).
@test "OpenSSH engine tier: sshd registered as an auto-start service, DefaultShell and dword values up to 4294967295 set, ProgramData\\ssh writable by admins only" {
	need_pwsh || return 1
	mkdir -p "$WORK/www"
	cp "$WWW/good/OpenSSH-Win64.zip" "$WORK/www/"
	{
		printf 'kind: override\nreplace:\n  openssh:\n    url: @HTTP@/good/OpenSSH-Win64.zip\n'
		printf '    verify: {sha256: %s}\n' "$(sha_www good/OpenSSH-Win64.zip)"
		printf 'components:\n  openssh:\n    enabled: true\n    authenticode: {roots: %s}\n' "$FX/ca.pem"
		# the component's value, and dword values whose top bit is set
		# (REG_DWORD takes an Int32: the script passes the bits)
		printf '    registry:\n'
		printf "      - {key: 'HKLM:\\SOFTWARE\\OpenSSH', name: DefaultShell, type: string, value: '%s'}\n" \
			'C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe'
		for v in 4294967295 2147483648 2147483647 0; do
			printf "      - {key: 'HKLM:\\SOFTWARE\\OpenSSH\\winbuild test', name: D%s, type: dword, value: \"%s\"}\n" "$v" "$v"
		done
	} >"$WORK/extra.yaml"
	WINTIER_WWW="$WORK/www" WINTIER_OVERRIDE="$WORK/extra.yaml" WINTIER_MANAGERS=sc \
		WINTIER_BUILDERS=qemu run bash "$WB_SRC/tests/win/run" -p 2 -w "$WORK/tier" 2022
	echo "$output"
	assert_status 0
	assert_output_has "1 passed, 0 failed"
	python3 - "$WORK/tier/2022-sc/sim/qemu" <<-'PY'
	import json, os, sys
	# after one build (pass 1): registered, auto, from the staged sshd.exe,
	# and never started (the build's one restart comes before the services
	# step), so sshd made no host keys for every node to share
	st = json.load(open(os.path.join(sys.argv[1], "pass1.json")))
	s = st["state"]["services"]["sshd"] if "state" in st else st["services"]["sshd"]
	assert s["start"] == "auto", s
	assert s["binPath"] == '"C:\\Program Files\\OpenSSH\\sshd.exe"', s
	assert s["status"] != "Running", s
	PY
}
