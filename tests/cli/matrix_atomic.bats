#!/usr/bin/env bats
# A matrix is atomic per image (issue 41 item 5, docs/matrix.md): an image
# that fails leaves its previous outputs (tree, manifest, Packer inputs,
# lock) as they were, its failure never marks another image, and an
# up-to-date matrix built again with -q completes.
load helpers
load ../lib/servers

setup_file() {
	export DEMO_DIR="$BATS_FILE_TMPDIR/demo" DEMO_PORT DEMO_REKOR_PORT
	DEMO_PORT=$(free_port)
	DEMO_REKOR_PORT=$(free_port)
	[ "$DEMO_REKOR_PORT" != "$DEMO_PORT" ] || DEMO_REKOR_PORT=$(free_port)
	mkdir -p "$BATS_FILE_TMPDIR/tmp"
	TMPDIR="$BATS_FILE_TMPDIR/tmp" bash "$WB_SRC/tests/demo/run" >"$BATS_FILE_TMPDIR/demo.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/demo.log" >&2; return 1; }
	WB_NGINX_INCLUDE="$DEMO_DIR/mirror/registry.k8s.io/nginx-locations.conf" start_nginx "$DEMO_DIR/mirror"
	start_rekor "$DEMO_DIR"/keys/sigstore/entries/*.json
	export MX_KEY MX_REKOR="$REKOR" MX_MIRROR="http://127.0.0.1:$NGINX_PORT"
	MX_KEY=$(tail -n1 "$DEMO_DIR/keys/demo.pub")
}

teardown_file() {
	stop_servers
}

R="$WB_SRC/recipes"

wbd() {
	local cmd="$1"
	shift
	run "$WINBUILD" "$cmd" "${DEMO_ARGS[@]}" "$@"
}
setup() {
	common_setup
	DEMO_ARGS=(-O "$WB_SRC/overrides/demo.yaml" --set vars.demo_mirror="$MX_MIRROR"
		   --set keys.demo.key="$MX_KEY" --set vars.demo_rekor="$MX_REKOR"
		   --set vars.demo_sigstore_root="$DEMO_DIR/keys/sigstore/root.json" --no-progress)
}

# a digest of everything an image NAME left: its out dir (tree, manifest,
# packer) and its lock
outputs_hash() {
	local n="$1"
	{ (cd "out/$n" 2>/dev/null && find . -path ./.lock -prune -o -print0 | LC_ALL=C sort -z |
		xargs -0 -r sh -c 'for f; do if [ -f "$f" ]; then printf "%s " "$f"; sha256sum <"$f"; else echo "$f"; fi; done' _)
	  sha256sum <"$n.lock" 2>/dev/null; } | sha256sum
}

@test "build A B -q of an up-to-date matrix: both up to date, exit 0 (was SIGSEGV)" {
	wbd build "$R/windows-2022-containerd.yaml" "$R/windows-2019-containerd.yaml" -o out
	assert_status 0
	wbd build "$R/windows-2022-containerd.yaml" "$R/windows-2019-containerd.yaml" -o out -q
	assert_status 0
	[ -f out/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl ]
	[ -f out/windows-2019-containerd/packer/windows-2019-containerd.pkr.hcl ]
}
