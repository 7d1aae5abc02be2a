#!/usr/bin/env bats
# Issue 41 item 2: policy only tightens, from the schema. Every key below
# the image's trust sections declares its direction (S_TRUST(dir) in
# builder/recipe/schema.c); tighten_only() in recipe/layers.c applies it
# to every layer: an override file, WINBUILD_SET, --set and a matrix
# variation's set. A site's layer sets the trust below; each later channel
# tries to loosen it and is refused (exit 2) naming the key and where the
# site set it.
load helpers

FIX="$BATS_TEST_DIRNAME/fixtures/plan"
TRUST_SECTIONS='^(policy|authenticode|site_signing|keys|mirrors|mirror_only|signatures|replace|images)(\.|\[|$)'

setup() {
	common_setup
	cp -R "$FIX"/. "$WORK/"
	cat >site.yaml <<-'EOF'
	kind: override
	mirrors:
	  - from: "https://github.com/"
	    to: "https://mirror.corp/gh/"
	  - from: "https://dl.k8s.io/"
	    to: "https://mirror.corp/k8s/"
	mirror_only: true
	replace:
	  kubelet:
	    url: https://mirror.corp/k8s/kubelet.exe
	    verify: {sha256: 2222222222222222222222222222222222222222222222222222222222222222}
	images:
	  pause:
	    name: registry.example/pause
	    tag: "3.10"
	    digest: sha256:3333333333333333333333333333333333333333333333333333333333333333
	    allow_foreign_layers: false
	    cosign: {identity: builder@example.com, issuer: https://accounts.google.com}
	EOF
}

# trust_keys SCHEMA_C: every leaf key below the trust sections of the image
# table without a declared direction; status 1 if any
trust_keys() {
	local bad=0 path typ flags
	while IFS=$'\t' read -r path typ flags; do
		[[ $path =~ $TRUST_SECTIONS ]] || continue
		if [[ $flags != *S_TRUST\(* ]]; then
			echo "$path: a trust key with no direction (S_TRUST) in schema.c"
			bad=1
		fi
	done < <(python3 "$WB_SRC/tests/lib/schema_keys.py" "$1" schema_image)
	return $bad
}

@test "i41.2: every key of the trust sections declares its direction; a new key without one fails this test" {
	run trust_keys "$WB_SRC/builder/recipe/schema.c"
	echo "$output"
	[ "$status" -eq 0 ]
	# not vacuous: the walk sees the trust sections' keys ...
	n=$(python3 "$WB_SRC/tests/lib/schema_keys.py" "$WB_SRC/builder/recipe/schema.c" schema_image |
		cut -f1 | grep -cE "$TRUST_SECTIONS")
	[ "$n" -gt 40 ]
	# ... and a key added to a trust table without a direction fails it
	sed 's|^\t{ "enabled", S_BOOL, NULL, NULL, S_TRUST(T_FREE) },|&\n\t{ "dummy_pin", S_STR, NULL, NULL, 0 },|' \
		"$WB_SRC/builder/recipe/schema.c" >schema-dummy.c
	grep -q dummy_pin schema-dummy.c
	run trust_keys schema-dummy.c
	[ "$status" -eq 1 ]
	[[ "$output" == *"images.*.dummy_pin: a trust key with no direction"* ]]
}

# loosen_all PAIR MESSAGE: PAIR (key=value, value ~ for null) from a later
# override, WINBUILD_SET, --set and a matrix variation: each refused
loosen_all() {
	local key=${1%%=*} val=${1#*=} yaml
	wb plan img.yaml -O site.yaml
	assert_status 0
	# an override file
	python3 - "$key" "$val" >loosen.yaml <<-'PY'
	import sys
	key, val = sys.argv[1].split('.'), sys.argv[2]
	print('kind: override')
	for i, k in enumerate(key[:-1]):
	    print('  ' * i + k + ':')
	print('  ' * (len(key) - 1) + key[-1] + ': ' + val)
	PY
	wb plan img.yaml -O site.yaml -O loosen.yaml
	assert_status 2
	assert_output_has "loosen.yaml:"
	assert_output_has "'$key' cannot be $2: that would loosen what site.yaml:"
	# WINBUILD_SET
	WINBUILD_SET="$1" wb plan img.yaml -O site.yaml
	assert_status 2
	assert_output_has "env WINBUILD_SET"
	assert_output_has "'$key' cannot be $2: that would loosen what site.yaml:"
	# --set
	wb plan img.yaml -O site.yaml --set "$1"
	assert_status 2
	assert_output_has "--set #1: '$key' cannot be $2: that would loosen what site.yaml:"
	# a matrix variation's set
	printf 'kind: matrix\nrecipes: [img.yaml]\nvariations:\n  - name: loose\n    set:\n      "%s": %s\n' \
		"$key" "$([ "$val" = '~' ] && echo '"~"' || echo "$val")" >m.yaml
	wb stage --matrix m.yaml -O site.yaml --no-progress
	assert_status 2
	assert_output_has "'$key' cannot be $2: that would loosen what site.yaml:"
	[ ! -e "$WINBUILD_CACHE" ]
}

@test "i41.2: an image's signing requirement cannot be dropped by any later layer" {
	loosen_all 'images.pause.cosign=~' 'unset (null)'
	loosen_all 'images.pause.cosign.identity=~' 'unset (null)'
}

@test "i41.2: an image's pin cannot be dropped by any later layer" {
	loosen_all 'images.pause.digest=~' 'unset (null)'
}

@test "i41.2: a replacement cannot be dropped by any later layer" {
	loosen_all 'replace.kubelet=~' 'unset (null)'
	loosen_all 'replace.kubelet.url=~' 'unset (null)'
}

@test "i41.2: the air gap cannot be turned off, foreign layers cannot be turned on" {
	loosen_all 'mirror_only=false' 'turned off'
	loosen_all 'images.pause.allow_foreign_layers=true' 'turned on'
}

@test "i41.2: tightening from a later layer still works" {
	# a new image, a pin changed, a flag turned on, a replacement added
	wb plan img.yaml -O site.yaml --set images.pause.digest=sha256:4444444444444444444444444444444444444444444444444444444444444444 \
		--set replace.containerd.url=https://mirror.corp/gh/c.tar.gz \
		--set replace.containerd.verify.sha256=5555555555555555555555555555555555555555555555555555555555555555
	assert_status 0
	printf 'kind: override\nmirror_only: false\n' >loose-first.yaml
	wb plan img.yaml -O loose-first.yaml -O site.yaml
	assert_status 0
	# an image dropped altogether pulls nothing
	wb plan img.yaml -O site.yaml --set images.pause.enabled=false
	assert_status 0
}

# component_trust_keys: every leaf below components.* whose direction is
# declared (S_TRUST, not T_FREE), '*' made the fixture's containerd artifact
component_trust_keys() {
	python3 "$WB_SRC/tests/lib/schema_keys.py" "$WB_SRC/builder/recipe/schema.c" schema_image |
		awk -F'\t' '$1 ~ /^components\./ && $3 ~ /S_TRUST\(/ && $3 !~ /T_FREE/ {print $1}' |
		sed -e 's/^components\.\*\.artifacts\.\*\./components.containerd.artifacts.containerd./' \
			-e 's/^components\.\*\./components.containerd./' -e 's/\.\*\./.x./g'
}

@test "i41.2: no later layer unsets a component's trust key (verify, credential, authenticode): each schema leaf with a direction, from --set" {
	run component_trust_keys
	[ "$status" -eq 0 ]
	keys=$output
	# not vacuous: the walk sees the artifact's verify keys, its
	# credential and the component's authenticode policy
	[ "$(grep -c . <<<"$keys")" -gt 30 ]
	grep -qx 'components.containerd.artifacts.containerd.credential' <<<"$keys"
	grep -q '^components.containerd.authenticode\.' <<<"$keys"
	while read -r k; do
		wb plan img.yaml --set "$k=~"
		[ "$status" -eq 2 ] || { echo "$k: exit $status: $output"; return 1; }
		assert_output_has "'$k' cannot be unset (null): that would loosen"
	done <<<"$keys"
	# (verify.cosign.rekor is T_FREE and stays free: plan.bats "null unsets")
	# an ordinary component key is still unset by null
	wb plan img.yaml --set 'components.containerd.description=~'
	assert_status 0
}
