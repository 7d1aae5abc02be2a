# Fixtures for fetch.bats / lock.bats / cache.bats: artifacts, minisign keys
# and signatures, checksum files, all made at test time; recipe writers.
# Needs tests/lib/servers.bash loaded.

# make_fixtures DIR: fill DIR/www and DIR/keys. Exports WWW, KEYS, CA,
# PUB_A PUB_B (base64 public keys), PUB_WRONG (key id of A, key bytes of B).
make_fixtures() {
	local d="$1"
	WWW="$d/www" KEYS="$d/keys" CA="$d/ca"
	mkdir -p "$WWW" "$KEYS"
	minisign -G -W -p "$KEYS/a.pub" -s "$KEYS/a.key" </dev/null >/dev/null
	minisign -G -W -p "$KEYS/b.pub" -s "$KEYS/b.key" </dev/null >/dev/null
	PUB_A=$(tail -n1 "$KEYS/a.pub")
	PUB_B=$(tail -n1 "$KEYS/b.pub")
	PUB_WRONG=$(python3 -c 'import base64,sys
a=base64.b64decode(sys.argv[1]); b=base64.b64decode(sys.argv[2])
print(base64.b64encode(a[:10]+b[10:]).decode())' "$PUB_A" "$PUB_B")
	for f in a b c e f g l t u v w; do
		head -c 150000 /dev/urandom >"$WWW/$f.bin"
	done
	head -c 4000000 /dev/urandom >"$WWW/big.bin"
	head -c 3000000 /dev/urandom >"$WWW/big2.bin"
	(cd "$WWW" && sha256sum a.bin b.bin >SHA256SUMS && sha256sum a.bin >a.bin.sha256 &&
		sha256sum u.bin | cut -d' ' -f1 >u.bin.sha256)
	sign() { minisign -S -s "$KEYS/$1.key" -m "$WWW/$2" "${@:3}" </dev/null >/dev/null; }
	sign a a.bin
	sign a b.bin
	sign a c.bin -t "$(printf 'timestamp:1\tfile:other.bin\thashed')"
	sign a e.bin
	sed -i '3s/hashed$/hashed edited/' "$WWW/e.bin.minisig"
	sign a f.bin
	sed -i 's/$/\r/' "$WWW/f.bin.minisig"
	sign b g.bin
	sign a l.bin -l
	sign a big.bin
	sign a big2.bin
	# t.bin: pinned digest of the original, then one byte changed
	T_SHA=$(sha256sum "$WWW/t.bin" | cut -d' ' -f1)
	printf 'X' | dd of="$WWW/t.bin" bs=1 seek=1000 conv=notrunc 2>/dev/null
	export WWW KEYS CA PUB_A PUB_B PUB_WRONG T_SHA
}

# start_fetch_servers: fixtures in $BATS_FILE_TMPDIR, the test CA, nginx
# (HTTP + HTTPS) and faultd over them, short retry backoff. For setup_file.
start_fetch_servers() {
	make_fixtures "$BATS_FILE_TMPDIR"
	make_test_ca "$CA"
	start_nginx "$WWW" "$CA"
	start_faultd "$WWW"
	export WINBUILD_RETRY_BACKOFF_MS=20
}

sha_of() { sha256sum "$WWW/$1" | cut -d' ' -f1; }

# art NAME URL VERIFY_LINES...: one artifact (verify lines are YAML at
# the verify: level, e.g. "sha256: abc" or "minisign: {keys: [{key: RW..}]}")
art() {
	local name="$1" url="$2"
	shift 2
	printf '  %s:\n    url: %s\n    verify:\n' "$name" "$url"
	for v in "$@"; do printf '      %s\n' "$v"; done
	printf '    install:\n      to: C:/k/%s\n' "$name"
}

# recipe < ARTIFACTS: writes $WORK/components/demo.yaml and $WORK/img.yaml
recipe() {
	mkdir -p "$WORK/components"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n'
		cat
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  demo: {}\n' \
		>"$WORK/img.yaml"
}

H() { echo "http://127.0.0.1:$NGINX_PORT"; }
F() { echo "http://127.0.0.1:$FAULTD_PORT"; }

# nginx_requests PATH: how many requests the nginx log holds for PATH
nginx_requests() { grep -c "\"GET $1 " "$NGINX_LOG" || true; }

cache_files() { find "$WINBUILD_CACHE/sha256" -type f 2>/dev/null | wc -l; }
tmp_files() { find "$WINBUILD_CACHE/tmp" -type f 2>/dev/null | wc -l; }

# wait_for CMD...: until CMD succeeds (at most 30 s)
wait_for() {
	for _ in $(seq 1 300); do
		"$@" && return 0
		sleep 0.1
	done
	echo "timed out waiting for: $*" >&2
	return 1
}

# bg LOG ARGS...: winbuild ARGS in the background, output to LOG; $! is its
# pid, also appended to PIDS (for a teardown that stops what is left)
bg() {
	local log="$1"
	shift
	"$WINBUILD" "$@" >"$log" 2>&1 3>&- &
	PIDS+=("$!")
}

# bg_tty LOG ARGS...: the same with stderr on a terminal (script(1)), so the
# progress display is drawn
bg_tty() {
	local log="$1" cmd
	shift
	cmd=$(printf '%q ' "$WINBUILD" "$@")
	script -qefc "$cmd" "$log" >/dev/null 2>&1 </dev/null 3>&- &
	PIDS+=("$!")
}

# stop_bg: stop and reap what bg and bg_tty started and is still running
stop_bg() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
