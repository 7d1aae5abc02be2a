# demo_mirror_setup_file: make's demo mirror (tests/demo/run) once for a
# bats file, in BATS_FILE_TMPDIR, served by nginx (with its registry tree's
# locations) and the fake Rekor on free ports. Exports DEMO_DIR, MX_MIRROR,
# MX_REKOR, MX_KEY (the demo minisign key). Needs tests/lib/servers.bash;
# the file's teardown_file calls stop_servers. Used by matrix.bats and
# matrix_atomic.bats.
demo_mirror_setup_file() {
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
