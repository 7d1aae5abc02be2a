/*
 * Components: each enabled component's file loaded beneath the image's
 * settings for it and converted (version, paths, directories, firewall,
 * authenticode, artifacts, generated files, services), every Windows object
 * it declares through the guard (winobj.c), and the clashes between
 * destinations.
 *
 * @where where a component's registry values, admin-only folders and event
 *   manifests are checked and applied -- `registry:` with `take_ownership`,
 *   `admin_directories:`, `event_manifests:`
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/hex.h"
#include "lib/text.h"
#include "lib/tmpl.h"
#include "lib/winpath.h"
#include "lib/winreserved.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"
#include "recipe/winobj.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ENTRY names no file and PATH (its default file) does not exist: the
 * component names there are, the image's and the files' beside PATH, with
 * the nearest one. */
static int unknown_component(struct resolver *r, const struct rnode *entry,
			     const char *path)
{
	const struct rnode *comps = rnode_get(r->top, "components");
	struct wb_strlist names = WB_STRLIST_INIT;
	struct text_suggest sg;
	struct buf b = BUF_INIT;
	char *dir = fs_dirname(path);
	DIR *d = opendir(dir);
	struct dirent *de;
	int ret;

	for (size_t i = 0; comps && i < comps->nr; i++)
		if (strcmp(comps->items[i]->key, entry->key) &&
		    rnode_get(comps->items[i], "file"))
			wb_strlist_push_unique(&names, comps->items[i]->key);
	while (d && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		if (n > 5 && de->d_name[0] != '.' && !strcmp(de->d_name + n - 5, ".yaml")) {
			char *nm = xstrndup(de->d_name, n - 5);
			wb_strlist_push_unique(&names, nm);
			free(nm);
		}
	}
	if (d)
		closedir(d);
	free(dir);
	qsort(names.v, names.nr, sizeof(*names.v), cmp_str);
	text_suggest_init(&sg, entry->key);
	for (size_t i = 0; i < names.nr; i++) {
		text_suggest_add(&sg, names.v[i]);
		buf_addf(&b, "%s%s", i ? ", " : "", names.v[i]);
	}
	ret = err_at(r, &entry->key_origin, "unknown component '%s'%s%s%s: no file '%s'; "
		     "valid names: %s", entry->key, sg.best ? " (did you mean '" : "",
		     sg.best ? sg.best : "", sg.best ? "'?)" : "", path,
		     names.nr ? b.ptr : "(none)");
	buf_release(&b);
	wb_strlist_release(&names);
	return ret;
}

int components_load(struct resolver *r, struct rnode *entry, struct rnode **out)
{
	const struct rnode *fn = rnode_get(entry, "file");
	const char *from = fn ? fn->origin.file : entry->key_origin.file;
	struct wb_origin at = fn ? fn->origin : entry->key_origin;
	struct rnode *comp = NULL;
	const struct rnode *nm;
	char *rel, *path;
	int ret;

	if (fn && fn->type != RNODE_SCALAR)
		return err_at(r, &fn->origin, "'components.%s.file' must be a path", entry->key);
	rel = fn ? xstrdup(fn->scalar) : xasprintf("components/%s.yaml", entry->key);
	if (!from || from[0] == '-' || !strncmp(from, "env ", 4))
		from = r->plan->recipe_path;
	path = rs_relative_to(from, rel);
	free(rel);
	if (!fn && !fs_exists(path)) {
		ret = unknown_component(r, entry, path);
		free(path);
		return ret;
	}
	r->ninclude = 0;
	ret = layers_load_kind(r, path, "component", &at, &comp);
	if (ret) {
		free(path);
		return -1;
	}
	nm = rnode_get(comp, "name");
	if (nm && nm->type == RNODE_SCALAR && strcmp(nm->scalar, entry->key)) {
		ret = err_at(r, &nm->origin, "component file '%s' is named '%s', but the image calls it '%s'",
			     path, nm->scalar, entry->key);
		free(path);
		rnode_free(comp);
		return ret;
	}
	free(path);
	rnode_free(r->comp_auth);
	r->comp_auth = layers_clone_or_null(rnode_get(comp, "authenticode"));
	*out = rnode_merge(comp, rnode_clone(entry));
	layers_strip_nulls(*out);
	return 0;
}

