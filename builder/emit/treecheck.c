/* Re-check a staged output against its manifest (emit/treecheck.h). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "stage/manifest.h"
#include "emit/treecheck.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/strlist.h"
#include "lib/winpath.h"
#include "trust/authenticode.h"
#include "trust/digest.h"

const char *treecheck_kind_name(enum treecheck_kind k)
{
	switch (k) {
	case TREECHECK_MODIFIED: return "modified";
	case TREECHECK_MISSING: return "missing";
	case TREECHECK_EXTRA: return "extra";
	case TREECHECK_SIGNATURE: return "signature";
	case TREECHECK_LEFTOVER: return "leftover";
	}
	return "?";
}

static void add(struct treecheck *res, enum treecheck_kind k, const char *path,
		char *detail)
{
	ALLOC_GROW(res->v, res->nr + 1, res->alloc);
	res->v[res->nr].kind = k;
	res->v[res->nr].path = xstrdup(path);
	res->v[res->nr].detail = detail;
	res->nr++;
}

static int cmp_problem(const void *a, const void *b)
{
	const struct treecheck_problem *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (int)x->kind - (int)y->kind;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every entry under ROOT/REL, recursively, into FILES (regular files and
 * anything else that is not a directory) and DIRS, as relative paths. */
static int walk(const char *root, const char *rel, struct wb_strlist *files,
		struct wb_strlist *dirs, struct wb_err *e)
{
	char *path = *rel ? fs_join(root, rel) : xstrdup(root);
	DIR *d = opendir(path);
	struct dirent *de;
	int ret = 0;

	if (!d) {
		ret = wb_error(e, WB_EIO, "cannot read '%s': %s", path, strerror(errno));
		free(path);
		return ret;
	}
	while (!ret && (de = readdir(d))) {
		char *sub, *full;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = *rel ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
		full = fs_join(root, sub);
		if (lstat(full, &st) < 0) {
			ret = wb_error(e, WB_EIO, "cannot stat '%s': %s", full, strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			wb_strlist_push(dirs, sub);
			ret = walk(root, sub, files, dirs, e);
		} else {
			wb_strlist_push(files, sub);
		}
		free(sub);
		free(full);
	}
	closedir(d);
	free(path);
	return ret;
}

static int listed(const struct wb_strlist *sorted, const char *s)
{
	return sorted->nr && bsearch(&s, sorted->v, sorted->nr, sizeof(*sorted->v), cmp_str);
}

/* Is D (relative) a parent directory of some manifest file or dir? */
static int needed_dir(const struct wb_strlist *paths, const char *d)
{
	size_t n = strlen(d);

	for (size_t i = 0; i < paths->nr; i++)
		if (!strncmp(paths->v[i], d, n) && paths->v[i][n] == '/')
			return 1;
	return 0;
}

/* F's site signature, once its bytes matched: under ROOTS, from the
 * certificate the manifest recorded (its thumbprint is the publisher).
 * @where where the site signs staged executables (`site_signing`) -- checked
 *   again by `winbuild verify --site-roots`
 */
static void check_site_signature(const char *full, const struct staged_file *f,
				 const char *label, const char *roots, struct treecheck *res)
{
	const char *pub[1] = { f->site_thumbprint };
	struct authenticode_policy pol;
	struct authenticode_result r;
	struct wb_err e = WB_ERR_INIT;

	memset(&pol, 0, sizeof(pol));
	memset(&r, 0, sizeof(r));
	pol.require = 1;
	pol.roots = roots;
	pol.publishers = pub;
	pol.npublishers = 1;
	if (authenticode_verify_path(full, f->tree_path, &pol, &r, &e) < 0)
		add(res, TREECHECK_SIGNATURE, label, xstrdup(e.msg));
	else
		res->nsigned++;
	authenticode_result_release(&r);
}

/* F below ROOT (a tree, or a drive: F's tree_path is its path below C:\),
 * a problem recorded under LABEL. */
static void check_file(const char *root, const struct staged_file *f, const char *label,
		       const char *roots, struct treecheck *res)
{
	char *full = fs_join(root, f->tree_path), hex[65];
	struct digest_result r;
	struct wb_err e = WB_ERR_INIT;
	struct stat st;

	if (lstat(full, &st) < 0) {
		add(res, TREECHECK_MISSING, label, NULL);
	} else if (!S_ISREG(st.st_mode)) {
		add(res, TREECHECK_MODIFIED, label, xstrdup("not a regular file"));
	} else if (digest_file(full, DIGEST_SHA256, &r, &e) < 0) {
		add(res, TREECHECK_MODIFIED, label, xstrdup(e.msg));
	} else {
		digest_hex(r.sha256, 32, hex);
		if (strcmp(hex, f->sha256) || r.size != f->size)
			add(res, TREECHECK_MODIFIED, label,
			    xasprintf("size %llu, sha256 %s; manifest: size %llu, sha256 %s",
				      r.size, hex, f->size, f->sha256));
		else if (f->site_signed)
			check_site_signature(full, f, label, roots, res);
	}
	free(full);
}

/* DIR's manifest into M, the site-roots rule checked. */
static int read_manifest(const char *dir, const char *site_roots, struct staged_manifest *m,
			 struct wb_err *e)
{
	char *mpath = fs_join(dir, "manifest.json");
	int ret = -1;

