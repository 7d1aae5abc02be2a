/*
 * The layers of a recipe: the image recipe with its includes merged
 * beneath it, then each override file, each WINBUILD_SET pair and each
 * --set pair merged over it, every node keeping its origin; a layer's
 * nulls unset keys, and each layer's own policy, authenticode, signatures
 * and keys maps are kept apart (policy only tightens).
 *
 * @where includes, override layers, `WINBUILD_SET`, `--set`, `${var}`
 *   expansion -- includes and override layers, `WINBUILD_SET` and `--set`
 *   merged in order
 */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"

static int load_includes(struct resolver *r, const char *path, struct rnode *n,
			 const char *kind, struct rnode **base)
{
	struct rnode *inc = rnode_take(n, "include");
	int ret = 0;

	*base = NULL;
	if (!inc)
		return 0;
	if (inc->type != RNODE_LIST) {
		ret = err_at(r, &inc->origin, "'include' must be a list of paths");
		goto out;
	}
	for (size_t i = 0; i < inc->nr; i++) {
		const struct rnode *it = inc->items[i];
		struct rnode *sub = NULL;
		char *p;

		if (it->type != RNODE_SCALAR) {
			ret = err_at(r, &it->origin, "'include' items must be paths");
			goto out;
		}
		p = rs_relative_to(path, it->scalar);
		ret = layers_load_kind(r, p, kind, &it->origin, &sub);
		free(p);
		if (ret)
			goto out;
		*base = rnode_merge(*base, sub);
	}
out:
	rnode_free(inc);
	if (ret) {
		rnode_free(*base);
		*base = NULL;
	}
	return ret;
}

/*
 * Load PATH, which must be a map with `kind: KIND`, with its includes merged
 * beneath it. FROM is where PATH was named (for "not found" and cycles).
 */
int layers_load_kind(struct resolver *r, const char *path, const char *kind,
	      const struct wb_origin *from, struct rnode **out)
{
	struct rnode *n = NULL, *base = NULL;
	const struct rnode *k;
	char *real;
	int ret = -1;

	*out = NULL;
	real = realpath(path, NULL);
	if (!real) {
		if (from)
			return err_at(r, from, "%s '%s' not found",
				      from->file && r->ninclude ? "include" : "file", path);
		return wb_error(r->e, WB_EUSAGE, "%s: cannot open: no such file", path);
	}
	for (size_t i = 0; i < r->ninclude; i++) {
		if (strcmp(r->include_stack[i], real))
			continue;
		ret = err_at(r, from, "include cycle: '%s' includes itself through '%s'",
			     path, from ? from->file : "?");
		free(real);
		return ret;
	}
	if (r->ninclude >= MAX_INCLUDE_DEPTH) {
		free(real);
		return err_at(r, from, "includes nested deeper than %d files",
			      MAX_INCLUDE_DEPTH);
	}
	if (rnode_load_file(path, &r->plan->interned, &n, r->e)) {
		free(real);
		return -1;
	}
	r->include_stack[r->ninclude++] = real;
	if (n->type != RNODE_MAP) {
		ret = err_at(r, &n->origin, "expected a map with 'kind: %s', found %s",
			     kind, n->type == RNODE_LIST ? "a list" : "a scalar");
		goto out;
	}
	k = rnode_get(n, "kind");
	if (!k) {
		ret = err_at(r, &n->origin, "missing required key 'kind' (expected 'kind: %s')",
			     kind);
		goto out;
	}
	if (k->type != RNODE_SCALAR || strcmp(k->scalar, kind)) {
		ret = err_at(r, &k->origin, "'kind' must be '%s' here, not '%s'", kind,
			     k->type == RNODE_SCALAR ? k->scalar : "a collection");
		goto out;
	}
	if (load_includes(r, path, n, kind, &base))
		goto out;
	{
		/* the merged document is PATH's: an error about the whole of
		 * it ("missing required key") points here, not at an include */
		struct wb_origin own = n->origin;

		*out = rnode_merge(base, n);
		(*out)->origin = own;
	}
	n = NULL;
	ret = 0;
out:
	r->ninclude--;
	free(real);
	rnode_free(n);
	return ret;
}

