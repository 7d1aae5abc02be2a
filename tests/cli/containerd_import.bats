#!/usr/bin/env bats
# Issue 40 (the containerd part): what winbuild stages for step 06-images
# must import into a real containerd. Debian's containerd 1.6.20 (.ci/deps)
# runs as a test-owned daemon (tests/lib/containerd.bash: its own root,
# state, socket and config in the test's temp dir, stopped by pid) and
# imports the staged image tars of every shipped image (recipes/*.yaml,
# each pre-pulls the pause image: make demo's stand-in, tests/demo/pause.py,
# from a static registry tree, as images_shipped.bats stages it) with the
# command line 06-images runs, read from the emitted script
# (tests/lib/ctrcmd.py), then lists them with the script's own `images ls`
# and finds each name at the digest the script checks.
#
# What a Linux containerd proves and what it does not: the import is
# containerd's own code on the same input (ImportIndex, the platform
# filter, the walk over every descriptor the filter keeps: the same
# source on Windows, containerd 1.6.20 platforms/platforms.go NewMatcher
# ignores os.version on every host), and 06-images' command unpacks (no
# --no-unpack): the unpack here applies the layers to Linux's overlayfs
# snapshotter, which takes the demo's Windows-shaped layers as plain tars.
# On Windows the windows snapshotter applies them (Files/, Hives/ and the
# layer's reparse points) and that part is not exercised here: docs/node.md
# says what stays unobserved.
load helpers
load ../lib/servers
load ../lib/containerd
load stage_fixtures

SIGNER=pause-signer@winbuild.invalid
ISSUER=https://oidc.winbuild.invalid