static int convert_winpaths(struct resolver *r, const struct rnode *n,
			    const char *what, struct wb_strlist *out)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n->nr; i++) {
		const char *why = NULL;
		char *t = winpath_to_tree(n->items[i]->scalar, &why);
		if (!t)
			return err_at(r, &n->items[i]->origin,
				      "bad Windows path '%s' in '%s': %s",
				      n->items[i]->scalar, what, why);
		free(t);
		wb_strlist_push(out, n->items[i]->scalar);
	}
	return 0;
}

/*
 * A component's machine registry values (`registry:`, docs/recipes.md).
 * KEY: HKLM:\ then non-empty segments of letters, digits, space, '.',
 * '_' and '-' (no wildcard PowerShell's -Path would expand, no other hive:
 * what a component sets lands in the image's machine hive); NAME: the same
 * characters, not empty (a key's default value is not settable); a dword
 * VALUE a decimal 0-4294967295, a string one printable text.
 */
static int reg_chars_ok(const char *s, int seps)
{
	int seg = 0;

	for (; *s; s++) {
		if (*s == '\\' && seps) {
			if (!seg)
				return 0;
			seg = 0;
		} else if (isalnum((unsigned char)*s) || strchr(" ._-", *s)) {
			seg++;
		} else if (seps && (*s == '{' || *s == '}')) {
			seg++;   /* GUIDs: COM classes, AppIDs */
		} else {
			return 0;
		}
	}
	return seg > 0;
}

/* KEY ("HKLM:\\...") well-formed: names of letters, digits, space, '.',
 * '_', '-' and braces, no wildcard PowerShell's -Path would expand. */
static int reg_key_ok(const char *key)
{
	return !strncasecmp(key, "HKLM:\\", 6) && strlen(key) <= 255 &&
	       reg_chars_ok(key + 6, 1);
}

/* A `binary` value as .reg files write one ("01,00,04,80"): lower-case hex
 * without separators (new string), or NULL when malformed or over 4 KiB. */
static char *reg_binary(const char *s)
{
	struct buf b = BUF_INIT;
	size_t n = 0;

	for (;;) {
		if (hex_span(s, 2, HEX_ANY_CASE) != 2 || ++n > 4096) {
			buf_release(&b);
			return NULL;
		}
		buf_addf(&b, "%c%c", tolower((unsigned char)s[0]), tolower((unsigned char)s[1]));
		s += 2;
		if (!*s)
			return buf_detach(&b, NULL);
		if (*s++ != ',') {
			buf_release(&b);
			return NULL;
		}
	}
}

