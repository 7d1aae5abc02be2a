#!/usr/bin/env bats
# Red team, issue 25 class 4: names and places that become Windows objects.
# A component is data anyone may write (a vendor's, a fork's, a pull
# request's). Written as its author would attack the node:
#   - a service named like one of Windows' own (WinDefend, TermService,
#     w32time, mpssvc) would have the generic services step repoint it at
#     the component's binary, or delete it first under nssm;
#   - a machine PATH entry in a system or shared location (C:\Windows,
#     C:\Users\Public, C:\ProgramData) would put files others can write on
#     every process's search path;
#   - a Defender exclusion of C:\, C:\Windows or a folder the component
#     does not own would hide everything there from Defender.
# Each is refused at plan time with file:line:col (exit 2), before anything
# is fetched or written; the earlier good output stays as it was.
load helpers

FIX="$BATS_TEST_DIRNAME/fixtures/plan"

setup() {
	common_setup
	cp -R "$FIX"/. "$WORK/"
	# the image of the plan fixtures plus one component, evil, which
	# installs C:\opt\evil\evil.exe and unpacks into C:\opt\evil\lib
	printf '  evil: {file: components/evil.yaml}\n' >>img.yaml
}

# evil YAML...: components/evil.yaml with YAML appended
evil() {
	{
		cat <<-'EOF'
		kind: component
		name: evil
		version: "1.0"
		artifacts:
		  evil:
		    url: https://example.com/evil.exe
		    verify: {sha256: 0000000000000000000000000000000000000000000000000000000000000000}
		    install:
		      to: C:\opt\evil\evil.exe
		  evil-lib:
		    url: https://example.com/evil-lib.zip
		    verify: {sha256: 1111111111111111111111111111111111111111111111111111111111111111}
		    unpack:
		      into: C:\opt\evil\lib
		directories: ['C:\var\lib\evil']
		EOF
		printf '%s\n' "$@"
	} >components/evil.yaml
	# a case of its own for `directories` replaces the default one
	if printf '%s\n' "$@" | grep -q '^directories:'; then
		sed -i "/^directories: \['C:\\\\var/d" components/evil.yaml
	fi
}

# a good run first: the plan and an earlier out/ to compare
good_first() {
	evil 'services: [{name: evild, binary: C:\opt\evil\evil.exe}]' \
		'path: [C:\opt\evil, C:\opt\evil\lib\bin]' \
		'defender_exclusions: [C:\var\lib\evil]'
	wb plan img.yaml --json
	assert_status 0
	echo "$output" >good.json
	mkdir -p out/test-img && echo earlier >out/test-img/marker
	snap_before=$(find out -type f | sort | xargs sha256sum)
}

# refused LINE:COL MESSAGE: plan and build refuse, nothing lands
refused() {
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/evil.yaml:$1"
	assert_output_has "$2"
	wb build img.yaml --no-progress
	assert_status 2
	assert_output_has "$2"
	[ ! -e "$WINBUILD_CACHE" ]
	[ "$(find out -type f | sort | xargs sha256sum)" = "$snap_before" ]
	[ -z "$(ls ./*.lock 2>/dev/null)" ]
}

@test "c25.4: a service named like Windows' own (WinDefend, TermService, w32time, MPSSVC) is refused" {
	good_first
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["services"]; assert [x["name"] for x in s] == ["evild"], s' good.json
	for name in WinDefend TermService w32time MPSSVC WinRM hns; do
		evil "services: [{name: $name, binary: C:\\opt\\evil\\evil.exe}]"
		refused 16:19 "service name '$name' is a service of Windows itself"
	done
	# the same name in another case is still Windows' (the SCM ignores case)
	evil 'services: [{name: windefend, binary: C:\opt\evil\evil.exe}]'
	refused 16:19 "'windefend' is a service of Windows itself"
}

@test "c25.4: a machine PATH entry in a system or shared location is refused" {
	good_first
	for p in 'C:\Windows' 'C:\Windows\System32\spool\drivers' 'C:\Users\Public' 'C:\ProgramData' \
		'C:\PROGRA~1' 'c:\program files (x86)' 'C:\'; do
		evil "path: ['$p']"
		refused 16:8 "is a system location"
	done
	# nor a directory the component does not own (another component's)
	evil "path: ['C:\\Program Files\\containerd']"
	refused 16:8 "is not a directory component 'evil' owns"
	evil "path: ['C:\\opt']"
	refused 16:8 "is not a directory component 'evil' owns"
}

