# Win32-OpenSSH fixtures (recipes/components/openssh.yaml), made at test
# time from tests/lib/authenticode.bash's test PKI (load that first, and
# make the PKI in $FX: ac_make_fixtures or upd_make_fixtures):
#   ossh_ms_cert            $FX/ms.pem, ms.key: a code-signing certificate
#                           under $FX's test CA with Microsoft's subject in
#                           Microsoft's order, so the component's publisher
#                           pin matches and the test CA's roots decide
#   ossh_zip OUT SIGNER     OUT: Win32-OpenSSH's release layout
#                           (OpenSSH-Win64/ in a zip), every .exe and .dll
#                           signed by SIGNER (a certificate of $FX), or
#                           unsigned with SIGNER "-"
# Used by tests/cli/openssh.bats and payload_buildonly.bats.

MS_SUBJECT="/C=US/ST=Washington/L=Redmond/O=Microsoft Corporation/CN=Microsoft Corporation"
MS_PUBLISHER="CN=Microsoft Corporation,O=Microsoft Corporation,L=Redmond,ST=Washington,C=US"

ossh_ms_cert() {
	# the fixtures' policy keeps CN and O only, so this one is issued as asked
	(cd "$FX" && { cat ext.cnf; printf '[pol_dn]\ncountryName = optional\nstateOrProvinceName = optional\nlocalityName = optional\norganizationName = optional\ncommonName = supplied\n'; } >ms.cnf &&
		openssl req -new -newkey rsa:2048 -nodes -keyout ms.key -out ms.csr -subj "$MS_SUBJECT" 2>/dev/null &&
		openssl ca -batch -config ms.cnf -policy pol_dn -preserveDN -cert ca.pem -keyfile ca.key \
			-in ms.csr -out ms.pem -startdate 20250101000000Z -enddate 20450101000000Z \
			-extfile ms.cnf -extensions v3_cs >/dev/null 2>&1) || return 1
	[ "$(openssl x509 -in "$FX/ms.pem" -noout -subject -nameopt RFC2253)" = "subject=$MS_PUBLISHER" ] || return 1
	# the PE files to sign (ac_make_fixtures makes them too)
	[ -f "$FX/hello.exe" ] || {
		printf 'int main(void) { return 0; }\n' >"$FX/hello.c" &&
			x86_64-w64-mingw32-gcc -O2 -s -o "$FX/hello.exe" "$FX/hello.c"
	} || return 1
	[ -f "$FX/hello.dll" ] || {
		printf '__declspec(dllexport) int hello(void) { return 42; }\n' >"$FX/lib.c" &&
			x86_64-w64-mingw32-gcc -O2 -s -shared -o "$FX/hello.dll" "$FX/lib.c"
	}
}

ossh_zip() {
	local out=$1 signer=$2 d f
	d=$(mktemp -d "$FX/ossh.XXXXXX") || return 1
	mkdir -p "$d/OpenSSH-Win64"
	for f in sshd.exe ssh.exe ssh-keygen.exe sftp-server.exe; do
		if [ "$signer" = - ]; then cp "$FX/hello.exe" "$d/OpenSSH-Win64/$f"
		else ac_sign "$FX/$signer" "$FX/hello.exe" "$d/OpenSSH-Win64/$f"; fi
	done
	if [ "$signer" = - ]; then cp "$FX/hello.dll" "$d/OpenSSH-Win64/libcrypto.dll"
	else ac_sign "$FX/$signer" "$FX/hello.dll" "$d/OpenSSH-Win64/libcrypto.dll"; fi
	printf '# stand-in for install-sshd.ps1\r\n' >"$d/OpenSSH-Win64/install-sshd.ps1"
	printf '# stand-in for sshd_config_default\r\n' >"$d/OpenSSH-Win64/sshd_config_default"
	rm -f "$out"
	(cd "$d" && zip -qrX "$out" OpenSSH-Win64) && rm -rf "$d"
}