struct rnode *layers_clone_or_null(const struct rnode *n)
{
	return n ? rnode_clone(n) : NULL;
}

static void push_policy_layer(struct resolver *r, const struct rnode *layer)
{
	struct layer *l;

	ALLOC_GROW(r->layers, r->nlayers + 1, r->alloc_layers);
	l = &r->layers[r->nlayers++];
	l->policy = layers_clone_or_null(rnode_get(layer, "policy"));
	l->auth = layers_clone_or_null(rnode_get(layer, "authenticode"));
	l->sigs = layers_clone_or_null(rnode_get(layer, "signatures"));
	l->keys = layers_clone_or_null(rnode_get(layer, "keys"));
	l->comps = layers_clone_or_null(rnode_get(layer, "components"));
}

/* Each layer's policy, authenticode and signatures maps are kept on their
 * own (push_policy_layer), so each is checked on its own too: a later layer
 * that replaces one does not excuse it. */
static int check_policy_layer(struct resolver *r, const struct rnode *layer)
{
	static const struct {
		const char *key;
		const struct schema_key *table;
	} maps[] = {
		{ "policy", schema_policy },
		{ "authenticode", schema_authenticode },
		{ "signatures", schema_signatures },
	};

	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		const struct rnode *n = rnode_get(layer, maps[i].key);

		if (!n)
			continue;
		if (n->type != RNODE_MAP)
			return err_at(r, &n->origin, "'%s' must be a map", maps[i].key);
		if (schema_check(n, maps[i].table, maps[i].key, 1, r->e))
			return -1;
	}
	return 0;
}

/* LAYER's policy maps are bad: report every schema error of LAYER at once
 * (those included), not only the policy maps'. */
static int layer_failed(struct resolver *r, const struct rnode *layer, int no_required)
{
	struct wb_err all = WB_ERR_INIT;

	if (schema_check(layer, schema_image, "", no_required, &all))
		*r->e = all;
	return -1;
}

/*
 * A later layer's replace.<artifact>.verify replaces an earlier layer's
 * whole, as docs/recipes.md says (maps merge everywhere else): a site's
 * second override re-verifying an artifact must not inherit the first
 * one's requirements, nor have them silently added to its own.
 */
static void replace_verify_whole(struct resolver *r, const struct rnode *layer)
{
	const struct rnode *rep = rnode_get(layer, "replace");
	struct rnode *old = rnode_get(r->top, "replace");

	for (size_t i = 0; rep && old && rep->type == RNODE_MAP && i < rep->nr; i++) {
		struct rnode *o = rnode_get(old, rep->items[i]->key);

		if (o && o->type == RNODE_MAP && rnode_get(rep->items[i], "verify"))
			rnode_free(rnode_take(o, "verify"));
	}
}

/* a plain ~ or null: YAML's null, which a later layer writes to unset */
static int is_null(const struct rnode *n)
{
	return n->type == RNODE_SCALAR && n->plain &&
	       (!strcmp(n->scalar, "~") || !strcmp(n->scalar, "null"));
}

/* Every null of LAYER unsets that key in TOP (the merge so far), at
 * PREFIX; refused where unsetting would loosen trust. */
static int unset_nulls(struct resolver *r, struct rnode *layer, struct rnode *top,
		       const char *prefix)
{
	for (size_t i = 0; layer->type == RNODE_MAP && i < layer->nr; i++) {
		struct rnode *n = layer->items[i];
		char *path = xasprintf("%s%s%s", prefix, *prefix ? "." : "", n->key);
		int ret = 0;

		if (is_null(n)) {
			/* components.*: component_nulls() judged it, from the schema */
			if (strncmp(path, "components.", 11) && policy_unset_loosens(path))
				ret = err_at(r, &n->origin, "'%s' cannot be unset (null): that "
					     "would loosen what an earlier layer requires; "
					     "give another value instead", path);
			else if (!strncmp(path, "components.", 11)) {
				/* kept: it unsets the component file's value too,
				 * merged beneath it later (layers_strip_nulls()) */
			} else {
				if (top && top->type == RNODE_MAP)
					rnode_free(rnode_take(top, n->key));
				rnode_free(rnode_take(layer, n->key));
				i--;
			}
		} else if (n->type == RNODE_MAP) {
			ret = unset_nulls(r, n, top && top->type == RNODE_MAP ?
					  rnode_get(top, n->key) : NULL, path);
		}
		free(path);
		if (ret)
			return -1;
	}
	return 0;
}

