#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "emit/manifest.h"
#include "lib/fs.h"

#define MANIFEST_MAX (64u << 20)

static int is_hex64(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

static char *opt_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
}

static int safe_tree_path(const char *p)
{
	const char *s = p;

	if (!*p || *p == '/' || strchr(p, '\\'))
		return 0;
	while (*s) {
		size_t n = strcspn(s, "/");
		if (!n || (n == 1 && s[0] == '.') ||
		    (n == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		s += n;
		if (*s == '/')
			s++;
	}
	return 1;
}

int staged_manifest_read(const char *path, struct staged_manifest *m,
			 struct wb_err *e)
{
	json_error_t je;
	json_t *root = NULL, *arr, *it;
	size_t i;
	int ret = -1;

	memset(m, 0, sizeof(*m));
	buf_init(&m->raw);
	if (fs_read_file(path, MANIFEST_MAX, WB_ESTAGE, &m->raw, e))
		return -1;
	root = json_loadb(m->raw.ptr, m->raw.len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		wb_error(e, WB_ESTAGE, "'%s':%d: %s", path, je.line, je.text);
		goto out;
	}
	if (json_integer_value(json_object_get(root, "schema")) != 1) {
		wb_error(e, WB_ESTAGE, "'%s': schema is not 1", path);
		goto out;
	}
	m->image = opt_str(root, "image");
	m->windows_version = opt_str(root, "windows_version");
	m->source_date_epoch = json_integer_value(json_object_get(root, "source_date_epoch"));
	if (!m->image) {
		wb_error(e, WB_ESTAGE, "'%s': no 'image'", path);
		goto out;
	}

	arr = json_object_get(root, "artifacts");
	if (!json_is_array(arr)) {
		wb_error(e, WB_ESTAGE, "'%s': 'artifacts' is not a list", path);
		goto out;
	}
	m->artifacts = xcalloc(json_array_size(arr) + 1, sizeof(*m->artifacts));
	json_array_foreach(arr, i, it) {
		struct staged_artifact *a = &m->artifacts[m->nartifacts++];
		const char *h = json_string_value(json_object_get(it, "sha256"));

		a->name = opt_str(it, "name");
		a->component = opt_str(it, "component");
		a->version = opt_str(it, "version");
		a->url = opt_str(it, "url");
		a->action = opt_str(it, "action");
		a->destination = opt_str(it, "destination");
		a->size = (unsigned long long)json_integer_value(json_object_get(it, "size"));
		if (!a->name || !is_hex64(h)) {
			wb_error(e, WB_ESTAGE, "'%s': artifacts[%zu]: no name or bad sha256", path, i);
			goto out;
		}
		memcpy(a->sha256, h, 65);
	}

	arr = json_object_get(root, "files");
	if (!json_is_array(arr)) {
		wb_error(e, WB_ESTAGE, "'%s': 'files' is not a list", path);
		goto out;
	}
	m->files = xcalloc(json_array_size(arr) + 1, sizeof(*m->files));
	json_array_foreach(arr, i, it) {
		struct staged_file *f = &m->files[m->nfiles++];
		const char *h = json_string_value(json_object_get(it, "sha256"));
		json_t *sz = json_object_get(it, "size");

		f->path = opt_str(it, "path");
		f->tree_path = opt_str(it, "tree_path");
		f->artifact = opt_str(it, "artifact");
		f->component = opt_str(it, "component");
		f->generated = json_is_true(json_object_get(it, "generated"));
		if (!f->path || !f->tree_path || !safe_tree_path(f->tree_path)) {
			wb_error(e, WB_ESTAGE, "'%s': files[%zu]: missing or unsafe path", path, i);
			goto out;
		}
		if (!is_hex64(h) || !json_is_integer(sz) || json_integer_value(sz) < 0) {
			wb_error(e, WB_ESTAGE, "'%s': files[%zu] '%s': bad sha256 or size",
				 path, i, f->tree_path);
			goto out;
		}
		memcpy(f->sha256, h, 65);
		f->size = (unsigned long long)json_integer_value(sz);
		if (i && strcmp(m->files[i - 1].tree_path, f->tree_path) >= 0) {
			wb_error(e, WB_ESTAGE, "'%s': files not sorted by tree_path at '%s'",
				 path, f->tree_path);
			goto out;
		}
	}

	arr = json_object_get(root, "directories");
	if (arr && !json_is_array(arr)) {
		wb_error(e, WB_ESTAGE, "'%s': 'directories' is not a list", path);
		goto out;
	}
	m->directories = xcalloc(json_array_size(arr) + 1, sizeof(char *));
	json_array_foreach(arr, i, it) {
		if (!json_is_string(it)) {
			wb_error(e, WB_ESTAGE, "'%s': directories[%zu] is not a string", path, i);
			goto out;
		}
		m->directories[m->ndirectories++] = xstrdup(json_string_value(it));
	}
	ret = 0;
out:
	json_decref(root);
	if (ret)
		staged_manifest_release(m);
	return ret;
}

void staged_manifest_release(struct staged_manifest *m)
{
	for (size_t i = 0; i < m->nartifacts; i++) {
		struct staged_artifact *a = &m->artifacts[i];
		free(a->name);
		free(a->component);
		free(a->version);
		free(a->url);
		free(a->action);
		free(a->destination);
	}
	for (size_t i = 0; i < m->nfiles; i++) {
		free(m->files[i].path);
		free(m->files[i].tree_path);
		free(m->files[i].artifact);
		free(m->files[i].component);
	}
	for (size_t i = 0; i < m->ndirectories; i++)
		free(m->directories[i]);
	free(m->artifacts);
	free(m->files);
	free(m->directories);
	free(m->image);
	free(m->windows_version);
	buf_release(&m->raw);
	memset(m, 0, sizeof(*m));
	buf_init(&m->raw);
}
