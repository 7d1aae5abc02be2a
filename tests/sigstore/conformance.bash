# Helpers for tests/cli/sigstore_conformance.bats (load ../sigstore/conformance).
# SIGSTORE_VECTORS: the vectors (default tests/vectors/sigstore in the repo).
: "${SIGSTORE_VECTORS:=$WB_SRC/tests/vectors/sigstore}"

# conformance_field CASE FIELD: one field of CASE in cases.json ("" for null)
conformance_field() {
	jq -r --arg c "$1" --arg f "$2" \
		'.[] | select(.case == $c) | .[$f] // ""' "$SIGSTORE_VECTORS/cases.json"
}

# conformance_case CASE: run `winbuild sig sigstore` on CASE as the
# conformance suite would (--key when the case has a key, else the identity
# and issuer) and check its expected outcome. Failures name the case.
conformance_case() {
	local c=$1 expect key args=()
	local v=$SIGSTORE_VECTORS
	expect=$(conformance_field "$c" expect)
	[ -n "$expect" ] || { echo "case '$c' is not in cases.json" >&2; return 1; }
	key=$(conformance_field "$c" key)
	args=(sig sigstore "$v/$(conformance_field "$c" artifact)"
	      --trusted-root "$v/$(conformance_field "$c" trusted_root)"
	      --bundle "$v/$(conformance_field "$c" bundle)")
	if [ -n "$key" ]; then
		args+=(--key "$v/$key")
	else
		args+=(--identity "$(conformance_field "$c" identity)"
		       --issuer "$(conformance_field "$c" issuer)")
	fi
	run "$WINBUILD" "${args[@]}"
	case "$expect" in
	pass)
		if [ "$status" -ne 0 ]; then
			echo "case '$c' must verify; exit $status:" >&2
			echo "$output" >&2
			return 1
		fi
		grep -qF "Sigstore signature verified" <<<"$output" || {
			echo "case '$c': no verification report: $output" >&2; return 1; }
		;;
	fail)
		if [ "$status" -ne 1 ] && [ "$status" -ne 2 ]; then
			echo "case '$c' must be rejected (exit 1 or 2); exit $status:" >&2
			echo "$output" >&2
			return 1
		fi
		# a verdict, not a usage error: the message names the artifact
		# (or the trusted root that could not be used) and says why
		grep -qF -e "winbuild: '$v/$(conformance_field "$c" artifact)': " \
			-e "winbuild: trusted root '$v/" <<<"$output" || {
			echo "case '$c': not rejected by the verifier: $output" >&2; return 1; }
		! grep -q '^usage:' <<<"$output" || {
			echo "case '$c': rejected as a usage error: $output" >&2; return 1; }
		;;
	*)
		echo "case '$c': unknown expectation '$expect'" >&2
		return 1
		;;
	esac
	echo "case '$c': exit $status: $output"
}

# conformance_listed BATSFILE: the file tests exactly the cases of cases.json
conformance_listed() {
	diff <(jq -r '.[].case' "$SIGSTORE_VECTORS/cases.json" | sort) \
	     <(sed -n 's/^\tconformance_case "\(.*\)"$/\1/p' "$1" | sort)
	[ "$(jq length "$SIGSTORE_VECTORS/cases.json")" -eq 70 ]
}