/* Remove the nulls a layer left under components.<name> (their keys come
 * from the component file, merged beneath them later): unset there. */
void layers_strip_nulls(struct rnode *n)
{
	for (size_t i = 0; n && n->type == RNODE_MAP && i < n->nr; i++) {
		if (is_null(n->items[i])) {
			rnode_free(rnode_take(n, n->items[i]->key));
			i--;
		} else {
			layers_strip_nulls(n->items[i]);
		}
	}
}

/* The entry of TABLE named KEY, or NULL. */
static const struct schema_key *schema_find(const struct schema_key *table, const char *key)
{
	for (; table && table->name; table++)
		if (!strcmp(table->name, key))
			return table;
	return NULL;
}

/* N (of a later layer) would loosen T, which an earlier layer set: say so,
 * naming the key, what the change would do, and where T was set. */
static int loosens(struct resolver *r, const struct rnode *n, const struct rnode *t,
		   const char *path, const char *what)
{
	char where[512];

	wb_origin_format(&t->origin, where, sizeof(where));
	return err_at(r, &n->origin, "'%s' cannot be %s: that would loosen what %s "
		      "set; a later layer may only tighten trust (docs/recipes.md, "
		      "\"Layers only tighten\")", path, what, where);
}

/*
 * Policy only tightens (issue 41 item 2): each key of LAYER (below PREFIX,
 * checked against TABLE) whose schema entry declares a direction
 * (S_TRUST, recipe/schema.h) against TOP, the merge of the earlier layers:
 * T_SET and T_LAYERS keys are never unset, a T_ON flag never turned off, a
 * T_OFF flag never turned on, a T_ENTRIES map never loses an entry. The one
 * rule for every layer kind: override files, windows_versions, WINBUILD_SET,
 * --set and a matrix variation's set all arrive through merge_layer().
 * @where layers only tighten: the direction of every trust key, applied to
 *   every layer -- every layer: overrides, `windows_versions`,
 *   `WINBUILD_SET`, `--set`, a matrix variation's set
 *   (`tests/cli/layers_tighten.bats`)
 */
static int tighten_only(struct resolver *r, const struct rnode *layer, const struct rnode *top,
			const struct schema_key *table, const char *prefix)
{
	for (size_t i = 0; layer->type == RNODE_MAP && i < layer->nr; i++) {
		const struct rnode *n = layer->items[i];
		const struct schema_key *k = schema_find(table, n->key);
		const struct rnode *t = top && top->type == RNODE_MAP ? rnode_get(top, n->key) : NULL;
		enum schema_trust dir = k ? S_TRUST_DIR(k->flags) : T_NONE;
		char *path = xasprintf("%s%s%s", prefix, *prefix ? "." : "", n->key);
		int ret = 0;

		if (!k || dir == T_NONE || !t) {
			free(path);
			continue;
		}
		if (is_null(n) && dir != T_FREE)
			ret = loosens(r, n, t, path, "unset (null)");
		else if (dir == T_ON && schema_bool(t) == 1 && schema_bool(n) == 0)
			ret = loosens(r, n, t, path, "turned off");
		else if (dir == T_OFF && schema_bool(t) == 0 && schema_bool(n) == 1)
			ret = loosens(r, n, t, path, "turned on");
		else if (k->type == S_MAP && k->sub && n->type == RNODE_MAP)
			ret = tighten_only(r, n, t, k->sub, path);
		for (size_t j = 0; !ret && k->type == S_MAPOF && n->type == RNODE_MAP &&
		     t->type == RNODE_MAP && j < n->nr; j++) {
			const struct rnode *e = n->items[j], *te = rnode_get(t, e->key);
			char *ep = xasprintf("%s.%s", path, e->key);

			if (te && is_null(e) && dir == T_ENTRIES)
				ret = loosens(r, e, te, ep, "unset (null)");
			else if (te && k->sub)
				ret = tighten_only(r, e, te, k->sub, ep);
			free(ep);
		}
		free(path);
		if (ret)
			return -1;
	}
	return 0;
}

