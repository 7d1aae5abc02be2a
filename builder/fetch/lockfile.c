#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fetch/cache.h"
#include "fetch/lockfile.h"
#include "lib/json.h"
#include "lib/buf.h"
#include "lib/fs.h"

#define LOCK_MAX (16 * 1024 * 1024)

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct lock_entry *)a)->name,
		      ((const struct lock_entry *)b)->name);
}

static int cmp_signed(const void *a, const void *b)
{
	return strcmp(((const struct lock_signed *)a)->path,
		      ((const struct lock_signed *)b)->path);
}

/* "site_signed" of ROOT into LF. 0, or -1 with E. */
static int read_site_signed(const char *path, json_t *root, struct lockfile *lf,
			    struct wb_err *e)
{
	json_t *ss = json_object_get(root, "site_signed"), *v;
	const char *file;

	if (!ss)
		return 0;
	if (!json_is_object(ss))
		return wb_error(e, WB_EUSAGE, "lock file '%s': \"site_signed\" must be "
				"an object", path);
	lf->sv = xcalloc(json_object_size(ss) + 1, sizeof(*lf->sv));
	json_object_foreach(ss, file, v) {
		const char *art = json_string_value(json_object_get(v, "artifact"));
		const char *up = json_string_value(json_object_get(v, "upstream_sha256"));
		const char *sha = json_string_value(json_object_get(v, "sha256"));
		const char *signer = json_string_value(json_object_get(v, "signer"));
		const char *thumb = json_string_value(json_object_get(v, "signer_sha256"));
		json_t *ts = json_object_get(v, "timestamped");
		struct lock_signed *ls;

		if (!art || !signer || !up || !cache_is_key(up) || !sha ||
		    !cache_is_key(sha) || !thumb || !cache_is_key(thumb) ||
		    !json_is_boolean(ts))
			return wb_error(e, WB_EUSAGE, "lock file '%s': site-signed file "
					"'%s' needs \"artifact\", \"signer\", "
					"\"timestamped\" and lowercase hex \"sha256\", "
					"\"upstream_sha256\" and \"signer_sha256\"", path, file);
		ls = &lf->sv[lf->nsigned++];
		ls->path = xstrdup(file);
		ls->artifact = xstrdup(art);
		ls->signer = xstrdup(signer);
		memcpy(ls->signer_sha256, thumb, 65);
		memcpy(ls->upstream_sha256, up, 65);
		memcpy(ls->sha256, sha, 65);
		ls->timestamped = json_is_true(ts);
	}
	qsort(lf->sv, lf->nsigned, sizeof(*lf->sv), cmp_signed);
	return 0;
}

static int cmp_image(const void *a, const void *b)
{
	return strcmp(((const struct lock_image *)a)->key, ((const struct lock_image *)b)->key);
}

/* "images" of ROOT into LF. 0, or -1 with E. */
static int read_images(const char *path, json_t *root, struct lockfile *lf,
		       struct wb_err *e)
{
	json_t *im = json_object_get(root, "images"), *v;
	const char *key;

	if (!im)
		return 0;
	if (!json_is_object(im))
		return wb_error(e, WB_EUSAGE, "lock file '%s': \"images\" must be an object",
				path);
	lf->images = xcalloc(json_object_size(im) + 1, sizeof(*lf->images));
	json_object_foreach(im, key, v) {
		const char *d = json_string_value(json_object_get(v, "digest"));
		const char *md = json_string_value(json_object_get(v, "manifest_digest"));
		struct lock_image *li;

		if (!d || !md || strncmp(d, "sha256:", 7) || !cache_is_key(d + 7) ||
		    strncmp(md, "sha256:", 7) || !cache_is_key(md + 7))
			return wb_error(e, WB_EUSAGE, "lock file '%s': image '%s' needs "
					"\"digest\" and \"manifest_digest\" (sha256: and "
					"lowercase hex)", path, key);
		li = &lf->images[lf->nimages++];
		li->key = xstrdup(key);
		memcpy(li->digest, d, 72);
		memcpy(li->manifest_digest, md, 72);
	}
	qsort(lf->images, lf->nimages, sizeof(*lf->images), cmp_image);
	return 0;
}

/*
 * @where container images in the lock (pin, build manifest, os.version,
 *   cosign evidence) -- read back
 */
const struct lock_image *lockfile_find_image(const struct lockfile *lf, const char *key)
{
	struct lock_image k;

	if (!lf || !lf->nimages)
		return NULL;
	k.key = (char *)key;
	return bsearch(&k, lf->images, lf->nimages, sizeof(k), cmp_image);
}

