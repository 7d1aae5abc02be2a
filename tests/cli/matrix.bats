#!/usr/bin/env bats
# The image matrix (docs/matrix.md, issue 30): build several recipes (or a
# matrix file) in one run against the demo mirror (tests/demo/run makes it
# once for the file; nginx and the fake Rekor serve it): one request per
# distinct file however many images use it, one lock per image, the table,
# one --json result with an entry per image, and an image that fails
# leaving the others complete.
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
SHIPPED=("$R/windows-2019-containerd.yaml" "$R/windows-2022-containerd.yaml"
	 "$R/windows-2025-containerd.yaml")

# winbuild CMD ARGS... with the demo override and its values
wbd() {
	local cmd="$1"
	shift
	run "$WINBUILD" "$cmd" "${DEMO_ARGS[@]}" "$@"
}
demo_args() {
	DEMO_ARGS=(-O "$WB_SRC/overrides/demo.yaml" --set vars.demo_mirror="$MX_MIRROR"
		   --set keys.demo.key="$MX_KEY" --set vars.demo_rekor="$MX_REKOR"
		   --set vars.demo_sigstore_root="$DEMO_DIR/keys/sigstore/root.json" --no-progress)
}
setup() {
	common_setup
	demo_args
}

# the mirror's requests so far: "GET /path" lines, the artifacts' (the
# pause image's registry tree apart: regreq)
requests() { grep -o '"[A-Z][A-Z]* /[^ ]*' "$NGINX_LOG" | tr -d '"' | grep -v ' /registry.k8s.io/'; }
regreq() { grep -o '"[A-Z][A-Z]* /registry.k8s.io/[^ ]*' "$NGINX_LOG" | tr -d '"'; }

@test "build of the three shipped images: one request per file, a lock, a stage and Packer inputs each, the table" {
	: >"$NGINX_LOG"
	wbd build "${SHIPPED[@]}" -o out
	assert_status 0
	for n in 2019 2022 2025; do
		name=windows-$n-containerd
		[ -f "out/$name/manifest.json" ] && [ -f "out/$name/tree/k/kubelet.exe" ]
		[ -f "out/$name/packer/$name.pkr.hcl" ]
		# its own lock, made for it, with every artifact
		python3 - "$name.lock" "$name" <<-'PY'
			import json, sys
			l = json.load(open(sys.argv[1]))
			assert l["recipe"] == sys.argv[2], l.get("recipe")
			assert len(l["artifacts"]) == 10, len(l["artifacts"])
		PY
		assert_output_has "$(printf '%-32s %-9s %-24s %-9s' "$name" 10 "28 files" packer)"
	done
	assert_output_has "3 images, 10 distinct artifacts: 10 downloaded, 0 from the cache"
	# every file of the union once: no path twice
	all=$(requests | wc -l)
	uniq=$(requests | sort -u | wc -l)
	[ "$all" -eq "$uniq" ] || { requests | sort | uniq -d; false; }
	# the pause image (3.10 for 2019 and 2022, 3.10.2 for 2025): each
	# manifest and blob once, and its signature manifest, looked up by its
	# tag (sha256-<hex>.sig), once per pin in the run, not once per image
	# that pins it (issue 44: the seam's memo, fetch/imgsource.c); two pins
	[ -z "$(regreq | sort | uniq -d)" ]
	[ "$(regreq | grep -c "/manifests/sha256-.*\.sig$")" = 2 ]
	# and exactly what one image alone asks for
	: >"$NGINX_LOG"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache1"
	wbd build "$R/windows-2022-containerd.yaml" -o out1
	assert_status 0
	[ "$(requests | sort | md5sum)" = "$(requests | sort -u | md5sum)" ]
	[ "$(requests | wc -l)" -eq "$all" ]
}