/*
 * A later layer's nulls below components (N, the value of key K at PATH):
 * the component files that hold the values are merged beneath the layers
 * later (layers_strip_nulls), so no earlier value is at hand to compare; a null
 * of any key whose schema entry declares a direction (an artifact's
 * verify and credential, the component's authenticode policy: S_TRUST in
 * recipe/schema.c) is refused whatever the file holds, as tighten_only
 * refuses an unset. T_FREE keys (a log lookup's rekor) stay free, and so
 * does every key without a direction (a null unsets it, as anywhere).
 * @where layers only tighten: the direction of every trust key, applied to
 *   every layer -- a component's trust keys
 */
static int component_nulls(struct resolver *r, const struct rnode *n,
			   const struct schema_key *k, const char *path)
{
	enum schema_trust dir = S_TRUST_DIR(k->flags);

	if (is_null(n))
		return dir != T_NONE && dir != T_FREE ?
			err_at(r, &n->origin, "'%s' cannot be unset (null): that would "
			       "loosen what the component file sets; a later layer may "
			       "only tighten trust (docs/recipes.md, \"Layers only "
			       "tighten\")", path) : 0;
	for (size_t i = 0; n->type == RNODE_MAP && k->sub && i < n->nr; i++) {
		const struct rnode *c = n->items[i];
		/* an entry of a map of entries: its keys are the sub-table's */
		const struct schema_key entry = { c->key, S_MAP, k->sub, NULL, 0 };
		const struct schema_key *ck = k->type == S_MAPOF ? &entry :
			schema_find(k->sub, c->key);
		char *p = xasprintf("%s.%s", path, c->key);
		int ret = ck ? component_nulls(r, c, ck, p) : 0;

		free(p);
		if (ret)
			return -1;
	}
	return 0;
}

static int merge_layer(struct resolver *r, struct rnode *layer)
{
	const struct rnode *comps = layer->type == RNODE_MAP ?
		rnode_get(layer, "components") : NULL;

	if (r->top && comps &&
	    component_nulls(r, comps, schema_find(schema_image, "components"), "components")) {
		rnode_free(layer);
		return -1;
	}
	if (r->top && layer->type == RNODE_MAP &&
	    tighten_only(r, layer, r->top, schema_image, "")) {
		rnode_free(layer);
		return -1;
	}
	if (r->top && layer->type == RNODE_MAP && unset_nulls(r, layer, r->top, "")) {
		rnode_free(layer);
		return -1;
	}
	if (layer->type == RNODE_MAP && check_policy_layer(r, layer)) {
		layer_failed(r, layer, 1);
		rnode_free(layer);
		return -1;
	}
	push_policy_layer(r, layer);
	replace_verify_whole(r, layer);
	r->top = rnode_merge(r->top, layer);
	return 0;
}

/*
 * An override's windows_versions: {VERSION: VALUES, ...} (WV, taken out of
 * the file): the VALUES of the image's windows.version as merged so far
 * (this file's own keys included), merged right after the rest of the
 * file, with their own origins (plan --explain shows the line in the
 * block). One site override then serves a matrix of Windows versions, the
 * ISO digest first. image-builder has no such thing: a var file per
 * Windows version (images/capi/packer/ova/windows-2022.json and kin).
 * @where the image matrix: several recipes or `--matrix FILE`, one fetch over
 *   the union, a stage, lock and emit per image -- per-Windows-version
 *   override values
 */
