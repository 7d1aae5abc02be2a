/* OUT/<name>/manifest.json, exactly as docs/manifest.md describes. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/winpath.h"
#include "stage/stage.h"
#include "trust/authenticode.h"

#define MANIFEST_SCHEMA 1

/* "authenticode": {...} of a checked file (docs/manifest.md) */
static json_t *authenticode_json(const struct authenticode_result *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "signed", json_boolean(r->is_signed));
	if (!r->is_signed)
		return o;
	json_object_set_new(o, "signer", json_string(r->subject));
	json_object_set_new(o, "issuer", json_string(r->issuer));
	json_object_set_new(o, "thumbprint_sha256", json_string(r->thumbprint));
	json_object_set_new(o, "digest", json_string(r->digest));
	json_object_set_new(o, "timestamp", r->has_timestamp ?
			    json_string(r->timestamp_str) : json_null());
	return o;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

int stage_write_manifest(const char *path, const struct plan *plan,
			 const struct stage_input *in, const struct tree *t,
			 time_t epoch, struct wb_err *e)
{
	json_t *root = json_object(), *arts = json_array(), *files = json_array();
	json_t *dirs = json_array();
	struct wb_strlist wdirs = WB_STRLIST_INIT;
	int ret;

	json_object_set_new(root, "schema", json_integer(MANIFEST_SCHEMA));
	json_object_set_new(root, "image", json_string(plan->name));
	json_object_set_new(root, "windows_version", json_string(plan->windows_version));
	json_object_set_new(root, "source_date_epoch", json_integer((json_int_t)epoch));
	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct plan_artifact *a = &plan->artifacts[i];
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(a->name));
		json_object_set_new(o, "component", json_string(a->component));
		json_object_set_new(o, "version", json_string(a->version));
		json_object_set_new(o, "url", json_string(in[i].url ? in[i].url :
							  a->upstream_url));
		json_object_set_new(o, "sha256", json_string(in[i].sha256));
		json_object_set_new(o, "size", json_integer((json_int_t)in[i].size));
		json_object_set_new(o, "action", json_string(plan_action_name(a->action)));
		json_object_set_new(o, "destination", json_string(a->dest_win));
		json_array_append_new(arts, o);
	}
	json_object_set_new(root, "artifacts", arts);
	for (size_t i = 0; i < t->nfiles; i++) {
		const struct tree_file *f = &t->files[i];
		char *w = winpath_from_tree(f->path);
		json_t *o = json_object();

		json_object_set_new(o, "path", json_string(w));
		json_object_set_new(o, "tree_path", json_string(f->path));
		json_object_set_new(o, "size", json_integer((json_int_t)f->size));
		json_object_set_new(o, "sha256", json_string(f->sha256));
		json_object_set_new(o, "artifact", str_or_null(f->artifact));
		json_object_set_new(o, "component", json_string(f->component));
		json_object_set_new(o, "generated", json_boolean(!f->artifact));
		if (f->authenticode)
			json_object_set_new(o, "authenticode", authenticode_json(f->authenticode));
		json_array_append_new(files, o);
		free(w);
	}
	json_object_set_new(root, "files", files);
	for (size_t i = 0; i < t->dirs.nr; i++) {
		char *w = winpath_from_tree(t->dirs.v[i]);

		wb_strlist_push(&wdirs, w);
		free(w);
	}
	if (wdirs.nr)
		qsort(wdirs.v, wdirs.nr, sizeof(*wdirs.v), cmp_str);
	for (size_t i = 0; i < wdirs.nr; i++)
		json_array_append_new(dirs, json_string(wdirs.v[i]));
	wb_strlist_release(&wdirs);
	json_object_set_new(root, "directories", dirs);

	ret = json_write_file(path, root, JSON_INDENT(2) | JSON_PRESERVE_ORDER, e);
	json_decref(root);
	return ret;
}
