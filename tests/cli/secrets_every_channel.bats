#!/usr/bin/env bats
# Issue 41 item 3, the enumerating test: secrets planted in every place a
# user gives one (a URL's userinfo password, a signed query, a query
# credential, netrc, the credentials file's basic and bearer secrets, the
# environment's WINBUILD_SET) and every command `winbuild --help` lists,
# run with every output option its own help names (--json, --explain, -v),
# against real servers (tests/creds/servers.bash). Then every channel is
# grepped: stdout, stderr, and every file the run wrote (out/: tree,
# manifest, SBOM, Packer inputs, the payload unzipped; the lock; the
# cache's refs and records; a mirror's index). A command added to winbuild
# is in --help, so it is covered without editing this file.
load helpers
load ../lib/servers
load ../creds/servers

setup_file() {
	W="$BATS_FILE_TMPDIR/www" CA="$BATS_FILE_TMPDIR/ca"
	mkdir -p "$W"
	for f in a b c d e; do head -c 70000 /dev/urandom >"$W/$f.bin"; done
	make_test_ca "$CA"
	start_creds_servers "$W" "$CA"
	export W CA WINBUILD_RETRY_BACKOFF_MS=20
}

teardown_file() { stop_servers; }

setup() {
	common_setup
	unset NETRC WINBUILD_CREDENTIALS WINBUILD_REDACT_PARAMS
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/xdg"
}

sha_of() { sha256sum "$W/$1" | cut -d' ' -f1; }

# the recipe: a from the SAS server (its signed URL given with --set), b
# from the basic server (netrc), c from the bearer server (the credentials
# file), d from the recorder with a userinfo password in its --set URL, e
# from the SAS server by a query credential
plant() {
	mkdir -p components
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n'
		for f in a b c d e; do
			printf '  %s:\n    url: https://localhost:1/%s.bin\n    verify:\n      sha256: %s\n    install:\n      to: C:/k/%s\n' \
				"$f" "$f" "$(sha_of "$f.bin")" "$f"
		done
	} >components/demo.yaml
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: %s}\ncomponents:\n  demo: {}\n' \
		"$TEST_ISO_SHA256" >img.yaml
	printf 'machine localhost login %s password %s\n' "$BASIC_USER" "$BASIC_PASS" >nrc
	printf '[tok]\nurl = %s/\ntype = bearer\ntoken = %s\n[blobq]\nurl = %s/q/\ntype = query\nquery = sig=%s&code=QueryCodePlanted41\n' \
		"$BEARER_URL" "$BEARER_TOKEN" "$SAS_URL" "$SAS_SIG" >cr
	chmod 600 nrc cr
	SETS=(--set "components.demo.artifacts.a.url=$SAS_URL/a.bin?se=2030&sig=$SAS_SIG"
	      --set "components.demo.artifacts.b.url=$BASIC_URL/b.bin"
	      --set "components.demo.artifacts.c.url=$BEARER_URL/c.bin"
	      --set "components.demo.artifacts.d.url=https://u:UserinfoPassPlanted41@${REC_URL#https://}/d.bin")
	export WINBUILD_SET="components.demo.artifacts.e.url=$SAS_URL/e.bin?sig=$SAS_SIG&token=EnvTokenPlanted41"
	SECRETS=("$SAS_SIG" "$BASIC_PASS" "$BEARER_TOKEN" UserinfoPassPlanted41 QueryCodePlanted41
		 EnvTokenPlanted41)
}

# argv_for CMD: the arguments a command is run with; a command this table
# does not know gets the recipe, as most take it
argv_for() {
	case "$1" in
	help) echo "help build" ;;
	version) echo "version" ;;
	verify) echo "verify out/t" ;;
	mirror) echo "mirror img.yaml mir" ;;
	list) echo "list recipes" ;;
	cache) echo "cache ls" ;;
	image) echo "image pull localhost:1/x@sha256:$(printf '%064d' 0) --windows 2022" ;;
	sig) echo "sig verify -P RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3 -m img.yaml" ;;
	*) echo "$1 img.yaml" ;;
	esac
}

# opts_for CMD: every option of ours that CMD's own help names
opts_for() {
	local h o
	h=$("$WINBUILD" help "$1" 2>&1)
	for o in --cacert --credentials --netrc-file --no-progress --builder --set; do
		[[ "$h" == *"$o"* ]] || continue
		case "$o" in
		--cacert) printf '%s\n' --cacert "$CA/ca.crt" ;;
		--credentials) printf '%s\n' --credentials cr ;;
		--netrc-file) printf '%s\n' --netrc-file nrc ;;
		--builder) printf '%s\n' --builder azure-arm ;;
		--set) printf '%s\n' "${SETS[@]}" ;;
		*) printf '%s\n' "$o" ;;
		esac
	done
}

# grep_channels WHAT: no planted secret in stdout, stderr or any file
# under the work directory (the payload zips unpacked first) or the cache
grep_channels() {
	local s f
	rm -rf unz
	find . -name '*.zip' -not -path './unz/*' | while read -r z; do
		mkdir -p "unz/$z" && bsdtar -xf "$z" -C "unz/$z" 2>/dev/null || true
	done
	for s in "${SECRETS[@]}"; do
		for f in stdout stderr; do
			if grep -aqF -- "$s" "$BATS_TEST_TMPDIR/$f"; then
				echo "$1: a planted secret (${s:0:6}...) on $f:" >&2
				grep -aF -- "$s" "$BATS_TEST_TMPDIR/$f" >&2
				return 1
			fi
		done
		if grep -rlaF --exclude=nrc --exclude=cr -- "$s" . "$WINBUILD_CACHE" 2>/dev/null; then
			echo "$1: a planted secret (${s:0:6}...) in the file(s) above" >&2
			return 1
		fi
	done
}

@test "secrets: every command of --help, every output option it has: no planted secret on stdout, stderr or in any file written" {
	plant
	local cmds=() c mode extra n=0
	mapfile -t cmds < <("$WINBUILD" --help 2>&1 | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
	[ "${#cmds[@]}" -ge 14 ]
	# the pipeline commands first, so verify, mirror and cache see outputs
	for c in build lock "${cmds[@]}"; do
		h=$("$WINBUILD" help "$c" 2>&1)
		for mode in "" --json --explain -v; do
			[ -z "$mode" ] || [[ "$h" == *"$mode"* ]] || continue
			read -ra argv <<<"$(argv_for "$c")"
			mapfile -t extra < <(opts_for "$c")
			"$WINBUILD" "${argv[@]}" "${extra[@]}" $mode \
				>"$BATS_TEST_TMPDIR/stdout" 2>"$BATS_TEST_TMPDIR/stderr" || true
			grep_channels "winbuild ${argv[*]} $mode"
			n=$((n + 1))
		done
	done
	# the run did what it should: the build fetched through every credential
	[ -f out/t/manifest.json ] && [ -f t.lock ]
	grep -q "GET /b.bin HTTP/1.1\" 200 auth=\"Basic " "$CREDS_LOGS/basic.log"
	grep -q "GET /c.bin HTTP/1.1\" 200 auth=\"Bearer " "$CREDS_LOGS/bearer.log"
	grep -q "GET /a.bin?se=2030&sig=$SAS_SIG HTTP/1.1\" 200" "$CREDS_LOGS/sas.log"
	echo "$n runs" >&3
	[ "$n" -ge 30 ]
}
