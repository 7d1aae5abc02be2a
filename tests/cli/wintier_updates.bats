#!/usr/bin/env bats
# Issue 32 item 3: the Windows update step in the engine tier. The shipped
# 2025 image with two updates (a checkpoint first) from an override, built
# by tests/win/run and run through Packer's wrapper in PowerShell 7.6
# against the simulated Windows, whose dism.exe /Add-Package codes each
# case scripts per KB (WBSIM_DISM_SCRIPT, tests/win/fakewin.py): 3010 and
# a restart before the next update, already installed, not applicable,
# a fatal code, a build that is not expect_build. tests/win/check.py holds
# the end state to the plan (order, a restart between any two DISM calls,
# the build).
load helpers
load ../lib/authenticode
load ../lib/updates

export PATH="$PATH:$HOME/.dotnet/tools"

# dism_script FILE JSON
dism_script() { printf '%s\n' "$2" >"$1"; }

HAPPY='{"KB5043080": {"exit": [3010], "build": "26100.1742"}, "KB5050009": {"exit": [3010], "build": "26100.2894"}}'

setup_file() {
	# the host DLL and template plans every tier run and build-sim below share
	# (tests/win/build-sim); tests/run passes one for the whole suite
	export WINTIER_CACHE="${WINTIER_CACHE:-$BATS_FILE_TMPDIR/engine-cache}"
	command -v pwsh >/dev/null 2>&1 || return 0
	[ -d "$WB_SRC/tests/win/node_modules/@cdktf/hcl2json" ] || return 0
	export FX="$BATS_FILE_TMPDIR/fx"
	(upd_make_fixtures "$FX") >"$BATS_FILE_TMPDIR/fixtures.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/fixtures.log" >&2
		return 1
	}
	# shellcheck disable=SC1091
	source "$FX/upd.env"
	upd_tier_override >"$BATS_FILE_TMPDIR/upd.yaml"
	dism_script "$BATS_FILE_TMPDIR/happy.json" "$HAPPY"
	WINTIER_MANAGERS=sc WINTIER_BUILDERS=qemu WINTIER_WWW="$FX/www" \
		WINTIER_OVERRIDE="$BATS_FILE_TMPDIR/upd.yaml" WBSIM_DISM_SCRIPT="$BATS_FILE_TMPDIR/happy.json" \
		bash "$WB_SRC/tests/win/run" -p 2 -w "$BATS_FILE_TMPDIR/base" 2025 \
		>"$BATS_FILE_TMPDIR/base.log" 2>&1 || true
}

need_engine() {
	need_pwsh || return 1
	B=$BATS_FILE_TMPDIR/base/2025-sc
	[ -d "$BATS_FILE_TMPDIR/base/2025-sc/out" ] || {
		cat "$BATS_FILE_TMPDIR/base.log" >&2
		return 1
	}
}

LOG=sim/qemu/log.txt

