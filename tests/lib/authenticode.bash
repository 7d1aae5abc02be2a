# Authenticode test fixtures, made at test time (docs/authenticode.md):
#   ac_make_fixtures DIR
# builds, with openssl, a test PKI in DIR (every certificate issued with
# explicit dates by `openssl ca`, so the CA and the TSA are valid at the
# timestamp time 2020-06-01):
#   ca.pem        Test Root CA (2015-2045)
#   other-ca.pem  Other Root CA: signs other.pem
#   cs.pem/.key   O=Example Corp, CN=Example Code Signing (EKU codeSigning)
#   noeku.pem     CN=No Code Signing EKU (EKU serverAuth only)
#   nxeku.pem     CN=No EKU Extension (no extendedKeyUsage at all: OpenSSL
#                 counts it good for every purpose, winbuild must not)
#   other.pem     CN=Other CA Signer (codeSigning, issued by Other Root CA)
#   expired.pem   CN=Expired Signer (codeSigning, 2020-01-01..2021-01-01)
#   tsa.pem       CN=Test TSA (critical EKU timeStamping)
# and small real binaries: hello.exe (PE32+), hello32.exe (PE32),
# hello.dll (mingw-w64) and hello.msi (msitools' wixl), then signs them
# with osslsigncode (the built-in RFC 3161 TSA for timestamps):
#   good.exe good32.exe good.dll good.msi   signed by cs
#   ts.exe                                  cs + timestamp now
#   expired-ts.exe                          expired + timestamp 2020-06-01
#   expired.exe noeku.exe nxeku.exe other.exe other.msi  the refusals
#   tampered.exe tampered.msi               one byte changed after signing
#   trailing.exe                            bytes appended after signing

ac_ext_config() {
	cat <<'EOF'
[ca]
default_ca = tca
[tca]
dir = db
database = db/index.txt
serial = db/serial
new_certs_dir = db
default_md = sha256
policy = pol
unique_subject = no
copy_extensions = none
[pol]
commonName = supplied
organizationName = optional
[v3_root]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[v3_cs]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = codeSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[v3_noeku]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[v3_nxeku]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[v3_tsa]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = critical,timeStamping
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
}

# ac_ca NAME SUBJECT: a self-signed root NAME.pem/NAME.key (2015-2045)
ac_ca() {
	openssl req -new -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" \
		-subj "$2" 2>/dev/null &&
	openssl ca -batch -selfsign -config ext.cnf -keyfile "$1.key" -in "$1.csr" \
		-out "$1.pem" -startdate 20150101000000Z -enddate 20450101000000Z \
		-extfile ext.cnf -extensions v3_root >/dev/null 2>&1
}

# ac_cert NAME SUBJECT EXT CA START END: NAME.pem/NAME.key issued by CA
ac_cert() {
	openssl req -new -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" \
		-subj "$2" 2>/dev/null &&
	openssl ca -batch -config ext.cnf -cert "$4.pem" -keyfile "$4.key" \
		-in "$1.csr" -out "$1.pem" -startdate "$5" -enddate "$6" \
		-extfile ext.cnf -extensions "$3" >/dev/null 2>&1
}

# ac_sign CERT IN OUT [osslsigncode options]
ac_sign() {
	local cert=$1 in=$2 out=$3
	shift 3
	osslsigncode sign -certs "$cert.pem" -key "$cert.key" "$@" \
		-in "$in" -out "$out" >/dev/null
}

# ac_flip FILE OFFSET: change the byte at OFFSET
ac_flip() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $(( (b ^ 1) & 255 )))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# ac_make_pki DIR: cd to DIR (made) and make the roots ca and other-ca,
# the signers cs (under ca) and other (under other-ca)
ac_make_pki() {
	mkdir -p "$1" && cd "$1" || return 1
	ac_ext_config >ext.cnf
	rm -rf db && mkdir db && : >db/index.txt && echo 1000 >db/serial
	ac_ca other-ca "/CN=Other Root CA" || return 1
	ac_cert other "/CN=Other CA Signer" v3_cs other-ca 20250101000000Z 20450101000000Z || return 1
	ac_ca ca "/CN=Test Root CA" || return 1
	ac_cert cs "/O=Example Corp/CN=Example Code Signing" v3_cs ca 20250101000000Z 20450101000000Z
}

