/*
 * One artifact of a component into the plan: its URL (or the override's
 * replacement), its verification, what happens to it (unpack, install,
 * payload) and where, then the policy check.
 *
 * @where replacements (`replace:`) and policy tightening -- replacements
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/winpath.h"
#include "recipe/resolve_int.h"

static int convert_dest(struct resolver *r, const struct rnode *n,
			struct plan_artifact *a, const char *what)
{
	const char *why = NULL;

	a->dest_tree = winpath_to_tree(n->scalar, &why);
	a->dest_origin = n->origin;
	if (!a->dest_tree)
		return err_at(r, &n->origin, "bad Windows destination '%s' in '%s': %s",
			      n->scalar, what, why);
	a->dest_win = xstrdup(n->scalar);
	for (char *p = a->dest_win; *p; p++)
		if (*p == '/')
			*p = '\\';
	a->dest_win[0] = 'C';
	return 0;
}

unsigned long long artifacts_to_ull(const struct rnode *n)
{
	return n ? strtoull(n->scalar, NULL, 10) : 0;
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int convert_action(struct resolver *r, const struct vars *vs,
			  const struct rnode *an, struct plan_artifact *a, const char *ctx)
{
	const struct rnode *un = rnode_get(an, "unpack"), *in = rnode_get(an, "install");
	const struct rnode *pn = rnode_get(an, "payload"), *n;
	char what[256];

	if (!!un + !!in + !!pn != 1)
		return err_at(r, &an->origin,
			      "'%s' needs exactly one of 'unpack', 'install' or 'payload'", ctx);
	if (un) {
		a->action = PLAN_UNPACK;
		snprintf(what, sizeof(what), "%s.unpack.into", ctx);
		if (convert_dest(r, rnode_get(un, "into"), a, what))
			return -1;
		a->strip = (n = rnode_get(un, "strip")) ? (int)artifacts_to_ull(n) : 0;
		if (a->strip > 64)
			return err_at(r, &n->origin, "'%s.unpack.strip' must be at most 64", ctx);
		/* ${var}s expand in the globs, so a component can pick the
		 * folder of the image's Windows (virtio-win's 2k22/) */
		snprintf(what, sizeof(what), "%s.unpack.include", ctx);
		if ((n = rnode_get(un, "include")))
			for (size_t i = 0; i < n->nr; i++) {
				char *g = vars_expand(r, vs, n->items[i], what);

				if (!g)
					return -1;
				wb_strlist_push(&a->include, g);
				free(g);
			}
		a->format = xstrdup((n = rnode_get(un, "format")) ? n->scalar : "auto");
		n = rnode_get(un, "limits");
		a->limits.max_bytes = artifacts_to_ull(rnode_get(n, "max_bytes"));
		a->limits.max_entries = artifacts_to_ull(rnode_get(n, "max_entries"));
		a->limits.max_ratio = artifacts_to_ull(rnode_get(n, "max_ratio"));
		a->limits.max_seconds = artifacts_to_ull(rnode_get(n, "max_seconds"));
	} else if (in) {
		a->action = PLAN_INSTALL;
		snprintf(what, sizeof(what), "%s.install.to", ctx);
		if (convert_dest(r, rnode_get(in, "to"), a, what))
			return -1;
		if (!*a->dest_tree)
			return err_at(r, &rnode_get(in, "to")->origin,
				      "'%s' must name a file, not the drive root", what);
	} else {
		a->action = PLAN_PAYLOAD;
		snprintf(what, sizeof(what), "%s.payload.to", ctx);
		if (convert_dest(r, rnode_get(pn, "to"), a, what))
			return -1;
		if (!*a->dest_tree)
			return err_at(r, &rnode_get(pn, "to")->origin,
				      "'%s' must name a file, not the drive root", what);
		a->payload_type = xstrdup((n = rnode_get(pn, "type")) ? n->scalar : "msi");
		if ((n = rnode_get(pn, "properties"))) {
			for (size_t i = 0; i < n->nr; i++) {
				char *kv = xasprintf("%s=%s", n->items[i]->key,
						     n->items[i]->scalar);
				wb_strlist_push(&a->payload_props, kv);
				free(kv);
			}
			qsort(a->payload_props.v, a->payload_props.nr, sizeof(char *),
			      strcmp_ptr);
		}
	}
	return 0;
}

/* BASE holds the component's variables; VS is the artifact's own set,
 * released by the caller. */
static int convert_artifact_in(struct resolver *r, const struct rnode *an,
			       const struct plan_component *c,
			       const struct vars *base, struct vars *vs,
			       struct plan_artifact *a)
{
	const struct rnode *rp = rnode_get(rnode_get(r->top, "replace"), an->key);
	const struct rnode *un = rnode_get(an, "url"), *vn = rnode_get(an, "verify"), *cn;
	char ctx[256], what[300];
	char *url;

	snprintf(ctx, sizeof(ctx), "components.%s.artifacts.%s", c->name, an->key);
	a->name = xstrdup(an->key);
	a->component = xstrdup(c->name);
	a->version = xstrdup(c->version);
	if (rp && rnode_get(rp, "url")) {
		un = rnode_get(rp, "url");
		a->replaced = 1;
	}
	if (rp && rnode_get(rp, "verify"))
		vn = rnode_get(rp, "verify");
	/* a replace's credential goes with its url */
	cn = rnode_get(rp, "credential") ? rnode_get(rp, "credential") : rnode_get(an, "credential");
	if (cn) {
		const char *cv = cn->scalar;

		/* a name: the secret itself has no place in a recipe */
		if (!*cv || strspn(cv, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789._-") != strlen(cv) || strlen(cv) > 64)
			return err_at(r, &cn->origin, "'credential' names an entry of the "
				      "credentials file ([NAME]: letters, digits, '.', '_', '-', "
				      "at most 64), never the secret itself");
		a->credential = xstrdup(cv);
	}
	vars_add_all(vs, base);
	vars_add(vs, "name", a->name, 0);
	snprintf(what, sizeof(what), "%s.url", ctx);
	if (!(url = vars_expand(r, vs, un, what)))
		return -1;
	a->upstream_url = url;
	a->url_origin = un->origin;
	if (urls_check(r, url, &un->origin, what) ||
	    urls_layout_check(r, url, &un->origin, what))
		return -1;
	a->filename = urls_filename(url);
	if (!*a->filename)
		return err_at(r, &un->origin, "'%s' must end in a file name: '%s'", what, url);
	if (urls_apply_mirrors(r, url, &un->origin, "URL", !a->replaced, &a->urls))
		return -1;
	/* ${url}, ${filename} after the url itself is known */
	vars_prepend(vs, "filename", a->filename, 0);
	vars_prepend(vs, "url", a->upstream_url, 0);
	if (verify_spec_convert(r, vn, vs, a, ctx) ||
	    verify_spec_signatures(r, vs, a, ctx))
		return -1;
	if (convert_action(r, vs, an, a, ctx))
		return -1;
	return policy_check_artifact(r, a, vn);
}

int artifacts_convert(struct resolver *r, const struct rnode *an,
		     const struct plan_component *c, const struct vars *base,
		     struct plan_artifact *a)
{
	struct vars vs = { 0 };
	int ret = convert_artifact_in(r, an, c, base, &vs, a);

	vars_release(&vs);
	return ret;
}
