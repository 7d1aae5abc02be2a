#!/usr/bin/env bats
# windows.updates (issue 32 items 2-4, docs/updates.md): Windows updates as
# artifacts of the synthetic component windows-updates, verified on the
# build host at fetch time (the Catalog's SHA-1, the SHA-256 pin or the
# lock's, the embedded Authenticode signature) before anything is cached,
# staged under C:\ProgramData\winbuild\updates in install order.
# Fixtures: tests/lib/updates.bash (gcab .msu files signed by the test CA
# of tests/lib/authenticode.bash), served by loopback nginx.
load helpers
load ../lib/servers
load ../lib/authenticode
load ../lib/updates

setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	(upd_make_fixtures "$FX") >"$BATS_FILE_TMPDIR/fixtures.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/fixtures.log" >&2
		return 1
	}
	start_nginx "$FX/www"
	export UPD_BASE="http://127.0.0.1:$NGINX_PORT"
}

teardown_file() { stop_servers; }

setup() {
	common_setup
	# shellcheck disable=SC1091
	source "$FX/upd.env"
	unset CU_PIN CU_SHA1X CU_PUB CU_PATH
	upd_recipe "$WORK/img.yaml"
}

# cached SHA256: the cache holds an entry for these bytes
cached() {
	[ -f "$WINBUILD_CACHE/sha256/${1:0:2}/$1" ]
}

# no_update_cached: no entry of KB5050009's bytes (good, tampered or
# other-signed), and no temp file left
no_update_cached() {
	local f
	for f in "$FX/kb5050009.msu" "$FX/tampered-kb5050009.msu" "$FX/other-kb5050009.msu"; do
		! cached "$(sha256sum "$f" | cut -d' ' -f1)" || { echo "cached: $f" >&2; return 1; }
	done
	[ -z "$(find "$WINBUILD_CACHE/tmp" -type f 2>/dev/null)" ]
}

# refused_with_own_sha1 FIXTURE NAME: $FX/FIXTURE served as updates/NAME
# for KB5050009, the recipe naming its own SHA-1 (so only its signature can
# refuse it): lock --accept-new exits 1 and nothing is cached
refused_with_own_sha1() {
	cp "$FX/$1" "$FX/www/updates/$2"
	CU_PATH=updates/$2 CU_SHA1X=$(sha1sum "$FX/$1" | cut -d' ' -f1) upd_recipe "$WORK/img.yaml"
	wb lock img.yaml --accept-new --no-progress
	assert_status 1
	no_update_cached
}

@test "plan: updates in install order (checkpoint first), each an artifact of windows-updates with its sha1, pin and authenticode" {
	wb plan img.yaml
	assert_status 0
	assert_output_has "windows update 1: KB5043080 (artifact kb5043080), checkpoint"
	assert_output_has "windows update 2: KB5050009 (artifact kb5050009), then build 26100.2894"
	assert_output_has "kb5043080  (component windows-updates 2025)"
	assert_output_has "verify:  sha1 $CP_SHA1 (the Update Catalog's file name)"
	assert_output_has "verify:  authenticode (embedded)"
	assert_output_has "publisher O=Example Corp,CN=Example Code Signing"
	assert_output_has 'install: to C:\ProgramData\winbuild\updates\01-kb5043080.msu'
	assert_output_has 'install: to C:\ProgramData\winbuild\updates\02-kb5050009.msu'
	# the month's update keeps needs_pin although a signature verifies it
	assert_output_has "NEEDS PIN: the Update Catalog publishes no SHA-256"
	"$WINBUILD" plan img.yaml --json >plan.json
	jq -e '[.updates[] | .kb] == ["KB5043080", "KB5050009"] and .updates[0].checkpoint
		and .updates[1].expect_build == "26100.2894"
		and (.artifacts[] | select(.name == "kb5050009") | .verify.sha1) == "'"$CU_SHA1"'"' plan.json
}

