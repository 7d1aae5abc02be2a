#!/usr/bin/env bats
# Issue 40 item 2: --sign-scripts (execution_policy = "allsigned") in the
# engine tier. Packer 1.6.6's powershell provisioner dot-sources an env-vars
# file it writes itself, unsigned (provisioner/powershell/provisioner.go:
# defaultExecuteCommand, uploadEnvVars), which AllSigned refuses: every
# value it carries (PACKER_BUILDER_TYPE, WINBUILD_*) was unset, and steps
# 03, 08 and 09 threw. winbuild's execute_command sets them in the command
# itself (builder/emit/packer.c, emit_execute_command). The 2022 image,
# signed by the real CLI with a test code-signing key, runs through
# Packer's wrapper with tests/win/packer.ps1 refusing every unsigned file.
load helpers
load ../lib/authenticode

export PATH="$PATH:$HOME/.dotnet/tools"

setup_file() {
	# the host DLL and template plans every tier run and build-sim below share
	# (tests/win/build-sim); tests/run passes one for the whole suite
	export WINTIER_CACHE="${WINTIER_CACHE:-$BATS_FILE_TMPDIR/engine-cache}"
	command -v pwsh >/dev/null 2>&1 || return 0
	[ -d "$WB_SRC/tests/win/node_modules/@cdktf/hcl2json" ] || return 0
	(ac_make_pki "$BATS_FILE_TMPDIR/pki") >"$BATS_FILE_TMPDIR/pki.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/pki.log" >&2
		return 1
	}
	P=$BATS_FILE_TMPDIR/pki
	WINTIER_MANAGERS=sc WINTIER_BUILDERS="qemu amazon-ebs" \
		WINTIER_ARGS="--sign-scripts --sign-cert $P/cs.pem --sign-key $P/cs.key" \
		bash "$WB_SRC/tests/win/run" -p 1 -w "$BATS_FILE_TMPDIR/base" 2022 \
		>"$BATS_FILE_TMPDIR/base.log" 2>&1 || true
}

need_engine() {
	need_pwsh || return 1
	B=$BATS_FILE_TMPDIR/base/2022-sc
	[ -d "$B/out" ] || {
		cat "$BATS_FILE_TMPDIR/base.log" >&2
		return 1
	}
}

@test "issue 40: a --sign-scripts build runs under allsigned through Packer's wrapper on qemu and amazon-ebs: 03, 08 get their values, the end state holds" {
	need_engine
	H=$B/out/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl
	grep -q 'execution_policy = "allsigned"' "$H"
	! grep -q '"bypass"' "$H" || false
	grep -q '^# SIG # Begin signature block' "$B/out/windows-2022-containerd/packer/scripts/03-cloudbase-init.ps1"
	grep -q '^ok 2022 sc qemu: 1 passes' "$BATS_FILE_TMPDIR/base.log" || { cat "$BATS_FILE_TMPDIR/base.log"; false; }
	grep -q '^ok 2022 sc amazon-ebs: 1 passes' "$BATS_FILE_TMPDIR/base.log" || { cat "$BATS_FILE_TMPDIR/base.log"; false; }
	# nothing unsigned ran or was refused: Packer's env-vars file is not loaded
	! grep -q 'is not digitally signed' "$B/sim/qemu/log.txt" || false
	! grep -q 'is not digitally signed' "$B/sim/amazon-ebs/log.txt" || false
}

@test "issue 40: with Packer's default execute_command (values in its env-vars file) the signed build fails in 03-cloudbase-init" {
	need_engine
	rm -rf "$WORK/o"
	cp -R "$B/out" "$WORK/o"
	H=$WORK/o/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl
	grep -q '^    execute_command  = ' "$H"
	sed -i '/^    execute_command  = /d' "$H"
	run bash "$WB_SRC/tests/win/build-sim" "$WORK/o/windows-2022-containerd" "$B/recipe.json" "$WORK/sim" 1 signed qemu
	echo "$output"
	# (the refusal is an error record; 01 and 02 need no value and go on)
	grep -q 'packer-ps-env-vars-1.ps1 is not digitally signed' "$WORK/sim/qemu/log.txt"
	assert_output_has "not ok signed qemu: pass 1: 03-cloudbase-init.ps1 exited 1"
	grep -q "PACKER_BUILDER_TYPE '' is none of this image's builders" "$WORK/sim/qemu/log.txt"
}