/*
 * @where the lock file read and write (the one reader and writer); a lock
 *   made for another image refused
 */
int lockfile_read(const char *path, struct lockfile *lf, struct wb_err *e)
{
	struct buf text = BUF_INIT;
	json_error_t je;
	json_t *root = NULL, *arts, *v;
	const char *name;
	int ret = -1;

	memset(lf, 0, sizeof(*lf));
	if (!fs_exists(path))
		return 0;
	if (fs_read_file(path, LOCK_MAX, WB_EUSAGE, &text, e) < 0)
		return -1;
	root = json_loadb(text.ptr, text.len, 0, &je);
	if (!root) {
		wb_error(e, WB_EUSAGE, "lock file '%s':%d:%d: %s", path, je.line,
			 je.column, je.text);
		goto out;
	}
	if (json_integer_value(json_object_get(root, "version")) != 1) {
		wb_error(e, WB_EUSAGE, "lock file '%s': unsupported \"version\"", path);
		goto out;
	}
	arts = json_object_get(root, "artifacts");
	if (!json_is_object(arts)) {
		wb_error(e, WB_EUSAGE, "lock file '%s': \"artifacts\" must be an object", path);
		goto out;
	}
	if (json_is_string(json_object_get(root, "recipe")))
		lf->image = xstrdup(json_string_value(json_object_get(root, "recipe")));
	if ((v = json_object_get(root, "windows_iso"))) {
		const char *sha = json_string_value(json_object_get(v, "sha256"));

		if (!sha || !cache_is_key(sha)) {
			wb_error(e, WB_EUSAGE, "lock file '%s': \"windows_iso\" needs a "
				 "lowercase hex \"sha256\"", path);
			goto out;
		}
		memcpy(lf->iso_sha256, sha, 65);
	}
	lf->v = xcalloc(json_object_size(arts) + 1, sizeof(*lf->v));
	json_object_foreach(arts, name, v) {
		const char *url = json_string_value(json_object_get(v, "url"));
		const char *sha = json_string_value(json_object_get(v, "sha256"));
		json_t *size = json_object_get(v, "size");
		struct lock_entry *le;

		if (!url || !sha || !cache_is_key(sha) || !json_is_integer(size) ||
		    json_integer_value(size) < 0) {
			wb_error(e, WB_EUSAGE,
				 "lock file '%s': artifact '%s' needs \"url\", \"size\" and a "
				 "lowercase hex \"sha256\"", path, name);
			goto out;
		}
		le = &lf->v[lf->nr++];
		le->name = xstrdup(name);
		le->url = xstrdup(url);
		memcpy(le->sha256, sha, 65);
		le->size = (unsigned long long)json_integer_value(size);
	}
	qsort(lf->v, lf->nr, sizeof(*lf->v), cmp_entry);
	if (read_site_signed(path, root, lf, e) < 0 || read_images(path, root, lf, e) < 0)
		goto out;
	ret = 1;
out:
	if (ret < 0)
		lockfile_release(lf);
	json_decref(root);
	buf_release(&text);
	return ret;
}

void lockfile_release(struct lockfile *lf)
{
	for (size_t i = 0; i < lf->nr; i++) {
		free(lf->v[i].name);
		free(lf->v[i].url);
	}
	free(lf->v);
	for (size_t i = 0; i < lf->nsigned; i++) {
		free(lf->sv[i].path);
		free(lf->sv[i].artifact);
		free(lf->sv[i].signer);
	}
	free(lf->sv);
	for (size_t i = 0; i < lf->nimages; i++)
		free(lf->images[i].key);
	free(lf->images);
	free(lf->image);
	memset(lf, 0, sizeof(*lf));
}

const struct lock_entry *lockfile_find(const struct lockfile *lf, const char *name)
{
	struct lock_entry key;

	if (!lf->nr)
		return NULL;
	key.name = (char *)name;
	return bsearch(&key, lf->v, lf->nr, sizeof(key), cmp_entry);
}

const struct lock_signed *lockfile_find_signed(const struct lockfile *lf, const char *path)
{
	struct lock_signed key;

	if (!lf->nsigned)
		return NULL;
	key.path = (char *)path;
	return bsearch(&key, lf->sv, lf->nsigned, sizeof(key), cmp_signed);
}

/* The lock file at PATH as JSON, or NULL when there is none or it is not
 * a lock file of ours. */