static int convert_registry(struct resolver *r, const struct rnode *n, struct plan_component *c)
{
	if (!n || !n->nr)
		return 0;
	c->registry = xcalloc(n->nr, sizeof(*c->registry));
	for (size_t i = 0; i < n->nr; i++) {
		const struct rnode *e = n->items[i], *k = rnode_get(e, "key"),
			*nm = rnode_get(e, "name"), *v = rnode_get(e, "value"),
			*own = rnode_get(e, "take_ownership");
		const char *type = rs_scalar(e, "type");
		char *bin = NULL;
		size_t ol;

		if (!reg_key_ok(k->scalar))
			return err_at(r, &k->origin, "registry key '%s' is not HKLM:\\ followed by "
				      "names of letters, digits, space, '.', '_', '-' or braces "
				      "separated by '\\'", k->scalar);
		/* "(default)": the key's unnamed value, as PowerShell's registry
		 * provider names it (GetPropertyName() in PowerShell's
		 * src/System.Management.Automation/namespaces/RegistryProvider.cs) */
		if (!strcmp(nm->scalar, "(default)")) {
			if (strcmp(type, "string"))
				return err_at(r, &nm->origin, "a registry key's (default) value "
					      "is a string here, not %s", type);
		} else if (strlen(nm->scalar) > 255 || !reg_chars_ok(nm->scalar, 0)) {
			return err_at(r, &nm->origin, "registry value name '%s' is not letters, "
				      "digits, space, '.', '_' or '-', or (default)", nm->scalar);
		}
		if (own && (!reg_key_ok(own->scalar) || (ol = strlen(own->scalar)) > strlen(k->scalar) ||
			    strncasecmp(own->scalar, k->scalar, ol) ||
			    (k->scalar[ol] && k->scalar[ol] != '\\')))
			return err_at(r, &own->origin, "take_ownership '%s' must be the registry "
				      "key '%s' or a key above it", own->scalar, k->scalar);
		if (!strcmp(type, "binary")) {
			if (!(bin = reg_binary(v->scalar)))
				return err_at(r, &v->origin, "a binary registry value is hex bytes "
					      "separated by commas, as .reg files write them "
					      "(\"01,00,04,80\"), at most 4096 of them");
		} else if (!strcmp(type, "dword")) {
			unsigned long long d = artifacts_to_ull(v);

			if (!v->scalar[0] || strspn(v->scalar, "0123456789") != strlen(v->scalar) ||
			    strlen(v->scalar) > 10 || d > 4294967295ULL)
				return err_at(r, &v->origin, "a dword registry value must be a decimal "
					      "0-4294967295, not '%s'", v->scalar);
		} else {
			for (const char *q = v->scalar; *q; q++)
				if ((unsigned char)*q < 0x20 || *q == 0x7f)
					return err_at(r, &v->origin, "registry value '%s' holds a "
						      "control character", nm->scalar);
		}
		c->registry[i].key = xstrdup(k->scalar);
		c->registry[i].name = xstrdup(nm->scalar);
		c->registry[i].type = xstrdup(type);
		c->registry[i].value = bin ? bin : xstrdup(v->scalar);
		c->registry[i].take_ownership = own ? xstrdup(own->scalar) : NULL;
		c->nregistry++;
	}
	return 0;
}

/* A component's directories, with where each was written (a directory
 * that is also a file's destination is refused once every artifact is
 * known: components_dirs_clash). */
static int convert_directories(struct resolver *r, const struct rnode *n,
			       struct plan_component *c)
{
	if (convert_winpaths(r, n, "directories", &c->directories))
		return -1;
	if (!c->directories.nr)
		return 0;
	c->directory_origins = xcalloc(c->directories.nr, sizeof(*c->directory_origins));
	for (size_t i = 0; i < c->directories.nr; i++)
		c->directory_origins[i] = n->items[i]->origin;
	return 0;
}

/* One directory of `cni:` N (KEY: bin_dir, conf_dir) of component C into
 * *DIR (a tree path), or checked against the one another component
 * declared there (AT): one node has one of each. */
static int cni_dir(struct resolver *r, const struct rnode *n, const char *key,
		   const struct plan_component *c, char **dir, struct wb_origin *at)
{
	const struct rnode *v = rnode_get(n, key);
	const char *why = NULL;
	char *t = winpath_to_tree(v->scalar, &why), where[512];

	if (!t)
		return err_at(r, &v->origin, "bad Windows path '%s' in 'components.%s.cni.%s': "
			      "%s", v->scalar, c->name, key, why);
	if (!*dir) {
		*dir = t;
		*at = v->origin;
		return 0;
	}
	if (winobj_same_dir(t, *dir)) {
		free(t);
		return 0;
	}
	free(t);
	t = xasprintf("C:\\%s", *dir);
	for (char *q = t; *q; q++)
		if (*q == '/')
			*q = '\\';
	wb_origin_format(at, where, sizeof(where));
	err_at(r, &v->origin, "components.%s.cni.%s is '%s', but another enabled component "
	       "says the node's CNI %s directory is '%s' (%s): containerd's config names "
	       "one, so every component's 'cni' must name the same", c->name, key,
	       v->scalar, strcmp(key, "bin_dir") ? "configuration" : "plugin", t, where);
	free(t);
	return -1;
}