@test "build --json of several images: one result with an entry per image" {
	"$WINBUILD" build "${DEMO_ARGS[@]}" "${SHIPPED[@]}" -o out --json >r.json
	python3 - <<-PY
		import json
		r = json.load(open("r.json"))
		assert r["ok"] and r["exit"] == 0 and r["command"] == "build", r
		assert r["distinct_artifacts"] == 10 and r["downloaded"] == 10, r
		names = [i["image"] for i in r["images"]]
		assert names == ["windows-%s-containerd" % v for v in ("2019", "2022", "2025")], names
		for i in r["images"]:
		    assert i["ok"] and i["exit"] == 0 and i["errors"] == [], i
		    assert len(i["artifacts"]) == 10 and all(a["ok"] for a in i["artifacts"]), i
		    assert i["lock"] == i["image"] + ".lock", i
		    assert i["packer"]["template"].endswith(i["image"] + ".pkr.hcl"), i
		    assert i["files"] == 28 and i["up_to_date"] is False, i
	PY
	# the second run: nothing changed, nothing fetched
	: >"$NGINX_LOG"
	wbd build "${SHIPPED[@]}" -o out
	assert_status 0
	assert_output_has "up to date: out/windows-2025-containerd/tree"
	[ "$(requests | wc -l)" -eq 0 ]
}

@test "a matrix file: recipes x variations, each image named, sets per variation" {
	mkdir m
	cat >m/matrix.yaml <<-EOF
		kind: matrix
		recipes:
		  - $R/windows-2022-containerd.yaml
		  - windows-2025-containerd
		variations:
		  - name: a
		  - name: b
		    set:
		      images.pause.enabled: false
		      node.pause_image: example.invalid/pause:42
	EOF
	: >"$NGINX_LOG"
	wbd stage --matrix m/matrix.yaml -o out
	assert_status 0
	for n in windows-2022-containerd-a windows-2022-containerd-b windows-2025-containerd-a \
		 windows-2025-containerd-b; do
		[ -f "out/$n/manifest.json" ] && [ -f "$n.lock" ]
	done
	# the variation's value reached its images only
	grep -q 'example.invalid/pause:42' "out/windows-2022-containerd-b/tree/Program Files/containerd/config.toml"
	grep -q 'example.invalid/pause:42' "out/windows-2025-containerd-b/tree/Program Files/containerd/config.toml"
	! grep -q 'example.invalid/pause:42' "out/windows-2022-containerd-a/tree/Program Files/containerd/config.toml" || false
	all=$(requests | wc -l)
	[ "$all" -eq "$(requests | sort -u | wc -l)" ]
}

@test "a matrix file's syntax error and unknown key are reported at file:line:col, exit 2" {
	printf 'kind: matrix\nrecipes: [a.yaml,\n  b.yaml\nvariations: []\n' >bad.yaml
	wb build --matrix bad.yaml
	assert_status 2
	assert_output_has "bad.yaml:4:"
	printf 'kind: matrix\nrecipes: [a.yaml]\nvariantions: []\n' >bad2.yaml
	wb stage --matrix bad2.yaml
	assert_status 2
	assert_output_has "bad2.yaml:3:1: unknown key 'variantions' in a matrix file"
	printf 'kind: matrix\nrecipes: [a.yaml]\nvariations:\n  - set: {x: 1}\n' >bad3.yaml
	wb build --matrix bad3.yaml --json
	assert_status 2
	assert_output_has '"line": 4'
	wb build --matrix bad3.yaml "$R/windows-2022-containerd.yaml"
	assert_status 2
	assert_output_has "give no RECIPE beside it"
}

