#!/usr/bin/env bats
# How a cold stage writes (issue 19, bench/README.md): a single-file
# artifact is written to its staged place while it downloads (the fetch
# tee), not copied from the cache after it; the bulk bytes go past the page
# cache (O_DIRECT) where the filesystem allows; the cache refs are not
# synced, so a torn one must read as a miss. Every byte is still the
# verified one.
load helpers
load ../lib/servers
load stage_fixtures

setup_file() {
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	# a file large enough for whole direct blocks, and an odd tail
	head -c $((6 * 1024 * 1024 + 4321)) /dev/urandom >"$WWW/good/big.exe"
	start_nginx "$WWW"
	start_faultd "$WWW"
}

setup() {
	common_setup
	rm -f "$WWW"/good/*.release
}


# big_recipe URL: $WORK/img.yaml with one component whose artifact "big"
# (good/big.exe, pinned) is installed at C:\k\big.exe
big_recipe() {
	mkdir -p "$WORK/components"
	{
		printf 'kind: component\nname: demo\nversion: "1.0"\nartifacts:\n'
		printf '  big:\n    url: %s\n' "$1"
		printf '    verify: {sha256: %s}\n' "$(sha_www good/big.exe)"
		printf '    install:\n      to: C:\\k\\big.exe\n'
	} >"$WORK/components/demo.yaml"
	printf 'kind: image\nname: t\nwindows:\n  {version: "2022", iso_sha256: %s}\ncomponents:\n  demo: {}\n' \
		"$TEST_ISO_SHA256" >"$WORK/img.yaml"
}

# resident BYTES of FILE in the page cache
resident() { fincore --bytes --noheadings --output RES "$1" | tr -d ' '; }

@test "a single-file artifact is written to its staged place while it downloads" {
	fixture_override | sed "s|url: $(H)/good/kubelet.exe\$|url: $FAULTD_URL/hold/good/kubelet.exe|" \
		>"$WORK/o.yaml"
	"$WINBUILD" stage "$RECIPE" -O "$WORK/o.yaml" -o "$WORK/out" --no-progress -q \
		>"$WORK/log" 2>&1 3>&- &
	pid=$!
	# faultd sent half of kubelet.exe and holds the rest: its file in the
	# stage's scratch dir must exist already (a stage that copied from the
	# cache after the download could not have it yet)
	seen=0
	for _ in $(seq 1 600); do
		if ls "$WORK/out/$NAME"/.tree.tmp.*/prep/kubelet/kubelet.exe >/dev/null 2>&1; then
			seen=1
			break
		fi
		sleep 0.1
	done
	# nothing in the tree before the bytes are verified
	[ -z "$(ls "$WORK/out/$NAME"/.tree.tmp.*/tree/k/kubelet.exe 2>/dev/null)" ]
	touch "$WWW/good/kubelet.exe.release"
	wait "$pid" || { cat "$WORK/log"; false; }
	[ "$seen" = 1 ] || { echo "kubelet.exe was not written while it downloaded"; false; }
	cmp "$(T)/k/kubelet.exe" "$WWW/good/kubelet.exe"
	python3 - "$WORK/out/$NAME/manifest.json" "$(sha_www good/kubelet.exe)" <<-'EOF'
		import json, sys
		m = json.load(open(sys.argv[1]))
		assert [f["sha256"] for f in m["files"] if f["tree_path"] == "k/kubelet.exe"] == [sys.argv[2]]
	EOF
	[ -z "$(ls -d "$WORK/out/$NAME"/.tree.tmp.* 2>/dev/null)" ]
}

@test "a download reset mid-body and resumed stages exactly the bytes (tee resumed too)" {
	big_recipe "$FAULTD_URL/reset/good/big.exe?t=$BATS_TEST_NUMBER"
	: >"$FAULTD_LOG"
	wb stage "$WORK/img.yaml" -o "$WORK/out" --no-progress -q
	assert_status 0
	grep -q '206 "bytes=' "$FAULTD_LOG"
	cmp "$WORK/out/t/tree/k/big.exe" "$WWW/good/big.exe"
	cmp "$WINBUILD_CACHE/sha256/$(sha_www good/big.exe | cut -c1-2)/$(sha_www good/big.exe)" \
		"$WWW/good/big.exe"
}

@test "a download that fails verification leaves nothing staged, its early copy included" {
	big_recipe "$(H)/good/big.exe"
	# the pin names another file's digest: the bytes arrive, then fail
	sed -i "s|sha256: .*}|sha256: $(sha_www good/kubelet.exe)}|" "$WORK/components/demo.yaml"
	wb stage "$WORK/img.yaml" -o "$WORK/out" --no-progress -q
	assert_status 1
	[ ! -e "$WORK/out/t/tree" ]
	[ -z "$(ls -d "$WORK/out/t"/.tree.tmp.* 2>/dev/null)" ]
	[ -z "$(find "$WINBUILD_CACHE" -name 'dl-*' -type f)" ]
}

@test "a cold stage leaves its bulk bytes out of the page cache (O_DIRECT)" {
	command -v fincore >/dev/null || skip "no fincore (util-linux)"
	dd if=/dev/zero of="$WORK/probe" bs=4096 count=1 oflag=direct 2>/dev/null ||
		skip "no O_DIRECT on $WORK's filesystem: plain writes there"
	big_recipe "$(H)/good/big.exe"
	wb stage "$WORK/img.yaml" -o "$WORK/out" --no-progress -q
	assert_status 0
	sha=$(sha_www good/big.exe)
	entry="$WINBUILD_CACHE/sha256/${sha:0:2}/$sha"
	# only the unaligned tail (under a page) may be cached: buffered
	# writes would leave all 6 MiB there (checked before anything reads
	# the files: a read caches them)
	for f in "$entry" "$WORK/out/t/tree/k/big.exe"; do
		echo "$f: $(resident "$f") bytes resident"
		[ "$(resident "$f")" -le 8192 ]
	done
	# and a stage from that cache entry (a copy, hashed) does the same
	wb stage "$WORK/img.yaml" -o "$WORK/out2" --no-progress -q
	assert_status 0
	echo "copy: $(resident "$WORK/out2/t/tree/k/big.exe") bytes resident"
	[ "$(resident "$WORK/out2/t/tree/k/big.exe")" -le 8192 ]
	cmp "$entry" "$WWW/good/big.exe"
	cmp "$WORK/out/t/tree/k/big.exe" "$WWW/good/big.exe"
	cmp "$WORK/out2/t/tree/k/big.exe" "$WWW/good/big.exe"
}

@test "a cache ref torn by a crash (no fsync) reads as a miss: fetched again, same tree" {
	big_recipe "$(H)/good/big.exe"
	wb stage "$WORK/img.yaml" -o "$WORK/out" --no-progress -q
	assert_status 0
	refs=("$WINBUILD_CACHE"/refs/*)
	[ -f "${refs[0]}" ]
	n=0
	for torn in "" '{"artifact": "big", "sha256": "' "$(head -c 300 /dev/zero)"; do
		n=$((n + 1))
		for r in "${refs[@]}"; do printf '%s' "$torn" >"$r"; done
		rm -rf "$WINBUILD_CACHE/sha256"
		wb stage "$WORK/img.yaml" -o "$WORK/out$n" --no-progress -q
		assert_status 0
		cmp "$WORK/out$n/t/tree/k/big.exe" "$WWW/good/big.exe"
		# the ref was rewritten whole
		python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["sha256"]) == 64' \
			"${refs[0]}"
	done
}
