#!/usr/bin/env bats
# Issue 33 (d2): images: in component files (recipes/components/*.yaml), the
# same entries as an image recipe's, joined to the plan's images while the
# component is enabled; a key two sources declare is exit 2 at the later
# one, naming both. Pulled from a real docker-registry on loopback TLS
# (tests/lib/registry.bash).

load helpers
load ../lib/servers
load ../lib/registry

setup_file() { registry_file_setup; }

teardown_file() { stop_servers; }

jf() { python3 -c 'import json,sys; J=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$output"; }

# recipe COMPONENT_TAIL [IMAGE_TAIL [DEMO_ENTRY]]: $WORK/img.yaml (image t,
# Windows 2022) with component demo ($WORK/components/demo.yaml: one
# file:// artifact, then COMPONENT_TAIL verbatim) and component other
# (the same with no images), then IMAGE_TAIL verbatim; DEMO_ENTRY is the
# recipe's components.demo map (default {})
recipe() {
	local entry=${3:-'{}'}
	mkdir -p "$WORK/components"
	printf 'demo bytes\n' >"$WORK/demo.bin"
	for c in demo other; do
		printf 'kind: component\nname: %s\nversion: "1.0"\nartifacts:\n  %s:\n    url: file://%s\n    verify: {sha256: %s}\n    install: {to: C:/k/%s.bin}\n' \
			"$c" "$c" "$WORK/demo.bin" "$(sha256sum "$WORK/demo.bin" | cut -d' ' -f1)" "$c" \
			>"$WORK/components/$c.yaml"
	done
	printf '%s' "$1" >>"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows: {version: "2022", iso_sha256: %s}\ncomponents:\n  demo: %s\n  other: {}\n%s' \
		"$TEST_ISO_SHA256" "$entry" "${2:-}" >"$WORK/img.yaml"
}

@test "a component's images join the recipe's: listed by plan with their origin, pulled by fetch" {
	recipe "images:
  core: {name: $REG/windows/servercore, tag: ltsc, digest: \"$(dg 'servercore|list')\"}
" "images:
  pause: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|list')\"}
"
	wb plan img.yaml --json
	assert_status 0
	[ "$(jf '[i["key"] for i in J["images"]]')" = "['core', 'pause']" ]
	[ "$(jf 'J["images"][0]["origin"]')" = "components/demo.yaml:10:3" ]
	[ "$(jf 'J["image"]["pause_image"]')" = "$REG/pause:3.10" ]
	wb fetch img.yaml --cacert "$CA/ca.crt"
	assert_status 0
	assert_output_has "fetched image core ($REG/windows/servercore@$(dg 'servercore|list')"
	assert_output_has "fetched image pause ($REG/pause@$(dg 'pause|list')"
}

@test "a component's images.pause is the node's pause image" {
	recipe "images:
  pause: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|list')\"}
"
	wb plan img.yaml --json
	assert_status 0
	[ "$(jf 'J["image"]["pause_image"]')" = "$REG/pause:3.10" ]
}

@test "an image key declared by the recipe and a component is exit 2 at the later one, naming both" {
	recipe "images:
  pause: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|list')\"}
" "images:
  pause: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|list')\"}
"
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/demo.yaml:10:3: images.pause of components.demo: image key 'pause' is also declared at img.yaml:8:3"
	# and by two components
	recipe "images:
  pause: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|list')\"}
"
	printf 'images:\n  pause: {name: %s/pause, tag: "3.10", needs_pin: later}\n' "$REG" >>"$WORK/components/other.yaml"
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/other.yaml:10:3: images.pause of components.other: image key 'pause' is also declared at components/demo.yaml:10:3"
}

@test "two entries of one name and tag are exit 2 naming both: containerd would keep only the last" {
	recipe "images:
  other: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|entries|10.0.20348.3207|manifest')\"}
" "images:
  pause: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|list')\"}
"
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:8:3: images.pause: '$REG/pause:3.10' is also images.other (components/demo.yaml:10:3): containerd keeps one image per name"
	# another tag of the same repository is another image
	recipe "images:
  other: {name: $REG/pause, tag: \"3.10-2022\", digest: \"$(dg 'pause|entries|10.0.20348.3207|manifest')\"}
" "images:
  pause: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|list')\"}
"
	wb plan img.yaml
	assert_status 0
}

@test "a component's bad image entry is exit 2 at its file:line:col" {
	recipe "images:
  core: {name: $REG/windows/servercore, tag: ltsc}
"
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/demo.yaml:10:3: images.core: '$REG/windows/servercore:ltsc' has no digest"
	recipe "images:
  core: {name: $REG/windows/servercore, digest: \"$(dg 'servercore|list')\", pull: always}
"
	wb plan img.yaml
	assert_status 2
	assert_output_has "pull"
}

@test "a disabled component's images are neither planned nor pulled" {
	recipe "images:
  core: {name: $REG/windows/servercore, tag: ltsc, digest: \"$(dg 'servercore|list')\"}
" "" "{enabled: false}"
	wb plan img.yaml --json
	assert_status 0
	[ "$(jf 'J.get("images", [])')" = "[]" ]
	wb fetch img.yaml --cacert "$CA/ca.crt"
	assert_status 0
	! grep -q "fetched image" <<<"$output" || false
	# the artifact only (demo and other install the same bytes)
	[ "$(find "$WINBUILD_CACHE/sha256" -type f | wc -l)" = 1 ]
}

@test "policy.require: signature holds a component's image to it too: no cosign, exit 2 at its key" {
	minisign -G -W -p "$WORK/k.pub" -s "$WORK/k.key" </dev/null >/dev/null
	mkdir -p "$WORK/components"
	printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n  demo:\n    url: https://example.test/demo.bin\n    verify: {minisign: {keys: [site]}}\n    install: {to: C:/k/demo.bin}\nimages:\n  core: {name: %s/windows/servercore, tag: ltsc, digest: "%s"}\n' \
		"$REG" "$(dg 'servercore|list')" >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows: {version: "2022", iso_sha256: %s}\nkeys:\n  site: {key: %s}\npolicy: {require: signature}\ncomponents:\n  demo: {}\n' \
		"$TEST_ISO_SHA256" "$(tail -n1 "$WORK/k.pub")" >"$WORK/img.yaml"
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/demo.yaml:10:3: images.core: '$REG/windows/servercore' has no signature requirement, but policy.require is 'signature'"
}

@test "images.<key>.enabled: false leaves an image out, as an override drops it; a dropped pause leaves node.pause_image at the default" {
	recipe "" "images:
  pause: {name: $REG/pause, tag: \"3.10\", digest: \"$(dg 'pause|list')\"}
  core: {name: $REG/windows/servercore, tag: ltsc, digest: \"$(dg 'servercore|list')\"}
"
	wb plan img.yaml --json
	assert_status 0
	[ "$(jf '[i["key"] for i in J["images"]]')" = "['core', 'pause']" ]
	[ "$(jf 'J["image"]["pause_image"]')" = "$REG/pause:3.10" ]
	printf 'kind: override\nimages:\n  pause: {enabled: false}\n' >drop.yaml
	wb plan img.yaml --json -O drop.yaml
	assert_status 0
	[ "$(jf '[i["key"] for i in J["images"]]')" = "['core']" ]
	# the platform's default for Windows Server 2022 (lib/platform.c)
	[ "$(jf 'J["image"]["pause_image"]')" = registry.k8s.io/pause:3.10 ]
	wb fetch img.yaml -O drop.yaml --cacert "$CA/ca.crt"
	assert_status 0
	assert_output_has "fetched image core ($REG/windows/servercore@"
	! grep -q "fetched image pause" <<<"$output" || false
	# the artifact and servercore's list, manifest, config and 2 layers: no
	# blob of pause
	[ "$(find "$WINBUILD_CACHE/sha256" -type f | wc -l)" = 6 ]
	[ ! -f "$WINBUILD_CACHE/sha256/$(dg 'pause|list' | cut -c8-9)/$(dg 'pause|list' | cut -c8-)" ]
	# --set drops one as well, and true keeps it
	wb plan img.yaml --json --set images.core.enabled=false --set images.pause.enabled=true
	assert_status 0
	[ "$(jf '[i["key"] for i in J["images"]]')" = "['pause']" ]
	# an override may drop an image the recipe does not have; an enabled
	# entry still needs its name
	printf 'kind: override\nimages:\n  nano: {enabled: false}\n' >nonano.yaml
	wb plan img.yaml -O nonano.yaml
	assert_status 0
	printf 'kind: override\nimages:\n  nano: {tag: "1"}\n' >noname.yaml
	wb plan img.yaml -O noname.yaml
	assert_status 2
	assert_output_has "noname.yaml:3:3: missing required key 'name' in 'images.nano'"
}

@test "the image's vars expand in images.<key>.cosign and in mirrors: (a site or the demo names its signer, root and mirror once)" {
	root="$WB_SRC/recipes/trust/sigstore/trusted_root.json"
	recipe "" "vars: {signer: someone@example.com, root: \"$root\", reg_mirror: \"http://127.0.0.1:9\"}
images:
  pause:
    name: $REG/pause
    tag: \"3.10\"
    digest: \"$(dg 'pause|list')\"
    cosign: {identity: \"\${signer}\", issuer: \"https://issuer.\${windows_version}.example\", trusted_root: \"\${root}\"}
mirrors:
  - {from: \"https://$REG/\", to: \"\${reg_mirror}/r/\"}
"
	wb plan img.yaml --json
	assert_status 0
	[ "$(jf 'J["images"][0]["cosign"]["identity"]')" = someone@example.com ]
	[ "$(jf 'J["images"][0]["cosign"]["issuer"]')" = https://issuer.2022.example ]
	[ "$(jf 'J["images"][0]["cosign"]["trusted_root"]')" = "$root" ]
	[ "$(jf 'J["mirrors"][0]["to"]')" = http://127.0.0.1:9/r/ ]
	# an undefined variable is exit 2 at its value
	sed -i 's|\${signer}|${nobody}|' img.yaml
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:13:"
	assert_output_has "nobody"
}