@test "two images with the same name: exit 2 naming both, nothing fetched or written" {
	: >"$NGINX_LOG"
	wbd build "$R/windows-2022-containerd.yaml" "$R/windows-2025-containerd.yaml" \
		"$R/windows-2022-containerd.yaml" -o out
	assert_status 2
	assert_output_has "two images are named 'windows-2022-containerd': image 'windows-2022-containerd' ($R/windows-2022-containerd.yaml) and image 'windows-2022-containerd' ($R/windows-2022-containerd.yaml)"
	[ ! -e out ] && [ "$(requests | wc -l)" -eq 0 ]
	ls ./*.lock 2>/dev/null && false
	# side by side too (o41-pm-dup-name-adjacent: the first pair is compared)
	wbd build "$R/windows-2022-containerd.yaml" "$R/windows-2022-containerd.yaml" -o out
	assert_status 2
	assert_output_has "two images are named 'windows-2022-containerd'"
	[ ! -e out ] && [ "$(requests | wc -l)" -eq 0 ]
	# --lock cannot name the lock of several images
	wbd build "${SHIPPED[@]}" --lock one.lock
	assert_status 2
	assert_output_has "--lock names one lock file"
}

@test "one image failing verification: it is named and left unwritten, the others complete, exit 1" {
	need_dep command -v minisign -- "minisign (make deps)"
	minisign -G -W -p other.pub -s other.key </dev/null >/dev/null
	mkdir m
	cat >m/matrix.yaml <<-EOF
		kind: matrix
		recipes: [windows-2022-containerd, windows-2019-containerd]
		variations:
		  - name: good
		  - name: wrongkey
		    set:
		      keys.demo.key: $(tail -n1 other.pub)
	EOF
	wbd build --matrix m/matrix.yaml -o out
	assert_status 1
	assert_output_has "image 'windows-2022-containerd-wrongkey' (windows-2022-containerd, m/matrix.yaml:2:11) not built:"
	assert_output_has "image 'windows-2019-containerd-wrongkey' (windows-2019-containerd, m/matrix.yaml:2:36) not built:"
	for n in windows-2022-containerd-good windows-2019-containerd-good; do
		[ -f "out/$n/manifest.json" ] && [ -f "out/$n/packer/$n.pkr.hcl" ] && [ -f "$n.lock" ]
	done
	for n in windows-2022-containerd-wrongkey windows-2019-containerd-wrongkey; do
		[ ! -e "out/$n/manifest.json" ] && [ ! -e "out/$n/tree" ] && [ ! -e "$n.lock" ]
		[ -z "$(ls -A "out/$n" 2>/dev/null | grep -v '^\.lock$')" ]
	done
	assert_output_has "$(printf '%-32s %-9s %-24s' windows-2022-containerd-wrongkey 10 "failed (exit 1)")"
	# --json: the failed images' entries say so, with their line
	rm -rf out ./*.lock
	"$WINBUILD" build "${DEMO_ARGS[@]}" --matrix m/matrix.yaml -o out --json >r.json || [ $? -eq 1 ]
	python3 - <<-'PY'
		import json
		r = json.load(open("r.json"))
		assert r["exit"] == 1 and not r["ok"], r["exit"]
		by = {i["image"]: i for i in r["images"]}
		assert sorted(by) == sorted("windows-%s-containerd-%s" % (v, k)
		                            for v in ("2019", "2022") for k in ("good", "wrongkey")), sorted(by)
		for n, i in by.items():
		    if n.endswith("good"):
		        assert i["ok"] and i["exit"] == 0 and i["lock"] == n + ".lock", i
		    else:
		        assert not i["ok"] and i["exit"] == 1 and "lock" not in i, i
		        assert any("image '%s'" % n in l and "not built" in l for l in i["errors"]), i["errors"]
		        assert not all(a["ok"] for a in i["artifacts"]), i["artifacts"]
	PY
}

@test "per-Windows-version values in one override: each image gets its version's ISO digest, --explain shows the line" {
	cat >versions.yaml <<-'EOF'
		kind: override
		windows_versions:
		  "2019":
		    windows:
		      iso_sha256: 1111111111111111111111111111111111111111111111111111111111111111
		  2025:
		    windows:
		      iso_sha256: 2525252525252525252525252525252525252525252525252525252525252525
	EOF
	wbd build "$R/windows-2019-containerd.yaml" "$R/windows-2025-containerd.yaml" \
		"$R/windows-2022-containerd.yaml" -O versions.yaml -o out
	assert_status 0
	grep -q 1111111111111111111111111111111111111111111111111111111111111111 \
		out/windows-2019-containerd/packer/windows-2019-containerd.auto.pkrvars.hcl
	grep -q 2525252525252525252525252525252525252525252525252525252525252525 \
		out/windows-2025-containerd/packer/windows-2025-containerd.auto.pkrvars.hcl
	# 2022 has no block: the demo override's digest stays
	grep -q 642caba7c4170187c2dcc493d65d9ef5ff530a391ccd1b490742a8c37840a087 \
		out/windows-2022-containerd/packer/windows-2022-containerd.auto.pkrvars.hcl
	! grep -q '1111111111\|2525252525' out/windows-2022-containerd/packer/windows-2022-containerd.auto.pkrvars.hcl || false
	run "$WINBUILD" plan "$R/windows-2025-containerd.yaml" -O versions.yaml --explain
	assert_status 0
	assert_output_has "windows.iso_sha256 = 2525252525252525252525252525252525252525252525252525252525252525    <- versions.yaml:8:19"
	# a block may not change the version it was picked for
	printf 'kind: override\nwindows_versions:\n  "2022":\n    windows: {version: "2025"}\n' >loop.yaml
	run "$WINBUILD" plan "$R/windows-2022-containerd.yaml" -O loop.yaml
	assert_status 2
	assert_output_has "loop.yaml:4:15: windows_versions.2022 cannot set windows.version"
}

@test "--locked: each image against its own lock; a lock pinning other bytes fails its image only" {
	wbd build "${SHIPPED[@]}" -o out
	assert_status 0
	# the 2019 lock now pins other bytes for kubelet (as if upstream had
	# changed them): only that image may fail, at its digest
	python3 - windows-2019-containerd.lock <<-'PY'
		import json, sys
		l = json.load(open(sys.argv[1]))
		l["artifacts"]["kubelet"]["sha256"] = "ab" * 32
		json.dump(l, open(sys.argv[1], "w"), indent=2)
	PY
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	rm -rf out
	wbd build "${SHIPPED[@]}" -o out --locked
	assert_status 1
	assert_output_has "image 'windows-2019-containerd' ($R/windows-2019-containerd.yaml) not built: 1 of its 10 artifacts failed (exit 1)"
	assert_output_has "abababab"
	[ ! -e out/windows-2019-containerd/manifest.json ]
	for n in 2022 2025; do
		[ -f "out/windows-$n-containerd/manifest.json" ]
	done
	# the failed image's lock is kept as it was, the others' rewritten
	grep -q '"abababab' windows-2019-containerd.lock
}

@test "stage of a matrix: an image whose variation changed is staged again, the others stay up to date" {
	mkdir m
	printf 'kind: matrix\nrecipes: [windows-2022-containerd]\nvariations:\n  - name: a\n  - name: b\n    set: {images.pause.enabled: false, node.pause_image: example.invalid/pause:1}\n' >m/matrix.yaml
	wbd stage --matrix m/matrix.yaml -o out
	assert_status 0
	# b drops the pause image (its tar): one file fewer than a
	assert_output_has "$(printf '%-32s %-9s %-24s %-9s' windows-2022-containerd-b 10 "27 files" -)"
	grep -q 'example.invalid/pause:1' "out/windows-2022-containerd-b/tree/Program Files/containerd/config.toml"
	: >"$NGINX_LOG"
	# only b's value changes (the matrix file is no input of a plan: the
	# stamp holds each image's own --set pairs)
	sed -i 's/pause:1}/pause:2}/' m/matrix.yaml
	wbd stage --matrix m/matrix.yaml -o out
	assert_status 0
	assert_output_has "up to date: out/windows-2022-containerd-a/tree"
	assert_output_lacks "up to date: out/windows-2022-containerd-b/tree"
	assert_output_has "$(printf '%-32s %-9s %-24s' windows-2022-containerd-a 10 "up to date")"
	grep -q 'example.invalid/pause:2' "out/windows-2022-containerd-b/tree/Program Files/containerd/config.toml"
	[ "$(requests | wc -l)" -eq 0 ]
}

@test "a matrix file: a variation's or builder's name that starts with '-' or '.' or holds a '/' is exit 2 at its line, nothing fetched" {
	# o41-matrix-name-dot: the name is appended to the image name, which
	# names OUT/<name>/ and <name>.lock; a leading '.' hides them (and
	# OUT/.<name>.prev.<pid> is the matrix's own kept copy)
	: >"$NGINX_LOG"
	for name in .hidden -dash a/b ..; do
		printf 'kind: matrix\nrecipes: [windows-2022-containerd]\nvariations:\n  - name: "%s"\n' \
			"$name" >v.yaml
		wbd stage --matrix v.yaml -o out
		assert_status 2
		assert_output_has "v.yaml:4:11: a variation's name is letters, digits, '-', '_' and '.'"
		printf 'kind: matrix\nrecipes: [windows-2022-containerd]\nbuilders: ["%s"]\n' "$name" >b.yaml
		wbd stage --matrix b.yaml -o out
		assert_status 2
		assert_output_has "b.yaml:3:12: a builder name is letters, digits, '-', '_' and '.'"
	done
	[ ! -e out ] && [ "$(requests | wc -l)" -eq 0 ]
	[ -z "$(ls ./*.lock 2>/dev/null)" ]
}

# issue 42 (many images): a matrix is pinned once. lock --matrix fetches
# the union once and writes each image's own <name>.lock, the one build
# --matrix --locked reads; fetch --matrix fills the cache the same way;
# several RECIPEs do the same without a file. A lock changed for one image
# fails that image only under --locked.
@test "issue 42: lock --matrix pins every image once; build --matrix --locked uses the locks; one changed lock fails only its image" {
	mkdir m
	cat >m/matrix.yaml <<-EOF
		kind: matrix
		recipes: [windows-2019-containerd, windows-2022-containerd, windows-2025-containerd]
		variations:
		  - name: a
		  - name: b
		    set: {images.pause.enabled: false, node.pause_image: example.invalid/pause:42}
	EOF
	names="windows-2019-containerd-a windows-2019-containerd-b windows-2022-containerd-a windows-2022-containerd-b windows-2025-containerd-a windows-2025-containerd-b"
	: >"$NGINX_LOG"
	wbd lock --matrix m/matrix.yaml
	assert_status 0
	for n in $names; do
		python3 - "$n.lock" "$n" <<-'PY'
			import json, sys
			l = json.load(open(sys.argv[1]))
			assert l["recipe"] == sys.argv[2], l.get("recipe")
			assert len(l["artifacts"]) == 10, len(l["artifacts"])
			# variation a pins the pause image, b does not pull it
			assert ("pause" in l.get("images", {})) == sys.argv[2].endswith("-a"), l.get("images")
		PY
		assert_output_has "$(printf '%-32s %-9s %-24s' "$n" 10 "locked: $n.lock")"
	done
	assert_output_has "6 images, 10 distinct artifacts: 10 downloaded, 0 from the cache"
	[ "$(requests | wc -l)" -eq "$(requests | sort -u | wc -l)" ]
	[ ! -e out ]
	# the locks are the ones the matrix build reads: --locked, nothing new asked
	: >"$NGINX_LOG"
	wbd fetch --matrix m/matrix.yaml --locked
	assert_status 0
	wbd build --matrix m/matrix.yaml --locked -o out
	assert_status 0
	[ "$(requests | wc -l)" -eq 0 ]
	# one image's lock changed (another kubelet digest): that image fails,
	# the five others build; the exit code is the worst
	python3 - windows-2022-containerd-b.lock <<-'PY'
		import json, sys
		l = json.load(open(sys.argv[1]))
		l["artifacts"]["kubelet"]["sha256"] = "0" * 64
		json.dump(l, open(sys.argv[1], "w"))
	PY
	rm -rf out
	wbd build --matrix m/matrix.yaml --locked -o out
	assert_status 1
	assert_output_has "windows-2022-containerd-b"
	[ ! -e out/windows-2022-containerd-b/manifest.json ]
	[ -f out/windows-2022-containerd-a/manifest.json ] && [ -f out/windows-2025-containerd-b/manifest.json ]
	# several RECIPEs without a file, and --matrix beside a RECIPE refused
	wbd lock "$R/windows-2022-containerd.yaml" "$R/windows-2025-containerd.yaml"
	assert_status 0
	[ -f windows-2022-containerd.lock ] && [ -f windows-2025-containerd.lock ]
	wbd lock --matrix m/matrix.yaml "$R/windows-2022-containerd.yaml"
	assert_status 2
	assert_output_has "--matrix FILE names the recipes"
}
