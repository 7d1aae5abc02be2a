#!/bin/sh
# Fetch libarchive's own test archives (libarchive/test/*.uu) from Debian's
# source package, for tests/cli/redteam_archives.bats. Never vendored: the
# orig tarball is downloaded with apt-get source through a private sources
# list (the system's apt configuration is not touched) and cached under
# tests/.cache/libarchive/ (gitignored). Prints the directory holding the
# .uu files. Idempotent: no network when the cache is filled.
#   WB_LIBARCHIVE_SUITE  Debian suite (default bookworm: libarchive 3.6.2)
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
D="$top/tests/.cache/libarchive"
suite="${WB_LIBARCHIVE_SUITE:-bookworm}"
out="$D/test"

if [ -f "$out/.complete" ]; then
	echo "$out"
	exit 0
fi
mkdir -p "$D/lists/partial" "$D/cache/archives/partial" "$D/src"
# the archive this machine's apt already uses for SUITE (never a host of ours)
uri=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 2>/dev/null |
	awk -v s="$suite" '$1 == s { print $2; exit }')
if [ -z "$uri" ]; then
	echo "libarchive-corpus: apt has no '$suite' source configured" >&2
	exit 1
fi
printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
	"$uri" "$suite" >"$D/src.list"
set -- -o Dir::Etc::SourceList="$D/src.list" -o Dir::Etc::SourceParts=/dev/null \
	-o Dir::State::Lists="$D/lists" -o Dir::Cache="$D/cache" -qq
apt-get "$@" update >&2
(cd "$D/src" && apt-get "$@" source --download-only libarchive >&2)
orig=$(ls "$D"/src/libarchive_*.orig.tar.* | head -n 1)
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
tar -xf "$orig" -C "$out.tmp" --wildcards --strip-components=3 '*/libarchive/test/*.uu'
touch "$out.tmp/.complete"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