/*
 * `cni: {bin_dir, conf_dir}` of component C (N, or none): the plan's CNI
 * directories. The C code names no CNI path: containerd's config and the
 * network config follow what the components declare (issue 29).
 * image-builder takes them as two ansible variables, plugin_bin_dir and
 * plugin_conf_dir (images/capi/ansible/windows/roles/runtimes/templates/
 * config.toml), whatever its CNI tasks install; here every component that
 * depends on them (containerd, the CNI plugins) says so, and a plan where
 * two disagree is refused instead of a node whose containerd finds no
 * plugins.
 * @where the node's CNI directories (containerd's `cni:`
 *   `bin_dir`/`conf_dir`, all enabled components agreeing) --
 *   `plan.cni_bin_dir`, `plan.cni_conf_dir`
 */
static int convert_cni(struct resolver *r, const struct rnode *n,
		       const struct plan_component *c)
{
	struct plan *p = r->plan;

	if (!n)
		return 0;
	return cni_dir(r, n, "bin_dir", c, &p->cni_bin_dir, &p->cni_bin_dir_origin) ||
	       cni_dir(r, n, "conf_dir", c, &p->cni_conf_dir, &p->cni_conf_dir_origin) ?
	       -1 : 0;
}

/* VS: the component's variables, released by the caller. */
static int convert_component_in(struct resolver *r, struct rnode *cn,
				const struct vars *image_vars, struct vars *vs)
{
	struct plan *p = r->plan;
	struct plan_component *c;
	const struct rnode *n, *arts;
	char ctx[256];
	int ret;

	snprintf(ctx, sizeof(ctx), "components.%s", cn->key);
	if (schema_check(cn, schema_component, ctx, 0, r->e))
		return -1;
	ALLOC_GROW(p->components, p->ncomponents + 1, p->alloc_components);
	c = &p->components[p->ncomponents++];
	memset(c, 0, sizeof(*c));
	c->name = xstrdup(cn->key);
	c->file = xstrdup(rnode_get(cn, "kind")->origin.file);
	if ((n = rnode_get(cn, "description")))
		c->description = xstrdup(n->scalar);
	if ((n = rnode_get(cn, "homepage")))
		c->homepage = xstrdup(n->scalar);
	if ((n = rnode_get(cn, "license")))
		c->license = xstrdup(n->scalar);

	/* component vars first: they win over image vars */
	vars_add_map(vs, rnode_get(cn, "vars"));
	vars_add_all(vs, image_vars);
	n = rnode_get(cn, "version");
	snprintf(ctx, sizeof(ctx), "components.%s.version", cn->key);
	if (!(c->version = vars_expand(r, vs, n, ctx)))
		return -1;
	c->version_origin = n->origin;
	if (c->version[0] == 'v' && c->version[1] >= '0' && c->version[1] <= '9')
		return versions_leading_v(r, cn, n, ctx, c->version);
	if (!tmpl_version_ok(c->version))
		return rs_bad_grammar(r, &n->origin, ctx, c->version, "a version "
				   "(digits and dots, optional v, -pre and +build parts)");
	vars_prepend(vs, "version", c->version, 0);
	if ((n = rnode_get(cn, "purl"))) {
		snprintf(ctx, sizeof(ctx), "components.%s.purl", cn->key);
		if (!(c->purl = vars_expand(r, vs, n, ctx)))
			return -1;
	}
	snprintf(ctx, sizeof(ctx), "components.%s", cn->key);
	if (convert_winpaths(r, rnode_get(cn, "path"), "path", &c->path) ||
	    convert_directories(r, rnode_get(cn, "directories"), c) ||
	    convert_winpaths(r, rnode_get(cn, "defender_exclusions"), "defender_exclusions",
			     &c->defender_exclusions) ||
	    convert_cni(r, rnode_get(cn, "cni"), c))
		return -1;
	if ((n = rnode_get(cn, "firewall"))) {
		c->firewall = xcalloc(n->nr ? n->nr : 1, sizeof(*c->firewall));
		for (size_t i = 0; i < n->nr; i++) {
			const struct rnode *fw = n->items[i], *pn = rnode_get(fw, "port");
			const struct rnode *pr = rnode_get(fw, "protocol");
			unsigned long long port = artifacts_to_ull(pn);
			if (!pn || port < 1 || port > 65535)
				return err_at(r, pn ? &pn->origin : &fw->origin,
					      "firewall port must be 1-65535, not '%s'",
					      pn ? pn->scalar : "");
			c->firewall[i].name = xstrdup(rs_scalar(fw, "name"));
			c->firewall[i].port = (int)port;
			c->firewall[i].protocol = xstrdup(pr ? pr->scalar : "TCP");
			c->nfirewall++;
		}
	}
	if (convert_winpaths(r, rnode_get(cn, "admin_directories"), "admin_directories",
			     &c->admin_directories) ||
	    convert_winpaths(r, rnode_get(cn, "event_manifests"), "event_manifests",
			     &c->event_manifests) ||
	    convert_registry(r, rnode_get(cn, "registry"), c) ||
	    images_convert_component(r, rnode_get(cn, "images"), c->name))   /* images.c */
		return -1;
	if (authpol_convert(r, rnode_get(cn, "authenticode"), &p->authenticode,
				 &c->authenticode, ctx) ||
	    authpol_layer_component(r, c->name, &c->authenticode, ctx))
		return -1;
	arts = rnode_get(cn, "artifacts");
	if (!arts->nr)
		return err_at(r, &arts->origin, "'%s.artifacts' is empty", ctx);
	for (size_t i = 0; i < arts->nr; i++) {
		const struct rnode *an = arts->items[i];
		struct plan_artifact *a;
		const struct plan_artifact *dup = plan_find_artifact(p, an->key);

		if (urls_name_check(r, &an->key_origin, "artifact name", an->key))
			return -1;
		if (dup) {
			char where[512];
			wb_origin_format(&dup->url_origin, where, sizeof(where));
			return err_at(r, &an->key_origin,
				      "duplicate artifact name '%s' (also in component '%s', %s)",
				      an->key, dup->component, where);
		}
		ALLOC_GROW(p->artifacts, p->nartifacts + 1, p->alloc_artifacts);
		a = &p->artifacts[p->nartifacts++];
		memset(a, 0, sizeof(*a));
		n = rnode_get(cn, "tlog_source");
		r->tlog_exported = n && !strcmp(n->scalar, "exported") ? n : NULL;
		ret = artifacts_convert(r, an, c, vs, a);
		r->tlog_exported = NULL;
		if (ret)
			return -1;
	}
	/* every Windows object it declares, through the one guard (winobj.c) */
	if (services_convert_generate(r, cn, c, vs) || services_convert(r, cn, c, vs) ||
	    winobj_component(r, cn, c))
		return -1;
	snprintf(ctx, sizeof(ctx), "components.%s", cn->key);
	rs_flatten(p, cn, ctx);
	return 0;
}

