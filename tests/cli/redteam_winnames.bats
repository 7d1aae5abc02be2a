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
