# Shared setup for bats CLI tests. Load with: load helpers
# Every test gets its own work dir ($WORK) and cache ($WINBUILD_CACHE).

: "${WINBUILD:=$BATS_TEST_DIRNAME/../../winbuild}"
: "${WB_SRC:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
# exported: the scripts a test starts (tests/win/run, bench/run, the
# fixture writers) find the tree and the binary the same way when a file
# runs alone (`bats tests/cli/X.bats`, README's "Tests")
export WINBUILD WB_SRC
# A stand-in Windows ISO digest (sha256 of "winbuild test iso") for recipes
# whose Packer builders install from an ISO: windows.iso_sha256 is required.
TEST_ISO_SHA256=eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12

common_setup() {
	WORK="$BATS_TEST_TMPDIR/work"
	mkdir -p "$WORK"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache"
	export NO_COLOR=1
	unset WINBUILD_SET
	# the container auth files winbuild reads (docker login, podman
	# login): this test's own, never the machine's
	export DOCKER_CONFIG="$BATS_TEST_TMPDIR/docker-config"
	unset REGISTRY_AUTH_FILE XDG_RUNTIME_DIR
	cd "$WORK"
}

setup() {
	common_setup
}

# packer_setup [secrets] [staged]: Packer's own state in this test's dir (no
# checkpoint call; its cache, config and HOME there) and no PKR_VAR_ secret
# from the caller's environment. secrets: the dummy secrets a user passes as
# PKR_VAR_ variables (the var file never holds them). staged: emit over
# make-staged.py trees, which hold no pause image (the shipped one is
# needs_pin) and stand in for the ISO by TEST_ISO_SHA256.
packer_setup() {
	export CHECKPOINT_DISABLE=1 PACKER_CACHE_DIR="$BATS_TEST_TMPDIR/packer_cache"
	export PACKER_CONFIG_DIR="$BATS_TEST_TMPDIR/packer_config" HOME="$BATS_TEST_TMPDIR"
	unset PKR_VAR_winrm_password PKR_VAR_vsphere_password PKR_VAR_azure_client_secret PKR_VAR_oci_winrm_password
	local w
	for w in "$@"; do
		case $w in
		secrets) export PKR_VAR_winrm_password=secret PKR_VAR_vsphere_password=secret \
			PKR_VAR_azure_client_secret=secret ;;
		staged) export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256;images.pause.enabled=false" ;;
		*) echo "packer_setup: unknown word '$w'" >&2; return 2 ;;
		esac
	done
}

# wb ARGS... : run winbuild, capturing $status and $output (stderr merged)
wb() {
	run "$WINBUILD" "$@"
}

# need_pwsh: the engine tier's PowerShell 7.6 (make deps) is there, or the
# test is skipped, except under CI=true, where its absence fails the test
need_pwsh() {
	command -v pwsh >/dev/null 2>&1 && return 0
	[ "${CI:-}" = true ] && { echo "pwsh missing under CI=true" >&2; return 1; }
	skip "pwsh not found (PowerShell 7.6, make deps with the .NET SDK)"
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

# need_ps_node: node and the npm modules of tests/ps (the PowerShell
# parser and the 5.1 lint); with node but without the modules the test
# skips saying so, instead of failing on "Cannot find module"
need_ps_node() {
	need_dep node -e 1 -- "node not installed (make deps)"
	need_dep test -d "$WB_SRC/tests/ps/node_modules/web-tree-sitter" -- \
		"the npm modules of tests/ps are missing (make deps: npm ci in tests/ps)"
}

# iso_password PACKER_DIR: the one-off Administrator password of that emit
iso_password() {
	sed -n 's/^iso_admin_password = "\(.*\)"$/\1/p' "$1/iso-admin.auto.pkrvars.hcl"
}

# mask_iso_password PACKER_DIR: replace the emit's one-off Administrator
# password (the only bytes that differ between two emits of the same inputs)
# with a fixed word, after checking it is a fresh 28-character one and that
# it sits in exactly the var file and the answer files.
mask_iso_password() {
	local pw f
	pw=$(iso_password "$1")
	[[ "$pw" =~ ^[A-Za-z0-9]{24}Aa1-$ ]] || { echo "no one-off password in $1" >&2; return 1; }
	for f in $(grep -rlF -- "$pw" "$1" | sort); do
		case "${f#"$1"/}" in
		iso-admin.auto.pkrvars.hcl | answer/bios/Autounattend.xml | answer/uefi/Autounattend.xml) ;;
		*) echo "the one-off password is also in $f" >&2; return 1 ;;
		esac
		sed -i "s/$pw/ONE-OFF-PASSWORD/g" "$f"
	done
}

# flip_byte FILE OFFSET: invert the byte at OFFSET in place. Always a
# change, whatever the byte was (writing a fixed 'X' into random fixture
# bytes changed nothing once in 256 runs: airgap.bats failed so in CI).
flip_byte() {
	python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    o = int(sys.argv[2]); f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 0xff]))' "$1" "$2"
}
