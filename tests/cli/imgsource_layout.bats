#!/usr/bin/env bats
# Issue 44 item 1: an OCI image layout on disk (images.<key>.layout: a
# directory or a .tar) as an image's source, through the one seam
# (fetch/imgsource.c). The layout is made by real skopeo from the test
# registry (the list with every entry, `--all --preserve-digests`, and the
# cosign signature under its sha256-<hex>.sig tag), the registry's own
# stage kept as the reference, then the registry stopped: every test here
# runs with no server at all. The layout is checked as a pull is: the pin,
# the build's windows/amd64 entry, the config, every blob by digest and
# size, the cosign signature by ocisig_verify(); a failure caches nothing.
load helpers
load ../lib/servers
load ../lib/registry

K8S_SIGNER=krel-trust@k8s-releng-prod.iam.gserviceaccount.com
K8S_ISSUER=https://accounts.google.com

setup_file() {
	need_dep command -v docker-registry -- "docker-registry not installed (make deps)"
	need_dep command -v skopeo -- "skopeo not installed (make deps)"
	local d="$BATS_FILE_TMPDIR" list sd hex
	registry_file_setup
	export SIGS="$d/sigs" LIST L="$d/layout" REF="$d/ref"
	LIST=$(dg 'ocisigned|list')
	hex=${LIST#sha256:}
	python3 "$WB_SRC/tests/sigstore/forge.py" --image-sigs "$SIGS" "$K8S_SIGNER" \
		"$K8S_ISSUER" "$LIST" "$(dg 'pause|list')" "$REG/ocisigned" >/dev/null
	python3 "$WB_SRC/tests/registry/push.py" --sig "https://$REG" "$CA/ca.crt" ocisigned \
		"$LIST" "$SIGS/imgsig/good.json" >"$d/sigdigest"
	mkdir -p "$d/certs"
	cp "$CA/ca.crt" "$d/certs/ca.crt"
	skopeo copy --quiet --all --preserve-digests --src-cert-dir "$d/certs" \
		"docker://$REG/ocisigned@$LIST" "oci:$L:1"
	skopeo copy --quiet --preserve-digests --src-cert-dir "$d/certs" \
		"docker://$REG/ocisigned:sha256-$hex.sig" "oci:$L:sha256-$hex.sig"
	tar -C "$L" -cf "$d/layout.tar" .
	# the reference: the same image staged from the registry
	mkdir -p "$REF"
	layout_recipe_in "$REF" ""
	(cd "$REF" && WINBUILD_CACHE="$REF/cache" "$WINBUILD" stage img.yaml \
		--cacert "$CA/ca.crt" >"$REF/log" 2>&1) || { cat "$REF/log"; return 1; }
	stop_servers
}

teardown_file() { stop_servers; }

# layout_recipe_in DIR LAYOUT [DIGEST]: DIR/img.yaml, the signed image
# (keyless as the promoter, under the forge's root) from LAYOUT ("": its
# registry)
layout_recipe_in() {
	local w="$1" lay="$2" dig="${3:-$LIST}"
	( WORK="$w"; img_recipe <<-YAML
		  signed:
		    name: $REG/ocisigned
		    tag: "1"
		    digest: "$dig"
		    cosign: {identity: $K8S_SIGNER, issuer: "$K8S_ISSUER", trusted_root: $SIGS/root.json}
		${lay:+    layout: $lay}
	YAML
	)
}

layout_recipe() { layout_recipe_in "$WORK" "$@"; }

cached() { find "$WINBUILD_CACHE/sha256" -type f 2>/dev/null | wc -l; }
staged=out/t/tree/ProgramData/winbuild/images/signed.tar

# nothing of the image cached: only the recipe's one file:// artifact
nothing_of_image() { [ "$(cached)" -le 1 ] && [ ! -e "$staged" ]; }

@test "layout: a directory from skopeo, no server running: verified, signature checked, staged byte-identical to the registry's" {
	cp -R "$L" layout
	layout_recipe layout
	wb stage img.yaml
	assert_status 0
	assert_output_has "fetched image signed ($REG/ocisigned@$LIST: windows/amd64"
	assert_output_has "image signed: cosign signature $(cat "$BATS_FILE_TMPDIR/sigdigest") verified: $K8S_SIGNER ($K8S_ISSUER)"
	cmp "$staged" "$REF/$staged"
	# verified again from the cache alone, as the stage reads every source
	wb fetch img.yaml --offline
	assert_status 0
}

@test "layout: a .tar of one, relative to the recipe, the same" {
	cp "$BATS_FILE_TMPDIR/layout.tar" l.tar
	layout_recipe l.tar
	wb stage img.yaml
	assert_status 0
	cmp "$staged" "$REF/$staged"
}

@test "layout: a tampered blob is exit 1 with the expected and actual digest, nothing of the image cached" {
	cp -R "$L" layout
	man=$(dg 'ocisigned|entries|10.0.20348.3207|manifest')
	layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"])' \
		"layout/blobs/sha256/${man#sha256:}")
	chmod u+w "layout/blobs/sha256/${layer#sha256:}"
	printf 'x' | dd of="layout/blobs/sha256/${layer#sha256:}" bs=1 seek=3 conv=notrunc 2>/dev/null
	layout_recipe layout
	wb stage img.yaml
	assert_status 1
	assert_output_has "does not match its descriptor: expected $layer"
	assert_output_has "nothing cached"
	nothing_of_image
}

@test "layout: a wrong pin is exit 1 (not in the layout, or another's bytes under its name), nothing of the image cached" {
	cp -R "$L" layout
	layout_recipe layout "sha256:$(printf other | sha256sum | cut -d' ' -f1)"
	wb stage img.yaml
	assert_status 1
	assert_output_has "'oci-layout:layout/v2/ocisigned/manifests/sha256:$(printf other | sha256sum | cut -d' ' -f1)': not in the image's source"
	nothing_of_image
	# a blob under the pin's name whose bytes are another's: both digests
	other=$(printf other | sha256sum | cut -d' ' -f1)
	cp "layout/blobs/sha256/${LIST#sha256:}" "layout/blobs/sha256/$other"
	wb stage img.yaml
	assert_status 1
	assert_output_has "does not match its digest: expected sha256:$other, got $LIST"
	nothing_of_image
}

@test "layout: no signature in the layout is exit 1 when the recipe requires one, nothing of the image cached" {
	mkdir -p "$WORK/nosig"
	cp -R "$L"/. nosig/
	python3 - nosig/index.json <<-'PY'
		import json, sys
		i = json.load(open(sys.argv[1]))
		i["manifests"] = [m for m in i["manifests"]
		                  if not m["annotations"]["org.opencontainers.image.ref.name"].endswith(".sig")]
		json.dump(i, open(sys.argv[1], "w"))
	PY
	layout_recipe nosig
	wb stage img.yaml
	assert_status 1
	assert_output_has "no cosign signature"
	nothing_of_image
}

@test "layout: '..' in the path is exit 2 at its value; a symlink inside the layout is refused, nothing cached" {
	cp -R "$L" layout
	layout_recipe ../layout
	wb plan img.yaml
	assert_status 2
	assert_output_has "images.signed.layout: '../layout' is not a path without '..' segments"
	layout_recipe layout/../layout
	wb plan img.yaml
	assert_status 2
	# a blob replaced by a symlink to a file outside (holding the right bytes)
	man=$(dg 'ocisigned|entries|10.0.20348.3207|manifest')
	mv "layout/blobs/sha256/${man#sha256:}" outside
	ln -s "$WORK/outside" "layout/blobs/sha256/${man#sha256:}"
	layout_recipe layout
	wb stage img.yaml
	assert_status 1
	assert_output_has "is a symlink (or under one): refused"
	nothing_of_image
	# the blobs directory itself a symlink
	rm "layout/blobs/sha256/${man#sha256:}"
	mv outside "layout/blobs/sha256/${man#sha256:}"
	mv layout/blobs blobs-elsewhere
	ln -s "$WORK/blobs-elsewhere" layout/blobs
	wb stage img.yaml
	assert_status 1
	assert_output_has "is a symlink (or under one): refused"
	nothing_of_image
}

@test "layout: a layout needs a pin (exit 2), and a path that does not exist is exit 2" {
	img_recipe <<-YAML
		  signed: {name: $REG/ocisigned, tag: "1", needs_pin: later, layout: "$L"}
	YAML
	wb plan img.yaml
	assert_status 2
	assert_output_has "images.signed.layout: an image from a layout needs its digest"
	layout_recipe nothere
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:12:13: images.signed.layout: 'nothere' does not exist"
}

# issue 42 (air gap): `winbuild mirror` writes each image it pulled as an
# OCI layout too (DIR/images/<key>/), and the export's own override points
# the image at it by the verified pin: an air-gapped build needs no
# registry, no web server (a file:// registry mirror is refused), and
# stages the same bytes. Here the first run itself reads the layout, so no
# server runs at any point.
@test "issue 42: mirror exports each image as an OCI layout; the export's override alone builds it, moved, byte-identical" {
	cp -R "$L" layout
	layout_recipe layout
	# the one artifact from a web server while the export is written
	mkdir www && cp demo.bin www/
	start_nginx "$PWD/www"
	sed -i "s|url: file://.*|url: http://127.0.0.1:$NGINX_PORT/demo.bin|" components/demo.yaml
	wb mirror img.yaml M
	assert_status 0
	stop_servers
	[ -f M/images/signed/oci-layout ] && [ -f M/images/signed/index.json ]
	grep -qF "  signed: {layout: \"images/signed\", digest: \"$LIST\"}" M/winbuild-override.yaml
	# the signature travels under its tag, as skopeo writes it
	python3 - M/images/signed/index.json "$LIST" <<-'PY'
		import json, sys
		refs = {m["annotations"]["org.opencontainers.image.ref.name"]: m["digest"] for m in json.load(open(sys.argv[1]))["manifests"]}
		assert refs["1"] == sys.argv[2], refs
		assert "sha256-%s.sig" % sys.argv[2][7:] in refs, refs
	PY
	# the recipe names its registry again (nothing serves it), the export
	# moved, a fresh cache: the override alone
	layout_recipe ""
	sed -i "s|url: file://.*|url: http://127.0.0.1:$NGINX_PORT/demo.bin|" components/demo.yaml
	mv M "$BATS_TEST_TMPDIR/moved"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	wb stage img.yaml -O "$BATS_TEST_TMPDIR/moved/winbuild-override.yaml"
	assert_status 0
	assert_output_has "image signed: cosign signature $(cat "$BATS_FILE_TMPDIR/sigdigest") verified: $K8S_SIGNER ($K8S_ISSUER)"
	cmp "$staged" "$REF/$staged"
	# and a tampered layer in the export is refused (exit 1), nothing staged
	rm -rf out "$WINBUILD_CACHE"
	local layer
	layer=$(ls -S "$BATS_TEST_TMPDIR/moved/images/signed/blobs/sha256" | head -n1)
	chmod u+w "$BATS_TEST_TMPDIR/moved/images/signed/blobs/sha256/$layer"
	printf 'x' >>"$BATS_TEST_TMPDIR/moved/images/signed/blobs/sha256/$layer"
	wb stage img.yaml -O "$BATS_TEST_TMPDIR/moved/winbuild-override.yaml"
	assert_status 1
	[ ! -e "$staged" ]
}