static int merge_versions(struct resolver *r, struct rnode *wv)
{
	const struct rnode *v = rnode_get(rnode_get(r->top, "windows"), "version");
	struct rnode *pick = NULL;
	int ret = 0;

	if (wv->type != RNODE_MAP) {
		ret = err_at(r, &wv->origin, "'windows_versions' is a map of Windows versions "
			     "to override values: {VERSION: {windows: {iso_sha256: ...}}}");
		goto out;
	}
	for (size_t i = 0; i < wv->nr; i++) {
		const struct rnode *x = wv->items[i];

		if (x->type != RNODE_MAP) {
			ret = err_at(r, &x->origin, "the values for Windows %s are a map, like "
				     "an override's", x->key);
			goto out;
		}
		if (rnode_get(x, "windows_versions") ||
		    rnode_get(rnode_get(x, "windows"), "version")) {
			const struct rnode *b = rnode_get(x, "windows_versions");

			ret = err_at(r, b ? &b->key_origin :
				     &rnode_get(rnode_get(x, "windows"), "version")->key_origin,
				     "windows_versions.%s cannot set %s", x->key,
				     b ? "windows_versions again" : "windows.version");
			goto out;
		}
	}
	if (v && v->type == RNODE_SCALAR)
		pick = rnode_take(wv, v->scalar);
	if (pick)
		ret = merge_layer(r, pick);
out:
	rnode_free(wv);
	return ret;
}

int layers_load(struct resolver *r, const struct plan_inputs *in)
{
	struct rnode *n;

	if (layers_load_kind(r, in->recipe, "image", NULL, &r->top))
		return -1;
	if ((n = rnode_get(r->top, "replace")))
		return err_at(r, &n->key_origin,
			      "'replace' belongs in override files (-O), not in an image recipe");
	if (check_policy_layer(r, r->top))
		return layer_failed(r, r->top, 0);
	push_policy_layer(r, r->top);

	for (size_t i = 0; i < in->noverrides; i++) {
		const char *path = in->overrides[i];
		struct rnode *k, *wv;

		wb_strlist_push(&r->plan->override_files, path);
		if (rnode_load_file(path, &r->plan->interned, &n, r->e))
			return -1;
		if (n->type != RNODE_MAP) {
			int ret = err_at(r, &n->origin, "expected a map with 'kind: override'");
			rnode_free(n);
			return ret;
		}
		k = rnode_get(n, "kind");
		if (!k || k->type != RNODE_SCALAR || strcmp(k->scalar, "override")) {
			int ret = k ? err_at(r, &k->origin, "'kind' must be 'override' in an override file")
				    : err_at(r, &n->origin, "missing required key 'kind' (expected 'kind: override')");
			rnode_free(n);
			return ret;
		}
		rnode_free(rnode_take(n, "kind"));
		for (const char *const *bad = (const char *const[]){ "name", "include", "kind", NULL };
		     *bad; bad++) {
			struct rnode *b = rnode_get(n, *bad);
			if (b) {
				int ret = err_at(r, &b->key_origin,
						 "'%s' is not allowed in an override file", *bad);
				rnode_free(n);
				return ret;
			}
		}
		wv = rnode_take(n, "windows_versions");
		if (merge_layer(r, n)) {
			rnode_free(wv);
			return -1;
		}
		if (wv && merge_versions(r, wv))
			return -1;
	}

	if (in->env_set && *in->env_set) {
		const char *env_name = wb_intern(&r->plan->interned, "env WINBUILD_SET");
		char *copy = xstrdup(in->env_set), *save = NULL, *tok;
		int idx = 0;

		for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			struct wb_origin o = { env_name, ++idx, 0 };
			while (*tok == ' ')
				tok++;
			if (!*tok)
				continue;
			if (setpair_parse(r, tok, &o, &n) || merge_layer(r, n)) {
				free(copy);
				return -1;
			}
		}
		free(copy);
	}
	for (size_t i = 0; i < in->nsets; i++) {
		struct wb_origin o = { wb_intern(&r->plan->interned, "--set"), (int)i + 1, 0 };
		if (setpair_parse(r, in->sets[i], &o, &n) || merge_layer(r, n))
			return -1;
	}
	return 0;
}