static json_t *load_old(const char *path)
{
	struct wb_err e = WB_ERR_INIT;
	struct buf text = BUF_INIT;
	json_t *root = NULL;

	if (fs_exists(path) && fs_read_file(path, LOCK_MAX, WB_EUSAGE, &text, &e) == 0)
		root = json_loadb(text.ptr, text.len, 0, NULL);
	buf_release(&text);
	if (root && !json_is_object(json_object_get(root, "artifacts"))) {
		json_decref(root);
		root = NULL;
	}
	return root;
}

/* The old lock's "site_signed" entries whose artifact ARTS still pins at
 * the bytes the old lock pinned: the stage that recorded them signed
 * those bytes. NULL when none is left. */
static json_t *kept_site_signed(json_t *old, json_t *arts)
{
	json_t *ss = json_object_get(old, "site_signed"), *keep = json_object(), *v;
	json_t *old_arts = json_object_get(old, "artifacts");
	const char *file;

	json_object_foreach(ss, file, v) {
		const char *art = json_string_value(json_object_get(v, "artifact"));
		const char *was, *now;

		if (!art)
			continue;
		was = json_string_value(json_object_get(json_object_get(old_arts, art), "sha256"));
		now = json_string_value(json_object_get(json_object_get(arts, art), "sha256"));
		if (was && now && !strcmp(was, now))
			json_object_set(keep, file, v);
	}
	if (!json_object_size(keep)) {
		json_decref(keep);
		return NULL;
	}
	return keep;
}

/*
 * @where the lock file read and write (the one reader and writer); a lock
 *   made for another image refused
 */
int lockfile_write(const char *path, const char *recipe, const char *iso_sha256,
		   const struct fetch_item *items, size_t n, json_t *images,
		   struct wb_err *e)
{
	json_t *root = json_object(), *arts = json_object(), *old;
	int ret;

	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "recipe", json_string(recipe ? recipe : ""));
	if (iso_sha256) {
		/* the ISO builders' install media: Packer checks it, not winbuild */
		json_t *iso = json_object();
		json_object_set_new(iso, "sha256", json_string(iso_sha256));
		json_object_set_new(root, "windows_iso", iso);
	}
	for (size_t i = 0; i < n; i++) {
		const struct fetch_item *it = &items[i];
		json_t *a;

		if (it->status)
			continue;
		a = json_object();
		json_object_set_new(a, "url", json_url(it->url ? it->url : ""));
		json_object_set_new(a, "size", json_integer((json_int_t)it->size));
		json_object_set_new(a, "sha256", json_string(it->sha256));
		json_object_set_new(a, "verified_by", verify_evidence_lock_json(&it->ev));
		json_object_set_new(arts, it->art->name, a);
	}
	json_object_set_new(root, "artifacts", arts);
	if (images && json_object_size(images))
		json_object_set(root, "images", images);
	if ((old = load_old(path))) {
		json_t *keep = kept_site_signed(old, arts);

		if (keep)
			json_object_set_new(root, "site_signed", keep);
		json_decref(old);
	}
	ret = json_write_file(path, root, JSON_SORT_KEYS | JSON_INDENT(2), e);
	json_decref(root);
	return ret;
}

int lockfile_set_site_signed(const char *path, const char *recipe,
			     const struct lock_signed *v, size_t n, struct wb_err *e)
{
	json_t *root = load_old(path), *ss;
	const char *image;
	int ret;

	if (!root)
		return wb_error(e, WB_EUSAGE, "lock file '%s': not there or not a lock "
				"file; the site-signed digests are not recorded", path);
	image = json_string_value(json_object_get(root, "recipe"));
	if (image && *image && recipe && strcmp(image, recipe)) {
		json_decref(root);
		return wb_error(e, WB_EUSAGE, "lock file '%s' was made for image '%s', not "
				"'%s'; the site-signed digests are not recorded", path,
				image, recipe);
	}
	ss = json_object();
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "artifact", json_text(v[i].artifact));
		json_object_set_new(o, "upstream_sha256", json_string(v[i].upstream_sha256));
		json_object_set_new(o, "sha256", json_string(v[i].sha256));
		json_object_set_new(o, "signer", json_text(v[i].signer ? v[i].signer : ""));
		json_object_set_new(o, "signer_sha256", json_string(v[i].signer_sha256));
		json_object_set_new(o, "timestamped", json_boolean(v[i].timestamped));
		json_object_set_new(ss, v[i].path, o);
	}
	if (n)
		json_object_set_new(root, "site_signed", ss);
	else {
		json_decref(ss);
		json_object_del(root, "site_signed");
	}
	ret = json_write_file(path, root, JSON_SORT_KEYS | JSON_INDENT(2), e);
	json_decref(root);
	return ret;
}
