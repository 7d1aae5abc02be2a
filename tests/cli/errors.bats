#!/usr/bin/env bats
# issue 18 item 2: every schema error of a recipe at once (up to a cap),
# each with file:line:col, exit 2; did-you-mean for keys, options and
# component names.
load helpers

FIX="$BATS_TEST_DIRNAME/fixtures/plan"

setup() {
	common_setup
	cp -R "$FIX"/. "$WORK/"
}

# winbuild's error lines only ("winbuild: ..."), in order
error_lines() {
	grep '^winbuild: ' <<<"$output" | grep -v '^winbuild: warning' || true
}

@test "three schema mistakes in one file: all three, each with file:line:col, exit 2" {
	cat > three.yaml <<'Y'
kind: image
nmae: three
windows:
  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}
components:
  containerd: {}
policy:
  allow_http: maybe
node:
  cni: bridge
Y
	wb plan three.yaml
	assert_status 2
	assert_output_has "three.yaml:2:1: unknown key 'nmae' (did you mean 'name'?)"
	assert_output_has "three.yaml:8:15: 'policy.allow_http' must be true or false, not 'maybe'"
	assert_output_has "three.yaml:10:8: 'node.cni' must be one of none|nat, not 'bridge'"
	# and the missing name the misspelling caused, nothing more
	assert_output_has "missing required key 'name'"
	[ "$(error_lines | wc -l)" -eq 4 ]
	# every line names its place
	! error_lines | grep -vE '^winbuild: three\.yaml:[0-9]+:[0-9]+: ' || false
}

@test "a misspelt name beside an include: the missing key points at the recipe, not the fragment" {
	cat > frag.yaml <<'Y'
kind: image
components:
  containerd: {}
Y
	cat > top.yaml <<'Y'
kind: image
nmae: top
include:
  - frag.yaml
windows:
  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}
Y
	wb plan top.yaml
	assert_status 2
	assert_output_has "top.yaml:2:1: unknown key 'nmae' (did you mean 'name'?)"
	assert_output_has "top.yaml:1:1: missing required key 'name'"
	! grep -q "frag.yaml" <<<"$output" || false
}

@test "three mistakes in a component file are reported together" {
	sed -i 's/^vars:/varz:/; s/strip: 1/strip: one/; s/^    url:/    ulr:/' components/containerd.yaml
	wb plan img.yaml
	assert_status 2
	assert_output_has "components/containerd.yaml:4:1: unknown key 'components.containerd.varz' (did you mean 'components.containerd.vars'?)"
	assert_output_has "'components.containerd.artifacts.containerd.unpack.strip' must be a non-negative integer, not 'one'"
	assert_output_has "unknown key 'components.containerd.artifacts.containerd.ulr' (did you mean 'components.containerd.artifacts.containerd.url'?)"
	assert_output_has "missing required key 'url' in 'components.containerd.artifacts.containerd'"
}

@test "the image's component entries are checked with the rest of the file" {
	cat > two.yaml <<'Y'
kind: image
name: two
windows:
  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}
components:
  containerd: {verison: "1"}
packer: {builders: [qemu], paylod: upload}
Y
	wb plan two.yaml
	assert_status 2
	assert_output_has "two.yaml:6:16: unknown key 'components.containerd.verison' (did you mean 'components.containerd.version'?)"
	assert_output_has "two.yaml:7:28: unknown key 'packer.paylod' (did you mean 'packer.payload'?)"
}

@test "at most 20 errors are reported, then the rest is counted" {
	{
		printf 'kind: image\nname: many\nwindows:\n  {version: "2022", iso_sha256: %s}\ncomponents:\n  containerd: {}\n' "$TEST_ISO_SHA256"
		for i in $(seq 1 25); do printf 'junk_key_%02d: 1\n' "$i"; done
	} > many.yaml
	wb plan many.yaml
	assert_status 2
	[ "$(error_lines | grep -c "unknown key 'junk_key_")" -eq 20 ]
	assert_output_has "many.yaml:7:1: unknown key 'junk_key_01'"
	assert_output_has "many.yaml:26:1: unknown key 'junk_key_20'"
	assert_output_lacks "junk_key_21"
	assert_output_has "winbuild: 5 more errors not shown (at most 20 are reported)"
}

@test "an override file's mistakes are reported together, policy or not" {
	printf 'kind: override\npolicy: {require: signatures}\nmirors: []\n' > o.yaml
	wb plan img.yaml -O o.yaml
	assert_status 2
	assert_output_has "o.yaml:2:19: 'policy.require' must be one of digest|signature, not 'signatures'"
	assert_output_has "o.yaml:3:1: unknown key 'mirors' (did you mean 'mirrors'?)"
}

@test "did-you-mean for a --set key" {
	wb plan img.yaml --set windows.edtion=standard
	assert_status 2
	assert_output_has "--set #1: unknown key 'windows.edtion' (did you mean 'windows.edition'?)"
}

@test "an unknown component names itself, the nearest name and every valid name" {
	wb plan img.yaml --set components.contianerd.version=2.1.4
	assert_status 2
	assert_output_has "--set #1: unknown component 'contianerd' (did you mean 'containerd'?)"
	assert_output_has "valid names: containerd, kubernetes, nssm"
	# the shipped recipe, by name
	cd "$BATS_TEST_TMPDIR"
	wb plan windows-2022-containerd --set windows.iso_sha256=$TEST_ISO_SHA256 \
		--set components.contianerd.version=2.1.4
	assert_status 2
	assert_output_has "unknown component 'contianerd' (did you mean 'containerd'?)"
	# every component file the repository ships, sorted as `ls` does
	local names
	names=$(cd "$WB_SRC/recipes/components" && ls -- *.yaml | sed 's/\.yaml$//' | LC_ALL=C sort | paste -sd, - | sed 's/,/, /g')
	assert_output_has "valid names: $names"
	assert_output_lacks "not found"
}

@test "a far-off component name gets the list but no guess" {
	wb plan img.yaml --set components.zzzzzz.version=1
	assert_status 2
	assert_output_has "unknown component 'zzzzzz': no file"
	assert_output_lacks "did you mean"
}
