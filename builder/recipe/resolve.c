/*
 * Resolve a recipe: load the image recipe and its includes, merge override
 * files, $WINBUILD_SET and --set over it (in that order), load every
 * component file beneath its image settings, check the schema, expand
 * variables, rewrite URLs through mirrors (apply_mirrors), apply
 * replacements and policy, and convert the result into a struct plan.
 *
 * This file is the driver (plan_resolve(), convert_top()) and the helpers
 * every piece shares; the pieces are the other files of recipe/ that
 * include recipe/resolve_int.h, which lists them.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/platform.h"
#include "lib/redact.h"
#include "lib/tmpl.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"

/* A value that is not in its grammar (class 5: checked before anything is
 * rendered): the key, the value escaped, what it must be. */
int bad_grammar(struct resolver *r, const struct wb_origin *o, const char *key,
		const char *value, const char *what)
{
	struct buf b = BUF_INIT;
	int ret;

	tmpl_describe(&b, value);
	ret = err_at(r, o, "%s '%s' is not %s", key, b.ptr, what);
	buf_release(&b);
	return ret;
}

const char *scalar(const struct rnode *n, const char *key)
{
	const struct rnode *c = rnode_get(n, key);

	return c && c->type == RNODE_SCALAR ? c->scalar : NULL;
}

/* Lexically drop "x/.." pairs and "./" from P (in place); returns P. */
static char *path_clean(char *p)
{
	char **seg = xcalloc(strlen(p) / 2 + 2, sizeof(*seg));
	size_t n = 0;
	int abs = p[0] == '/';
	char *save = NULL, *copy = xstrdup(p);
	struct buf out = BUF_INIT;

	for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (!strcmp(t, "."))
			continue;
		if (!strcmp(t, "..") && n && strcmp(seg[n - 1], ".."))
			n--;
		else
			seg[n++] = t;
	}
	if (abs)
		buf_addc(&out, '/');
	for (size_t i = 0; i < n; i++)
		buf_addf(&out, "%s%s", i ? "/" : "", seg[i]);
	if (!out.len)
		buf_addc(&out, '.');
	free(p);
	p = buf_detach(&out, NULL);
	free(copy);
	free(seg);
	return p;
}

/* Path of REL relative to the directory of the file FROM. */
char *relative_to(const char *from, const char *rel)
{
	char *dir, *p;

	if (rel[0] == '/' || !from || from[0] == '-' || !strncmp(from, "env ", 4))
		return xstrdup(rel);
	dir = fs_dirname(from);
	p = fs_join(dir, rel);
	free(dir);
	return path_clean(p);
}


