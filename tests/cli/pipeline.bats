#!/usr/bin/env bats
# winbuild stage as a pipeline: archives are requested first and unpacked
# while other artifacts still download; a failed download stops the stage
# and leaves nothing behind. No timing: the server holds a download until
# the test releases it.
load helpers
load ../lib/servers
load stage_fixtures

setup_file() {
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	start_nginx "$WWW"
	start_faultd "$WWW"
}

setup() {
	common_setup
	rm -f "$WWW"/good/*.release
}


# the fixture override with one artifact's URL at faultd under PREFIX
# (hold, 404, ...) or plain: override_via ARTIFACT FILE PREFIX
override_via() {
	fixture_override | sed "s|url: $(H)/good/$2\$|url: $FAULTD_URL/$3/good/$2|"
}

# every artifact through faultd, plain: its log shows the request order
override_all_faultd() {
	fixture_override | sed "s|url: $(H)/|url: $FAULTD_URL/|"
}

@test "archives are requested before the other artifacts" {
	override_all_faultd >"$WORK/o.yaml"
	: >"$FAULTD_LOG"
	wb stage "$RECIPE" -O "$WORK/o.yaml" -j 1 --no-progress -q
	assert_status 0
	# "GET /good/FILE HTTP/1.1" 200 ...: the files in request order
	sed -n 's|^"GET /good/\([^ ]*\) .*|\1|p' "$FAULTD_LOG" >"$WORK/order"
	cat "$WORK/order"
	[ "$(wc -l <"$WORK/order")" -eq 10 ]
	[ "$(grep -Ec '\.(tar\.gz|tgz|zip)$' "$WORK/order")" -eq 4 ]
	# with -j 1, no archive after any other artifact
	awk '{ a = ($0 ~ /\.(tar\.gz|tgz|zip)$/) }
	     a && other { bad = 1 } !a { other = 1 } END { exit bad }' "$WORK/order"
}

@test "an archive is unpacked while another artifact is still downloading" {
	override_via kubelet kubelet.exe hold >"$WORK/o.yaml"
	"$WINBUILD" stage "$RECIPE" -O "$WORK/o.yaml" -o "$WORK/out" --no-progress -q \
		>"$WORK/log" 2>&1 3>&- &
	pid=$!
	# kubelet cannot complete before the release: containerd's files must
	# appear in its scratch dir before that (a stage that prepared only
	# after the downloads would never get there)
	seen=0
	for _ in $(seq 1 600); do
		if ls "$WORK/out/$NAME"/.tree.tmp.*/prep/containerd/*.exe >/dev/null 2>&1; then
			seen=1
			break
		fi
		sleep 0.1
	done
	touch "$WWW/good/kubelet.exe.release"
	wait "$pid" || { cat "$WORK/log"; false; }
	grep -q '"GET /hold/good/kubelet.exe' "$FAULTD_LOG"
	[ "$seen" = 1 ] || { echo "containerd was not unpacked while kubelet downloaded"; false; }
	cmp "$(T)/k/kubelet.exe" "$WWW/good/kubelet.exe"
	[ -f "$(T)/Program Files/containerd/containerd.exe" ]
	[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
}

@test "the same tree whether artifacts were prepared during the downloads or after" {
	fixture_override >"$WORK/o.yaml"
	wb stage "$RECIPE" -O "$WORK/o.yaml" -o "$WORK/a" --no-progress -q
	assert_status 0
	# from the cache: every artifact is handed over before any transfer
	wb stage "$RECIPE" -O "$WORK/o.yaml" -o "$WORK/b" --no-progress -q
	assert_status 0
	# and with one held download, so the rest is prepared before it ends
	override_via kubelet kubelet.exe hold >"$WORK/h.yaml"
	rm -rf "$WINBUILD_CACHE"
	( sleep 1; touch "$WWW/good/kubelet.exe.release" ) 3>&- &
	wb stage "$RECIPE" -O "$WORK/h.yaml" -o "$WORK/c" --no-progress -q
	assert_status 0
	diff -r -x .stage-stamp "$WORK/a/$NAME/tree" "$WORK/b/$NAME/tree"
	diff -r -x .stage-stamp "$WORK/a/$NAME/tree" "$WORK/c/$NAME/tree"
	cmp "$WORK/a/$NAME/manifest.json" "$WORK/b/$NAME/manifest.json"
}

@test "a failed download stops the stage: exit 3, old tree kept, no temp dir" {
	fixture_override >"$WORK/o.yaml"
	wb stage "$RECIPE" -O "$WORK/o.yaml" --no-progress -q
	assert_status 0
	cp -a "$(T)" "$WORK/old"
	override_via kubelet kubelet.exe 404 >"$WORK/bad.yaml"
	rm -rf "$WINBUILD_CACHE"   # pinned: a cached kubelet would be used
	wb stage "$RECIPE" -O "$WORK/bad.yaml" --no-progress --set node.cni=nat
	assert_status 3
	assert_output_has "kubelet"
	assert_output_has "HTTP 404"
	diff -r "$WORK/old" "$(T)"
	[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
}

# ---- re-staging only what changed -------------------------------------------

ino() { stat -c %i "$(T)/$1"; }

# the fixture override with kubelet "upgraded": other bytes (kubeadm's)
override_new_kubelet() {
	fixture_override | sed -e "s|$(sha_www good/kubelet.exe)|$(sha_www good/kubeadm.exe)|" \
		-e "s|/good/kubelet.exe\$|/good/kubeadm.exe|"
}

@test "after one artifact changed only it is staged again; the others' files are reused" {
	fixture_override >"$WORK/o.yaml"
	wb stage "$RECIPE" -O "$WORK/o.yaml" --no-progress
	assert_status 0
	assert_output_lacks "reused"
	ctd=$(ino "Program Files/containerd/containerd.exe")
	kubectl=$(ino k/kubectl.exe)
	kubelet=$(ino k/kubelet.exe)
	override_new_kubelet >"$WORK/new.yaml"
	wb stage "$RECIPE" -O "$WORK/new.yaml" --no-progress
	assert_status 0
	assert_output_has "reused the files of 9 of 10 artifacts"
	# the same files (inodes) for the unchanged artifacts, a new kubelet
	[ "$(ino "Program Files/containerd/containerd.exe")" = "$ctd" ]
	[ "$(ino k/kubectl.exe)" = "$kubectl" ]
	[ "$(ino k/kubelet.exe)" != "$kubelet" ]
	cmp "$(T)/k/kubelet.exe" "$WWW/good/kubeadm.exe"
	# and exactly what a stage from scratch gives
	wb stage "$RECIPE" -O "$WORK/new.yaml" --no-progress -o "$WORK/full"
	assert_status 0
	assert_output_lacks "reused"
	diff -r "$WORK/full/$NAME/tree" "$(T)"
	cmp "$WORK/full/$NAME/manifest.json" "$WORK/out/$NAME/manifest.json"
	cmp "$WORK/full/$NAME/sbom.cdx.json" "$WORK/out/$NAME/sbom.cdx.json"
	(cd "$(T)" && find . -exec stat -c '%n %a %Y' {} + | LC_ALL=C sort) >"$WORK/meta.re"
	(cd "$WORK/full/$NAME/tree" && find . -exec stat -c '%n %a %Y' {} + | LC_ALL=C sort) >"$WORK/meta.full"
	diff "$WORK/meta.full" "$WORK/meta.re"
	# the stamp vouches for the new tree: nothing to do now
	wb stage "$RECIPE" -O "$WORK/new.yaml" --no-progress
	assert_status 0
	assert_output_has "up to date"
}

@test "a tree changed since the last stage is not reused: every file is staged again" {
	fixture_override >"$WORK/o.yaml"
	wb stage "$RECIPE" -O "$WORK/o.yaml" --no-progress
	assert_status 0
	ctd=$(ino "Program Files/containerd/containerd.exe")
	# somebody edits a file in the staged tree
	chmod u+w "$(T)/k/kubectl.exe"
	printf 'tampered' >>"$(T)/k/kubectl.exe"
	override_new_kubelet >"$WORK/new.yaml"
	wb stage "$RECIPE" -O "$WORK/new.yaml" --no-progress
	assert_status 0
	assert_output_lacks "reused"
	[ "$(ino "Program Files/containerd/containerd.exe")" != "$ctd" ]
	cmp "$(T)/k/kubectl.exe" "$WWW/good/kubectl.exe"
	wb stage "$RECIPE" -O "$WORK/new.yaml" --no-progress -o "$WORK/full"
	assert_status 0
	diff -r "$WORK/full/$NAME/tree" "$(T)"
}

@test "a changed epoch reuses nothing (mtimes differ), and the tree is still right" {
	fixture_override >"$WORK/o.yaml"
	wb stage "$RECIPE" -O "$WORK/o.yaml" --no-progress
	assert_status 0
	SOURCE_DATE_EPOCH=1700000000 wb stage "$RECIPE" -O "$WORK/o.yaml" --no-progress
	assert_status 0
	assert_output_lacks "reused"
	[ "$(stat -c %Y "$(T)/k/kubelet.exe")" = 1700000000 ]
}

# ---- a cache filled under other URLs ----------------------------------------

# every digest of the SBOM's components ("ALG HEX"), sorted: the SBOM lists
# SHA-256 always, SHA-512 and BLAKE2b-512 where a check computed them
sbom_digests() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("\n".join(sorted(h["alg"] + " " + h["content"] for c in d["components"] for h in c.get("hashes", []))))' "$1"
}

@test "a cache filled under other URLs serves pinned artifacts without a request, with the same SBOM digests" {
	fixture_override >"$WORK/o.yaml"
	wb stage "$RECIPE" -O "$WORK/o.yaml" --no-progress -o "$WORK/a"
	assert_status 0
	# the same pinned digests at other URLs: no ref matches, the pins do
	override_all_faultd >"$WORK/f.yaml"
	: >"$FAULTD_LOG"
	wb stage "$RECIPE" -O "$WORK/f.yaml" --no-progress -o "$WORK/b"
	assert_status 0
	[ ! -s "$FAULTD_LOG" ]
	diff -r "$WORK/a/$NAME/tree" "$WORK/b/$NAME/tree"
	sbom_digests "$WORK/a/$NAME/sbom.cdx.json" >"$WORK/a.dig"
	sbom_digests "$WORK/b/$NAME/sbom.cdx.json" >"$WORK/b.dig"
	# every component has its SHA-256
	ncomp=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["components"]))' \
		"$WORK/a/$NAME/sbom.cdx.json")
	[ "$ncomp" -ge 10 ]
	[ "$(grep -c '^SHA-256 ' "$WORK/a.dig")" -eq "$ncomp" ]
	diff "$WORK/a.dig" "$WORK/b.dig"
	(cd "$WWW/good" && sha256sum containerd-2.1.4-windows-amd64.tar.gz | sed 's/^\([0-9a-f]*\).*/SHA-256 \1/') >"$WORK/ctd.256"
	grep -qxf "$WORK/ctd.256" "$WORK/b.dig"
}