	memset(m, 0, sizeof(*m));
	if (!fs_exists(mpath)) {
		wb_error(e, WB_EUSAGE, "'%s' not found: is '%s' a staged output "
			 "(OUT/<name>)?", mpath, dir);
		goto out;
	}
	if (staged_manifest_read(mpath, m, e) < 0)
		goto out;
	for (size_t i = 0; !site_roots && i < m->nfiles; i++)
		if (m->files[i].site_signed) {
			wb_error(e, WB_EUSAGE, "'%s' holds files the site signed ('%s', ...): "
				 "give --site-roots FILE (the PEM its recipe's "
				 "site_signing.roots names) to verify their signatures",
				 dir, m->files[i].path);
			goto out;
		}
	ret = 0;
out:
	free(mpath);
	return ret;
}

/* M's I-th directory as a tree path (DIR's manifest), or NULL (WB_ESTAGE) */
static char *manifest_dir(const struct staged_manifest *m, size_t i, const char *dir,
			  struct wb_err *e)
{
	const char *why = NULL;
	char *t = winpath_to_tree(m->directories[i], &why);

	if (!t)
		wb_error(e, WB_ESTAGE, "%s/manifest.json: bad directory '%s': %s", dir,
			 m->directories[i], why);
	return t;
}

/* @where `winbuild verify` (tree vs manifest, `--node DRIVE`, `--lock`) */
int treecheck_run(const char *dir, const char *site_roots, struct treecheck *res,
		  struct wb_err *e)
{
	struct staged_manifest m;
	struct wb_strlist files = WB_STRLIST_INIT, dirs = WB_STRLIST_INIT;
	struct wb_strlist want = WB_STRLIST_INIT, wantdirs = WB_STRLIST_INIT;
	char *tree = fs_join(dir, "tree");
	int ret = -1;

