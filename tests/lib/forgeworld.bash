# The private Sigstore world of tests/sigstore/forge.py, shared by the bats
# files that verify against it (load ../lib/forgeworld).

# forge_world: mint the world into $BATS_FILE_TMPDIR/w (from setup_file);
# nothing when python3-cryptography is missing (forge_setup skips then)
forge_world() {
	python3 -c 'import cryptography' 2>/dev/null || return 0
	python3 "$WB_SRC/tests/sigstore/forge.py" "$BATS_FILE_TMPDIR/w" >/dev/null
}

# forge_setup: per test: common_setup, the dependency check, and W (the
# world), ID and ISS (the identity and OIDC issuer it signs as)
forge_setup() {
	common_setup
	need_dep python3 -c 'import cryptography' -- "python3-cryptography (make deps)"
	W="$BATS_FILE_TMPDIR/w"
	ID=$(cat "$W/identity")
	ISS=$(cat "$W/issuer")
}
