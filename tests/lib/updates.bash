# Windows update fixtures (docs/updates.md), made at test time from
# tests/lib/authenticode.bash's test PKI helpers (load that first):
#   upd_make_fixtures DIR
# writes in DIR a test PKI (ca.pem; cs: O=Example Corp, CN=Example Code
# Signing; other: CN=Other CA Signer under other-ca.pem) and two update
# packages laid out like Microsoft's .msu files (a cabinet holding the
# update's own .cab, its .xml and a properties file; gcab, stored), each
# signed by cs with osslsigncode:
#   www/updates/windows11.0-kb5043080-x64_<sha1>.msu   the checkpoint
#   www/updates/windows11.0-kb5050009-x64_<sha1>.msu   the month's update
#   other-kb5050009.msu    the month's update signed by other (other CA)
#   tampered-kb5050009.msu the month's update, a byte of its payload changed
# and upd.env with CP_URLPATH CP_SHA1 CP_SHA256 CU_URLPATH CU_SHA1
# CU_SHA256 (URL paths below www/).

# upd_msu DIR KB OUT: an unsigned .msu for KB in DIR/OUT
upd_msu() {
	local d=$1 kb=$2 out=$3 t
	t=$(mktemp -d "$d/msu.XXXXXX") || return 1
	(
		cd "$t" || exit 1
		printf 'WINBUILD-UPDATE-MARKER %s payload\n' "$kb" >update.mum
		gcab -c -n "Windows11.0-$kb-x64.cab" update.mum || exit 1
		printf '<?xml version="1.0"?><unattend><servicing><package action="install">%s</package></servicing></unattend>\n' "$kb" >"Windows11.0-$kb-x64.xml"
		printf 'ApplicabilityInfo="Windows 11.0"\r\nKB Article Number="%s"\r\n' "${kb#KB}" \
			>"Windows11.0-$kb-x64-pkgProperties.txt"
		gcab -c -n out.msu "Windows11.0-$kb-x64.cab" "Windows11.0-$kb-x64.xml" \
			"Windows11.0-$kb-x64-pkgProperties.txt"
	) || return 1
	mv "$t/out.msu" "$d/$out" && rm -rf "$t"
}

upd_make_fixtures() {
	local d=$1 kb lc sha1 off
	ac_make_pki "$d" || return 1
	mkdir -p www/updates
	: >upd.env
	for kb in KB5043080 KB5050009; do
		lc=$(tr 'A-Z' 'a-z' <<<"$kb")
		upd_msu "$d" "$kb" "$lc-unsigned.msu" || return 1
		ac_sign cs "$lc-unsigned.msu" "$lc.msu" || return 1
		sha1=$(sha1sum "$lc.msu" | cut -d' ' -f1)
		cp "$lc.msu" "www/updates/windows11.0-$lc-x64_$sha1.msu"
		local v=CU
		[ "$kb" = KB5043080 ] && v=CP
		{
			echo "${v}_URLPATH=updates/windows11.0-$lc-x64_$sha1.msu"
			echo "${v}_SHA1=$sha1"
			echo "${v}_SHA256=$(sha256sum "$lc.msu" | cut -d' ' -f1)"
		} >>upd.env
	done
	ac_sign other kb5050009-unsigned.msu other-kb5050009.msu || return 1
	cp kb5050009.msu tampered-kb5050009.msu
	off=$(grep -abo 'WINBUILD-UPDATE-MARKER KB5050009' tampered-kb5050009.msu | head -1 | cut -d: -f1)
	[ -n "$off" ] || return 1
	ac_flip tampered-kb5050009.msu "$off"
}

# upd_recipe FILE [ENTRY-OVERRIDES...]: an image recipe FILE with one small
# component (demo: a text file, pinned) and windows.updates listing the
# checkpoint KB5043080 and KB5050009 from $UPD_BASE (the nginx URL), both
# pinned by sha1 and needs_pin, under $FX/ca.pem and Example Corp's
# publisher. Variables (set before calling) change an entry:
#   CU_PIN    the month's update's pin line (default: needs_pin)
#   CU_SHA1X  its sha1 (default $CU_SHA1)
#   CU_PUB    its publisher (default the cs subject)
#   CU_PATH   its URL path (default $CU_URLPATH)
upd_recipe() {
	local f=$1
	mkdir -p "$(dirname "$f")/components"
	printf 'demo file\n' >"$FX/www/demo.txt"
	cat >"$(dirname "$f")/components/demo.yaml" <<-EOF
	kind: component
	name: demo
	version: "1.0"
	artifacts:
	  demo:
	    url: $UPD_BASE/demo.txt
	    verify: {sha256: $(sha256sum "$FX/www/demo.txt" | cut -d' ' -f1)}
	    install: {to: 'C:\\k\\demo.txt'}
	EOF
	cat >"$f" <<-EOF
	kind: image
	name: upd
	windows:
	  version: "2025"
	  iso_sha256: $TEST_ISO_SHA256
	  updates:
	    - kb: KB5050009
	      url: $UPD_BASE/${CU_PATH:-$CU_URLPATH}
	      sha1: ${CU_SHA1X:-$CU_SHA1}
	      ${CU_PIN:-needs_pin: the Update Catalog publishes no SHA-256}
	      authenticode:
	        roots: $FX/ca.pem
	        publishers: ["${CU_PUB:-O=Example Corp,CN=Example Code Signing}"]
	      expect_build: "26100.2894"
	    - kb: KB5043080
	      checkpoint: true
	      url: $UPD_BASE/$CP_URLPATH
	      sha1: $CP_SHA1
	      sha256: $CP_SHA256
	      authenticode:
	        roots: $FX/ca.pem
	        publishers: ["O=Example Corp,CN=Example Code Signing"]
	components:
	  demo: {}
	EOF
}

# upd_tier_override: an override (stdout) listing the month's update and its
# checkpoint from the engine tier's fixture server (@HTTP@/good/, which
# tests/win/run makes its URL; the fixtures of upd_make_fixtures in
# WINTIER_WWW, upd.env sourced), pinned, under $FX/ca.pem
upd_tier_override() {
	cat <<-EOF
	kind: override
	windows:
	  updates:
	    - kb: KB5050009
	      url: @HTTP@/good/$CU_URLPATH
	      sha1: $CU_SHA1
	      sha256: $CU_SHA256
	      authenticode: {roots: $FX/ca.pem, publishers: ["O=Example Corp,CN=Example Code Signing"]}
	      expect_build: "26100.2894"
	    - kb: KB5043080
	      checkpoint: true
	      url: @HTTP@/good/$CP_URLPATH
	      sha1: $CP_SHA1
	      sha256: $CP_SHA256
	      authenticode: {roots: $FX/ca.pem, publishers: ["O=Example Corp,CN=Example Code Signing"]}
	EOF
}