	memset(res, 0, sizeof(*res));
	if (read_manifest(dir, site_roots, &m, e) < 0)
		goto out;
	res->nfiles = m.nfiles;
	res->ndirs = m.ndirectories;
	for (size_t i = 0; i < m.nfiles; i++)
		wb_strlist_push(&want, m.files[i].tree_path);
	for (size_t i = 0; i < m.ndirectories; i++) {
		char *t = manifest_dir(&m, i, dir, e);

		if (!t)
			goto out;
		wb_strlist_push(&wantdirs, t);
		free(t);
	}
	if (want.nr)
		qsort(want.v, want.nr, sizeof(*want.v), cmp_str);
	if (wantdirs.nr)
		qsort(wantdirs.v, wantdirs.nr, sizeof(*wantdirs.v), cmp_str);
	if (!fs_exists(tree)) {
		add(res, TREECHECK_MISSING, "", xstrdup("the whole tree/ directory"));
		ret = 0;
		goto out;
	}
	if (walk(tree, "", &files, &dirs, e) < 0)
		goto out;
	for (size_t i = 0; i < m.nfiles; i++)
		check_file(tree, &m.files[i], m.files[i].tree_path, site_roots, res);
	for (size_t i = 0; i < files.nr; i++)
		if (!listed(&want, files.v[i]))
			add(res, TREECHECK_EXTRA, files.v[i], NULL);
	if (dirs.nr)
		qsort(dirs.v, dirs.nr, sizeof(*dirs.v), cmp_str);
	for (size_t i = 0; i < wantdirs.nr; i++)
		if (!listed(&dirs, wantdirs.v[i]))
			add(res, TREECHECK_MISSING, wantdirs.v[i], xstrdup("directory"));
	for (size_t i = 0; i < dirs.nr; i++)
		if (!listed(&wantdirs, dirs.v[i]) && !needed_dir(&want, dirs.v[i]) &&
		    !needed_dir(&wantdirs, dirs.v[i]))
			add(res, TREECHECK_EXTRA, dirs.v[i], xstrdup("directory"));
	if (res->nr)
		qsort(res->v, res->nr, sizeof(*res->v), cmp_problem);
	ret = 0;
out:
	staged_manifest_release(&m);
	wb_strlist_release(&files);
	wb_strlist_release(&dirs);
	wb_strlist_release(&want);
	wb_strlist_release(&wantdirs);
	free(tree);
	return ret;
}

/* where step 02 (packer/scripts/02-payload.ps1.in) leaves the build's
 * manifest on the node, below C:\ */
#define NODE_MANIFEST "ProgramData/winbuild/manifest.json"
#define NODE_MANIFEST_WIN "C:\\ProgramData\\winbuild\\manifest.json"

/*
 * @where `winbuild verify` (tree vs manifest, `--node DRIVE`, `--lock`) -- a
 *   built image's system drive: kept files there, build-only ones gone
 */
int treecheck_node(const char *dir, const char *drive, const char *site_roots,
		   struct treecheck *res, struct wb_err *e)
{
	struct staged_manifest m;
	struct staged_file mf;
	struct digest_result r;
	char *full = NULL;
	struct stat st;
	int ret = -1;

	memset(res, 0, sizeof(*res));
	if (read_manifest(dir, site_roots, &m, e) < 0)
		goto out;
	if (stat(drive, &st) < 0 || !S_ISDIR(st.st_mode)) {
		wb_error(e, WB_EUSAGE, "'%s' is not a directory (the root of an image's "
			 "system drive)", drive);
		goto out;
	}
	res->ndirs = m.ndirectories;
	for (size_t i = 0; i < m.nfiles; i++) {
		const struct staged_file *f = &m.files[i];

		if (!f->build_only) {
			res->nfiles++;
			check_file(drive, f, f->path, site_roots, res);
			continue;
		}
		free(full);
		full = fs_join(drive, f->tree_path);
		if (lstat(full, &st) == 0)
			add(res, TREECHECK_LEFTOVER, f->path,
			    xstrdup("build-only: the step that used it removes it"));
		else
			wb_strlist_push(&res->absent, f->path);
	}
	for (size_t i = 0; i < m.ndirectories; i++) {
		char *t = manifest_dir(&m, i, dir, e);

		if (!t)
			goto out;
		free(full);
		full = fs_join(drive, t);
		free(t);
		if (stat(full, &st) < 0 || !S_ISDIR(st.st_mode))
			add(res, TREECHECK_MISSING, m.directories[i], xstrdup("directory"));
	}
	/* the node's manifest is the build's, byte for byte */
	memset(&mf, 0, sizeof(mf));
	mf.tree_path = (char *)NODE_MANIFEST;
	free(full);
	full = fs_join(dir, "manifest.json");
	if (digest_file(full, DIGEST_SHA256, &r, e) < 0)
		goto out;
	digest_hex(r.sha256, 32, mf.sha256);
	mf.size = r.size;
	check_file(drive, &mf, NODE_MANIFEST_WIN, NULL, res);
	if (res->nr)
		qsort(res->v, res->nr, sizeof(*res->v), cmp_problem);
	ret = 0;
out:
	free(full);
	staged_manifest_release(&m);
	return ret;
}

void treecheck_release(struct treecheck *res)
{
	for (size_t i = 0; i < res->nr; i++) {
		free(res->v[i].path);
		free(res->v[i].detail);
	}
	free(res->v);
	wb_strlist_release(&res->absent);
	memset(res, 0, sizeof(*res));
}
