/*
 * libFuzzer harness: archive extraction through the path stage takes
 * (tree_prepare_unpack -> extract_archive_fd: tar raw or in one gzip,
 * bzip2, xz, lzma or zstd stream, zip, ISO 9660) into a scratch root, with
 * the input's own SHA-256 as the expected digest.
 *
 * After every input, whatever extraction returned (docs/hardening.md,
 * "Archives"):
 *   - the scratch area holds only the archive, the root and an empty
 *     sentinel directory beside the root: nothing was written outside it;
 *   - below the root there are only directories and regular files, each
 *     file with one link: no symlink, hard link, device or FIFO;
 *   - every file extract_result lists lies below the root ('/'-separated,
 *     relative, no '.' or '..' component) and has the size it records;
 *   - the digest of the very bytes read was the expected one: a WB_EVERIFY
 *     can only mean the one-pass hash missed or repeated bytes.
 * A breach aborts (libFuzzer reports it as a crash).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <locale.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage/tree.h"
#include "trust/digest.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64], archive[128], root[128], outside[128];

static void breach(const char *what, const char *path)
{
	fprintf(stderr, "fuzz_extract: %s: %s\n", what, path);
	abort();
}

static int check_node(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_SL || flag == FTW_SLN || S_ISLNK(st->st_mode))
		breach("a symbolic link below the root", path);
	if (flag == FTW_DNR || flag == FTW_NS)
		breach("an unreadable node below the root", path);
	if (S_ISDIR(st->st_mode))
		return 0;
	if (!S_ISREG(st->st_mode))
		breach("neither a file nor a directory below the root", path);
	if (st->st_nlink != 1)
		breach("a file with more than one link below the root", path);
	return 0;
}

static int remove_node(const char *path, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	if (remove(path) < 0)
		breach("cannot clean up", path);
	return 0;
}

/* The scratch area holds exactly the archive, the root, the sentinel. */
static void check_scratch(void)
{
	DIR *d = opendir(base);
	struct dirent *de;
	int n = 0;

	if (!d)
		breach("cannot list", base);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (strcmp(de->d_name, "in.bin") && strcmp(de->d_name, "root") &&
		    strcmp(de->d_name, "outside"))
			breach("a name written beside the root", de->d_name);
		n++;
	}
	closedir(d);
	if (n != 3)
		breach("the archive, the root or the sentinel went missing", base);
	if (rmdir(outside) < 0)
		breach("the sentinel beside the root is not empty", outside);
	if (mkdir(outside, 0700) < 0)
		breach("cannot recreate", outside);
}

static void check_listed(const struct extract_result *res)
{
	for (size_t i = 0; i < res->nr; i++) {
		const char *p = res->files[i].path, *s = p;
		char full[4096 + 256];
		struct stat st;

		if (!*p || *p == '/')
			breach("a listed path that is empty or absolute", p);
		while (*s) {
			size_t n = strcspn(s, "/");

			if (!n || (n == 1 && s[0] == '.') || (n == 2 && !strncmp(s, "..", 2)))
				breach("a listed path with an empty, '.' or '..' component", p);
			s += n + (s[n] == '/');
		}
		snprintf(full, sizeof(full), "%s/%s", root, p);
		if (lstat(full, &st) < 0 || !S_ISREG(st.st_mode))
			breach("a listed file that is not a regular file below the root", p);
		if ((unsigned long long)st.st_size != res->files[i].size)
			breach("a listed file whose size differs from the record", p);
	}
}

/* at exit: the scratch area goes (a crash leaves it for a look) */
static void cleanup(void)
{
	nftw(base, remove_node, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* as main() does: libarchive reads entry names as UTF-8 */
	setlocale(LC_CTYPE, "C.UTF-8");
	snprintf(base, sizeof(base), "/tmp/wb-fuzz-extract-XXXXXX");
	if (!mkdtemp(base))
		abort();
	snprintf(archive, sizeof(archive), "%s/in.bin", base);
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	if (mkdir(outside, 0700) < 0)
		abort();
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct extract_spec spec;
	struct tree_piece piece;
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx dc;
	struct digest_result r;
	char hex[65];
	int fd, ret;

	if (digest_init(&dc, DIGEST_SHA256, &e) < 0)
		abort();
	digest_update(&dc, data, size);
	digest_final(&dc, &r);
	digest_release(&dc);
	digest_hex(r.sha256, 32, hex);

	fd = open(archive, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) < 0)
		abort();
	fd = open(archive, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		abort();

	memset(&spec, 0, sizeof(spec));
	spec.mtime = 1700000000;
	spec.format = "auto";
	spec.limits.max_bytes = 16u << 20;
	spec.limits.max_entries = 4096;
	spec.limits.max_seconds = 5;
	/* tree_prepare_unpack creates the root (the artifact's scratch dir) */
	ret = tree_prepare_unpack(root, fd, archive, hex, &spec, &piece, &e);
	close(fd);
	if (ret < 0 && e.code == WB_EVERIFY)
		breach("the one-pass digest differs from the input's own", e.msg);

	check_scratch();
	if (nftw(root, check_node, 16, FTW_PHYS) < 0 && errno != ENOENT)
		breach("cannot walk", root);
	check_listed(&piece.files);
	tree_piece_release(&piece);
	if (nftw(root, remove_node, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		breach("cannot clean up", root);
	return 0;
}