@test "recipe errors name file:line:col and exit 2: kb, sha1, pin, file type, Catalog name, expect_build, replace.verify" {
	sed -i 's/- kb: KB5050009/- kb: 5050009/' img.yaml
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:7:11: windows.updates[].kb '5050009' is not KB and 6 to 8 digits"
	upd_recipe "$WORK/img.yaml"
	CU_SHA1X=abc upd_recipe "$WORK/img.yaml"
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:9:13: windows.updates KB5050009: 'sha1' must be 40 hex digits"
	# a sha1 that is not the one the Catalog's file name names
	CU_SHA1X=$CP_SHA1 upd_recipe "$WORK/img.yaml"
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:9:13: windows.updates KB5050009: 'sha1' is $CP_SHA1, but the file name"
	assert_output_has "names $CU_SHA1"
	CU_PIN='checkpoint: false' upd_recipe "$WORK/img.yaml"
	wb plan img.yaml
	assert_status 2
	assert_output_has "img.yaml:7"
	assert_output_has "needs 'sha256' (a pin) or 'needs_pin'"
	CU_PATH=updates/x.exe upd_recipe "$WORK/img.yaml"
	wb plan img.yaml
	assert_status 2
	assert_output_has "is not an .msu or .cab file"
	# expect_build only on the last update installed
	upd_recipe "$WORK/img.yaml"
	sed -i 's/      checkpoint: true/      checkpoint: true\n      expect_build: "26100.1"/' img.yaml
	wb plan img.yaml
	assert_status 2
	assert_output_has "only the last update installed (KB5050009) may say expect_build"
	upd_recipe "$WORK/img.yaml"
	printf 'kind: override\nreplace:\n  kb5050009: {verify: {sha256: %s}}\n' "$CU_SHA256" >r.yaml
	wb plan img.yaml -O r.yaml
	assert_status 2
	assert_output_has "r.yaml:3:23: "
	assert_output_has "'replace.kb5050009.verify': an update is verified by its windows.updates entry"
	# an unknown key in an entry
	upd_recipe "$WORK/img.yaml"
	sed -i 's/      checkpoint: true/      checkpoint: true\n      chekpoint: true/' img.yaml
	wb plan img.yaml
	assert_status 2
	assert_output_has "chekpoint"
}

@test "an override's windows_versions block lists updates for one Windows version only" {
	upd_recipe "$WORK/img.yaml"
	python3 - img.yaml <<-'PY'
	import re, sys
	t = open(sys.argv[1]).read()
	start = t.index("  updates:\n"); end = t.index("components:\n")
	block = t[start:end]
	open(sys.argv[1], "w").write(t[:start] + t[end:])
	ov = "kind: override\nwindows_versions:\n  \"2025\":\n    windows:\n" + \
	     "".join("    " + l + "\n" for l in block.splitlines())
	open("upd.yaml", "w").write(ov)
	PY
	wb plan img.yaml -O upd.yaml
	assert_status 0
	assert_output_has "windows update 1: KB5043080"
	sed -i 's/version: "2025"/version: "2022"/' img.yaml
	wb plan img.yaml -O upd.yaml
	assert_status 0
	assert_output_lacks "windows update"
	assert_output_lacks "kb5050009"
}

@test "fetch: needs_pin is refused until lock --accept-new pins it, and only after its Authenticode signature verified" {
	wb fetch img.yaml --no-progress
	assert_status 2
	assert_output_has "artifact 'kb5050009' cannot be verified: the Update Catalog publishes no SHA-256; pin it with 'winbuild lock --accept-new'"
	wb lock img.yaml --accept-new --no-progress
	assert_status 0
	assert_output_has "pinned kb5050009: sha256 $CU_SHA256"
	jq -e '.artifacts.kb5050009 | .sha256 == "'"$CU_SHA256"'" and .verified_by.accepted_new
		and .verified_by.authenticode.signer == "O=Example Corp,CN=Example Code Signing"
		and (.verified_by.authenticode | has("url") | not)' upd.lock
	cached "$CU_SHA256"
	cached "$CP_SHA256"
	# the lock's pin now verifies it, the signature is checked again on the hit
	wb fetch img.yaml --locked --no-progress
	assert_status 0
	assert_output_has "kb5050009 (1.9 KiB, sha256 ${CU_SHA256:0:16}..., authenticode signer 'O=Example Corp,CN=Example Code Signing'; lock pin)"
}

@test "a wrong publisher stops lock --accept-new and the fetch: exit 1, nothing cached, no lock" {
	CU_PUB='CN=Someone Else' upd_recipe "$WORK/img.yaml"
	wb lock img.yaml --accept-new --no-progress
	assert_status 1
	assert_output_has "artifact 'kb5050009' from '$UPD_BASE/$CU_URLPATH': authenticode:"
	assert_output_has "signer 'O=Example Corp,CN=Example Code Signing'"
	assert_output_has "is not an allowed publisher"
	assert_output_has "lock file 'upd.lock' not written"
	[ ! -e upd.lock ]
	no_update_cached
	# pinned by sha256, the publisher still decides
	CU_PUB='CN=Someone Else' CU_PIN="sha256: $CU_SHA256" upd_recipe "$WORK/img.yaml"
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "is not an allowed publisher"
	no_update_cached
}

