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

int lockfile_write(const char *path, const char *recipe, const char *iso_sha256,
		   const struct fetch_item *items, size_t n, struct wb_err *e)
{
	json_t *root = json_object(), *arts = json_object();
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
	ret = json_write_file(path, root, JSON_SORT_KEYS | JSON_INDENT(2), e);
	json_decref(root);
	return ret;
}
