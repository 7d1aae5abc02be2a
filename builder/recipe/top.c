/*
 * The image recipe's own top-level sections (prefix top_): its name, the
 * windows: settings, node: and cloudbase_init:, the image's vars, the
 * check that every replace: names an artifact, and the plan's last touch
 * (the values --explain prints, everything sorted). resolve.c calls them
 * in order between the other files' sections.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/platform.h"
#include "lib/tmpl.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"

int top_convert_image(struct resolver *r)
{
	struct plan *p = r->plan;
	const struct rnode *top = r->top, *n;

	if (top->type != RNODE_MAP)
		return err_at(r, &top->origin, "expected a map");
	if (schema_check(top, schema_image, "", 0, r->e))
		return -1;
	p->name = rs_str_or(top, "name", "");
	n = rnode_get(top, "name");
	if (urls_name_check(r, &n->origin, "image name", p->name))
		return -1;
	if (!*p->name || strspn(p->name, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(p->name) ||
	    p->name[0] == '.')
		return err_at(r, &n->origin, "'name' must match [a-z0-9._-]+, not '%s'", p->name);
	return 0;
}

int top_convert_windows(struct resolver *r)
{
	struct plan *p = r->plan;
	const struct rnode *n = rnode_get(r->top, "windows");

	p->windows_version = rs_str_or(n, "version", "");
	p->windows_edition = rs_str_or(n, "edition", "datacenter");
	p->windows_desktop = schema_bool(rnode_get(n, "desktop_experience")) == 1;
	p->windows_locale = rs_str_or(n, "locale", "en-US");
	p->windows_product_key = rs_str_or(n, "product_key", "gvlk");
	if (!*p->windows_locale || strlen(p->windows_locale) > 16 ||
	    strspn(p->windows_locale, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") !=
	    strlen(p->windows_locale))
		return rs_bad_grammar(r, &rnode_get(n, "locale")->origin, "windows.locale",
				      p->windows_locale, "a language tag such as en-US");
	if (!platform_windows_find(p->windows_version))   /* the schema's enum is the table's */
		return err_at(r, &r->top->origin, "no Windows Server '%s' in the platform table",
			      p->windows_version);
	return 0;
}

/* cloudbase_init: and node: (after windows:, whose version picks the
 * default pause image) */
int top_convert_node(struct resolver *r)
{
	struct plan *p = r->plan;
	const struct rnode *n = rnode_get(r->top, "node");

	p->cloudbase_provider = rs_str_or(rnode_get(r->top, "cloudbase_init"), "provider", "auto");
	p->service_manager = rs_str_or(n, "service_manager", "sc");
	/* the version is in the platform table (top_convert_windows) */
	p->pause_image = rs_str_or(n, "pause_image",
				   platform_windows_find(p->windows_version)->pause_image);
	if (!tmpl_image_ref_ok(p->pause_image))
		return rs_bad_grammar(r, &rnode_get(n, "pause_image")->origin, "node.pause_image",
				      p->pause_image, "an OCI image reference "
				      "([domain[:port]/]path[:tag][@digest])");
	p->cni = rs_str_or(n, "cni", "none");
	if (rnode_get(n, "windows_features"))
		rs_copy_strlist(rnode_get(n, "windows_features"), &p->windows_features);
	else
		wb_strlist_push(&p->windows_features, "Containers");
	return 0;
}

/* the image's vars, for images: and mirrors: as for the components */
void top_convert_vars(struct resolver *r)
{
	vars_add_map(&r->image_vars, rnode_get(r->top, "vars"));
	vars_add(&r->image_vars, "windows_version", r->plan->windows_version, 0);
}

/* replace: is checked once every artifact is known */
int top_check_replace(struct resolver *r)
{
	const struct rnode *n = rnode_get(r->top, "replace");

	for (size_t i = 0; n && i < n->nr; i++)
		if (!plan_find_artifact(r->plan, n->items[i]->key))
			return err_at(r, &n->items[i]->key_origin,
				      "'replace.%s' names no artifact of this image",
				      n->items[i]->key);
	return 0;
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

/* The top-level values for --explain (the components' are in already),
 * then the values and artifacts sorted. */
void top_finish(struct resolver *r)
{
	struct plan *p = r->plan;
	const struct rnode *top = r->top;

	for (size_t i = 0; i < top->nr; i++) {
		if (!strcmp(top->items[i]->key, "components"))
			continue;
		rs_flatten(p, top->items[i], top->items[i]->key);
	}
	qsort(p->values, p->nvalues, sizeof(*p->values), cmp_value);
	qsort(p->artifacts, p->nartifacts, sizeof(*p->artifacts), cmp_artifact);
	for (size_t i = 0; i < p->nartifacts; i++) {
		/* the spec names its artifact (trust/ knows no plan) */
		p->artifacts[i].verify.name = p->artifacts[i].name;
		p->artifacts[i].verify.filename = p->artifacts[i].filename;
	}
}