/* Destinations that are one place on Windows spelled two ways (case, 8.3
 * aliases) are refused here, at the later one; the same path twice is for
 * the stage's claims to judge. */
int components_dest_clashes(struct resolver *r)
{
	const struct plan *p = r->plan;

	for (size_t i = 0; i < p->nartifacts; i++) {
		for (size_t k = 0; k < i; k++) {
			const struct plan_artifact *a = &p->artifacts[k], *b = &p->artifacts[i];
			const char *why = NULL;
			char where[512];

			if (!winpath_paths_clash(a->dest_tree, b->dest_tree, &why))
				continue;
			wb_origin_format(&a->dest_origin, where, sizeof(where));
			return err_at(r, &b->dest_origin, "bad Windows destination '%s' of "
				      "artifact '%s': it and '%s' of artifact '%s' (%s) %s",
				      b->dest_win, b->name, a->dest_win, a->name, where, why);
		}
	}
	return 0;
}

/* A directory a component creates must not be, or lie beneath, a file an
 * artifact installs (Windows' rules: case-insensitive, 8.3 aliases): the
 * stage would refuse it; say so at plan time, where the recipe can be
 * named. */
int components_dirs_clash(struct resolver *r)
{
	const struct plan *p = r->plan;

	for (size_t i = 0; i < p->ncomponents; i++) {
		const struct plan_component *c = &p->components[i];

		for (size_t k = 0; k < c->directories.nr; k++) {
			const char *why = NULL;
			char *dir = winpath_to_tree(c->directories.v[k], &why);

			for (size_t j = 0; dir && j < p->nartifacts; j++) {
				const struct plan_artifact *a = &p->artifacts[j];
				size_t n = strlen(a->dest_tree);
				char *head;
				int clash;

				if (a->action != PLAN_INSTALL || strlen(dir) < n ||
				    (dir[n] && dir[n] != '/'))
					continue;
				head = xstrndup(dir, n);
				why = NULL;
				clash = !strcmp(head, a->dest_tree) ||
					winpath_paths_clash(head, a->dest_tree, &why);
				free(head);
				if (!clash)
					continue;
				clash = dir[n] != '\0';
				free(dir);
				return err_at(r, &c->directory_origins[k], "directory '%s' of "
					      "component '%s' is %s the file artifact '%s' "
					      "installs ('%s')", c->directories.v[k], c->name,
					      clash ? "beneath" : "the same place as", a->name,
					      a->dest_win);
			}
			free(dir);
		}
	}
	return 0;
}