@test "a wrong SHA-1 stops the fetch: exit 1 naming URL, expected and actual, nothing cached" {
	bad=0000000000000000000000000000000000000000
	cp "$FX/kb5050009.msu" "$FX/www/updates/windows11.0-kb5050009-x64_$bad.msu"
	CU_PATH="updates/windows11.0-kb5050009-x64_$bad.msu" CU_SHA1X=$bad \
		CU_PIN="sha256: $CU_SHA256" upd_recipe "$WORK/img.yaml"
	wb fetch img.yaml --no-progress
	assert_status 1
	assert_output_has "artifact 'kb5050009' from '$UPD_BASE/updates/windows11.0-kb5050009-x64_$bad.msu' did not verify: sha1 (from the Update Catalog's file name) mismatch"
	assert_output_has "expected $bad"
	assert_output_has "actual   $CU_SHA1"
	no_update_cached
}

@test "a tampered MSU stops the fetch: exit 1 by its SHA-1, and by its signature when the SHA-1 is the tampered file's" {
	cp "$FX/tampered-kb5050009.msu" "$FX/www/updates/t.msu"
	CU_PATH=updates/t.msu upd_recipe "$WORK/img.yaml"
	wb lock img.yaml --accept-new --no-progress
	assert_status 1
	assert_output_has "sha1 (from the Update Catalog's file name) mismatch"
	no_update_cached
	refused_with_own_sha1 tampered-kb5050009.msu t.msu
	assert_output_has "authenticode: 't.msu': cabinet hash does not match the signed digest"
	[ ! -e upd.lock ]
}

@test "an MSU signed under another root stops the fetch: exit 1, nothing cached" {
	refused_with_own_sha1 other-kb5050009.msu o.msu
	assert_output_has "signer 'CN=Other CA Signer' does not chain to a trusted root"
}

@test "a cache entry whose signature no longer verifies under the recipe is not used: the hit checks Authenticode again" {
	wb lock img.yaml --accept-new --no-progress
	assert_status 0
	CU_PUB='CN=Someone Else' upd_recipe "$WORK/img.yaml"
	wb fetch img.yaml --locked --no-progress
	assert_status 1
	assert_output_has "is not an allowed publisher"
}

@test "stage places the updates under C:\\ProgramData\\winbuild\\updates in install order; the manifest records their signer" {
	wb lock img.yaml --accept-new --no-progress
	assert_status 0
	wb stage img.yaml --locked -o out --no-progress
	assert_status 0
	T=out/upd/tree/ProgramData/winbuild/updates
	cmp "$T/01-kb5043080.msu" "$FX/kb5043080.msu"
	cmp "$T/02-kb5050009.msu" "$FX/kb5050009.msu"
	[ "$(ls "$T")" = "$(printf '01-kb5043080.msu\n02-kb5050009.msu')" ]
	jq -e '[.files[] | select(.artifact == "kb5050009")][0].sha256 == "'"$CU_SHA256"'"' out/upd/manifest.json
	jq -e '[.components[] | select(.name == "kb5050009")] | length == 1' out/upd/sbom.cdx.json
}