# the shipped image recipes: every recipes/*.yaml of kind image
shipped() {
	local r
	for r in "$WB_SRC"/recipes/*.yaml; do
		grep -q '^kind: image' "$r" && basename "$r" .yaml
	done
}

# every shipped image built once, with the pause image pinned to make
# demo's stand-in: $BUILT/out/NAME (NAME: the recipe's file name, which is
# its image name)
setup_file() {
	make_stage_fixtures "$BATS_FILE_TMPDIR"
	make_pause_mirror "$SIGNER" "$ISSUER"
	WB_NGINX_INCLUDE="$PAUSE_INCLUDE" start_nginx "$WWW"
	export BUILT="$BATS_FILE_TMPDIR/built"
	mkdir -p "$BUILT"
	(
		cd "$BUILT" || exit 1
		fixture_override >fixtures.yaml
		pause_override "$SIGNER" "$ISSUER" pin >pause.yaml
		for name in $(shipped); do
			WINBUILD_CACHE="$BUILT/cache" SOURCE_DATE_EPOCH=1700000000 NO_COLOR=1 \
				"$WINBUILD" build "$WB_SRC/recipes/$name.yaml" \
				-O fixtures.yaml -O pause.yaml --no-progress >"build-$name.log" 2>&1 ||
				{ cat "build-$name.log" >&3; exit 1; }
			[ -d "out/$name" ] || { echo "no out/$name" >&3; exit 1; }
		done
	)
}

teardown_file() { stop_servers; }

teardown() { stop_containerd; }

# pulling NAME: the shipped images that pull container images (the plan's
# images:, as built), each with its 06-images.ps1; one without images must
# have no such step
pulling() {
	local name
	for name in $(shipped); do
		if python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1])).get("images"))' \
			"$BUILT/out/$name/manifest.json"; then
			echo "$name"
		elif [ -e "$BUILT/out/$name/packer/scripts/06-images.ps1" ]; then
			echo "$name: 06-images.ps1 without images" >&2
			return 1
		fi
	done
}

# cmd NAME: 06-images' ctr command lines and image records (ctrcmd.py)
cmd() { python3 "$WB_SRC/tests/lib/ctrcmd.py" "$BUILT/out/$1/packer/scripts/06-images.ps1"; }
jq_() { python3 -c 'import json,sys; J=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
jj_() { python3 -c 'import json,sys; J=json.load(sys.stdin); print(json.dumps(eval(sys.argv[1])))' "$1"; }
# img KEY FIELD < CMD_JSON: a field of 06-images' record of image KEY
img() { jq_ "[i for i in J['images'] if i['Key'] == '$1'][0]['$2']"; }

# host_tar NAME WINPATH: the staged tree's file for a C:\ path
host_tar() {
	local p=${2#C:\\}
	echo "$BUILT/out/$1/tree/${p//\\//}"
}

# real_ctr TAR IMPORT_ARGV_JSON LS_ARGV_JSON: import TAR into the running
# daemon, then list; prints "rc=N", the import's output, then the table
real_ctr() {
	local -a imp ls_
	mapfile -t imp < <(python3 -c 'import json,sys; print("\n".join(a.replace("{TAR}", sys.argv[2]) for a in json.loads(sys.argv[1])))' "$2" "$1")
	mapfile -t ls_ < <(python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$3")
	local rc=0
	ctr -a "$CTR_SOCK" "${imp[@]}" 2>&1 || rc=$?
	echo "rc=$rc"
	ctr -a "$CTR_SOCK" "${ls_[@]}" 2>&1
}

# lsdigest NAME < TABLE: the DIGEST of NAME in a `ctr images ls` table, as
# 06-images reads it (REF TYPE DIGEST, the first three fields)
lsdigest() {
	awk -v n="$1" 'NR > 1 && $1 == n { print $3; exit }'
}

@test "every shipped image's staged tars import into Debian's containerd 1.6.20 with 06-images' own command, and ctr lists each name at the digest 06-images checks" {
	local names n=0 name c tar out want key
	names=$(pulling)
	# every shipped image pre-pulls its pause image
	[ "$(echo $names)" = "$(echo $(shipped))" ]
	for name in $names; do
		c=$(cmd "$name")
		echo "$name: $c"
		# the script imports into k8s.io for the kubelet, for one platform
		[ "$(jq_ 'J["import"][:4]' <<<"$c")" = "['-n', 'k8s.io', 'images', 'import']" ]
		[ "$(jq_ 'len(J["images"])' <<<"$c")" -ge 1 ]
		start_containerd
		for key in $(jq_ '" ".join(i["Key"] for i in J["images"])' <<<"$c"); do
			tar=$(host_tar "$name" "$(img "$key" Tar <<<"$c")")
			[ -f "$tar" ]
			out=$(real_ctr "$tar" "$(jj_ 'J["import"]' <<<"$c")" "$(jj_ 'J["ls"]' <<<"$c")")
			echo "$out"
			grep -qx 'rc=0' <<<"$out"
			want=$(img "$key" Digest <<<"$c")
			[ "$(sed '1,/^rc=/d' <<<"$out" | lsdigest "$(img "$key" Name <<<"$c")")" = "$want" ]
			# the digest checked is the manifest's: the one manifest.json
			# records as the node's (manifest_digest), bound to the pin
			python3 - "$BUILT/out/$name/manifest.json" "$key" "$want" <<-'PY'
				import json, sys
				m = json.load(open(sys.argv[1]))
				(i,) = [i for i in m["images"] if i["key"] == sys.argv[2]]
				assert i["manifest_digest"] == sys.argv[3], (i, sys.argv[3])
			PY
			n=$((n + 1))
		done
		stop_containerd
	done
	[ "$n" -ge 3 ]
}

# old_shape TAR OUT PIN: TAR with its index.json naming the pinned list PIN
# (a blob of the tar) instead of the build's manifest: the tar the stage
# wrote before issue 40, byte for byte but for index.json
old_shape() {
	python3 - "$1" "$2" "$3" <<-'PY'
		import io, json, sys, tarfile
		src, dst, pin = sys.argv[1:]
		with tarfile.open(src) as t, tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as o:
		    blobs = {m.name: t.extractfile(m).read() for m in t if m.isreg()}
		    lst = blobs["blobs/sha256/" + pin.split(":")[1]]
		    for m in t.getmembers():
		        data = blobs.get(m.name)
		        if m.name == "index.json":
		            idx = json.loads(data)
		            (d,) = idx["manifests"]
		            d.update(mediaType=json.loads(lst)["mediaType"], digest=pin, size=len(lst))
		            data = json.dumps(idx).encode()
		            m.size = len(data)
		        o.addfile(m, io.BytesIO(data) if data is not None else None)
	PY
}

# fake_ctr VERSION TAR IMPORT_ARGV_JSON LS_ARGV_JSON: the same as real_ctr,
# through tests/win/fakewin.py's ctr on a fresh simulated machine of that
# Windows version (containerd's service running, TAR at 06-images' path)
fake_ctr() {
	local d rc=0 winp='C:\ProgramData\winbuild\images\pause.tar'
	d=$(mktemp -d "$BATS_TEST_TMPDIR/fake.XXXXXX")
	python3 "$WB_SRC/tests/win/fakewin.py" init "$d/state.json" "$d/root" qemu "$1"
	python3 - "$d/state.json" <<-'PY'
		import json, sys
		st = json.load(open(sys.argv[1]))
		st["services"]["containerd"] = {"name": "containerd", "status": "Running"}
		json.dump(st, open(sys.argv[1], "w"))
	PY
	mkdir -p "$d/root/ProgramData/winbuild/images"
	cp "$2" "$d/root/ProgramData/winbuild/images/pause.tar"
	local -a imp ls_
	mapfile -t imp < <(python3 -c 'import json,sys; print("\n".join(a.replace("{TAR}", sys.argv[2]) for a in json.loads(sys.argv[1])))' "$3" "$winp")
	mapfile -t ls_ < <(python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$4")
	WBSIM_STATE="$d/state.json" WBSIM_ROOT="$d/root" python3 "$WB_SRC/tests/win/fakewin.py" \
		run 'C:\Program Files\containerd\ctr.exe' "${imp[@]}" 2>&1 || rc=$?
	echo "rc=$rc"
	WBSIM_STATE="$d/state.json" WBSIM_ROOT="$d/root" python3 "$WB_SRC/tests/win/fakewin.py" \
		run 'C:\Program Files\containerd\ctr.exe' "${ls_[@]}" 2>&1
}

# answer < OUTPUT: what the contract compares: success or failure, the
# digest a "not found" names, and the table's (REF, DIGEST) rows
answer() {
	python3 -c '
import re, sys
out = sys.stdin.read()
rc = re.search(r"^rc=(\d+)$", out, re.M).group(1)
nf = re.findall(r"content digest (sha256:[0-9a-f]{64}): not found", out)
table = out[out.index("\nrc=") + 1:].split("\n")[1:]
rows = sorted(tuple(l.split()[0:3:2]) for l in table[1:] if l.strip())
print("ok" if rc == "0" else "failed", nf, rows)'
}

@test "contract: the engine tier's fake ctr gives Debian's containerd 1.6.20's answer on every staged tar and on the old list-named shape" {
	local name v c tar old real fake n=0 pin names
	names=$(pulling)
	[ -n "$names" ]
	for name in $names; do
		v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["windows_version"])' "$BUILT/out/$name/manifest.json")
		c=$(cmd "$name")
		tar=$(host_tar "$name" "$(img pause Tar <<<"$c")")
		pin=$(img pause Pin <<<"$c")
		old="$BATS_TEST_TMPDIR/$name-old.tar"
		old_shape "$tar" "$old" "$pin"
		for t in "$tar" "$old"; do
			start_containerd
			real=$(real_ctr "$t" "$(jj_ 'J["import"]' <<<"$c")" "$(jj_ 'J["ls"]' <<<"$c")" | answer)
			stop_containerd
			fake=$(fake_ctr "$v" "$t" "$(jj_ 'J["import"]' <<<"$c")" "$(jj_ 'J["ls"]' <<<"$c")" | answer)
			echo "$name $(basename "$t"): real: $real"
			echo "$name $(basename "$t"): fake: $fake"
			[ "$real" = "$fake" ]
			# the staged tar imports; the old shape does not (each list has
			# another build's windows/amd64 entry, absent from the tar)
			if [ "$t" = "$tar" ]; then
				[[ "$real" == "ok [] [('$(img pause Name <<<"$c")', '$(img pause Digest <<<"$c")')]" ]]
			else
				[[ "$real" == "failed ['sha256:"* ]]
			fi
			n=$((n + 1))
		done
	done
	[ "$n" -ge 6 ]
}
