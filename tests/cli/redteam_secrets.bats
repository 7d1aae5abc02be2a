#!/usr/bin/env bats
# Red team, issue 25 class 7: secrets at rest and payload integrity.
#   - the three files holding the ISO builders' one-off Administrator
#     password (answer/{bios,uefi}/Autounattend.xml,
#     iso-admin.auto.pkrvars.hcl) are the user's alone: 0600 in 0700
#     directories, created so, whatever the umask; another local user who
#     reads out/ finds nothing to log in with;
#   - everything step 02 copies from the payload into the image is pinned
#     by a digest rendered into the script: the manifest (and through it
#     every file) and the SBOM too; a swapped SBOM on the CD is refused.
# Every case checks the exit code, what landed and that the previous good
# output is intact.
load helpers

recipe() { echo "$WB_SRC/recipes/windows-$1-containerd.yaml"; }
PK=out/windows-2022-containerd/packer
S02=$PK/scripts/02-payload.ps1

staged() {
	python3 "$WB_SRC/tests/cli/fixtures/emit/make-staged.py" out "$@"
}

mode() { stat -c %a "$1"; }

emit_iso() {
	wb emit "$(recipe 2022)" --builder qemu --builder hyperv-iso \
		--set "windows.iso_sha256=$TEST_ISO_SHA256" --set images.pause.enabled=false "$@"
}

secrets() {
	echo "$PK/answer/bios/Autounattend.xml"
	echo "$PK/answer/uefi/Autounattend.xml"
	echo "$PK/iso-admin.auto.pkrvars.hcl"
}

@test "c25.7: with umask 000 the password files are still 0600 in 0700 directories; the rest stays 0644" {
	staged windows-2022-containerd 2022
	umask 000
	emit_iso
	assert_status 0
	for f in $(secrets); do
		[ "$(mode "$f")" = 600 ] || { echo "$f: $(mode "$f")" >&2; return 1; }
		grep -q "$(grep -o 'iso_admin_password = "[^"]*"' "$PK/iso-admin.auto.pkrvars.hcl" | cut -d'"' -f2)" "$f"
	done
	for d in "$PK/answer/bios" "$PK/answer/uefi" "$PK/answer"; do
		[ "$(mode "$d")" = 700 ] || { echo "$d: $(mode "$d")" >&2; return 1; }
	done
	# not a blanket 0600: what Packer and the user share stays readable
	[ "$(mode "$PK/windows-2022-containerd.pkr.hcl")" = 644 ]
	[ "$(mode "$S02")" = 644 ]
	# no temp file left beside them
	[ -z "$(find "$PK" -name '*.tmp.*')" ]
}

@test "c25.7: a re-emit over a world-readable earlier output leaves no readable password behind" {
	staged windows-2022-containerd 2022
	emit_iso
	assert_status 0
	old=$(cat "$PK/iso-admin.auto.pkrvars.hcl")
	# an earlier winbuild (or a careless copy) left them world-readable
	chmod 644 $(secrets)
	chmod 755 "$PK/answer" "$PK/answer/bios" "$PK/answer/uefi"
	umask 022
	emit_iso
	assert_status 0
	for f in $(secrets); do
		[ "$(mode "$f")" = 600 ] || { echo "$f: $(mode "$f")" >&2; return 1; }
	done
	[ "$(mode "$PK/answer/uefi")" = 700 ]
	# a new one-off password, the old one nowhere under out/
	[ "$(cat "$PK/iso-admin.auto.pkrvars.hcl")" != "$old" ]
	pw=$(echo "$old" | grep -o 'iso_admin_password = "[^"]*"' | cut -d'"' -f2)
	[ -n "$pw" ]
	! grep -rqF "$pw" out || false
}

@test "c25.7: step 02 copies the SBOM only when it has the digest winbuild pinned; a swapped SBOM is refused" {
	staged windows-2022-containerd 2022 --sbom
	emit_iso
	assert_status 0
	want=$(sha256sum out/windows-2022-containerd/sbom.cdx.json | cut -c1-64)
	grep -qx "\$SbomSha256 = '$want'" "$S02"
	# the SBOM is on the CD beside the manifest
	grep -q '"${path.root}/../sbom.cdx.json"' "$PK/windows-2022-containerd.pkr.hcl"
	# in the script, the copy is reached only through the digest check
	python3 - "$S02" <<-'PY'
		import re, sys
		s = open(sys.argv[1]).read()
		copies = [m.start() for m in re.finditer(r"Copy-Item -LiteralPath \$sbom ", s)]
		assert len(copies) == 1, copies
		check = s.index("if ($sbomSha -ne $SbomSha256) {")
		guard = s.index("if ($SbomSha256 -ne '' -and (Test-Path -LiteralPath $sbom -PathType Leaf)) {")
		assert guard < s.index("$sbomSha = Get-Sha256 $sbom") < check < copies[0], s
		assert 'throw "payload SBOM has sha256 $sbomSha, expected $SbomSha256"' in s
	PY
	# an attacker who swaps the SBOM on the CD changes its digest: the pin
	# no longer matches (what the check in the VM refuses)
	printf '{"bomFormat": "CycloneDX", "components": []}\n' >out/windows-2022-containerd/sbom.cdx.json
	[ "$(sha256sum out/windows-2022-containerd/sbom.cdx.json | cut -c1-64)" != "$want" ]
	grep -qx "\$SbomSha256 = '$want'" "$S02"
	# no SBOM staged: nothing pinned, nothing copied
	rm -rf out
	staged windows-2022-containerd 2022
	emit_iso
	assert_status 0
	grep -qx "\$SbomSha256 = ''" "$S02"
	! grep -q 'sbom.cdx.json"' "$PK/windows-2022-containerd.pkr.hcl" || false
}
