# Debian's containerd (1.6.20, .ci/deps) as a test-owned daemon: its own
# root, state, socket and config under a temp dir, no CRI plugin (ctr's
# import and list need the content, image and snapshot services only).
# Needs tests/lib/servers.bash (_wb_tmpdir, _wb_kill) and cli/helpers.bash
# (need_dep).
# @where container images imported into containerd in the VM -- a test-owned
#   Debian containerd 1.6.20 (`tests/cli/containerd_import.bats`; the import
#   through the engine tier: `tests/cli/images_node.bats`)

# start_containerd: starts one; sets CTR_SOCK (its socket) and CTR_PID.
# Without containerd installed the test skips, under CI=true it fails
# (need_dep); a daemon that does not come up fails the test (its log
# printed).
start_containerd() {
	need_dep containerd --version -- "containerd not installed (make deps: Debian's containerd)" || return 1
	# its snapshotter mounts overlayfs: root only (outside CI a skip, in CI
	# a failure, as a missing dependency)
	need_dep test "$(id -u)" = 0 -- "containerd's daemon needs root (overlayfs mounts)" || return 1
	local d i
	d=$(_wb_tmpdir containerd) || return 1
	# a unix socket's path holds at most 107 bytes; the test's temp dir is
	# the only place a test may use, so a longer one is an error
	CTR_SOCK="$d/c.sock"
	if [ ${#CTR_SOCK} -gt 100 ]; then
		echo "the socket path $CTR_SOCK is too long for a unix socket" >&2
		return 1
	fi
	cat >"$d/config.toml" <<-TOML
		version = 2
		root = "$d/root"
		state = "$d/state"
		disabled_plugins = ["io.containerd.grpc.v1.cri"]
		[grpc]
		  address = "$CTR_SOCK"
		[ttrpc]
		  address = "$CTR_SOCK.ttrpc"
		[debug]
		  address = ""
		[metrics]
		  address = ""
		# the opt plugin's default is /opt/containerd, outside the test
		[plugins."io.containerd.internal.v1.opt"]
		  path = "$d/opt"
	TOML
	containerd --config "$d/config.toml" >"$d/log" 2>&1 &
	CTR_PID=$!
	CTR_LOG="$d/log"
	for ((i = 0; i < 200; i++)); do
		if ctr -a "$CTR_SOCK" version >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$CTR_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "containerd did not come up on $CTR_SOCK:" >&2
	cat "$CTR_LOG" >&2
	stop_containerd
	return 1
}

# stop_containerd: the daemon start_containerd started, by its pid
stop_containerd() {
	[ -n "${CTR_PID:-}" ] || return 0
	_wb_kill "$CTR_PID"
	CTR_PID=
}