ac_make_fixtures() {
	local d=$1 off
	ac_make_pki "$d" || return 1
	ac_cert noeku "/CN=No Code Signing EKU" v3_noeku ca 20250101000000Z 20450101000000Z || return 1
	ac_cert nxeku "/CN=No EKU Extension" v3_nxeku ca 20250101000000Z 20450101000000Z || return 1
	ac_cert expired "/CN=Expired Signer" v3_cs ca 20200101000000Z 20210101000000Z || return 1
	ac_cert tsa "/CN=Test TSA" v3_tsa ca 20150101000000Z 20450101000000Z || return 1

	printf 'int main(void) { return 0; }\n' >hello.c
	printf '__declspec(dllexport) int hello(void) { return 42; }\n' >lib.c
	x86_64-w64-mingw32-gcc -O2 -s -o hello.exe hello.c || return 1
	i686-w64-mingw32-gcc -O2 -s -o hello32.exe hello.c || return 1
	x86_64-w64-mingw32-gcc -O2 -s -shared -o hello.dll lib.c || return 1
	printf 'WINBUILD-PAYLOAD-MARKER\n' >payload.txt
	cat >hello.wxs <<-'WXS'
	<?xml version="1.0" encoding="utf-8"?>
	<Wix xmlns="http://schemas.microsoft.com/wix/2006/wi">
	  <Product Id="8D8E7A1C-3F5B-4E2A-9C6D-1B2A3C4D5E6F" Name="winbuild test"
	           Language="1033" Version="1.0.0.0" Manufacturer="Example Corp"
	           UpgradeCode="0F0E0D0C-0B0A-4090-8070-605040302010">
	    <Package InstallerVersion="200" Compressed="yes" InstallScope="perMachine"/>
	    <Media Id="1" Cabinet="p.cab" EmbedCab="yes"/>
	    <!-- in the (uncompressed) string pool: the tamper test flips a byte here -->
	    <Property Id="WINBUILDMARKER" Value="WINBUILD-PAYLOAD-MARKER"/>
	    <Directory Id="TARGETDIR" Name="SourceDir">
	      <Directory Id="ProgramFiles64Folder">
	        <Directory Id="INSTALLDIR" Name="hello">
	          <Component Id="Payload" Guid="1A2B3C4D-5E6F-4A7B-8C9D-0E1F2A3B4C5D" Win64="yes">
	            <File Id="PayloadTxt" Name="payload.txt" Source="payload.txt" KeyPath="yes"/>
	          </Component>
	        </Directory>
	      </Directory>
	    </Directory>
	    <Feature Id="Main" Level="1"><ComponentRef Id="Payload"/></Feature>
	  </Product>
	</Wix>
	WXS
	wixl -a x64 -o hello.msi hello.wxs || return 1

	ac_sign cs hello.exe good.exe || return 1
	ac_sign cs hello32.exe good32.exe || return 1
	ac_sign cs hello.dll good.dll || return 1
	ac_sign cs hello.msi good.msi || return 1
	ac_sign cs hello.exe ts.exe -TSA-certs tsa.pem -TSA-key tsa.key || return 1
	ac_sign expired hello.exe expired-ts.exe -TSA-certs tsa.pem -TSA-key tsa.key \
		-TSA-time "$(date -u -d 2020-06-01 +%s)" || return 1
	ac_sign expired hello.exe expired.exe || return 1
	ac_sign noeku hello.exe noeku.exe || return 1
	ac_sign nxeku hello.exe nxeku.exe || return 1
	ac_sign other hello.exe other.exe || return 1
	ac_sign other hello.msi other.msi || return 1

	cp good.exe tampered.exe
	ac_flip tampered.exe 1040          # inside .text (file offset 0x400 + 16)
	cp good.msi tampered.msi
	off=$(grep -abo WINBUILD-PAYLOAD-MARKER tampered.msi | head -1 | cut -d: -f1)
	[ -n "$off" ] || return 1
	ac_flip tampered.msi "$off"
	cp good.exe trailing.exe
	printf 'appended after signing' >>trailing.exe
	openssl x509 -in cs.pem -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' |
		tr 'A-F' 'a-f' >cs.thumbprint
}

# ac_demo_recipe COMPONENT_AUTH FILE...: $WORK/img.yaml with one component
# "demo" (components/demo.yaml) that installs each fixture FILE (file://
# URL, pinned) into C:\k, with COMPONENT_AUTH (if not empty) as the
# component's own authenticode map
ac_demo_recipe() {
	local comp=$1 f
	shift
	mkdir -p "$WORK/components"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\n'
		[ -z "$comp" ] || printf 'authenticode: %s\n' "$comp"
		printf 'artifacts:\n'
		for f in "$@"; do
			printf '  %s:\n    url: file://%s/%s\n' "${f//./-}" "$FX" "$f"
			printf '    verify: {sha256: %s}\n' "$(sha256sum "$FX/$f" | cut -d' ' -f1)"
			printf '    install: {to: '\''C:\\k\\%s'\''}\n' "$f"
		done
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: eb6504101acb7bca79cf3515b73d48e599fdc4aa3820d83fbf75b76538ff9b12}\ncomponents:\n  demo: {}\n' \
		>"$WORK/img.yaml"
}

# ossl_verify FILE: osslsigncode's own verdict under the test roots
ossl_verify() {
	osslsigncode verify -CAfile "$FX/ca.pem" -TSA-CAfile "$FX/ca.pem" -in "$1" >/dev/null 2>&1
}

