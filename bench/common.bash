# bench/common.bash: what bench/run (make bench) and bench/wan (make
# bench-wan) share: settings, the artifact set and its signatures, timing.
# Sourced; see bench/README.md.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WB=${WINBUILD:-$ROOT/winbuild}
REPS=${BENCH_REPS:-5}
JOBS=${BENCH_JOBS:-4}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/winbuild-bench}
DATA=$BENCH_DIR/data
GEN_VERSION=3${BENCH_GEN_SCALE:+/scale-$BENCH_GEN_SCALE}   # bump when gen.py or the signing changes: regenerates DATA

# servers.bash stops nginx after WB_SERVER_TIMEOUT seconds; a bench is longer
export WB_SERVER_TIMEOUT=${WB_SERVER_TIMEOUT:-7200}
# shellcheck source=../tests/lib/servers.bash
source "$ROOT/tests/lib/servers.bash"

say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }

# ---- data: artifacts, keys, signatures (deterministic, reused) -----------

# name | file | action (install/unpack/payload) | Windows destination | strip
ARTIFACTS=(
	"kubelet|kubelet.exe|install|C:/k/kubelet.exe|"
	"kubeadm|kubeadm.exe|install|C:/k/kubeadm.exe|"
	"kubectl|kubectl.exe|install|C:/k/kubectl.exe|"
	"kube-proxy|kube-proxy.exe|install|C:/k/kube-proxy.exe|"
	"crictl|crictl.exe|install|C:/k/crictl.exe|"
	"containerd|containerd-2.1.4-windows-amd64.tar.gz|unpack|C:/Program Files/containerd|1"
	"cni-plugins|cni-plugins-windows-amd64-v1.6.2.tgz|unpack|C:/opt/cni/bin|0"
	"cloudbase-init|CloudbaseInitSetup_1_1_6_x64.msi|payload|C:/ProgramData/winbuild/CloudbaseInitSetup_1_1_6_x64.msi|"
)

sign_all() {
	local f
	for f in "$@"; do
		minisign -S -s "$DATA/keys/bench.key" -m "$DATA/www/$f" </dev/null >/dev/null ||
			die "minisign -S failed for $f"
	done
}

make_data() {
	local files=() a
	if [ "$(cat "$DATA/.version" 2>/dev/null)" = "$GEN_VERSION" ]; then
		say "bench: reusing the artifact set in $DATA"
		return 0
	fi
	say "bench: generating the artifact set in $DATA (once; reused by later runs)"
	rm -rf "$DATA"
	mkdir -p "$DATA/www" "$DATA/keys"
	python3 "$ROOT/bench/gen.py" "$DATA/www"
	minisign -G -W -p "$DATA/keys/bench.pub" -s "$DATA/keys/bench.key" </dev/null >/dev/null
	for a in "${ARTIFACTS[@]}"; do
		IFS='|' read -r _ f _ _ _ <<<"$a"
		files+=("$f")
	done
	sign_all "${files[@]}"
	(cd "$DATA/www" && sha256sum "${files[@]}" >SHA256SUMS)
	echo "$GEN_VERSION" >"$DATA/.version"
}

# timed NAME CMD...: run CMD, append the wall seconds to $RUN_T/NAME; a
# winbuild run inside appends its peak RSS (KiB) to $RUN_T/NAME.rss
timed() {
	local name="$1" t0 t1
	shift
	RSS_OUT=$RUN_T/$name.rss
	t0=$EPOCHREALTIME
	"$@" || die "$name failed"
	t1=$EPOCHREALTIME
	echo "$t0 $t1" | awk '{ printf "%.4f\n", $2 - $1 }' >>"$RUN_T/$name"
}

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# component_extras COMP: what a bench component file declares beside its
# artifacts, as the shipped component does: containerd's and kubelet's
# directories, and the CNI directories containerd's config names
# (recipes/components/containerd.yaml); one place for bench/run and bench/wan
component_extras() {
	case "$1" in
	containerd)
		printf 'directories:\n  - C:/ProgramData/containerd\n  - C:/ProgramData/containerd/root\n'
		printf 'cni:\n  bin_dir: C:/opt/cni/bin\n  conf_dir: C:/etc/cni/net.d\n' ;;
	kubernetes)
		printf 'directories:\n  - C:/var/lib/kubelet\n  - C:/var/log/kubelet\n  - C:/etc/kubernetes/pki\n' ;;
	esac
}
