/* The stage's up-to-date check: see stamp.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "stage/stamp.h"
#include "trust/digest.h"

#define STAMP_NAME ".stage-stamp"
#define STAMP_MAGIC "winbuild-stage-stamp 1"
#define STAMP_FILE_MAX (16 << 20)

static int hash_init(struct digest_ctx *d, struct wb_err *e)
{
	memset(d, 0, sizeof(*d));
	return digest_init(d, DIGEST_SHA256, e);
}

static void hash_str(struct digest_ctx *d, const char *tag, const char *s)
{
	digest_update(d, tag, strlen(tag) + 1);
	digest_update(d, s ? s : "", s ? strlen(s) + 1 : 1);
}

static void hash_done(struct digest_ctx *d, char out[65])
{
	struct digest_result r;

	digest_final(d, &r);
	digest_hex(r.sha256, 32, out);
}

/* The content of PATH (a regular file), or a marker when it is not one. */
static int hash_file(struct digest_ctx *d, const char *tag, const char *path,
		     struct wb_err *e)
{
	struct buf b = BUF_INIT;
	struct stat st;

	hash_str(d, tag, path);
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		hash_str(d, "absent", "");
		return 0;
	}
	if (fs_read_file(path, STAMP_FILE_MAX, WB_EIO, &b, e) < 0) {
		buf_release(&b);
		return -1;
	}
	digest_update(d, b.ptr ? b.ptr : "", b.len);
	buf_release(&b);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define STAMP_MAX_DEPTH 64

/* Every regular file below DIR, sorted, with its content. Deeper than
 * STAMP_MAX_DEPTH (a link loop?) is an error, never a silent stop. */
static int hash_dir(struct digest_ctx *d, const char *dir, int depth, struct wb_err *e)
{
	struct wb_strlist names = WB_STRLIST_INIT;
	struct dirent *de;
	DIR *dh = opendir(dir);
	int ret = 0;

	if (!dh) {
		hash_str(d, "nodir", dir);
		return 0;
	}
	while ((de = readdir(dh)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			wb_strlist_push(&names, de->d_name);
	closedir(dh);
	if (names.nr)
		qsort(names.v, names.nr, sizeof(*names.v), cmp_str);
	for (size_t i = 0; !ret && i < names.nr; i++) {
		char *p = fs_join(dir, names.v[i]);
		struct stat st;

		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) && depth >= STAMP_MAX_DEPTH)
			ret = wb_error(e, WB_EUSAGE,
				       "templates: '%s' is nested deeper than %d directories",
				       p, STAMP_MAX_DEPTH);
		else if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			ret = hash_dir(d, p, depth + 1, e);
		else
			ret = hash_file(d, "template", p, e);
		free(p);
	}
	wb_strlist_release(&names);
	return ret;
}

/* The running binary: a rebuilt winbuild of the same version may stage
 * differently. */
