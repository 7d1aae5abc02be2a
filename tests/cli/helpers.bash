# Shared setup for bats CLI tests. Load with: load helpers
# Every test gets its own work dir ($WORK) and cache ($WINBUILD_CACHE).

: "${WINBUILD:=$BATS_TEST_DIRNAME/../../winbuild}"
: "${WB_SRC:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"

common_setup() {
	WORK="$BATS_TEST_TMPDIR/work"
	mkdir -p "$WORK"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache"
	export NO_COLOR=1
	unset WINBUILD_SET
	cd "$WORK"
}

setup() {
	common_setup
}

# wb ARGS... : run winbuild, capturing $status and $output (stderr merged)
wb() {
	run "$WINBUILD" "$@"
}

# assert_status N
assert_status() {
	if [ "$status" -ne "$1" ]; then
		echo "expected exit $1, got $status; output:" >&2
		echo "$output" >&2
		return 1
	fi
}

# assert_output_has TEXT: the output contains TEXT (fixed string)
assert_output_has() {
	if ! grep -qF -- "$1" <<<"$output"; then
		echo "output does not contain: $1" >&2
		echo "output was:" >&2
		echo "$output" >&2
		return 1
	fi
}

# assert_output_lacks TEXT
assert_output_lacks() {
	if grep -qF -- "$1" <<<"$output"; then
		echo "output unexpectedly contains: $1" >&2
		echo "$output" >&2
		return 1
	fi
}

# need_dep CONDITION_CMD... -- MESSAGE: a test that needs a dependency
# `make deps` installs. Outside CI a missing one skips the test; in CI
# (CI=true) it fails, so a broken install can never pass as a skip.
need_dep() {
	local msg="${*: -1}"
	local cmd=("${@:1:$#-2}")
	if ! "${cmd[@]}" >/dev/null 2>&1; then
		if [ "${CI:-}" = true ]; then
			echo "missing dependency in CI: $msg" >&2
			return 1
		fi
		skip "$msg"
	fi
}
