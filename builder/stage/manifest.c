/* OUT/<name>/manifest.json, exactly as docs/manifest.md describes: the one
 * writer (stage_write_manifest) and the one reader (staged_manifest_read). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/hex.h"
#include "lib/platform.h"
#include "lib/winpath.h"
#include "stage/manifest.h"
#include "stage/stage.h"
#include "trust/authenticode.h"

#define MANIFEST_SCHEMA 1

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* 1 if tree path PATH is below tree directory DIR ('/'-separated) */
static int below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return n && !strncmp(path, dir, n) && path[n] == '/';
}

/*
 * Whether the node keeps tree file F of PLAN: "node", or "build" for a
 * file only the build uses, which the step that used it removes from the
 * image (docs/manifest.md, "lifetime"). The one place that decides it;
 * the emitted scripts, `verify --node` and the SBOM read the manifest.
 *   - a container image's OCI layout tar (images:): 06-images imports it
 *     into containerd, whose content store then holds the image
 *   - a Windows update package (windows.updates): 09-updates installs it
 *     with DISM, the component store then holds it
 *   - an installer placed by `payload:` (the cloudbase-init MSI), run by
 *     step 03, and every provider's cloudbase-init conf pair, whose
 *     builder's pair step 03 lays into cloudbase-init's own conf folder
 *   - a builder's windowsPE folder (platform_winpe_dir()): Windows Setup
 *     loads its drivers, and the answer file runs VMware Tools' setup,
 *     from the builder's CD, never from C:
 * @where which staged files the node keeps (manifest `lifetime`) and where
 *   they leave the image -- the one classifier: image tars, update packages,
 *   windowsPE folders, the cloudbase-init MSI and confs are build-only;
 *   `Remove-BuildOnly` in `packer/scripts/common.ps1.in` removes them
 */
static const char *file_lifetime(const struct plan *p, const struct tree_file *f)
{
	char dir[256];

	if (f->component && !strcmp(f->component, "images"))
		return "build";
	for (size_t i = 0; f->artifact && i < p->nupdates; i++)
		if (!strcmp(f->artifact, p->updates[i].artifact))
			return "build";
	for (size_t i = 0; f->artifact && i < p->nartifacts; i++)
		if (p->artifacts[i].action == PLAN_PAYLOAD &&
		    !strcmp(f->artifact, p->artifacts[i].name))
			return "build";
	if (f->component && !strcmp(f->component, "cloudbase-init") &&
	    below(f->path, STAGE_CBI_CONF_DIR))
		return "build";
	for (size_t i = 0; i < platform_nbuilders; i++)
		if (!platform_winpe_dir(&platform_builders[i], dir, sizeof(dir)) &&
		    below(f->path, dir))
			return "build";
	return "node";
}

/*
 * @where the staged manifest (`OUT/<name>/manifest.json`): the one writer and
 *   the one reader
 */