char *lower(char *s)
{
	for (char *p = s; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

void warn_at(struct plan *p, const struct wb_origin *o, const char *fmt, ...)
{
	struct plan_warning *w;
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	ALLOC_GROW(p->warnings, p->nwarnings + 1, p->alloc_warnings);
	w = &p->warnings[p->nwarnings++];
	w->origin = *o;
	w->msg = buf_detach(&b, NULL);
}

static void add_value(struct plan *p, const char *key, const char *value,
		      const struct wb_origin *o)
{
	ALLOC_GROW(p->values, p->nvalues + 1, p->alloc_values);
	p->values[p->nvalues].key = xstrdup(key);
	p->values[p->nvalues].value = xstrdup(value);
	p->values[p->nvalues].origin = *o;
	p->nvalues++;
}

void flatten(struct plan *p, const struct rnode *n, const char *prefix)
{
	if (n->type == RNODE_SCALAR) {
		add_value(p, prefix, n->scalar, &n->origin);
		return;
	}
	if (n->type == RNODE_LIST && (!n->nr || n->items[0]->type == RNODE_SCALAR)) {
		struct buf b = BUF_INIT;
		buf_addc(&b, '[');
		for (size_t i = 0; i < n->nr; i++)
			buf_addf(&b, "%s%s", i ? ", " : "",
				 n->items[i]->type == RNODE_SCALAR ? n->items[i]->scalar : "…");
		buf_addc(&b, ']');
		add_value(p, prefix, b.ptr, &n->origin);
		buf_release(&b);
		return;
	}
	for (size_t i = 0; i < n->nr; i++) {
		/* no fixed buffer: a long key is never cut into another's */
		char *key = n->type == RNODE_MAP ?
			xasprintf("%s%s%s", prefix, *prefix ? "." : "", n->items[i]->key) :
			xasprintf("%s[%zu]", prefix, i + 1);

		flatten(p, n->items[i], key);
		free(key);
	}
}

static int cmp_value(const void *a, const void *b)
{
	return strcmp(((const struct plan_value *)a)->key, ((const struct plan_value *)b)->key);
}

static int cmp_artifact(const void *a, const void *b)
{
	return strcmp(((const struct plan_artifact *)a)->name,
		      ((const struct plan_artifact *)b)->name);
}

static char *str_or(const struct rnode *n, const char *key, const char *def)
{
	const char *s = scalar(n, key);

	return xstrdup(s ? s : def);
}

/*
 * packer.version (N, or the default): a Packer release, MAJOR.MINOR.PATCH
 * as `packer version` prints it (no "v", no constraint: it says which
 * Packer runs the template, not which it tolerates). Sets the plan's
 * packer_version and packer_plugins.
 */
int resolve_packer_version(struct resolver *r, const struct rnode *n)
{
	const char *v = n && n->scalar ? n->scalar : PLAN_PACKER_DEFAULT;
	unsigned long part[3] = { 0 };
	const char *c = v;

	for (int i = 0; i < 3; i++) {
		char *end;

		if (!isdigit((unsigned char)*c))
			break;
		part[i] = strtoul(c, &end, 10);
		c = end;
		if (i < 2 && *c++ != '.') {
			c = v;   /* not three parts: refused below */
			break;
		}
		if (i == 2 && !*c) {
			r->plan->packer_version = xstrdup(v);
			r->plan->packer_plugins = part[0] > PLAN_PACKER_PLUGINS_MAJOR ||
				(part[0] == PLAN_PACKER_PLUGINS_MAJOR &&
				 part[1] >= PLAN_PACKER_PLUGINS_MINOR);
			return 0;
		}
	}
	return err_at(r, &n->origin, "'packer.version' must be a Packer release as "
		      "MAJOR.MINOR.PATCH (e.g. 1.9.5, what `packer version` prints), not '%s'", v);
}

static int convert_top(struct resolver *r)
{
	struct plan *p = r->plan;
	struct rnode *top = r->top, *comps;
	const struct rnode *n;
	struct vars *image_vars = &r->image_vars;

	if (top->type != RNODE_MAP)
		return err_at(r, &top->origin, "expected a map");
	if (schema_check(top, schema_image, "", 0, r->e))
		return -1;
	p->name = str_or(top, "name", "");
	n = rnode_get(top, "name");
	if (name_check(r, &n->origin, "image name", p->name))
		return -1;
	if (!*p->name || strspn(p->name, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(p->name) ||
	    p->name[0] == '.')
		return err_at(r, &n->origin, "'name' must match [a-z0-9._-]+, not '%s'", p->name);
	n = rnode_get(top, "windows");
	p->windows_version = str_or(n, "version", "");
	p->windows_edition = str_or(n, "edition", "datacenter");
	p->windows_desktop = schema_bool(rnode_get(n, "desktop_experience")) == 1;
	p->windows_locale = str_or(n, "locale", "en-US");
	p->windows_product_key = str_or(n, "product_key", "gvlk");
	if (!*p->windows_locale || strlen(p->windows_locale) > 16 ||
	    strspn(p->windows_locale, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") !=
	    strlen(p->windows_locale))
		return bad_grammar(r, &rnode_get(n, "locale")->origin, "windows.locale",
				   p->windows_locale, "a language tag such as en-US");
	p->cloudbase_provider = str_or(rnode_get(top, "cloudbase_init"), "provider", "auto");
	n = rnode_get(top, "node");
	p->service_manager = str_or(n, "service_manager", "sc");
	if (!platform_windows_find(p->windows_version))   /* the schema's enum is the table's */
		return err_at(r, &top->origin, "no Windows Server '%s' in the platform table",
			      p->windows_version);
	p->pause_image = str_or(n, "pause_image",
				platform_windows_find(p->windows_version)->pause_image);
	if (!tmpl_image_ref_ok(p->pause_image))
		return bad_grammar(r, &rnode_get(n, "pause_image")->origin, "node.pause_image",
				   p->pause_image, "an OCI image reference "
				   "([domain[:port]/]path[:tag][@digest])");
	/* the image's vars, for images: and mirrors: as for the components */
	vars_add_map(image_vars, rnode_get(top, "vars"));
	vars_add(image_vars, "windows_version", p->windows_version, 0);
	if (convert_images(r, rnode_get(top, "images"), n))
		return -1;
	p->cni = str_or(n, "cni", "none");
	if (rnode_get(n, "windows_features"))
		copy_strlist(rnode_get(n, "windows_features"), &p->windows_features);
	else
		wb_strlist_push(&p->windows_features, "Containers");
	if (convert_builders(r, top))
		return -1;
	if (resolve_policy(r))
		return -1;
	if (images_check_policy(r))    /* the recipe's own; again after the components */
		return -1;
	if (resolve_iso(r, rnode_get(top, "windows")))
		return -1;
	n = rnode_get(top, "packer");
	if (resolve_packer_version(r, rnode_get(n, "version")))
		return -1;
	if (rnode_get(n, "payload") && !strcmp(rnode_get(n, "payload")->scalar, "pull")) {
		const struct rnode *u = rnode_get(n, "payload_url");

		if (!u)
			return err_at(r, &rnode_get(n, "payload")->origin,
				      "'packer.payload: pull' needs 'packer.payload_url' (where the "
				      "build VM fetches payload.zip)");
		if (url_check(r, u->scalar, &u->origin, "packer.payload_url"))
			return -1;
		if (!strncmp(u->scalar, "file://", 7))
			return err_at(r, &u->origin, "'packer.payload_url' must be an https or "
				      "http URL the build VM can reach, not '%s'", u->scalar);
		if (!p->policy.allow_http && !strncmp(u->scalar, "http://", 7))
			return err_at(r, &u->origin, "'packer.payload_url' is plain http and "
				      "policy.allow_http is false");
		/* The VM pulls it with no winbuild in between, so the URL is
		 * written into 02-payload.ps1 as it is: a secret in it would be
		 * in out/ and in the image's build log, even from --set (issue 31). */
		if (redact_url_needed(u->scalar))
			return err_at(r, &u->origin, "'packer.payload_url' carries a secret (a "
				      "user:password@ or a signed query): it would be written into "
				      "02-payload.ps1; serve payload.zip where the build VM can read it "
				      "without one, or use payload: upload or cd");
		p->payload_pull = 1;
		p->payload_url = xstrdup(u->scalar);
	}
	if (convert_authenticode(r, rnode_get(top, "authenticode"), NULL, &p->authenticode, "") ||
	    layer_authenticode(r))
		return -1;
	tighten_authenticode(r);
	if ((n = rnode_get(top, "mirror_only"))) {
		p->mirror_only = schema_bool(n) == 1;
		p->mirror_only_origin = n->origin;
	}
	if ((n = rnode_get(top, "mirrors"))) {
		p->mirrors = xcalloc(n->nr ? n->nr : 1, sizeof(*p->mirrors));
		for (size_t i = 0; i < n->nr; i++) {
			const struct rnode *m = n->items[i];
			/* file://${override_dir}/ first: the one name that is not
			 * a variable; then the image's vars */
			char *from = expand(r, image_vars, rnode_get(m, "from"), "mirrors.from");
			char *to = override_dir_url(scalar(m, "to"), &rnode_get(m, "to")->origin);

			if (!to && from)
				to = expand(r, image_vars, rnode_get(m, "to"), "mirrors.to");
			if (!from || !to || url_check(r, from, &rnode_get(m, "from")->origin, "mirrors.from") ||
			    url_check(r, to, &rnode_get(m, "to")->origin, "mirrors.to")) {
				free(from);
				free(to);
				return -1;
			}
			p->mirrors[i].from = from;
			p->mirrors[i].to = to;
			p->mirrors[i].origin = m->origin;
			p->nmirrors++;
		}
	}
	if ((n = rnode_get(top, "replace"))) {
		/* checked once every artifact is known (below) */
	}


	comps = rnode_get(top, "components");
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
		if (name_check(r, &entry->key_origin, "component name", entry->key))
			return -1;
		if (!key_segment_ok(entry->key, strlen(entry->key)))
			return err_at(r, &entry->key_origin, "bad component name '%s'", entry->key);
		if (schema_check(entry, schema_component, ctx, 1, r->e))
			return -1;
		if (en && schema_bool(en) == 0) {
			/* parsed and checked against the schema, then left out:
			 * no artifact, service, file or setting of it */
			if (load_component(r, entry, &cn) || !cn)
				return -1;
			ret = schema_check(cn, schema_component, ctx, 0, r->e);
			rnode_free(cn);
			cn = NULL;
			if (ret)
				return -1;
			add_value(p, "components.", "", &en->origin);
			free(p->values[p->nvalues - 1].key);
			p->values[p->nvalues - 1].key = xasprintf("%s.enabled", ctx);
			free(p->values[p->nvalues - 1].value);
			p->values[p->nvalues - 1].value = xstrdup("false");
			continue;
		}
		if (load_component(r, entry, &cn) || !cn)
			return -1;
		free(cn->key);
		cn->key = xstrdup(entry->key);
		ret = convert_component(r, cn, image_vars);
		rnode_free(cn);
		if (ret)
			return -1;
	}
	if (convert_updates(r, rnode_get(rnode_get(top, "windows"), "updates"), image_vars))
		return -1;
	/* the components' images too: images_check_policy() again */
	if (images_finish(r, rnode_get(top, "node")) || images_check_policy(r) ||
	    dest_clashes(r) || dirs_clash(r) || order_services(r) ||
	    versions_agree(r, image_vars))
		return -1;
	version_warnings(r);
	if (since_met(r) || convert_site_signing(r, rnode_get(top, "site_signing")))
		return -1;
	if ((n = rnode_get(top, "replace"))) {
		for (size_t i = 0; i < n->nr; i++)
			if (!plan_find_artifact(p, n->items[i]->key))
				return err_at(r, &n->items[i]->key_origin,
					      "'replace.%s' names no artifact of this image",
					      n->items[i]->key);
	}
	/* top-level values for --explain, components already added */
	for (size_t i = 0; i < top->nr; i++) {
		if (!strcmp(top->items[i]->key, "components"))
			continue;
		flatten(p, top->items[i], top->items[i]->key);
	}
	qsort(p->values, p->nvalues, sizeof(*p->values), cmp_value);
	qsort(p->artifacts, p->nartifacts, sizeof(*p->artifacts), cmp_artifact);
	for (size_t i = 0; i < p->nartifacts; i++) {
		/* the spec names its artifact (trust/ knows no plan) */
		p->artifacts[i].verify.name = p->artifacts[i].name;
		p->artifacts[i].verify.filename = p->artifacts[i].filename;
	}
	return 0;
}

void resolver_release(struct resolver *r)
{
	rnode_free(r->top);
	for (size_t i = 0; i < r->nlayers; i++) {
		rnode_free(r->layers[i].policy);
		rnode_free(r->layers[i].auth);
		rnode_free(r->layers[i].sigs);
		rnode_free(r->layers[i].keys);
		rnode_free(r->layers[i].comps);
	}
	rnode_free(r->comp_auth);
	free(r->layers);
	vars_release(&r->image_vars);
	memset(r, 0, sizeof(*r));
}

int plan_resolve(const struct plan_inputs *in, struct plan *plan,
		 struct wb_err *e)
{
	struct resolver r;
	int ret;

	memset(plan, 0, sizeof(*plan));
	memset(&r, 0, sizeof(r));
	r.plan = plan;
	r.in = in;
	r.e = e;
	plan->recipe_path = xstrdup(in->recipe);
	ret = load_layers(&r, in);
	if (!ret)
		ret = convert_top(&r);
	resolver_release(&r);
	if (ret)
		plan_release(plan);
	return ret;
}
