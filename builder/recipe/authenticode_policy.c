/*
 * The `authenticode:` policy (global, per layer, per component: a list of
 * ANDed trust sets, `require` only tightens) and `site_signing:`.
 *
 * @where the `authenticode:` policy (global, per component; `require` and
 *   `signatures: all` only tighten) -- roots relative to the declaring file
 *
 * @where where the site signs staged executables (`site_signing`) -- the
 *   `site_signing` policy
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"

/* `roots` node K of the map named WHAT: resolved against the file that
 * sets it, and readable now. New string in *OUT, or -1. */
static int auth_roots(struct resolver *r, const struct rnode *k, const char *what,
		      char **out)
{
	*out = rs_relative_to(k->origin.file, k->scalar);
	if (access(*out, R_OK)) {
		int ret = err_at(r, &k->origin, "'%s.roots': cannot read '%s': %s",
				 what, *out, strerror(errno));
		free(*out);
		*out = NULL;
		return ret;
	}
	return 0;
}

/* `publishers` list K into OUT (thumbprints lowercased). */
static int auth_publishers(struct resolver *r, const struct rnode *k, const char *what,
			   struct wb_strlist *out)
{
	for (size_t i = 0; i < k->nr; i++) {
		const char *v = k->items[i]->scalar;

		if (!*v)
			return err_at(r, &k->items[i]->origin,
				      "'%s.publishers' holds an empty entry", what);
		if (hex_is(v, 64, HEX_ANY_CASE)) {
			char *l = rs_lower(xstrdup(v));
			wb_strlist_push(out, l);
			free(l);
		} else {
			wb_strlist_push(out, v);
		}
	}
	return 0;
}

static int same_trust(const char *roots, const struct wb_strlist *pubs,
		      const char *roots2, const struct wb_strlist *pubs2)
{
	return !strcmp(roots ? roots : "", roots2 ? roots2 : "") && wb_strlist_equal(pubs, pubs2);
}

/* Add the trust set ROOTS (taken) and PUBS (moved) to A's sets (the first
 * is A's own, the rest further sets), unless A already requires exactly
 * that. */
static void add_authreq(struct plan_authenticode *a, char *roots, struct wb_strlist *pubs,
			const struct wb_origin *roots_origin)
{
	struct wb_origin at = *roots_origin;   /* may point into a->sets */
	struct trust_authset *q;
	int dup = 0;

	for (size_t i = 0; !dup && i < a->nsets; i++)
		dup = same_trust(roots, pubs, a->sets[i].roots, &a->sets[i].publishers);
	if (dup) {
		free(roots);
		wb_strlist_release(pubs);
		return;
	}
	ALLOC_GROW(a->sets, a->nsets + 1, a->alloc_sets);
	q = &a->sets[a->nsets++];
	memset(q, 0, sizeof(*q));
	q->roots = roots;
	q->publishers = *pubs;
	memset(pubs, 0, sizeof(*pubs));
	q->roots_origin = at;
}

/* A's own roots (its first set's), and where they were set. */
static const char *own_roots(const struct plan_authenticode *a)
{
	return a->nsets ? a->sets[0].roots : NULL;
}

static const struct wb_origin *own_roots_origin(const struct plan_authenticode *a)
{
	static const struct wb_origin none;

	return a->nsets ? &a->sets[0].roots_origin : &none;
}

static void copy_publishers(const struct wb_strlist *from, struct wb_strlist *to)
{
	memset(to, 0, sizeof(*to));
	for (size_t i = 0; i < from->nr; i++)
		wb_strlist_push(to, from->v[i]);
}

/* The roots and publishers of map N (named WHAT) as a further trust set of
 * A; a missing roots is FALLBACK's (at FALLBACK_ORIGIN). Nothing when N
 * names neither. */
