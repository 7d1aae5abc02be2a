#!/usr/bin/env bats
# winbuild sig verify: minisign signatures made by the real minisign CLI,
# with minisign -V's exit codes (0 verified, 1 failed, 2 could not verify).
# Every good signature has its forgery beside it.
load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR"
	minisign -G -W -p k1.pub -s k1.key >/dev/null 2>&1
	minisign -G -W -p k2.pub -s k2.key >/dev/null 2>&1
}

setup() {
	common_setup
	cp "$BATS_FILE_TMPDIR"/k1.* "$BATS_FILE_TMPDIR"/k2.* .
	printf 'artifact contents\n' >a.bin
}

# sign FILE [minisign options...]: sign with key 1
sign() {
	local f=$1
	shift
	minisign -S -W -s k1.key -m "$f" "$@" >/dev/null 2>&1
}

# sign_for_b: sign a.bin, then pass the signature off as b.bin's
sign_for_b() {
	sign a.bin
	cp a.bin b.bin
	cp a.bin.minisig b.bin.minisig
}

# keyid PUBFILE: the key id from the .pub comment, in our 16-digit form
# (minisign drops leading zeros)
keyid() {
	local id
	id=0000000000000000$(sed -n '1s/.*minisign public key //p' "$1")
	echo "${id: -16}"
}

@test "good signature verifies and prints the trusted comment" {
	sign a.bin
	wb sig verify -p k1.pub -m a.bin
	assert_status 0
	assert_output_has "Signature and comment signature verified"
	assert_output_has "Trusted comment: timestamp:"
	assert_output_has "file:a.bin"
	run minisign -V -p k1.pub -m a.bin
	assert_status 0
}

@test "tampered file fails (1), as with minisign -V" {
	sign a.bin
	echo x >>a.bin
	wb sig verify -p k1.pub -m a.bin
	assert_status 1
	assert_output_has "signature verification failed"
	assert_output_lacks "Trusted comment"
	run minisign -V -p k1.pub -m a.bin
	assert_status 1
}

@test "another key fails (1) and the message names both key ids" {
	sign a.bin
	wb sig verify -p k2.pub -m a.bin
	assert_status 1
	assert_output_has "signature key id '$(keyid k1.pub)'"
	assert_output_has "pinned key '$(keyid k2.pub)'"
}

@test "another key under the signer's key id fails (1)" {
	sign a.bin
	{ base64 -d <<<"$(sed -n 2p k1.pub)" | head -c 10
	  base64 -d <<<"$(sed -n 2p k2.pub)" | tail -c 32; } | base64 -w0 >forged.key
	wb sig verify -P "$(cat forged.key)" -m a.bin
	assert_status 1
	assert_output_has "signature verification failed"
}

@test "legacy signature is refused by default (1)" {
	sign a.bin -l
	wb sig verify -p k1.pub -m a.bin
	assert_status 1
	assert_output_has "legacy"
	assert_output_has "--allow-legacy"
}

@test "legacy signature is accepted with --allow-legacy (0), forgery still fails" {
	sign a.bin -l
	wb sig verify -p k1.pub -m a.bin --allow-legacy
	assert_status 0
	assert_output_has "Signature and comment signature verified"
	echo x >>a.bin
	wb sig verify -p k1.pub -m a.bin --allow-legacy
	assert_status 1
}

@test "a signature made for another file is refused (1)" {
	sign_for_b
	wb sig verify -p k1.pub -m b.bin
	assert_status 1
	assert_output_has "trusted comment names file 'a.bin', expected 'b.bin'"
	# minisign itself does not look at the file name
	run minisign -V -p k1.pub -m b.bin
	assert_status 0
}

@test "--no-file-check accepts a signature made for another file" {
	sign_for_b
	wb sig verify -p k1.pub -m b.bin --no-file-check
	assert_status 0
	assert_output_has "file:a.bin"
}

@test "edited trusted comment fails (1)" {
	sign a.bin
	sed -i '3s/timestamp:/timestamp:9/' a.bin.minisig
	wb sig verify -p k1.pub -m a.bin
	assert_status 1
	assert_output_has "comment signature verification failed"
	run minisign -V -p k1.pub -m a.bin
	assert_status 1
}

@test "CRLF signature file is accepted (0)" {
	sign a.bin
	sed -i 's/$/\r/' a.bin.minisig
	grep -q $'\r$' a.bin.minisig
	wb sig verify -p k1.pub -m a.bin
	assert_status 0
}

@test "malformed signature files cannot be verified (2)" {
	sign a.bin
	head -n 3 a.bin.minisig >three.minisig
	wb sig verify -p k1.pub -m a.bin -x three.minisig
	assert_status 2
	assert_output_has "'three.minisig': signature has 3 lines, expected 4"
	sed '2s/^R/*/' a.bin.minisig >badb64.minisig
	wb sig verify -p k1.pub -m a.bin -x badb64.minisig
	assert_status 2
	assert_output_has "signature line 2"
}

@test "missing file, signature or key cannot be verified (2)" {
	sign a.bin
	wb sig verify -p k1.pub -m nosuch.bin
	assert_status 2
	assert_output_has "nosuch.bin"
	cp a.bin c.bin
	wb sig verify -p k1.pub -m c.bin
	assert_status 2
	assert_output_has "cannot open 'c.bin.minisig'"
	wb sig verify -p nosuch.pub -m a.bin
	assert_status 2
}

@test "-x names the signature file" {
	sign a.bin -x sig.txt
	[ ! -e a.bin.minisig ]
	wb sig verify -p k1.pub -m a.bin -x sig.txt
	assert_status 0
}

@test "-P takes the key inline" {
	sign a.bin
	wb sig verify -P "$(sed -n 2p k1.pub)" -m a.bin
	assert_status 0
	wb sig verify -P "$(sed -n 2p k2.pub)" -m a.bin
	assert_status 1
	wb sig verify -P "not-a-key" -m a.bin
	assert_status 2
	assert_output_has "key given with -P"
}

@test "usage errors exit 2" {
	sign a.bin
	wb sig verify -p k1.pub -m a.bin --frobnicate
	assert_status 2
	assert_output_has "unknown option '--frobnicate'"
	wb sig verify -m a.bin
	assert_status 2
	assert_output_has "exactly one of -p KEYFILE and -P KEY"
	wb sig verify -p k1.pub -P x -m a.bin
	assert_status 2
	wb sig verify -p k1.pub
	assert_status 2
	wb sig check -p k1.pub -m a.bin
	assert_status 2
	assert_output_has "unknown sub-command 'check'"
	wb sig
	assert_status 2
	assert_output_has "usage: winbuild sig verify"
}

@test "help lists sig and its options" {
	wb help
	assert_output_has "sig"
	wb help sig
	assert_status 0
	assert_output_has "verify"
	assert_output_has "--no-file-check"
}