@test "c25.4: a Defender exclusion of the drive, Windows, or a folder the component does not own is refused" {
	good_first
	for p in 'C:\' 'C:\Windows\Temp' 'C:\ProgramData\Microsoft\Windows Defender' 'C:\Users'; do
		evil "defender_exclusions: ['$p']"
		refused 16:23 "is a system location"
	done
	for p in 'C:\k' 'C:\opt' 'C:\var\lib'; do
		evil "defender_exclusions: ['$p']"
		refused 16:23 "is not a directory component 'evil' owns"
	done
	# directories it owns: its own directories, below what it unpacks, the
	# folder of a file it installs
	evil "defender_exclusions: ['C:\\var\\lib\\evil', 'C:\\opt\\evil\\lib\\x', 'C:\\opt\\evil']"
	wb plan img.yaml
	assert_status 0
}

# ---- issue 41 item 1: one guard for every Windows object a component
# declares (recipe/winobj.c). Each key of the component schema that
# becomes a Windows object carries S_WIN(kind) in builder/recipe/schema.c;
# the enumerating test below reads the table and fails when a key is
# neither guarded nor listed here as something that is not a Windows object.

# plan_refused MESSAGE: plan exits 2 at a file:line:col of evil.yaml
plan_refused() {
	wb plan img.yaml
	assert_status 2
	[[ "$output" =~ components/evil\.yaml:[0-9]+:[0-9]+: ]] || {
		echo "no file:line:col of evil.yaml in: $output" >&2; return 1; }
	[ -z "${1:-}" ] || assert_output_has "$1"
}

# evil_art ART_YAML [LINES...]: evil with a third artifact, evil-x
evil_art() {
	local art=$1
	shift
	evil "$@"
	python3 - "$art" <<-'PY'
	import sys
	p = 'components/evil.yaml'
	s = open(p).read()
	s = s.replace('directories: [', '  evil-x:\n' +
	    '    url: https://example.com/evil-x.bin\n' +
	    '    verify: {sha256: 2222222222222222222222222222222222222222222222222222222222222222}\n' +
	    ''.join('    %s\n' % l for l in sys.argv[1].split('|')) + 'directories: [', 1)
	open(p, 'w').write(s)
	PY
}

# winobj_case KEY: evil.yaml with a hostile value for component schema key
# KEY (a path as tests/lib/schema_keys.py prints it); 1 if KEY has none
winobj_case() {
	local svc='services: [{name: evild, binary: C:\opt\evil\evil.exe'
	case $1 in
	path) evil "path: ['C:\\Windows\\System32']" ;;
	directories) evil "directories: ['C:\\Windows\\System32\\config']" ;;
	defender_exclusions) evil "defender_exclusions: ['C:\\PROGRA~3']" ;;
	admin_directories) evil "admin_directories: ['C:\\ProgramData']" ;;
	event_manifests) evil "event_manifests: ['C:\\Windows\\System32\\winevt\\Publishers\\x.man']" ;;
	'firewall[].port') evil "firewall: [{name: evil, port: 3389}]" ;;
	'registry[].key')
		evil "registry: [{key: 'HKLM:\\SYSTEM\\ControlSet001\\Services\\WinDefend', name: ImagePath, type: expand_string, value: 'C:\\opt\\evil\\evil.exe'}]" ;;
	'registry[].take_ownership')
		evil "registry: [{key: 'HKLM:\\SOFTWARE\\evil\\x', name: N, type: string, value: v, take_ownership: 'HKLM:\\SOFTWARE'}]" ;;
	'services[].name') evil "services: [{name: WinDefend, binary: 'C:\\opt\\evil\\evil.exe'}]" ;;
	'services[].binary') evil "services: [{name: evild, binary: 'C:\\Windows\\System32\\cmd.exe'}]" ;;
	'services[].log_runner') evil "$svc, log_runner: 'C:\\Windows\\System32\\cmd.exe'}]" ;;
	'services[].log_file') evil "$svc, log_file: 'C:\\Windows\\System32\\config\\SAM'}]" ;;
	'services[].wrapper') evil "$svc, kubeadm_flags: true, wrapper: 'C:\\Windows\\System32\\x.ps1'}]" ;;
	'generate[].to')
		echo x >components/t.in
		evil "generate: [{template: t.in, to: 'C:\\Windows\\System32\\drivers\\etc\\hosts'}]" ;;
	'generate[].template')
		echo 'build-host secret' >secret.txt
		ln -sf ../secret.txt components/leak.in
		evil "generate: [{template: leak.in, to: 'C:\\opt\\evil\\leak.txt'}]" ;;
	'cni.bin_dir') evil "cni: {bin_dir: 'C:\\Windows\\System32', conf_dir: 'C:\\opt\\evil\\net.d'}" ;;
	'cni.conf_dir') evil "cni: {bin_dir: 'C:\\opt\\evil\\bin', conf_dir: 'C:\\Windows'}" ;;
	'artifacts.*.unpack.into') evil_art 'unpack: {into: C:\Windows\System32}' ;;
	'artifacts.*.install.to') evil_art 'install: {to: C:\Windows\System32\sethc.exe}' ;;
	'artifacts.*.payload.to') evil_art 'payload: {to: C:\Windows\Temp\evil.msi}' ;;
	*) return 1 ;;
	esac
}

