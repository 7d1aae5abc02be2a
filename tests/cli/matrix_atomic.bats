#!/usr/bin/env bats
# A matrix is atomic per image (issue 41 item 5, docs/matrix.md): an image
# that fails leaves its previous outputs (tree, manifest, Packer inputs,
# lock) as they were, its failure never marks another image, and an
# up-to-date matrix built again with -q completes.
load helpers
load ../lib/servers
load ../lib/demomirror

setup_file() {
	demo_mirror_setup_file
}

teardown_file() {
	stop_servers
}

R="$WB_SRC/recipes"

wbd() {
	local cmd="$1"
	shift
	run "$WINBUILD" "$cmd" "${DEMO_ARGS[@]}" "$@"
}
setup() {
	common_setup
	DEMO_ARGS=(-O "$WB_SRC/overrides/demo.yaml" --set vars.demo_mirror="$MX_MIRROR"
		   --set keys.demo.key="$MX_KEY" --set vars.demo_rekor="$MX_REKOR"
		   --set vars.demo_sigstore_root="$DEMO_DIR/keys/sigstore/root.json" --no-progress)
}

# a digest of everything an image NAME left: its out dir (tree, manifest,
# packer) and its lock
outputs_hash() {
	local n="$1"
	{ (cd "out/$n" 2>/dev/null && find . -path ./.lock -prune -o -print0 | LC_ALL=C sort -z |
		xargs -0 -r sh -c 'for f; do if [ -f "$f" ]; then printf "%s " "$f"; sha256sum <"$f"; else echo "$f"; fi; done' _)
	  sha256sum <"$n.lock" 2>/dev/null; } | sha256sum
}

@test "build A B -q of an up-to-date matrix: both up to date, exit 0 (was SIGSEGV)" {
	wbd build "$R/windows-2022-containerd.yaml" "$R/windows-2019-containerd.yaml" -o out
	assert_status 0
	wbd build "$R/windows-2022-containerd.yaml" "$R/windows-2019-containerd.yaml" -o out -q
	assert_status 0
	[ -f out/windows-2022-containerd/packer/windows-2022-containerd.pkr.hcl ]
	[ -f out/windows-2019-containerd/packer/windows-2019-containerd.pkr.hcl ]
}

@test "an image failing at emit keeps its previous tree, manifest, Packer inputs and lock; the other image is new" {
	mkdir m
	cat >m/matrix.yaml <<-'EOF'
		kind: matrix
		recipes: [windows-2022-containerd]
		variations:
		  - name: v
		    set: {images.pause.enabled: false, node.pause_image: example.invalid/pause:1}
		builders: [qemu, azure-arm]
	EOF
	wbd build --matrix m/matrix.yaml -o out
	assert_status 0
	ok=windows-2022-containerd-v-qemu bad=windows-2022-containerd-v-azure-arm
	[ -f "out/$bad/packer/$bad.pkr.hcl" ] && [ -f "$bad.lock" ]
	# each image is narrowed to its own builder (o41-matrix-builders-dropped)
	[ "$(grep '^source ' "out/$ok/packer/$ok.pkr.hcl")" = 'source "qemu" "node" {' ]
	[ "$(grep '^source ' "out/$bad/packer/$bad.pkr.hcl")" = 'source "azure-arm" "node" {' ]
	# bad's lock as a person may have left it (the same pins, laid out
	# otherwise): its failure must give back these bytes, not the lock its
	# stage rewrote (o41-pm-lock-not-restored)
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); json.dump(d, open(sys.argv[1], "w"), indent=7)' "$bad.lock"
	before_bad=$(outputs_hash "$bad") before_ok=$(outputs_hash "$ok")
	# both restage (their variation changed); once staged, a file of bad's
	# new tree changes, so its emit (an archive builder: the payload is
	# checked against the manifest) fails, exit 1
	sed -i 's/pause:1}/pause:2}/' m/matrix.yaml
	WINBUILD_TEST_RUN_AT="done:f=out/$bad/tree/k/kubelet.exe; [ ! -f \"\$f\" ] || printf X >>\"\$f\"" \
		wbd build --matrix m/matrix.yaml -o out
	assert_status 1
	assert_output_has "image '$bad' (windows-2022-containerd, m/matrix.yaml:2:11) not built: its Packer inputs could not be written"
	assert_output_lacks "image '$ok' ("
	[ "$(outputs_hash "$bad")" = "$before_bad" ]
	[ "$(outputs_hash "$ok")" != "$before_ok" ]
	grep -q 'example.invalid/pause:2' "out/$ok/tree/Program Files/containerd/config.toml"
	grep -q 'example.invalid/pause:1' "out/$bad/tree/Program Files/containerd/config.toml"
	# nothing of the kept copy left behind
	[ -z "$(ls -A out | grep prev)" ]
}

# the blobs (configs, layers) the tag TAG of the demo's pause reaches,
# for Windows builds starting with BUILD (all when empty)
pause_blobs() {
	python3 - "$DEMO_DIR/mirror/registry.k8s.io/v2/pause/manifests" "$1" "${2:-}" <<-'PY'
		import json, os, sys
		d, tag, build = sys.argv[1], sys.argv[2], sys.argv[3]
		lst = json.load(open(os.path.join(d, tag)))
		for m in lst.get("manifests", [lst]):
		    if not m.get("platform", {}).get("os.version", "").startswith(build):
		        continue
		    man = json.load(open(os.path.join(d, m["digest"]))) if "digest" in m else m
		    for b in [man["config"]] + man["layers"]:
		        print(b["digest"])
	PY
}

teardown() {
	[ -z "${TAMPERED:-}" ] || mv -f "$TAMPERED.orig" "$TAMPERED"
}

@test "one image's container image failing verification marks that image only" {
	# the 2025 recipe pins pause 3.10.2, 2019 and 2022 pin 3.10: tamper a
	# layer only 3.10.2 has (put back by teardown: the demo is the file's)
	local blob
	blob=$(comm -23 <(pause_blobs 3.10.2 10.0.26100 | sort -u) <(pause_blobs 3.10 | sort -u) | head -n1)
	[ -n "$blob" ]
	TAMPERED="$DEMO_DIR/mirror/registry.k8s.io/v2/pause/blobs/$blob"
	cp -p "$TAMPERED" "$TAMPERED.orig"
	printf 'X' | dd of="$TAMPERED" bs=1 seek=100 conv=notrunc status=none
	wbd build "$R/windows-2022-containerd.yaml" "$R/windows-2025-containerd.yaml" "$R/windows-2019-containerd.yaml" -o out
	assert_status 1
	assert_output_has "image 'windows-2025-containerd' (${R}/windows-2025-containerd.yaml) not built"
	assert_output_lacks "image 'windows-2022-containerd' ("
	assert_output_lacks "image 'windows-2019-containerd' ("
	for n in windows-2022-containerd windows-2019-containerd; do
		[ -f "out/$n/manifest.json" ] && [ -f "out/$n/packer/$n.pkr.hcl" ] && [ -f "$n.lock" ]
		assert_output_has "$(printf '%-32s %-9s %-24s %-9s' "$n" 10 "28 files" packer)"
	done
	[ ! -e windows-2025-containerd.lock ]
}