int components_convert(struct resolver *r, struct rnode *cn,
		      const struct vars *image_vars)
{
	struct vars vs = { 0 };
	int ret = convert_component_in(r, cn, image_vars, &vs);

	vars_release(&vs);
	return ret;
}

/* A component the image sets enabled: false (EN) under CTX: parsed and
 * checked against the schema, then left out: no artifact, service, file or
 * setting of it, only the value for --explain. */
static int convert_disabled(struct resolver *r, struct rnode *entry,
			    const struct rnode *en, const char *ctx)
{
	struct rnode *cn = NULL;
	char *key;
	int ret;

	if (components_load(r, entry, &cn) || !cn)
		return -1;
	ret = schema_check(cn, schema_component, ctx, 0, r->e);
	rnode_free(cn);
	if (ret)
		return -1;
	key = xasprintf("%s.enabled", ctx);
	rs_add_value(r->plan, key, "false", &en->origin);
	free(key);
	return 0;
}

/* The image's components: map (COMPS): each entry checked, then loaded
 * beneath the image's settings for it and converted, or left out. */
int components_convert_all(struct resolver *r, struct rnode *comps)
{
	if (comps->type != RNODE_MAP)
		return err_at(r, &comps->origin, "'components' must be a map of component names");
	if (!comps->nr)
		return err_at(r, &comps->origin, "'components' is empty");
	for (size_t i = 0; i < comps->nr; i++) {
		struct rnode *entry = comps->items[i], *cn = NULL;
		const struct rnode *en = rnode_get(entry, "enabled");
		char ctx[256];
		int ret;

		snprintf(ctx, sizeof(ctx), "components.%s", entry->key);
		if (entry->type != RNODE_MAP)
			return err_at(r, &entry->origin, "'%s' must be a map", ctx);
		if (urls_name_check(r, &entry->key_origin, "component name", entry->key))
			return -1;
		if (!setpair_key_segment_ok(entry->key, strlen(entry->key)))
			return err_at(r, &entry->key_origin, "bad component name '%s'", entry->key);
		if (schema_check(entry, schema_component, ctx, 1, r->e))
			return -1;
		if (en && schema_bool(en) == 0) {
			if (convert_disabled(r, entry, en, ctx))
				return -1;
			continue;
		}
		if (components_load(r, entry, &cn) || !cn)
			return -1;
		free(cn->key);
		cn->key = xstrdup(entry->key);
		ret = components_convert(r, cn, &r->image_vars);
		rnode_free(cn);
		if (ret)
			return -1;
	}
	return 0;
}