static void hash_self(struct digest_ctx *d)
{
	struct stat st;
	char buf[128];

	hash_str(d, "version", WB_VERSION);
	if (stat("/proc/self/exe", &st) == 0) {
		snprintf(buf, sizeof(buf), "%llu %lld.%09ld %llu",
			 (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec, (unsigned long long)st.st_ino);
		hash_str(d, "exe", buf);
	}
}

/* The files a requirement names: key files, a method's file settings. */
static int hash_req_files(struct digest_ctx *d, const struct trust_req *q,
			  struct wb_err *e)
{
	for (size_t i = 0; i < q->nkeys; i++)
		if (q->keys[i].key_file && hash_file(d, "key_file", q->keys[i].key_file, e) < 0)
			return -1;
	for (size_t i = 0; i < q->nparams; i++)
		if (q->params[i].file && hash_file(d, q->params[i].key, q->params[i].value, e) < 0)
			return -1;
	return 0;
}

static int hash_roots(struct digest_ctx *d, const struct plan_authenticode *a,
		      struct wb_err *e)
{
	if (!a->set)
		return 0;
	for (size_t i = 0; i < a->nsets; i++)
		if (a->sets[i].roots && hash_file(d, "roots", a->sets[i].roots, e) < 0)
			return -1;
	return 0;
}

/* The contents of every other file the plan names and the stage reads:
 * Authenticode roots (global, per component, every trust set), every
 * verification requirement's key and setting files, and the templates
 * components declare (`generate:`, beside the component file). A file
 * changed in place must change the key. */
static int hash_plan_files(struct digest_ctx *d, const struct plan *p, struct wb_err *e)
{
	if (hash_roots(d, &p->authenticode, e) < 0 ||
	    (p->site_signing.set && hash_file(d, "site_roots", p->site_signing.roots, e) < 0))
		return -1;
	for (size_t i = 0; i < p->ngenerate; i++)
		if (hash_file(d, "generate", p->generate[i].template_path, e) < 0)
			return -1;
	for (size_t i = 0; i < p->ncomponents; i++)
		if (hash_roots(d, &p->components[i].authenticode, e) < 0)
			return -1;
	for (size_t i = 0; i < p->nartifacts; i++) {
		const struct trust_spec *v = &p->artifacts[i].verify;

		for (size_t q = 0; q < v->nreqs; q++)
			if (hash_req_files(d, &v->reqs[q], e) < 0)
				return -1;
	}
	return 0;
}

/* The site's signing key (site_signing): another certificate or key signs
 * other bytes. A PKCS#11 key is named by its URI and module only. */
static int hash_sign(struct digest_ctx *d, const struct sign_opts *o, struct wb_err *e)
{
	hash_str(d, "sign_pkcs11", o->pkcs11_uri);
	hash_str(d, "sign_module", o->pkcs11_module);
	hash_str(d, "sign_ts", o->timestamp_url);
	if (o->cert && strncmp(o->cert, "pkcs11:", 7) && hash_file(d, "sign_cert", o->cert, e) < 0)
		return -1;
	if (o->cert && !strncmp(o->cert, "pkcs11:", 7))
		hash_str(d, "sign_cert", o->cert);
	if ((o->key && hash_file(d, "sign_key", o->key, e) < 0) ||
	    (o->pkcs12 && hash_file(d, "sign_pkcs12", o->pkcs12, e) < 0))
		return -1;
	return 0;
}

int stamp_key(const struct stamp_inputs *in, char out[65], struct wb_err *e)
{
	const struct plan *p = in->plan;
	struct digest_ctx d;
	char epoch[32];
	int ret = 0;

	if (hash_init(&d, e) < 0)
		return -1;
	hash_str(&d, "magic", STAMP_MAGIC);
	hash_self(&d);
	hash_str(&d, "recipe", p->recipe_path);
	/* every file the plan came from: recipe, includes, components,
	 * overrides (names like "--set" are not files and hash as absent) */
	for (size_t i = 0; !ret && i < p->interned.nr; i++)
		ret = hash_file(&d, "input", p->interned.v[i], e);
	if (!ret)
		ret = hash_plan_files(&d, p, e);
	hash_str(&d, "env", in->env_set);
	for (size_t i = 0; in->sets && i < in->sets->nr; i++)
		hash_str(&d, "set", in->sets->v[i]);
	for (size_t i = 0; i < p->nartifacts; i++) {
		hash_str(&d, "ref", in->ref_specs[i]);
		hash_str(&d, "sha256", in->sha256s[i]);
	}
	if (!ret)
		ret = hash_dir(&d, in->templates_dir, 0, e);
	if (!ret && in->sign && p->site_signing.set)
		ret = hash_sign(&d, in->sign, e);
	snprintf(epoch, sizeof(epoch), "%lld", (long long)in->epoch);
	hash_str(&d, "epoch", epoch);
	if (ret < 0) {
		digest_release(&d);
		return -1;
	}
	hash_done(&d, out);
	return 0;
}

/* ---- the tree fingerprint ------------------------------------------------ */

static void meta_line(struct wb_strlist *lines, const char *rel, const struct stat *st)
{
	char *l = xasprintf("%s %o %llu %llu %lld.%09ld %lld.%09ld", rel,
			    (unsigned)st->st_mode, (unsigned long long)st->st_size,
			    (unsigned long long)st->st_ino, (long long)st->st_ctim.tv_sec,
			    st->st_ctim.tv_nsec, (long long)st->st_mtim.tv_sec,
			    st->st_mtim.tv_nsec);

	wb_strlist_push(lines, l);
	free(l);
}

static int walk(const char *full, const char *rel, struct wb_strlist *lines, int depth)
{
	struct dirent *de;
	struct stat st;
	DIR *dh;

	if (lstat(full, &st) < 0)
		return -1;
	meta_line(lines, rel, &st);
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (depth > 64 || !(dh = opendir(full)))
		return -1;
	while ((de = readdir(dh)) != NULL) {
		char *f, *r;
		int ret;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		f = fs_join(full, de->d_name);
		r = fs_join(rel, de->d_name);
		ret = walk(f, r, lines, depth + 1);
		free(f);
		free(r);
		if (ret < 0) {
			closedir(dh);
			return -1;
		}
	}
	closedir(dh);
	return 0;
}

/* 0 and OUT set; -1 when the tree or manifest is missing or unreadable. */
static int fingerprint(const char *dir, char out[65])
{
	struct wb_strlist lines = WB_STRLIST_INIT;
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx d;
	char *tree = fs_join(dir, "tree"), *man = fs_join(dir, "manifest.json");
	int ret = walk(tree, "tree", &lines, 0);

	if (!ret)
		ret = walk(man, "manifest.json", &lines, 0);
	free(tree);
	free(man);
	if (!ret && hash_init(&d, &e) < 0)
		ret = -1;
	if (!ret) {
		if (lines.nr)
			qsort(lines.v, lines.nr, sizeof(*lines.v), cmp_str);
		for (size_t i = 0; i < lines.nr; i++)
			hash_str(&d, "entry", lines.v[i]);
		hash_done(&d, out);
	}
	wb_strlist_release(&lines);
	return ret;
}

static int other_run_dirs(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *de;
	int found = 0;

	if (!dh)
		return 1;
	while (!found && (de = readdir(dh)) != NULL)
		found = !strncmp(de->d_name, ".tree.tmp.", 10);
	closedir(dh);
	return found;
}

/* Read DIR's stamp into B: 1 when it is one whose tree fingerprint
 * matches the tree as it is now, 0 when not (or there is none), -1 on a
 * read error. KEY, when not NULL, must match too. */
static int read_valid(const char *dir, const char *key, struct buf *b,
		      struct wb_err *e)
{
	char *path = fs_join(dir, STAMP_NAME), want[65], got[65], *k, *t;
	int ret = 0;

	if (!fs_exists(path))
		goto out;
	if (fs_read_file(path, STAMP_FILE_MAX, WB_EIO, b, e) < 0) {
		ret = -1;
		goto out;
	}
	k = strstr(b->ptr, "\nkey ");
	t = strstr(b->ptr, "\ntree ");
	if (strncmp(b->ptr, STAMP_MAGIC "\n", strlen(STAMP_MAGIC) + 1) || !k || !t ||
	    k[5 + 64] != '\n' || (key && strncmp(k + 5, key, 64)))
		goto out;
	memcpy(want, t + 6, 64);
	want[64] = '\0';
	if (t[6 + 64] != '\n' || fingerprint(dir, got) < 0)
		goto out;
	ret = !strcmp(want, got);
out:
	free(path);
	return ret;
}

int stamp_check(const char *dir, const char *key, struct wb_err *e)
{
	struct buf b = BUF_INIT;
	int ret = other_run_dirs(dir) ? 0 : read_valid(dir, key, &b, e);

	buf_release(&b);
	return ret;
}

/*
 * @where re-staging only what changed: per-artifact prep keys in the stamp,
 *   hard links from the previous tree
 */
int stamp_reusable(const char *dir, struct wb_strlist *preps, struct wb_err *e)
{
	struct buf b = BUF_INIT;
	int ret = read_valid(dir, NULL, &b, e);

	for (char *l = b.ptr; ret == 1 && l && *l;) {
		char *nl = strchr(l, '\n');

		if (nl)
			*nl = '\0';
		if (!strncmp(l, "prep ", 5))
			wb_strlist_push(preps, l + 5);
		l = nl ? nl + 1 : NULL;
	}
	buf_release(&b);
	return ret;
}

/*
 * @where re-staging only what changed: per-artifact prep keys in the stamp,
 *   hard links from the previous tree
 */
int stamp_prep_key(const struct plan_artifact *a, const char *sha256,
		   time_t epoch, char out[65], struct wb_err *e)
{
	struct digest_ctx d;
	char num[96];

	if (hash_init(&d, e) < 0)
		return -1;
	hash_str(&d, "magic", "winbuild-prep 1");
	hash_self(&d);
	hash_str(&d, "artifact", a->name);
	hash_str(&d, "component", a->component);
	hash_str(&d, "sha256", sha256);
	hash_str(&d, "action", plan_action_name(a->action));
	hash_str(&d, "dest", a->dest_tree);
	snprintf(num, sizeof(num), "%d %llu %llu %llu %lld", a->strip,
		 a->limits.max_bytes, a->limits.max_entries, a->limits.max_ratio,
		 (long long)epoch);
	hash_str(&d, "numbers", num);
	if (a->action == PLAN_UNPACK)
		hash_str(&d, "format", a->format ? a->format : "auto");
	for (size_t i = 0; i < a->include.nr; i++)
		hash_str(&d, "include", a->include.v[i]);
	hash_done(&d, out);
	return 0;
}

int stamp_write(const char *dir, const char *key, const struct wb_strlist *preps,
		struct wb_err *e)
{
	char *path = fs_join(dir, STAMP_NAME), fp[65];
	struct buf text = BUF_INIT;
	int ret;

	if (fingerprint(dir, fp) < 0) {
		free(path);
		return wb_error(e, WB_EIO, "cannot read the staged tree in '%s'", dir);
	}
	buf_addf(&text, "%s\nkey %s\ntree %s\n", STAMP_MAGIC, key, fp);
	for (size_t i = 0; preps && i < preps->nr; i++)
		buf_addf(&text, "prep %s\n", preps->v[i]);
	ret = fs_write_atomic(path, text.ptr, text.len, 0644, e);
	buf_release(&text);
	free(path);
	return ret;
}

void stamp_remove(const char *dir)
{
	char *path = fs_join(dir, STAMP_NAME);

	if (unlink(path) < 0 && errno != ENOENT) {
		/* a stamp we cannot remove must not outlive a changed tree */
		int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
	}
	free(path);
}
