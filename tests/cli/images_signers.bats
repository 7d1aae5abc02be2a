#!/usr/bin/env bats
# Issue 44 item 1: the default cosign signer of a registry's images is data
# (recipes/trust/image-signers.yaml), shown by plan at its file:line, never
# a string in winbuild's C.
load helpers
load ../lib/registry

K8S_SIGNER=krel-trust@k8s-releng-prod.iam.gserviceaccount.com
K8S_ISSUER=https://accounts.google.com
D=sha256:1111111111111111111111111111111111111111111111111111111111111111

jf() { python3 -c 'import json,sys; J=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$output"; }

# a data dir whose recipes/trust/image-signers.yaml is stdin
data_dir() {
	mkdir -p "$WORK/data/recipes"
	ln -s "$WB_SRC/packer" "$WORK/data/packer"
	cp -r "$WB_SRC/recipes/trust" "$WORK/data/recipes/trust"
	cat >"$WORK/data/recipes/trust/image-signers.yaml"
	export WINBUILD_DATA_DIR="$WORK/data"
}

@test "image signers: the promoter's identity and issuer are nowhere in builder/" {
	run grep -rn -e "$K8S_SIGNER" -e 'accounts\.google\.com' -e 'k8s-releng-prod' "$WB_SRC/builder"
	[ "$status" = 1 ] || { echo "$output"; false; }
	grep -q "identity: $K8S_SIGNER" "$WB_SRC/recipes/trust/image-signers.yaml"
}

@test "image signers: plan shows a registry.k8s.io image's default signer at its line in the shipped data" {
	img_recipe <<-YAML
		  pause: {name: registry.k8s.io/pause, tag: "3.10", digest: "$D"}
	YAML
	wb plan img.yaml
	assert_status 0
	line=$(grep -n "identity: $K8S_SIGNER" "$WB_SRC/recipes/trust/image-signers.yaml" | cut -d: -f1)
	assert_output_has "cosign $K8S_SIGNER ($K8S_ISSUER), the registry.k8s.io signer ($WB_SRC/recipes/trust/image-signers.yaml:$((line - 1)):"
	wb plan img.yaml --json
	assert_status 0
	[ "$(jf 'J["images"][0]["cosign"]["default_from"].split(":")[1]')" = "$((line - 1))" ]
}

@test "image signers: the data decides: another signer file names another signer, an image's own cosign wins" {
	data_dir <<-YAML
		kind: image-signers
		signers:
		  - registry: example.test/
		    identity: site@example.test
		    issuer: https://issuer.example.test
	YAML
	img_recipe <<-YAML
		  a: {name: example.test/a, digest: "$D"}
		  b: {name: example.test/b, digest: "$D", cosign: {identity: me@x.test, issuer: https://x.test}}
		  pause: {name: registry.k8s.io/pause, tag: "3.10", digest: "$D"}
	YAML
	wb plan img.yaml
	assert_status 0
	assert_output_has "container image a: example.test/a@$D; cosign site@example.test (https://issuer.example.test), the example.test signer ($WORK/data/recipes/trust/image-signers.yaml:3:"
	assert_output_has "container image b: example.test/b@$D; cosign me@x.test (https://x.test)"
	assert_output_lacks "container image b: example.test/b@$D; cosign me@x.test (https://x.test), the"
	# registry.k8s.io is not in this file: nothing defaults it
	assert_output_has "container image pause: registry.k8s.io/pause:3.10@$D; NO signature required"
}

@test "image signers: a signer entry without an issuer is exit 2 at its line" {
	data_dir <<-YAML
		kind: image-signers
		signers:
		  - registry: example.test/
		    identity: site@example.test
	YAML
	img_recipe <<-YAML
		  a: {name: example.test/a, digest: "$D"}
	YAML
	wb plan img.yaml
	assert_status 2
	assert_output_has "$WORK/data/recipes/trust/image-signers.yaml:3:"
	assert_output_has "a signer needs 'registry', 'identity' and 'issuer'"
}
