#!/usr/bin/env bats
# Issue 28: README's examples are tests. Every command block of README.md
# carries a `<!-- doctest: ... -->` marker (tests/lib/doctest.py): blocks
# marked run/demo are run as typed (demo ones while `make demo-serve` keeps
# the demo mirror and fake Rekor up), and their shown output must appear in
# the real output; a changed behaviour fails here until the README follows.
load helpers
load ../lib/servers

DOCTEST="$WB_SRC/tests/lib/doctest.py"

setup() {
	common_setup
	cd "$WORK"
}

teardown() {
	# the demo this test started, by its pid only
	if [ -n "${DEMO_PID:-}" ] && kill -0 "$DEMO_PID" 2>/dev/null; then
		kill -TERM "$DEMO_PID" 2>/dev/null || true
		wait "$DEMO_PID" 2>/dev/null || true
	fi
}

@test "README: every command block runs as typed against the demo mirror (make demo-serve), shown output checked" {
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	need_dep command -v nginx -- "nginx (make deps)"
	export DEMO_DIR="$WORK/demo" DEMO_SERVE=1 DEMO_PORT DEMO_REKOR_PORT
	DEMO_PORT=$(free_port)
	DEMO_REKOR_PORT=$(free_port)
	[ "$DEMO_REKOR_PORT" != "$DEMO_PORT" ] || DEMO_REKOR_PORT=$(free_port)
	mkdir "$WORK/tmp"
	TMPDIR="$WORK/tmp" bash "$WB_SRC/tests/demo/run" >demo.log 2>&1 3>&- &
	DEMO_PID=$!
	for ((i = 0; i < 1200; i++)); do
		[ -f "$DEMO_DIR/demo.env" ] && break
		kill -0 "$DEMO_PID" 2>/dev/null || { cat demo.log >&2; return 1; }
		sleep 0.25
	done
	[ -f "$DEMO_DIR/demo.env" ] || { cat demo.log >&2; return 1; }
	# what it tells the user to paste
	grep -qF ". $DEMO_DIR/demo.env && ./winbuild build recipes/windows-2022-containerd.yaml -O overrides/demo.yaml" demo.log
	run python3 "$DOCTEST" "$WB_SRC/README.md" --require-markers --demo-env "$DEMO_DIR/demo.env" \
		--demo-dir "$DEMO_DIR" --demo-log demo.log --demo-port "$DEMO_PORT" --demo-rekor-port "$DEMO_REKOR_PORT"
	echo "$output"
	assert_status 0
	# every kind of block is there, and each ran
	for k in demo-output demo run synopsis skip; do
		grep -q "^ok README.md:[0-9]* ($k" <<<"$output" || { echo "no $k block ran" >&2; return 1; }
	done
	# Ctrl-C (here SIGTERM) stops the servers and removes the env file
	kill -TERM "$DEMO_PID"
	wait "$DEMO_PID" || true
	DEMO_PID=
	[ ! -e "$DEMO_DIR/demo.env" ]
	! (exec 9<>"/dev/tcp/127.0.0.1/$DEMO_PORT") 2>/dev/null || false
	! (exec 9<>"/dev/tcp/127.0.0.1/$DEMO_REKOR_PORT") 2>/dev/null || false
	[ -z "$(ls -A "$WORK/tmp")" ]
}

@test "doctest fails on drift: a shown line the tool no longer prints, a failing command, an unmarked block, a skip without reason" {
	block() { printf '%s\n\n' "$1"; shift; printf '    %s\n' "$@"; printf '\n'; }
	{
		block '<!-- doctest: run -->' '$ ./winbuild plan recipes/windows-2022-containerd.yaml --builder azure-arm' \
			'image windows-2022-containerd: Windows Server 2022 (datacenter)' '...' \
			'packer.builders = [azure-arm]'
	} >good.md
	run python3 "$DOCTEST" good.md --require-markers
	assert_status 1
	assert_output_has "shown output not found"
	# the same with the line as the tool prints it passes
	sed -i 's/packer.builders = \[azure-arm\]/10 artifacts from 6 components, 1 container image; 2 need a pin (winbuild lock --accept-new): cloudbase-init, image pause/' good.md
	run python3 "$DOCTEST" good.md --require-markers
	assert_status 0
	block '<!-- doctest: run -->' './winbuild plan recipes/no-such.yaml' >bad.md
	run python3 "$DOCTEST" bad.md
	assert_status 1
	assert_output_has "exited 2"
	block '' './winbuild plan recipes/windows-2022-containerd.yaml' >bare.md
	run python3 "$DOCTEST" bare.md --require-markers
	assert_status 1
	assert_output_has "no '<!-- doctest: ... -->' marker"
	block '<!-- doctest: skip -->' 'make everything' >skip.md
	run python3 "$DOCTEST" skip.md --require-markers
	assert_status 1
	assert_output_has "needs a reason"
	block '<!-- doctest: synopsis -->' 'winbuild build RECIPE --no-such-option' >syn.md
	run python3 "$DOCTEST" syn.md --require-markers
	assert_status 1
	assert_output_has "lists no option '--no-such-option'"
}

@test "the docs' marked examples run as typed, shown output checked (docs/*.md with doctest markers)" {
	n=0
	for f in "$WB_SRC"/docs/*.md; do
		grep -q '^<!-- doctest: ' "$f" || continue
		run python3 "$DOCTEST" "$f"
		echo "$output"
		assert_status 0
		n=$((n + $(grep -c '^ok ' <<<"$output")))
	done
	[ "$n" -ge 1 ]
}