# Component schema keys that do not become a Windows object of their own
# (one extended regex over the paths schema_keys.py prints), each with why.
NOT_WINOBJ='^(kind|name|description|homepage|license|purl|version|vars|file|enabled|tlog_source'
NOT_WINOBJ+='|artifacts\.\*\.(url|credential|verify\..*)'      # where and how a file is fetched and verified
NOT_WINOBJ+='|artifacts\.\*\.unpack\.(strip|include|format|limits\..*)'  # shape of what lands under `into`
NOT_WINOBJ+='|artifacts\.\*\.payload\.(type|properties)'        # the installer's arguments (render sinks)
NOT_WINOBJ+='|firewall\[\]\.(name|protocol)'  # the rule is winbuild-<name>-<protocol>-<port> (05-services.ps1)
NOT_WINOBJ+='|registry\[\]\.(name|type|value)' # a value of the key its `key` names
NOT_WINOBJ+='|images\..*'                      # container images: containerd's store, not Windows'
NOT_WINOBJ+='|services\[\]\.(args|sc_args|log_runner_args|manager|kubeadm_flags|depends_on)'  # of the service `name` names
NOT_WINOBJ+='|generate\[\]\.vars|authenticode\..*)$'

# winobj_keys SCHEMA_C: check the component table of SCHEMA_C against the
# lists above; prints what is wrong, status 1 if anything is
winobj_keys() {
	local bad=0 path typ flags
	while IFS=$'\t' read -r path typ flags; do
		if [[ $flags == *S_WIN\(* ]]; then
			if [[ $path =~ $NOT_WINOBJ ]]; then
				echo "$path: guarded (S_WIN) but listed as not a Windows object"; bad=1
			elif ! (winobj_case "$path" >/dev/null 2>&1); then
				echo "$path: guarded (S_WIN) but has no hostile case here"; bad=1
			fi
		elif [[ $path =~ $NOT_WINOBJ ]]; then
			:
		elif (winobj_case "$path" >/dev/null 2>&1); then
			echo "$path: has a hostile case but no S_WIN(kind) in schema.c: the guard never sees it"; bad=1
		else
			echo "$path: a component key that is neither guarded (S_WIN) nor listed as not a Windows object"; bad=1
		fi
	done < <(python3 "$WB_SRC/tests/lib/schema_keys.py" "$1" schema_component)
	return $bad
}

@test "i41.1: every component key that becomes a Windows object goes through the guard; a new key fails this test" {
	run winobj_keys "$WB_SRC/builder/recipe/schema.c"
	echo "$output"
	[ "$status" -eq 0 ]
	# the walk is not vacuous: a key added to the table without a guard or
	# a place in the lists above fails it
	sed 's|^\t{ "cni", S_MAP, schema_cni, NULL, 0 },|&\n\t{ "dummy_dirs", S_STRLIST, NULL, NULL, 0 },|' \
		"$WB_SRC/builder/recipe/schema.c" >schema-dummy.c
	grep -q dummy_dirs schema-dummy.c
	run winobj_keys schema-dummy.c
	[ "$status" -eq 1 ]
	[[ "$output" == *"dummy_dirs: a component key that is neither guarded"* ]]
	# nor is a guarded key without a hostile case
	sed 's|^\t{ "cni", S_MAP, schema_cni, NULL, 0 },|&\n\t{ "dummy_dirs", S_STRLIST, NULL, NULL, S_WIN(WINOBJ_DIR_NEW) },|' \
		"$WB_SRC/builder/recipe/schema.c" >schema-dummy.c
	run winobj_keys schema-dummy.c
	[ "$status" -eq 1 ]
	[[ "$output" == *"dummy_dirs: guarded (S_WIN) but has no hostile case"* ]]
	# and every hostile case is refused through the CLI at file:line:col
	good_first
	while IFS=$'\t' read -r path _ flags; do
		[[ $flags == *S_WIN\(* ]] || continue
		echo "# $path" >&3
		winobj_case "$path"
		plan_refused
	done < <(python3 "$WB_SRC/tests/lib/schema_keys.py" "$WB_SRC/builder/recipe/schema.c" schema_component)
}

@test "i41.1: registry keys of Windows' own (services, IFEO, Run, Winlogon, LSA, Defender, PATH) are refused under every alias" {
	good_first
	for k in 'HKLM:\SYSTEM\CurrentControlSet\Services\WinDefend' \
		'hklm:\system\currentcontrolset\services\windefend' \
		'HKLM:\SYSTEM\ControlSet001\Services\WinDefend' \
		'HKLM:\SYSTEM\ControlSet002\Services\TermService\Parameters' \
		'HKLM:\SYSTEM\CurrentControlSet\Services\WinDefend.' \
		'HKLM:\SYSTEM\CurrentControlSet\Services\WinDefend ' \
		'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Environment' \
		'HKLM:\SOFTWARE\Microsoft\Windows Defender\Exclusions\Paths' \
		'HKLM:\SOFTWARE\Policies\Microsoft\Windows Defender\Exclusions\Paths' \
		'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Image File Execution Options\sethc.exe' \
		'HKLM:\SOFTWARE\WOW6432Node\Microsoft\Windows NT\CurrentVersion\Image File Execution Options\sethc.exe' \
		'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Run' \
		'HKLM:\SOFTWARE\Wow6432Node\Microsoft\Windows\CurrentVersion\RunOnce' \
		'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon' \
		'HKLM:\SYSTEM\CurrentControlSet\Control\Lsa' \
		'HKLM:\SOFTWARE\evil\..\Microsoft\Windows\CurrentVersion\Run' \
		'HKLM:\SOFTWARE\evil\.\..\..\SYSTEM\CurrentControlSet\Services\WinDefend' \
		'HKLM:\SOFTWARE\Classes\CLSID\{0002DF01-0000-0000-C000-000000000046}\InprocServer32' \
		'HKLM:\SOFTWARE' 'HKLM:\SOFTWARE\evilx' 'HKLM:\SOFTWARE\containerd'; do
		evil "registry: [{key: '$k', name: Debugger, type: string, value: 'C:\\opt\\evil\\evil.exe'}]"
		plan_refused "registry key"
	done
	# a service key of the component's own service, its own SOFTWARE key
	evil "services: [{name: evild, binary: 'C:\\opt\\evil\\evil.exe'}]" \
		"registry: [{key: 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\evild\\Parameters', name: A, type: string, value: v}, {key: 'HKLM:\\SOFTWARE\\Evil\\Settings', name: B, type: dword, value: '1'}]"
	wb plan img.yaml
	assert_status 0
	# another component's service is not this one's
	evil "registry: [{key: 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\evild', name: A, type: string, value: v}]"
	plan_refused "registry key"
	# take_ownership only where the platform table allows it (CCG's COMClasses)
	evil "registry: [{key: 'HKLM:\\SOFTWARE\\evil\\x', name: N, type: string, value: v, take_ownership: 'HKLM:\\SOFTWARE\\evil'}]"
	plan_refused "take_ownership"
	# the allowed key, but the owner taken of a key above the one the
	# platform table names
	evil "registry: [{key: 'HKLM:\\SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses\\{CCC2A336-D7F3-4818-A213-272B7924213E}', name: N, type: string, value: v, take_ownership: 'HKLM:\\SYSTEM\\CurrentControlSet\\Control'}]"
	plan_refused "take_ownership"
	evil "registry: [{key: 'HKLM:\\SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses\\{CCC2A336-D7F3-4818-A213-272B7924213E}', name: N, type: string, value: v, take_ownership: 'hklm:\\system\\currentcontrolset\\control\\ccg\\comclasses'}]"
	wb plan img.yaml
	assert_status 0
	# and the build refuses it too, before anything is fetched or written
	evil "registry: [{key: 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\WinDefend', name: ImagePath, type: expand_string, value: 'C:\\opt\\evil\\evil.exe'}]"
	refused 16: "registry key"
}

@test "i41.1: directories and admin_directories in C:\\, C:\\Windows, C:\\ProgramData itself are refused under every alias" {
	good_first
	for key in directories admin_directories; do
		for p in 'C:\' 'C:\Windows' 'C:\Windows\System32\config' 'C:\ProgramData' 'C:\PROGRA~3' \
			'c:\programdata' 'C:/ProgramData' 'C:\Program Files' 'C:\Users\Public' \
			'C:\ProgramData\Microsoft\Windows Defender'; do
			evil "$key: ['$p']"
			plan_refused "system location"
		done
		for p in 'C:\ProgramData.' 'C:\Windows ' '\\?\C:\Windows' 'C:\opt\..\Windows'; do
			evil "$key: ['$p']"
			plan_refused "bad Windows path"
		done
	done
	evil "admin_directories: ['C:\\ProgramData\\evil']"
	wb plan img.yaml
	assert_status 0
}

@test "i41.1: files a component stages, and its event manifests, stay out of Windows' folders unless the platform table allows them" {
	good_first
	for a in 'install: {to: C:\Windows\System32\sethc.exe}' 'install: {to: C:\WINDOWS\system32\Utilman.exe}' \
		'unpack: {into: C:\Windows\System32}' 'unpack: {into: C:\Windows\System32, include: [CCGAKVPlugin.dll, sethc.exe]}' \
		'install: {to: C:\ProgramData\Microsoft\Windows\Start Menu\Programs\StartUp\x.bat}' \
		'payload: {to: C:\Users\Public\evil.msi}'; do
		evil_art "$a"
		plan_refused "system location"
	done
	# the one system place the platform table names: CCG's plugin DLL
	evil_art 'unpack: {into: C:\Windows\System32, include: [CCGAKVPlugin.dll]}'
	wb plan img.yaml
	assert_status 0
	evil "event_manifests: ['C:\\opt\\other\\x.man']"
	plan_refused "event_manifests"
}

@test "i41.1: a template symlinked out of its component's directory is refused by plan and build, before anything is fetched" {
	good_first
	echo 'build-host secret' >secret.txt
	mkdir -p components/sub
	ln -s ../secret.txt components/leak.in
	ln -s ../../secret.txt components/sub/leak2.in
	ln -s /etc/hostname components/abs.in
	for t in leak.in sub/leak2.in abs.in; do
		evil "generate: [{template: $t, to: 'C:\\opt\\evil\\leak.txt'}]"
		plan_refused "template"
	done
	refused 16: "resolves outside the component's directory"
	# a symlink inside the component's directory is fine
	echo 'hello' >components/real.in
	ln -s real.in components/inside.in
	evil "generate: [{template: inside.in, to: 'C:\\opt\\evil\\x.txt'}]"
	wb plan img.yaml
	assert_status 0
}

@test "i41.1: a directory spelled in another case is compared name by name, not only at its first difference" {
	good_first
	# C:\OPT\other differs from the component's C:\opt\evil in case at its
	# first name: it is still not the same directory
	for p in 'C:\OPT\other' 'C:\Opt\Evil-not' 'C:\VAR\lib\other'; do
		evil "path: ['$p']"
		plan_refused "is not a directory component 'evil' owns"
		evil "defender_exclusions: ['$p']"
		plan_refused "is not a directory component 'evil' owns"
	done
	evil "defender_exclusions: ['C:\\OPT\\EVIL', 'c:\\var\\LIB\\evil']"
	wb plan img.yaml
	assert_status 0
}