# ac_setup_file: the body of a bats setup_file that needs the fixtures:
# made once per file in $BATS_FILE_TMPDIR/fx, exported as $FX
ac_setup_file() {
	export FX="$BATS_FILE_TMPDIR/fx"
	(ac_make_fixtures "$FX") >"$BATS_FILE_TMPDIR/fixtures.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/fixtures.log" >&2
		return 1
	}
}

# ac_make_multi_fixtures DIR (after ac_make_fixtures DIR): cabinets made
# with gcab (stored, not compressed: the flip tests find their marker) and
# files with several signatures, signed by osslsigncode:
#   hello.cab                       unsigned cabinet
#   good.cab good.msu               signed by cs (an .msu is a cabinet)
#   nested.cab                      cs, then cs again nested (SHA-512)
#   nested-other.cab                cs, then other nested (untrusted)
#   sha1.cab expired.cab other.cab  SHA-1 only, expired signer, other CA
#   flip-in.cab                     a byte of the stored payload changed
#   flip-out.cab                    byte 52 changed: abReserve[12], which
#                                   osslsigncode's cab.c does not hash
#   flip-hdr.cab                    byte 56 changed: abReserve[16], hashed
#   nested.exe nested.msi           cs, then cs nested (SHA-512)
#   nested-other.exe                cs, then other nested
#   nested-broken.exe               nested.exe with the nested signature's
#                                   value changed (pe_certs.py flip-tail)
#   two.exe                         good.exe with other.exe's entry added as
#                                   a second certificate-table entry
#   twogood.exe                     good.exe with its own entry twice
ac_make_multi_fixtures() {
	local d=$1 off
	cd "$d" || return 1
	printf 'WINBUILD-CAB-MARKER payload\n' >p.txt
	gcab -c -n hello.cab p.txt hello.exe || return 1
	ac_sign cs hello.cab good.cab || return 1
	cp good.cab good.msu
	ac_sign cs good.cab nested.cab -nest -h sha512 || return 1
	ac_sign other good.cab nested-other.cab -nest || return 1
	ac_sign cs hello.cab sha1.cab -h sha1 || return 1
	ac_sign expired hello.cab expired.cab || return 1
	ac_sign other hello.cab other.cab || return 1
	cp good.cab flip-in.cab
	off=$(grep -abo WINBUILD-CAB-MARKER flip-in.cab | head -1 | cut -d: -f1)
	[ -n "$off" ] || return 1
	ac_flip flip-in.cab "$off"
	cp good.cab flip-out.cab
	ac_flip flip-out.cab 52
	cp good.cab flip-hdr.cab
	ac_flip flip-hdr.cab 56
	ac_sign cs good.exe nested.exe -nest -h sha512 || return 1
	ac_sign cs good.msi nested.msi -nest -h sha512 || return 1
	ac_sign other good.exe nested-other.exe -nest || return 1
	python3 "$WB_SRC/tests/lib/pe_certs.py" flip-tail nested.exe nested-broken.exe 16 || return 1
	python3 "$WB_SRC/tests/lib/pe_certs.py" append good.exe other.exe two.exe || return 1
	python3 "$WB_SRC/tests/lib/pe_certs.py" append good.exe good.exe twogood.exe
}

# ossl_verify_index FILE I: osslsigncode's verdict on signature I alone
# (0 the primary, 1.. the nested ones, in its order)
ossl_verify_index() {
	osslsigncode verify -CAfile "$FX/ca.pem" -TSA-CAfile "$FX/ca.pem" -index "$2" \
		-in "$1" >/dev/null 2>&1
}

# ---- shared by authenticode.bats and authenticode_multi.bats ----

# accepts FILE [options]: winbuild and osslsigncode both accept FILE
accepts() {
	local f=$1
	shift
	wb sig authenticode "$FX/$f" --roots "$FX/ca.pem" "$@"
	assert_status 0
	assert_output_has "Authenticode signature verified: $FX/$f"
	ossl_verify "$FX/$f"
}

# refuses CODE FILE REASON [options]: winbuild exits CODE naming FILE and
# REASON, and osslsigncode refuses FILE too
refuses() {
	local code=$1 f=$2 reason=$3
	shift 3
	wb sig authenticode "$FX/$f" --roots "$FX/ca.pem" "$@"
	assert_status "$code"
	assert_output_has "'$FX/$f'"
	assert_output_has "$reason"
	run ossl_verify "$FX/$f"
	[ "$status" -ne 0 ]
}

# stage_recipe POLICY_YAML FILE...: $WORK/img.yaml whose component "demo"
# installs each fixture FILE (file:// URL, pinned) into C:\k, with POLICY_YAML
# as the image's top-level authenticode map
stage_recipe() {
	local policy=$1
	shift
	mkdir -p "$WORK/site"
	cp "$FX/ca.pem" "$WORK/site/roots.pem"
	ac_demo_recipe '' "$@"
	[ -z "$policy" ] || printf 'authenticode: %s\n' "$policy" >>"$WORK/img.yaml"
}