@test "winbuild mirror exports the updates, and fetch --locked from the mirror then --offline --locked carry them" {
	wb lock img.yaml --accept-new --no-progress
	assert_status 0
	wb mirror img.yaml M --locked --no-progress
	assert_status 0
	f=$(find M -name "windows11.0-kb5050009-x64_$CU_SHA1.msu")
	[ -n "$f" ]
	cmp "$f" "$FX/kb5050009.msu"
	d=${f%/updates/*}
	# the mirror first, upstream after it (a --locked plan keeps the
	# lock's upstream URL); the log shows upstream is never asked
	printf 'kind: override\nmirrors:\n  - {from: "%s/", to: "file://%s/%s/"}\n' \
		"$UPD_BASE" "$WORK" "$d" >air.yaml
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	before=$(wc -l <"$NGINX_LOG")
	wb fetch img.yaml -O air.yaml --locked --no-progress
	assert_status 0
	assert_output_has "fetched kb5050009"
	cached "$CU_SHA256"
	wb fetch img.yaml -O air.yaml --offline --locked --no-progress
	assert_status 0
	assert_output_has "cached  kb5050009"
	assert_output_has "authenticode signer 'O=Example Corp,CN=Example Code Signing'"
	# upstream never asked
	[ "$(wc -l <"$NGINX_LOG")" -eq "$before" ]
}

@test "build emits the update step: a provisioner per update in install order, a windows-restart after each, the check last; packer validates; the script parses and passes the 5.1 lint" {
	wb lock img.yaml --accept-new --no-progress
	assert_status 0
	sed -i 's/      checkpoint: true/      checkpoint: true\n      must_apply: true/' img.yaml
	wb build img.yaml --locked -o out --builder qemu --no-progress
	assert_status 0
	P=out/upd/packer
	grep -E 'WINBUILD_UPDATE=|provisioner "windows-restart"|scripts/(0[0-8])' "$P/upd.pkr.hcl" |
		sed -E 's/^ *//; s/^execute_command .*(WINBUILD_UPDATE=[^;]*);.*/\1/' >hcl.txt
	# (issue 40: after 02-payload, before the services' steps)
	grep -A5 'scripts/02-payload' hcl.txt | tail -n 5 >tail.txt
	diff -u - tail.txt <<-'EOF2'
	WINBUILD_UPDATE='1'
	provisioner "windows-restart" {
	WINBUILD_UPDATE='2'
	provisioner "windows-restart" {
	WINBUILD_UPDATE='check'
	EOF2
	S=$P/scripts/09-updates.ps1
	grep -qxF "\$Updates = @(@{ kb = 'KB5043080'; file = 'C:\\ProgramData\\winbuild\\updates\\01-kb5043080.msu'; must_apply = 1 }, @{ kb = 'KB5050009'; file = 'C:\\ProgramData\\winbuild\\updates\\02-kb5050009.msu'; must_apply = 0 })" "$S"
	grep -qxF "\$ExpectBuild = '26100.2894'" "$S"
	need_dep command -v packer -- "packer not installed (make deps)"
	(cd "$P" && CHECKPOINT_DISABLE=1 packer validate . && packer fmt -check .)
	if [ -d "$WB_SRC/tests/ps/node_modules/web-tree-sitter" ]; then
		node "$WB_SRC/tests/ps/psparse.cjs" "$S"
		node "$WB_SRC/tests/ps/lint51.cjs" "$S"
	fi
	# no updates, no step
	sed -i '/^  updates:/,/^components:/{/^components:/!d}' img.yaml
	wb build img.yaml -o out2 --builder qemu --no-progress
	assert_status 0
	[ ! -e out2/upd/packer/scripts/09-updates.ps1 ]
	! grep -q WINBUILD_UPDATE out2/upd/packer/upd.pkr.hcl || false
}

@test "issue 40: every update and its windows-restart run after 02-payload and before any step that registers a service (03-05), so no service starts at a restart" {
	wb lock img.yaml --accept-new --no-progress
	assert_status 0
	wb build img.yaml --locked -o out --builder qemu --no-progress
	assert_status 0
	# the provisioners in Packer's order: the first restart (after 01's
	# features) excepted, every restart is an update's, after the payload
	# and before the services' steps
	sed -n '/^build {/,$p' out/upd/packer/upd.pkr.hcl |
		grep -E 'provisioner "windows-restart"|WINBUILD_UPDATE=|scripts/0[2-8]' |
		sed -E "s/^.*(windows-restart|WINBUILD_UPDATE='[a-z0-9]*'|0[2-8]-[a-z-]*).*/\\1/" >order.txt
	diff -u - order.txt <<-'EOF2'
	windows-restart
	02-payload
	WINBUILD_UPDATE='1'
	windows-restart
	WINBUILD_UPDATE='2'
	windows-restart
	WINBUILD_UPDATE='check'
	03-cloudbase-init
	04-containerd
	05-services
	06-cni
	07-provenance
	08-sysprep
	EOF2
}

@test "urls are tried in order, and replace.<kb>.url takes the site's copy, verified the same way" {
	CU_PIN="sha256: $CU_SHA256" upd_recipe "$WORK/img.yaml"
	sed -i "s|      url: $UPD_BASE/$CU_URLPATH|      urls: [\"$UPD_BASE/updates/gone_$CU_SHA1.msu\", \"$UPD_BASE/$CU_URLPATH\"]|" img.yaml
	grep -q 'urls: \[' img.yaml
	wb fetch img.yaml --no-progress
	assert_status 0
	assert_output_has "fetched kb5050009"
	grep -q "GET /updates/gone_$CU_SHA1.msu HTTP/1.1\" 404" "$NGINX_LOG"
	mkdir -p site
	cp "$FX/kb5050009.msu" site/kb5050009.msu
	printf 'kind: override\nreplace:\n  kb5050009: {url: "file://%s/site/kb5050009.msu"}\n' "$WORK" >site.yaml
	wb plan img.yaml -O site.yaml
	assert_status 0
	assert_output_has "1. file://$WORK/site/kb5050009.msu"
	assert_output_has "replaced by an override"
	assert_output_lacks "gone_"
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache2"
	wb fetch img.yaml -O site.yaml --no-progress
	assert_status 0
	# the site's copy tampered: the entry's pins still stop it
	printf 'x' >>site/kb5050009.msu
	export WINBUILD_CACHE="$BATS_TEST_TMPDIR/cache3"
	wb fetch img.yaml -O site.yaml --no-progress
	assert_status 1
	assert_output_has "from 'file://$WORK/site/kb5050009.msu' did not verify: sha256 (pinned in the recipe) mismatch"
}