static int add_map_trust(struct resolver *r, const struct rnode *n, const char *what,
			 struct plan_authenticode *a, const char *fallback,
			 const struct wb_origin *fallback_origin)
{
	const struct rnode *rk = rnode_get(n, "roots"), *pk = rnode_get(n, "publishers");
	char *roots = NULL;
	struct wb_strlist pubs = { 0 };

	if (!rk && !pk)
		return 0;
	if (rk ? auth_roots(r, rk, what, &roots) : !(roots = xstrdup(fallback))) {
		free(roots);
		return -1;
	}
	if (pk && auth_publishers(r, pk, what, &pubs)) {
		free(roots);
		wb_strlist_release(&pubs);
		return -1;
	}
	add_authreq(a, roots, &pubs, rk ? &rk->origin : fallback_origin);
	return 0;
}

/*
 * `site_signing:` N (or none) into the plan, once the components are known:
 * every name in `components` must be an enabled component of the image (a
 * typo would leave its files upstream-signed on a cluster that enforces
 * the site's signature), `roots` readable now (relative to its file).
 */
int authpol_site_signing(struct resolver *r, const struct rnode *n)
{
	struct plan_sitesign *s = &r->plan->site_signing;
	const struct rnode *k;

	if (!n)
		return 0;
	s->origin = n->origin;
	k = rnode_get(n, "components");
	if (!k->nr)
		return err_at(r, &k->origin, "'site_signing.components' is empty: name the "
			      "components whose executables the site signs");
	for (size_t i = 0; i < k->nr; i++) {
		if (!plan_find_component(r->plan, k->items[i]->scalar))
			return err_at(r, &k->items[i]->origin, "'site_signing.components' names "
				      "'%s', which is not an enabled component of this image",
				      k->items[i]->scalar);
		wb_strlist_push(&s->components, k->items[i]->scalar);
	}
	if ((k = rnode_get(n, "files"))) {
		for (size_t i = 0; i < k->nr; i++) {
			const char *v = k->items[i]->scalar;

			if (!*v || strchr(v, '/') || strchr(v, '\\'))
				return err_at(r, &k->items[i]->origin, "'site_signing.files' "
					      "entries are file-name patterns ('*.exe', "
					      "'kube*.exe'), not '%s'", v);
			wb_strlist_push(&s->files, v);
		}
	}
	if (auth_roots(r, rnode_get(n, "roots"), "site_signing", &s->roots) ||
	    ((k = rnode_get(n, "publishers")) &&
	     auth_publishers(r, k, "site_signing", &s->publishers)))
		return -1;
	s->set = 1;
	return 0;
}

/* N's `signatures: one|all` into A: `all` anywhere holds over `one`. */
static void auth_signatures(const struct rnode *n, struct plan_authenticode *a)
{
	const struct rnode *k = rnode_get(n, "signatures");

	if (k && !strcmp(k->scalar, "one"))
		a->sigs_one = 1;
	else if (k)
		a->sigs_all = 1;
}

/*
 * The `authenticode` map N (or none) over GLOBAL (or none) into OUT.
 * Without a global policy N's roots and publishers are the policy. Over
 * one, N can only narrow it: N's roots and publishers (a missing one taken
 * from GLOBAL) become a further trust set that must hold as well as every
 * one of GLOBAL's; N's require can only tighten a global require: true.
 * `roots` is relative to the file that sets it and must be readable now.
 */
int authpol_convert(struct resolver *r, const struct rnode *n,
			 const struct plan_authenticode *global,
			 struct plan_authenticode *out, const char *ctx)
{
	const struct rnode *k, *rk, *pk;
	char what[300];
	int narrow = global && global->set;