int stage_write_manifest(const char *path, const struct plan *plan,
			 const struct stage_input *in, const struct tree *t,
			 json_t *images, time_t epoch, struct wb_err *e)
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
		json_object_set_new(o, "url", json_url(in[i].url ? in[i].url :
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
		json_object_set_new(o, "lifetime", json_string(file_lifetime(plan, f)));
		if (f->authenticode)
			json_object_set_new(o, "authenticode", authenticode_result_to_json(f->authenticode));
		if (f->site_signature) {
			json_object_set_new(o, "upstream_sha256", json_string(f->upstream_sha256));
			json_object_set_new(o, "site_signature",
					    authenticode_result_to_json(f->site_signature));
		}
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
	if (images && json_array_size(images))
		json_object_set(root, "images", images);

	ret = json_write_file(path, root, JSON_INDENT(2) | JSON_PRESERVE_ORDER, e);
	json_decref(root);
	return ret;
}

/* ---- reading ---- */

static char *opt_str(json_t *o, const char *key);

/* "images" (optional) into M. */
static int read_images(const char *path, json_t *arr, struct staged_manifest *m,
		       struct wb_err *e)
{
	json_t *it;
	size_t i;

	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return wb_error(e, WB_ESTAGE, "'%s': 'images' is not a list", path);
	m->images = xcalloc(json_array_size(arr) + 1, sizeof(*m->images));
	json_array_foreach(arr, i, it) {
		struct staged_image *im = &m->images[m->nimages++];
		const char *md = json_string_value(json_object_get(it, "manifest_digest"));

		im->key = opt_str(it, "key");
		im->digest = opt_str(it, "digest");
		im->manifest_digest = opt_str(it, "manifest_digest");
		im->os_version = opt_str(it, "os_version");
		if (!im->key || !im->digest || !im->os_version || !md ||
		    strncmp(md, "sha256:", 7) || !hex_is(md + 7, 64, HEX_LOWER))
			return wb_error(e, WB_ESTAGE, "'%s': images[%zu]: needs key, digest, "
					"os_version and a sha256: manifest_digest", path, i);
	}
	return 0;
}

#define MANIFEST_MAX (64u << 20)

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

/*
 * @where the staged manifest (`OUT/<name>/manifest.json`): the one writer and
 *   the one reader -- stage's reuse, emit, `verify`, the SBOM
 */
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
		if (!a->name || !hex_is(h, 64, HEX_LOWER)) {
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
		const char *h = json_string_value(json_object_get(it, "sha256")), *lt;
		json_t *sz = json_object_get(it, "size");

		f->path = opt_str(it, "path");
		f->tree_path = opt_str(it, "tree_path");
		f->artifact = opt_str(it, "artifact");
		f->component = opt_str(it, "component");
		f->generated = json_is_true(json_object_get(it, "generated"));
		lt = json_string_value(json_object_get(it, "lifetime"));
		if (!lt || (strcmp(lt, "node") && strcmp(lt, "build"))) {
			wb_error(e, WB_ESTAGE, "'%s': files[%zu]: 'lifetime' is neither "
				 "\"node\" nor \"build\"", path, i);
			goto out;
		}
		f->build_only = !strcmp(lt, "build");
		if (json_is_object(json_object_get(it, "authenticode"))) {
			json_t *ac = json_object_get(it, "authenticode");

			f->has_authenticode = 1;
			f->auth_signed = json_is_true(json_object_get(ac, "signed"));
			f->auth_signer = opt_str(ac, "signer");
			f->auth_issuer = opt_str(ac, "issuer");
			f->auth_thumbprint = opt_str(ac, "thumbprint_sha256");
			f->auth_digest = opt_str(ac, "digest");
			f->auth_timestamp = opt_str(ac, "timestamp");
		}
		if (json_object_get(it, "site_signature") || json_object_get(it, "upstream_sha256")) {
			json_t *ss = json_object_get(it, "site_signature");
			const char *up = json_string_value(json_object_get(it, "upstream_sha256"));

			f->site_signer = opt_str(ss, "signer");
			f->site_thumbprint = opt_str(ss, "thumbprint_sha256");
			if (!json_is_object(ss) || !hex_is(up, 64, HEX_LOWER) ||
			    !f->site_thumbprint) {
				wb_error(e, WB_ESTAGE, "'%s': files[%zu]: a site-signed file needs "
					 "'upstream_sha256' and 'site_signature' with "
					 "'thumbprint_sha256'", path, i);
				goto out;
			}
			memcpy(f->upstream_sha256, up, 65);
			f->site_signed = 1;
		}
		if (!f->path || !f->tree_path || !safe_tree_path(f->tree_path)) {
			wb_error(e, WB_ESTAGE, "'%s': files[%zu]: missing or unsafe path", path, i);
			goto out;
		}
		if (!hex_is(h, 64, HEX_LOWER) || !json_is_integer(sz) ||
		    json_integer_value(sz) < 0) {
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
	if (read_images(path, json_object_get(root, "images"), m, e) < 0)
		goto out;
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
		free(m->files[i].auth_signer);
		free(m->files[i].auth_issuer);
		free(m->files[i].auth_thumbprint);
		free(m->files[i].auth_digest);
		free(m->files[i].auth_timestamp);
		free(m->files[i].site_signer);
		free(m->files[i].site_thumbprint);
	}
	for (size_t i = 0; i < m->ndirectories; i++)
		free(m->directories[i]);
	for (size_t i = 0; i < m->nimages; i++) {
		free(m->images[i].key);
		free(m->images[i].digest);
		free(m->images[i].manifest_digest);
		free(m->images[i].os_version);
	}
	free(m->images);
	free(m->artifacts);
	free(m->files);
	free(m->directories);
	free(m->image);
	free(m->windows_version);
	buf_release(&m->raw);
	memset(m, 0, sizeof(*m));
	buf_init(&m->raw);
}
