#!/usr/bin/env bats
# Issue 33 (d3): the shipped images pre-pull the pause image of their
# Windows version (images.pause in recipes/common/containerd-node.yaml,
# 3.10.2 for 2025), shipped needs_pin with the Kubernetes promoter as its
# signer. Here registry.k8s.io is a mirror rule to make demo's stand-in
# (tests/demo/pause.py) served as a static registry tree by nginx over
# plain http, signed in a test world (stage_fixtures.bash's
# make_pause_mirror); every artifact comes from the stage fixtures.
load helpers
load ../lib/servers
load stage_fixtures

SIGNER=pause-signer@winbuild.invalid
ISSUER=https://oidc.winbuild.invalid

setup_file() {
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	make_pause_mirror "$SIGNER" "$ISSUER"
	WB_NGINX_INCLUDE="$PAUSE_INCLUDE" start_nginx "$WWW"
}

teardown_file() { stop_servers; }

setup() {
	fixture_setup
	export WINBUILD_SET="windows.iso_sha256=$TEST_ISO_SHA256"
}

R="$WB_SRC/recipes"
lk() { python3 -c 'import json,sys; L=json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"; }
jf() { python3 -c 'import json,sys; J=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$output"; }

@test "the shipped images pre-pull pause:3.10 (3.10.2 on 2025), needs_pin, signed by the promoter; fetch refuses it until pinned" {
	for v in 2019 2022 2025; do
		tag=3.10
		[ "$v" = 2025 ] && tag=3.10.2
		wb plan "$R/windows-$v-containerd.yaml" --json
		assert_status 0
		[ "$(jf '[i["key"] for i in J["images"]]')" = "['pause']" ]
		[ "$(jf 'J["images"][0]["name"] + ":" + J["images"][0]["tag"]')" = "registry.k8s.io/pause:$tag" ]
		[ "$(jf 'J["images"][0]["digest"]')" = None ]
		[ "$(jf 'J["images"][0]["cosign"]["identity"]')" = krel-trust@k8s-releng-prod.iam.gserviceaccount.com ]
		[ "$(jf 'J["images"][0]["cosign"]["issuer"]')" = https://accounts.google.com ]
		# containerd's sandbox image is the pre-pulled one
		[ "$(jf 'J["image"]["pause_image"]')" = "registry.k8s.io/pause:$tag" ]
		wb plan "$R/windows-$v-containerd.yaml"
		assert_output_has "container image pause: registry.k8s.io/pause:$tag NOT PINNED (needs_pin: winbuild ships no digest"
		# dropped: the platform's default names the same image, not pulled
		wb plan "$R/windows-$v-containerd.yaml" --json --set images.pause.enabled=false
		assert_status 0
		[ "$(jf 'J.get("images", [])')" = "[]" ]
		[ "$(jf 'J["image"]["pause_image"]')" = "registry.k8s.io/pause:$tag" ]
	done
	# not pinned: fetch refuses before any request
	wb fetch "$R/windows-2022-containerd.yaml" -O fixtures.yaml --set images.pause.enabled=true
	assert_status 2
	assert_output_has "images.pause: 'registry.k8s.io/pause:3.10' is not pinned (needs_pin: winbuild ships no digest"
	assert_output_has "lock --accept-new"
	! grep -q "/registry.k8s.io/" "$NGINX_LOG" || false
}

@test "lock --accept-new pins the shipped pause from a registry mirror, after its signature verifies; the build stages it for 06-images" {
	pause_override "$SIGNER" "$ISSUER" >pause.yaml
	# the wrong signer: exit 1, no lock
	wb lock "$R/windows-2025-containerd.yaml" -O fixtures.yaml -O pause.yaml --accept-new \
		--lock l2025.lock --set images.pause.cosign.identity=someone@example.com
	assert_status 1
	assert_output_has "is not 'someone@example.com'"
	[ ! -f l2025.lock ]
	for v in 2022 2025; do
		want=$PAUSE_310
		[ "$v" = 2025 ] && want=$PAUSE_3102
		wb lock "$R/windows-$v-containerd.yaml" -O fixtures.yaml -O pause.yaml --accept-new --lock "l$v.lock"
		assert_status 0
		assert_output_has "pinned image pause: registry.k8s.io/pause:"
		[ "$(lk 'L["images"]["pause"]["digest"]' "l$v.lock")" = "$want" ]
		[ "$(lk 'L["images"]["pause"]["accepted_new"]' "l$v.lock")" = True ]
		[ "$(lk 'L["images"]["pause"]["cosign"]["identity"]' "l$v.lock")" = "$SIGNER" ]
	done
	# from now on the lock's pin: built offline and --locked, staged as the
	# tar step 06-images imports
	wb build "$R/windows-2025-containerd.yaml" -O fixtures.yaml -O pause.yaml --lock l2025.lock \
		--offline --locked --no-progress
	assert_status 0
	[ -f out/windows-2025-containerd/tree/ProgramData/winbuild/images/pause.tar ]
	[ -f out/windows-2025-containerd/packer/scripts/06-images.ps1 ]
	python3 - out/windows-2025-containerd/manifest.json "$PAUSE_3102" <<-'PY'
		import json, sys
		m = json.load(open(sys.argv[1]))
		(i,) = [i for i in m["images"] if i["key"] == "pause"] if isinstance(m["images"], list) else [m["images"]["pause"]]
		assert sys.argv[2] in json.dumps(i), i
		assert "10.0.26100" in json.dumps(i), i
	PY
	# requests went to the mirror, over plain http (policy.allow_http)
	grep -q "GET /registry.k8s.io/v2/pause/manifests/sha256-${PAUSE_3102#sha256:}.sig" "$NGINX_LOG"
}