	snprintf(what, sizeof(what), "%s%sauthenticode", ctx, *ctx ? "." : "");
	memset(out, 0, sizeof(*out));
	if (narrow) {
		*out = *global;
		out->sets = NULL;
		out->nsets = out->alloc_sets = 0;
		for (size_t i = 0; i < global->nsets; i++) {
			struct wb_strlist pubs;

			copy_publishers(&global->sets[i].publishers, &pubs);
			add_authreq(out, xstrdup(global->sets[i].roots), &pubs,
				    &global->sets[i].roots_origin);
		}
	}
	if (!n)
		return 0;
	out->set = 1;
	out->origin = n->origin;
	auth_signatures(n, out);
	if ((k = rnode_get(n, "require")) &&
	    (schema_bool(k) == 1 || !global || !global->require)) {
		out->require = schema_bool(k) == 1;
		out->require_origin = k->origin;
	}
	rk = rnode_get(n, "roots");
	pk = rnode_get(n, "publishers");
	if (narrow)
		return add_map_trust(r, n, what, out, own_roots(global), own_roots_origin(global));
	{
		/* the policy's own set: its roots and publishers */
		struct trust_authset own;

		memset(&own, 0, sizeof(own));
		if (rk) {
			if (auth_roots(r, rk, what, &own.roots))
				return -1;
			own.roots_origin = rk->origin;
		}
		if (pk && auth_publishers(r, pk, what, &own.publishers)) {
			free(own.roots);
			wb_strlist_release(&own.publishers);
			return -1;
		}
		if (!own.roots) {
			wb_strlist_release(&own.publishers);
			return err_at(r, &n->origin,
				      "'%s' needs 'roots' (a PEM file of trusted roots)", what);
		}
		ALLOC_GROW(out->sets, out->nsets + 1, out->alloc_sets);
		out->sets[out->nsets++] = own;
	}
	return 0;
}

/* Every layer's own top-level roots and publishers (image recipe, each
 * override, --set) hold, not only the merged map's: a later layer names a
 * further trust set, it does not replace an earlier one's. */
int authpol_layers(struct resolver *r)
{
	struct plan_authenticode *a = &r->plan->authenticode;

	if (!a->set)
		return 0;
	for (size_t i = 0; i < r->nlayers; i++)
		if (add_map_trust(r, r->layers[i].auth, "authenticode", a, own_roots(a),
				  own_roots_origin(a)))
			return -1;
	return 0;
}

/* A component's authenticode map comes from its file and from every
 * layer's `components.<name>.authenticode`; merged, a later one would
 * replace an earlier one's roots or publishers or turn its require off.
 * Each source's roots/publishers are a trust set of their own (ANDed) and
 * each one's require: true holds. */
int authpol_layer_component(struct resolver *r, const char *name,
				 struct plan_authenticode *a, const char *ctx)
{
	char what[300];

	if (!a->set)
		return 0;
	snprintf(what, sizeof(what), "%s.authenticode", ctx);
	for (size_t i = 0; i <= r->nlayers; i++) {
		/* source 0: the component file itself, then each layer */
		const struct rnode *n = i ?
			rnode_get(rnode_get(r->layers[i - 1].comps, name), "authenticode") :
			r->comp_auth;
		const struct rnode *k;

		if (!n)
			continue;
		if (n->type != RNODE_MAP)
			return err_at(r, &n->origin, "'%s' must be a map", what);
		if (schema_check(n, schema_authenticode, what, 1, r->e))
			return -1;
		if ((k = rnode_get(n, "require")) && schema_bool(k) == 1 && !a->require) {
			a->require = 1;
			a->require_origin = k->origin;
		}
		auth_signatures(n, a);
		if (add_map_trust(r, n, what, a, own_roots(a), own_roots_origin(a)))
			return -1;
	}
	return 0;
}

/* A top-level authenticode.require: true in any layer holds: later layers
 * (overrides, --set) may tighten it, never loosen it. */
void authpol_tighten(struct resolver *r)
{
	struct plan_authenticode *a = &r->plan->authenticode;

	for (size_t i = 0; i < r->nlayers; i++) {
		const struct rnode *n = rnode_get(r->layers[i].auth, "require");

		if (a->set && r->layers[i].auth)
			auth_signatures(r->layers[i].auth, a);
		if (a->set && !a->require && n && schema_bool(n) == 1) {
			a->require = 1;
			a->require_origin = n->origin;
		}
	}
}