# sim JSON [PERL-EDIT FILE]: the base build (its packer/ FILE edited by
# PERL-EDIT, which must change it) through the tier once more, on a fresh
# machine whose dism.exe follows JSON
sim() {
	rm -rf "$WORK/o" "$WORK/sim"
	cp -R "$B/out" "$WORK/o"
	if [ $# -gt 1 ]; then
		local f="$WORK/o/windows-2025-containerd/packer/$3"
		cp "$f" "$WORK/before"
		perl -0pi -e "$2" "$f"
		! cmp -s "$f" "$WORK/before" || { echo "the edit changed nothing in $3" >&2; return 1; }
	fi
	dism_script "$WORK/dism.json" "$1"
	WBSIM_DISM_SCRIPT="$WORK/dism.json" run bash "$WB_SRC/tests/win/build-sim" \
		"$WORK/o/windows-2025-containerd" "$B/recipe.json" "$WORK/sim" 1 upd qemu
	echo "$output"
}

@test "the updates install in order through Packer's wrapper, 3010 and a restart after each, then the build is checked; a retried build finds them installed" {
	need_engine
	grep -q '^ok 2025 sc qemu: 2 passes' "$BATS_FILE_TMPDIR/base.log" || {
		cat "$BATS_FILE_TMPDIR/base.log"
		false
	}
	l=$B/sim/qemu/log.txt
	# pass 1: checkpoint, restart, the month's update, restart, the check
	run sed -n '/^=== pass 1/,/^=== pass 2/p' "$l"
	grep -E '^--- [0-9]+ (powershell 09-updates|windows-restart)|installing update|build 26100' <<<"$output" |
		sed 's/^--- [0-9]* //; s/^ *\[winbuild 09-updates\] //' >order.txt
	diff -u - order.txt <<-'EOF'
	windows-restart
	powershell 09-updates.ps1
	installing update KB5043080 from C:\ProgramData\winbuild\updates\01-kb5043080.msu
	windows-restart
	powershell 09-updates.ps1
	installing update KB5050009 from C:\ProgramData\winbuild\updates\02-kb5050009.msu
	windows-restart
	powershell 09-updates.ps1
	build 26100.2894 after the updates, as expected
	EOF
	grep -qF 'update KB5043080 installed; Windows restarts next (windows-restart)' "$l"
	# pass 2, the same machine: already installed is reported, not fatal
	run sed -n '/^=== pass 2/,$p' "$l"
	assert_output_has 'update KB5043080 is already installed (DISM exit code 0x00240006); going on'
	assert_output_has 'update KB5050009 is already installed (DISM exit code 0x00240006); going on'
	# the argv dism.exe received
	python3 - "$B/sim/qemu/state.json" <<-'PY'
	import json, sys
	st = json.load(open(sys.argv[1]))
	adds = [c['argv'] for c in st['calls'] if c['prog'].lower().endswith('dism.exe') and '/Add-Package' in c['argv']]
	assert adds[0] == ['/Online', '/Add-Package', '/PackagePath:C:\\ProgramData\\winbuild\\updates\\01-kb5043080.msu', '/NoRestart'], adds
	assert len(adds) == 4, adds
	PY
}

@test "already installed and not applicable on the first run are reported, not fatal" {
	need_engine
	# DISM's (CBS's) not applicable, 0x800f081e (issue 40)
	sim '{"KB5043080": {"exit": [2359302]}, "KB5050009": {"exit": [-2146498530]}}'
	# KB5050009 did not apply: the build stays, so expect_build fails the check
	assert_status 1
	grep -qF 'update KB5043080 is already installed (DISM exit code 0x00240006); going on' "$WORK/$LOG"
	grep -qF 'update KB5050009 does not apply to this Windows (DISM exit code 0x800f081e); going on' "$WORK/$LOG"
	assert_output_has "the build after the updates is 26100.1, not 26100.2894"
	# the Windows Update Agent's answer for the same, should the .msu path
	# return it, is taken the same way
	sim '{"KB5050009": {"exit": [-2145124329]}}'
	assert_status 1
	grep -qF 'update KB5050009 does not apply to this Windows (DISM exit code 0x80240017); going on' "$WORK/$LOG"
	sim '{"KB5043080": {"exit": [2359302]}, "KB5050009": {"exit": [3010], "build": "26100.2894"}}'
	assert_status 0
	assert_output_has "ok upd qemu: 1 passes through Packer's wrapper, exit 0"
}

@test "must_apply: already installed or not applicable for a KB Windows does not list installed fails the step" {
	need_engine
	sim '{"KB5043080": {"exit": [-2146498530]}}' \
		's/must_apply = 0/must_apply = 1/' scripts/09-updates.ps1   # the first: KB5043080's
	assert_status 1
	assert_output_has "09-updates.ps1 exited 1"
	grep -qF 'update KB5043080 (C:\ProgramData\winbuild\updates\01-kb5043080.msu) does not apply to this Windows (DISM exit code 0x800f081e), and Windows does not list KB5043080 installed (Get-HotFix), while windows.updates says must_apply' "$WORK/$LOG"
	# another KB installed does not count for this one
	sim '{"KB5043080": {"exit": [2359302]}, "KB5050009": {"installed": true}}' \
		's/must_apply = 0/must_apply = 1/' scripts/09-updates.ps1
	assert_status 1
	grep -qF 'update KB5043080 (C:\ProgramData\winbuild\updates\01-kb5043080.msu) is already installed (DISM exit code 0x00240006), and Windows does not list KB5043080 installed (Get-HotFix), while windows.updates says must_apply' "$WORK/$LOG"
}

@test "issue 40: must_apply with DISM's not applicable (0x800f081e) for a KB Windows lists installed (a rebuild) is met" {
	need_engine
	# the component store has KB5043080 before the build (fakewin.py's
	# "installed"), and DISM answers CBS_E_NOT_APPLICABLE for it
	sim '{"KB5043080": {"installed": true, "exit": [-2146498530]}, "KB5050009": {"exit": [3010], "build": "26100.2894"}}' \
		's/must_apply = 0/must_apply = 1/' scripts/09-updates.ps1
	assert_status 0
	assert_output_has "ok upd qemu: 1 passes through Packer's wrapper, exit 0"
	grep -qF 'update KB5043080 does not apply to this Windows (DISM exit code 0x800f081e), and Windows lists KB5043080 installed (Get-HotFix): must_apply is met' "$WORK/$LOG"
	grep -qF 'build 26100.2894 after the updates, as expected' "$WORK/$LOG"
	# the package left the image as after an install (build-only)
	[ -d "$WORK/sim/qemu/C/ProgramData/winbuild" ]
	[ ! -e "$WORK/sim/qemu/C/ProgramData/winbuild/updates/01-kb5043080.msu" ] || {
		ls -R "$WORK/sim/qemu/C/ProgramData/winbuild" >&2
		false
	}
}

@test "issue 40: DISM's 0x800f0823 (a newer servicing stack needed) fails the step and says which update to list first" {
	need_engine
	sim '{"KB5043080": {"exit": [-2146498525]}}'
	assert_status 1
	assert_output_has "not ok upd qemu: pass 1: 09-updates.ps1 exited 1"
	grep -qF 'update KB5043080 (C:\ProgramData\winbuild\updates\01-kb5043080.msu) needs a newer servicing stack (DISM exit code 0x800f0823, CBS_E_NEW_SERVICING_STACK_REQUIRED)' "$WORK/$LOG"
}

@test "any other DISM code fails the step naming the KB, the file and the code" {
	need_engine
	sim '{"KB5043080": {"exit": [-2146498529]}}'
	assert_status 1
	assert_output_has "not ok upd qemu: pass 1: 09-updates.ps1 exited 1"
	grep -qF 'TERMINATING ERROR: update KB5043080 (C:\ProgramData\winbuild\updates\01-kb5043080.msu) failed: DISM exited with -2146498529 (0x800f081f)' "$WORK/$LOG"
	# the build stopped there: the next update was never tried
	! grep -q 'installing update KB5050009' "$WORK/$LOG" || false
}

@test "a build other than expect_build after the last restart fails the check" {
	need_engine
	sim '{"KB5043080": {"exit": [3010], "build": "26100.1742"}, "KB5050009": {"exit": [3010], "build": "26100.2893"}}'
	assert_status 1
	assert_output_has "09-updates.ps1 exited 1"
	assert_output_has "the build after the updates is 26100.2893, not 26100.2894 (windows.updates' expect_build)"
}

@test "without the restart after a 3010 the next update meets a pending restart (DISM 0x800f082f) and the build fails" {
	need_engine
	# the restart between the two updates taken out of the template
	sim "$HAPPY" 's/(WINBUILD_UPDATE='"'"'1'"'"'[^\n]*\n[^\n]*\n  \}\n)\n  provisioner "windows-restart" \{\n[^\n]*\n  \}\n/$1/' \
		windows-2025-containerd.pkr.hcl
	assert_status 1
	assert_output_has "09-updates.ps1 exited 1"
	grep -qF 'update KB5050009 (C:\ProgramData\winbuild\updates\02-kb5050009.msu) failed: DISM exited with -2146498513 (0x800f082f)' "$WORK/$LOG"
}
