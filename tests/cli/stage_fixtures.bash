# Fixtures for stage.bats: archives from tests/lib/mkarchives.py served by
# nginx, an override that points every artifact of the shipped recipes at
# them, and a writer for one-artifact recipes. Needs tests/lib/servers.bash.

# make_stage_fixtures DIR: DIR/www/{good,hostile}; exports WWW
make_stage_fixtures() {
	WWW="$1/www"
	python3 "$WB_SRC/tests/lib/mkarchives.py" "$WWW" >/dev/null
	export WWW
}

# The shipped recipe the stage and build tests stage against fixtures, and
# one nginx per test file serving them.
RECIPE="$WB_SRC/recipes/windows-2022-containerd.yaml"
NAME=windows-2022-containerd

setup_file() {
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	start_nginx "$WWW"
}

teardown_file() {
	stop_servers
}

H() { echo "http://127.0.0.1:$NGINX_PORT"; }
# stage the shipped recipe over the fixtures (setup writes $WORK/fixtures.yaml
# with fixture_override); T: its staged tree
stage_shipped() { wb stage "$RECIPE" -O "$WORK/fixtures.yaml" --no-progress "$@"; }
T() { echo "$WORK/out/$NAME/tree"; }
sha_www() { sha256sum "$WWW/$1" | cut -d' ' -f1; }

# replace_entry ARTIFACT FILE: one replace: entry (URL + pinned digest)
replace_entry() {
	printf '  %s:\n    url: %s/good/%s\n    verify: {sha256: %s}\n' \
		"$1" "$(H)" "$2" "$(sha_www "good/$2")"
}

# fixture_override [CONTAINERD_TARBALL]: the override (on stdout) that
# replaces every artifact of recipes/windows-2022-containerd.yaml, and drops
# the shipped pause image (needs_pin, from registry.k8s.io: these tests are
# about the rest; make demo and tests/win/run pull it from a mirror)
fixture_override() {
	local ctd="${1:-containerd-2.1.4-windows-amd64.tar.gz}"
	echo "kind: override"
	echo "windows: {iso_sha256: $TEST_ISO_SHA256}"
	echo "images: {pause: {enabled: false}}"
	echo "replace:"
	replace_entry containerd "$ctd"
	replace_entry cni-plugins cni-plugins-windows-amd64-v1.7.1.tgz
	replace_entry windows-cni windows-container-networking-cni-amd64-v0.3.3.zip
	replace_entry crictl crictl-v1.33.0-windows-amd64.tar.gz
	replace_entry cloudbase-init CloudbaseInitSetup_1_1_6_x64.msi
	for b in kubelet kubeadm kube-proxy kubectl kube-log-runner; do
		replace_entry "$b" "$b.exe"
	done
}

# make_pause_mirror IDENTITY ISSUER: make demo's stand-in for the shipped
# pause image (tests/demo/pause.py: lists 3.10 and 3.10.2) as a static
# registry tree in $WWW/registry.k8s.io, both lists cosign-signed as
# IDENTITY from ISSUER in a Sigstore world of its own (forge.py --sign
# --image). Exports PAUSE_310 and PAUSE_3102 (the lists' digests),
# PAUSE_ROOT (the world's trusted root) and PAUSE_INCLUDE (the media types,
# for start_nginx's WB_NGINX_INCLUDE).
make_pause_mirror() {
	local t="$WWW/registry.k8s.io" w="$WWW/../pause-sig" d
	local -a p
	mapfile -t p < <(python3 "$WB_SRC/tests/demo/pause.py" tree "$t" /registry.k8s.io |
		python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin).values()))')
	mkdir -p "$w"
	echo "the world's first signed file" >"$w/world.txt"
	python3 "$WB_SRC/tests/sigstore/forge.py" --sign "$w" "$1" "$2" "$w/world.txt" \
		--image registry.k8s.io/pause "${p[@]}"
	for d in "${p[@]}"; do
		python3 "$WB_SRC/tests/demo/pause.py" sig "$t" /registry.k8s.io "$d" \
			"$w/imgsig/${d#sha256:}.json" >/dev/null
	done
	export PAUSE_310=${p[0]} PAUSE_3102=${p[1]} PAUSE_ROOT="$(cd "$w" && pwd)/root.json" \
		PAUSE_INCLUDE="$t/nginx-locations.conf"
}

# pause_override IDENTITY ISSUER [PINNED]: the override (on stdout) that
# pulls the shipped pause image from make_pause_mirror's tree (a mirror rule
# for registry.k8s.io) under that signer; PINNED=pin: its digests too, per
# Windows version (else it stays needs_pin, for lock --accept-new)
pause_override() {
	echo "kind: override"
	echo "mirrors:"
	echo "  - {from: \"https://registry.k8s.io/\", to: \"$(H)/registry.k8s.io/\"}"
	echo "images:"
	echo "  pause:"
	echo "    enabled: true"
	echo "    cosign: {identity: \"$1\", issuer: \"$2\", trusted_root: \"$PAUSE_ROOT\"}"
	[ "${3:-}" = pin ] || return 0
	echo "    digest: $PAUSE_310"
	echo "windows_versions:"
	echo "  \"2025\": {images: {pause: {digest: $PAUSE_3102}}}"
}

# one_archive FILE [UNPACK_EXTRA_YAML]: $WORK/img.yaml with one component
# "demo" whose artifact "hostile" unpacks hostile/FILE into C:\h
one_archive() {
	mkdir -p "$WORK/components"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n'
		printf '  hostile:\n    url: %s/hostile/%s\n' "$(H)" "$1"
		printf '    verify: {sha256: %s}\n' "$(sha_www "hostile/$1")"
		printf '    unpack:\n      into: C:\\h\n'
		[ -n "${2:-}" ] && printf '      %s\n' "$2"
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  demo: {}\n' \
		>"$WORK/img.yaml"
}

# two_archives A B: two artifacts unpacking hostile/A and hostile/B into C:\h
two_archives() {
	mkdir -p "$WORK/components"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n'
		for f in "$@"; do
			printf '  %s:\n    url: %s/hostile/%s\n' "${f%.tgz}" "$(H)" "$f"
			printf '    verify: {sha256: %s}\n' "$(sha_www "hostile/$f")"
			printf '    unpack:\n      into: C:\\h\n'
		done
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  demo: {}\n' \
		>"$WORK/img.yaml"
}

# fixture_setup: a test's setup with $WORK/fixtures.yaml (fixture_override)
# and SOURCE_DATE_EPOCH fixed
fixture_setup() {
	common_setup
	fixture_override >"$WORK/fixtures.yaml"
	export SOURCE_DATE_EPOCH=1700000000
}

# demo_component_plan TAIL: plan $WORK/img.yaml, image t with component demo
# ($WORK/components/demo.yaml): one artifact installing kubectl.exe as
# C:\k\a.exe, then TAIL (YAML of more component keys) verbatim
demo_component_plan() {
	mkdir -p "$WORK/components"
	printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n  a:\n    url: %s/good/kubectl.exe\n    verify: {sha256: %s}\n    install: {to: '"'"'C:\\k\\a.exe'"'"'}\n%s' \
		"$(H)" "$(sha_www good/kubectl.exe)" "$1" >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows: {version: "2022", iso_sha256: %s}\ncomponents:\n  demo: {}\n' \
		"$TEST_ISO_SHA256" >"$WORK/img.yaml"
	wb plan "$WORK/img.yaml"
}
