/*
 * Resolve a recipe: load the image recipe and its includes, merge override
 * files, $WINBUILD_SET and --set over it (in that order), load every
 * component file beneath its image settings, check the schema, expand
 * variables, rewrite URLs through mirrors (apply_mirrors), apply
 * replacements and policy, and convert the result into a struct plan.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/names.h"
#include "lib/platform.h"
#include "lib/text.h"
#include "lib/tmpl.h"
#include "lib/winpath.h"
#include "lib/winreserved.h"
#include "recipe/node.h"
#include "recipe/plan.h"
#include "recipe/schema.h"
#include "trust/method.h"

#define MAX_INCLUDE_DEPTH 16
#define MAX_VAR_DEPTH 16

struct resolver {
	struct plan *plan;
	const struct plan_inputs *in;
	struct wb_err *e;
	struct rnode *top;             /* image + overrides + env + --set */
	/* Each layer's own policy, authenticode, signatures and keys maps
	 * (cloned; NULL where the layer has none), in layer order: policy
	 * only tightens, so every layer's word is kept, never merged away.
	 * As many as there are layers: no cap. */
	struct layer {
		struct rnode *policy, *auth, *sigs, *keys;
		struct rnode *comps;   /* the layer's `components` map */
	} *layers;
	size_t nlayers, alloc_layers;
	const char *include_stack[MAX_INCLUDE_DEPTH + 1];
	size_t ninclude;
	struct vars {                  /* looked up first match first; grows */
		struct var {
			const char *name;
			const char *value;
			int raw;       /* value may hold ${...} itself */
		} *v;
		size_t nr, alloc;
	} image_vars;                  /* the image's vars (borrowed strings) */
	struct rnode *comp_auth;       /* the last component file's own
					  authenticode map (load_component) */
	const struct rnode *tlog_exported; /* the component being converted
					  says `tlog_source: exported` (its
					  node), else NULL */
};

#define err_at(r, o, ...) wb_origin_error((r)->e, (o), __VA_ARGS__)

/* A value that is not in its grammar (class 5: checked before anything is
 * rendered): the key, the value escaped, what it must be. */
static int bad_grammar(struct resolver *r, const struct wb_origin *o, const char *key,
		       const char *value, const char *what)
{
	struct buf b = BUF_INIT;
	int ret;

	tmpl_describe(&b, value);
	ret = err_at(r, o, "%s '%s' is not %s", key, b.ptr, what);
	buf_release(&b);
	return ret;
}

static const char *scalar(const struct rnode *n, const char *key)
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
static char *relative_to(const char *from, const char *rel)
{
	char *dir, *p;

	if (rel[0] == '/' || !from || from[0] == '-' || !strncmp(from, "env ", 4))
		return xstrdup(rel);
	dir = fs_dirname(from);
	p = fs_join(dir, rel);
	free(dir);
	return path_clean(p);
}

/* ---- loading files with includes ---- */

static int load_kind(struct resolver *r, const char *path, const char *kind,
		     const struct wb_origin *from, struct rnode **out);

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
		p = relative_to(path, it->scalar);
		ret = load_kind(r, p, kind, &it->origin, &sub);
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
static int load_kind(struct resolver *r, const char *path, const char *kind,
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

/* ---- --set and WINBUILD_SET ---- */

static int key_segment_ok(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF),
 * as libyaml requires of recipe files: --set values end up in the same
 * plan, and in JSON output. */
static int utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, n, cp;

		if (c < 0x80) {
			s++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return 0;
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		s += n + 1;
	}
	return 1;
}

/* Build a tree {a: {b: {c: VALUE}}} from "a.b.c=VALUE". */
static int parse_set(struct resolver *r, const char *pair,
		     const struct wb_origin *o, struct rnode **out)
{
	const char *eq = strchr(pair, '='), *p, *key_end;
	struct rnode *root, *cur, *val = NULL;

	*out = NULL;
	if (!eq)
		return err_at(r, o, "'%s' is not KEY=VALUE", pair);
	key_end = eq;
	for (p = pair; p <= key_end; ) {
		const char *dot = memchr(p, '.', (size_t)(key_end - p));
		const char *seg_end = dot ? dot : key_end;
		if (!key_segment_ok(p, (size_t)(seg_end - p)))
			return err_at(r, o, "bad key '%.*s': segments are [A-Za-z0-9_-]+ separated by '.'",
				      (int)(key_end - pair), pair);
		p = seg_end + 1;
	}
	if (!utf8_ok((const unsigned char *)pair))
		return err_at(r, o, "'%.*s': the value is not valid UTF-8",
			      (int)(eq - pair), pair);
	if (eq[1] == '[' || eq[1] == '{') {
		if (rnode_load_string(eq + 1, o, &val, r->e)) {
			wb_error_prefix(r->e, "value of '%.*s'", (int)(eq - pair), pair);
			return -1;
		}
	} else {
		val = rnode_new_scalar(eq + 1, o);
	}
	root = rnode_new(RNODE_MAP, o);
	cur = root;
	for (p = pair; ; ) {
		const char *dot = memchr(p, '.', (size_t)(key_end - p));
		const char *seg_end = dot ? dot : key_end;
		char *seg = xstrndup(p, (size_t)(seg_end - p));
		struct rnode *child = dot ? rnode_new(RNODE_MAP, o) : val;

		child->key = seg;
		child->key_origin = *o;
		rnode_append(cur, child);
		if (!dot)
			break;
		cur = child;
		p = dot + 1;
	}
	*out = root;
	return 0;
}

static struct rnode *clone_or_null(const struct rnode *n)
{
	return n ? rnode_clone(n) : NULL;
}

static void push_policy_layer(struct resolver *r, const struct rnode *layer)
{
	struct layer *l;

	ALLOC_GROW(r->layers, r->nlayers + 1, r->alloc_layers);
	l = &r->layers[r->nlayers++];
	l->policy = clone_or_null(rnode_get(layer, "policy"));
	l->auth = clone_or_null(rnode_get(layer, "authenticode"));
	l->sigs = clone_or_null(rnode_get(layer, "signatures"));
	l->keys = clone_or_null(rnode_get(layer, "keys"));
	l->comps = clone_or_null(rnode_get(layer, "components"));
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

/* Unsetting PATH could loosen trust: policy, keys and signatures, the
 * Authenticode policy, mirror_only, the ISO pin, and any verification
 * (pins, requirements) but a transparency-log lookup's source. */
static int unset_loosens(const char *path)
{
	static const char *const roots[] = { "policy", "signatures", "keys", "authenticode",
					      "site_signing", "mirror_only", "windows.iso_sha256" };
	const char *v = strstr(path, ".verify");

	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		size_t n = strlen(roots[i]);

		if (!strncmp(path, roots[i], n) && (!path[n] || path[n] == '.'))
			return 1;
	}
	if (!strncmp(path, "verify", 6) || (v && (!v[7] || v[7] == '.'))) {
		const char *last = strrchr(path, '.');

		/* verify.<method>.rekor: the default log is asked instead,
		 * or the layer's tlog_entry: the entry is still checked */
		return !(last && !strcmp(last, ".rekor"));
	}
	return 0;
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
			if (unset_loosens(path))
				ret = err_at(r, &n->origin, "'%s' cannot be unset (null): that "
					     "would loosen what an earlier layer requires; "
					     "give another value instead", path);
			else if (!strncmp(path, "components.", 11)) {
				/* kept: it unsets the component file's value too,
				 * merged beneath it later (strip_nulls()) */
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
static void strip_nulls(struct rnode *n)
{
	for (size_t i = 0; n && n->type == RNODE_MAP && i < n->nr; i++) {
		if (is_null(n->items[i])) {
			rnode_free(rnode_take(n, n->items[i]->key));
			i--;
		} else {
			strip_nulls(n->items[i]);
		}
	}
}

static int merge_layer(struct resolver *r, struct rnode *layer)
{
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

static int load_layers(struct resolver *r, const struct plan_inputs *in)
{
	struct rnode *n;

	if (load_kind(r, in->recipe, "image", NULL, &r->top))
		return -1;
	if ((n = rnode_get(r->top, "replace")))
		return err_at(r, &n->key_origin,
			      "'replace' belongs in override files (-O), not in an image recipe");
	if (check_policy_layer(r, r->top))
		return layer_failed(r, r->top, 0);
	push_policy_layer(r, r->top);

	for (size_t i = 0; i < in->noverrides; i++) {
		const char *path = in->overrides[i];
		struct rnode *k;

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
		if (merge_layer(r, n))
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
			if (parse_set(r, tok, &o, &n) || merge_layer(r, n)) {
				free(copy);
				return -1;
			}
		}
		free(copy);
	}
	for (size_t i = 0; i < in->nsets; i++) {
		struct wb_origin o = { wb_intern(&r->plan->interned, "--set"), (int)i + 1, 0 };
		if (parse_set(r, in->sets[i], &o, &n) || merge_layer(r, n))
			return -1;
	}
	return 0;
}

/* ---- variables ---- */

static void vars_add(struct vars *vs, const char *name, const char *value, int raw)
{
	ALLOC_GROW(vs->v, vs->nr + 1, vs->alloc);
	vs->v[vs->nr++] = (struct var){ name, value, raw };
}

/* Put NAME first: it wins over every variable already in VS. */
static void vars_prepend(struct vars *vs, const char *name, const char *value, int raw)
{
	ALLOC_GROW(vs->v, vs->nr + 1, vs->alloc);
	memmove(vs->v + 1, vs->v, vs->nr * sizeof(vs->v[0]));
	vs->v[0] = (struct var){ name, value, raw };
	vs->nr++;
}

/* Append every variable of FROM to VS (FROM's lose to VS's own). */
static void vars_add_all(struct vars *vs, const struct vars *from)
{
	for (size_t i = 0; i < from->nr; i++)
		vars_add(vs, from->v[i].name, from->v[i].value, from->v[i].raw);
}

static void vars_release(struct vars *vs)
{
	free(vs->v);
	memset(vs, 0, sizeof(*vs));
}

static void vars_add_map(struct vars *vs, const struct rnode *map)
{
	if (!map || map->type != RNODE_MAP)
		return;
	for (size_t i = 0; i < map->nr; i++)
		if (map->items[i]->type == RNODE_SCALAR)
			vars_add(vs, map->items[i]->key, map->items[i]->scalar, 1);
}

/*
 * Apply the transform NAME (LEN bytes) to OUT's bytes from START on, the
 * value of one variable: "underscores" turns every '.' into '_' (1.1.8 ->
 * 1_1_8), "minor" keeps what comes before the second '.' (1.36.4 -> 1.36).
 */
static int transform(struct resolver *r, const struct wb_origin *o, const char *what,
		     const char *name, size_t len, struct buf *out, size_t start)
{
	if (len == 11 && !strncmp(name, "underscores", len)) {
		for (size_t k = start; k < out->len; k++)
			if (out->ptr[k] == '.')
				out->ptr[k] = '_';
		return 0;
	}
	if (len == 5 && !strncmp(name, "minor", len)) {
		int dots = 0;

		for (size_t k = start; k < out->len; k++)
			if (out->ptr[k] == '.' && ++dots == 2) {
				out->len = k;
				out->ptr[k] = '\0';
				break;
			}
		return 0;
	}
	return err_at(r, o, "unknown transform ':%.*s' in '%s' (underscores, minor)",
		      (int)len, name, what);
}

static int expand_into(struct resolver *r, const struct vars *vs, const char *in,
		       const struct wb_origin *o, const char *what, int depth,
		       struct buf *out)
{
	if (depth > MAX_VAR_DEPTH)
		return err_at(r, o, "variables in '%s' nest deeper than %d levels (a cycle?)",
			      what, MAX_VAR_DEPTH);
	for (const char *p = in; *p; p++) {
		const char *end, *colon;
		size_t i, nlen, start;

		/* "billion laughs" through nested ${var}s: cap the result */
		if (out->len > RNODE_MAX_SCALAR)
			return err_at(r, o, "'%s' expands to more than %d bytes",
				      what, RNODE_MAX_SCALAR);
		if (p[0] != '$') {
			buf_addc(out, *p);
			continue;
		}
		if (p[1] == '$') {
			buf_addc(out, '$');
			p++;
			continue;
		}
		if (p[1] != '{') {
			buf_addc(out, '$');
			continue;
		}
		end = strchr(p + 2, '}');
		if (!end)
			return err_at(r, o, "unterminated '${' in '%s'", what);
		/* ${name:transform} (docs/recipes.md, "Variables") */
		colon = memchr(p + 2, ':', (size_t)(end - p - 2));
		nlen = (size_t)((colon ? colon : end) - p - 2);
		for (i = 0; i < vs->nr; i++)
			if (strlen(vs->v[i].name) == nlen &&
			    !strncmp(vs->v[i].name, p + 2, nlen))
				break;
		if (i == vs->nr)
			return err_at(r, o, "undefined variable '${%.*s}' in '%s'",
				      (int)nlen, p + 2, what);
		start = out->len;
		if (vs->v[i].raw) {
			if (expand_into(r, vs, vs->v[i].value, o, what, depth + 1, out))
				return -1;
		} else {
			buf_adds(out, vs->v[i].value);
		}
		if (colon && transform(r, o, what, colon + 1,
				       (size_t)(end - colon - 1), out, start))
			return -1;
		p = end;
	}
	if (out->len > RNODE_MAX_SCALAR)
		return err_at(r, o, "'%s' expands to more than %d bytes", what,
			      RNODE_MAX_SCALAR);
	return 0;
}

/* Expand the scalar N (named WHAT in errors); returns a new string or NULL. */
static char *expand(struct resolver *r, const struct vars *vs,
		    const struct rnode *n, const char *what)
{
	struct buf b = BUF_INIT;

	if (expand_into(r, vs, n->scalar, &n->origin, what, 0, &b)) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

/* ---- URLs ---- */

static int url_check(struct resolver *r, const char *url, const struct wb_origin *o,
		     const char *what)
{
	if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7) &&
	    strncmp(url, "file://", 7))
		return err_at(r, o, "'%s' must be an https, http or file URL, not '%s'",
			      what, url);
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return err_at(r, o, "'%s' holds a space or control character: '%s'",
				      what, url);
	if (!strncmp(url, "http", 4) && !strchr(url, '/') )
		return err_at(r, o, "'%s' has no host: '%s'", what, url);
	return 0;
}

/* NAME becomes a path (prep/<artifact>/, OUT/<name>/, components/<name>.yaml,
 * ...): refused here, at its place in the recipe, unless lib/names.h
 * passes it. */
static int name_check(struct resolver *r, const struct wb_origin *o,
		      const char *what, const char *name)
{
	const char *why = NULL;
	char *shown;
	int ret;

	if (names_check(name, &why))
		return 0;
	shown = text_printable(name);
	ret = err_at(r, o, "bad %s '%s': %s", what, shown, why);
	free(shown);
	return ret;
}

/* An http(s) URL's host and path segments become directories of a mirror
 * (`winbuild mirror`, <host>/<path>): each must be a safe name. */
static int url_layout_check(struct resolver *r, const char *url,
			    const struct wb_origin *o, const char *what)
{
	const char *why = NULL;
	char *rel;

	if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
		return 0;
	if (!(rel = names_url_path(url, &why)))
		return err_at(r, o, "'%s' does not map to a safe mirror path (%s): '%s'",
			      what, why, url);
	free(rel);
	return 0;
}

static char *url_filename(const char *url)
{
	size_t n = strcspn(url, "?#");
	const char *end = url + n, *s = end;

	while (s > url && s[-1] != '/')
		s--;
	return xstrndup(s, (size_t)(end - s));
}

/*
 * The mirror rewrite: every rule whose `from` prefixes URL yields
 * `to` + rest, in rule order; URL itself comes last unless mirror_only
 * forbids it. mirror_only forbids only UPSTREAM URLs: a URL an override's
 * `replace` supplied is the site's own location, not upstream.
 */
static int apply_mirrors(struct resolver *r, const char *url,
			 const struct wb_origin *o, const char *what,
			 int upstream, struct wb_strlist *out)
{
	const struct plan *p = r->plan;

	for (size_t i = 0; i < p->nmirrors; i++) {
		size_t n = strlen(p->mirrors[i].from);
		if (!strncmp(url, p->mirrors[i].from, n)) {
			char *m = xasprintf("%s%s", p->mirrors[i].to, url + n);
			wb_strlist_push_unique(out, m);
			free(m);
		}
	}
	if (!p->mirror_only || !upstream) {
		wb_strlist_push_unique(out, url);
	} else if (!out->nr) {
		char where[512];
		wb_origin_format(&p->mirror_only_origin, where, sizeof(where));
		return err_at(r, o, "no mirror rule covers %s '%s' and mirror_only is set (%s)",
			      what, url, where);
	}
	if (!p->policy.allow_http) {
		for (size_t i = 0; i < out->nr; i++) {
			if (strncmp(out->v[i], "http://", 7))
				continue;
			char where[512];
			wb_origin_format(&p->policy.allow_http_origin, where, sizeof(where));
			return err_at(r, o, "%s '%s' is plain http and policy.allow_http is false (%s)",
				      what, out->v[i], where);
		}
	}
	return 0;
}

/* ---- keys ---- */

static int load_key(struct resolver *r, const struct rnode *km, const char *name,
		    struct trust_key *k)
{
	const struct rnode *kt = rnode_get(km, "key"), *kf = rnode_get(km, "key_file");
	const struct rnode *al = rnode_get(km, "allow_legacy"), *fc = rnode_get(km, "file_check");
	struct buf text = BUF_INIT;
	struct wb_err ke = WB_ERR_INIT;

	memset(k, 0, sizeof(*k));
	k->origin = km->origin;
	k->name = name ? xstrdup(name) : NULL;
	if ((kt && kf) || (!kt && !kf))
		return err_at(r, &km->origin, "a minisign key needs exactly one of 'key' or 'key_file'");
	if (kt) {
		buf_adds(&text, kt->scalar);
		k->origin = kt->origin;
	} else {
		k->key_file = relative_to(kf->origin.file, kf->scalar);
		k->origin = kf->origin;
		if (fs_read_file(k->key_file, 4096, WB_EUSAGE, &text, &ke)) {
			buf_release(&text);
			return err_at(r, &kf->origin, "key_file: %s", ke.msg);
		}
	}
	if (minisign_pubkey_parse(text.ptr, text.len, &k->pk, &ke)) {
		buf_release(&text);
		return err_at(r, &k->origin, "bad minisign public key%s%s%s: %s",
			      name ? " '" : "", name ? name : "", name ? "'" : "", ke.msg);
	}
	/* keep the bare base64 line */
	{
		char *s = text.ptr, *line = NULL;
		for (char *t = strtok(s, "\r\n"); t; t = strtok(NULL, "\r\n"))
			if (strncmp(t, "untrusted comment:", 18))
				line = t;
		k->text = xstrdup(line ? line : "");
		while (*k->text && isspace((unsigned char)k->text[strlen(k->text) - 1]))
			k->text[strlen(k->text) - 1] = '\0';
	}
	buf_release(&text);
	k->pk.allow_legacy = al ? schema_bool(al) : 0;
	k->pk.file_check = fc ? schema_bool(fc) : 1;
	minisign_keyid_hex(k->pk.keyid, k->keyid_hex);
	return 0;
}

/* The key named NAME as layer UPTO saw it: that layer's `keys:` or an
 * earlier one's (so a later layer cannot swap the key behind a name an
 * override relies on); UPTO == r->nlayers: the merged `keys:`. */
static const struct rnode *named_key(const struct resolver *r, const char *name,
				     size_t upto)
{
	if (upto >= r->nlayers)
		return rnode_get(rnode_get(r->top, "keys"), name);
	for (size_t i = upto + 1; i-- > 0; ) {
		const struct rnode *km = rnode_get(r->layers[i].keys, name);
		if (km)
			return km;
	}
	return NULL;
}

/* Append the keys of LIST to KEYS (names resolved as layer UPTO saw them). */
static int add_keys(struct resolver *r, const struct rnode *list, size_t upto,
		    struct trust_key **keys, size_t *nkeys, size_t *alloc_keys)
{
	for (size_t i = 0; list && i < list->nr; i++) {
		const struct rnode *it = list->items[i];
		struct trust_key k;

		if (it->type == RNODE_SCALAR) {
			const struct rnode *km = named_key(r, it->scalar, upto);
			if (!km)
				return err_at(r, &it->origin,
					      "unknown key name '%s' (define it under 'keys:')",
					      it->scalar);
			if (load_key(r, km, it->scalar, &k))
				return -1;
			k.origin = it->origin;
		} else if (load_key(r, it, NULL, &k)) {
			return -1;
		}
		for (size_t j = 0; j < *nkeys; j++) {
			if (strcmp((*keys)[j].keyid_hex, k.keyid_hex))
				continue;
			int differ = strcmp((*keys)[j].text, k.text) != 0;

			if (differ)
				err_at(r, &it->origin,
				       "two different minisign keys share the key id %s",
				       k.keyid_hex);
			free(k.name);
			free(k.text);
			free(k.key_file);
			if (differ)
				return -1;
			k.text = NULL;
			break;
		}
		if (!k.text)
			continue;
		ALLOC_GROW(*keys, *nkeys + 1, *alloc_keys);
		(*keys)[(*nkeys)++] = k;
	}
	return 0;
}

/* ---- artifacts ---- */

static int is_hex(const char *s, size_t len)
{
	if (strlen(s) != len)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

static char *lower(char *s)
{
	for (char *p = s; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

/* The auxiliary file URLs of A from map N (`verify.minisign`,
 * `signatures`, `verify.<method>`): UN, default DEF ("${url}.minisig"),
 * expanded and mirrored. */
static int aux_urls(struct resolver *r, const struct rnode *n,
		    const struct rnode *un, const char *deftmpl, const struct vars *vs,
		    struct plan_artifact *a, const char *what, const char *noun,
		    struct wb_strlist *out)
{
	struct rnode *def = NULL;
	const struct wb_origin *o = &n->origin;
	char *u;
	int ret;

	if (!un && !deftmpl)
		return err_at(r, &n->origin, "'%s' is required", what);
	if (!un)
		un = def = rnode_new_scalar(deftmpl, &n->origin);
	u = expand(r, vs, un, what);
	rnode_free(def);
	if (!u)
		return -1;
	ret = url_check(r, u, o, what) ||
	      url_layout_check(r, u, o, what) ||
	      apply_mirrors(r, u, o, noun, !a->replaced, out) ? -1 : 0;
	free(u);
	return ret;
}

static int signature_urls(struct resolver *r, const struct rnode *n,
			  const struct rnode *un, const struct vars *vs,
			  struct plan_artifact *a, const char *what,
			  struct wb_strlist *out)
{
	return aux_urls(r, n, un, trust_m_minisign.default_url, vs, a, what,
			"signature URL", out);
}

static void warn_at(struct plan *p, const struct wb_origin *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int major_minor(const char *v, long *maj, long *min);

/* `verify.<method>.since` of a requirement at ORIGIN: kept on A until the
 * versions are final (since_met). */
static int convert_since(struct resolver *r, const struct rnode *n, const struct vars *vs,
			 struct plan_artifact *a, const struct trust_method *m,
			 const struct wb_origin *origin, const char *ctx)
{
	static const char *const keys[] = { "version", "missing", "instead" };
	char *v[3] = { NULL, NULL, NULL }, what[256];
	struct plan_since *ps;
	long maj, min;

	for (size_t i = 0; i < 3; i++) {
		const struct rnode *kn = rnode_get(n, keys[i]);

		snprintf(what, sizeof(what), "%s.verify.%s.since.%s", ctx, m->name, keys[i]);
		if (kn && !(v[i] = expand(r, vs, kn, what)))
			goto fail;
		if (!i && major_minor(v[0], &maj, &min)) {
			err_at(r, &kn->origin, "%s: '%s' is not a version (MAJOR.MINOR...)",
			       what, v[0]);
			goto fail;
		}
	}
	ALLOC_GROW(a->since, a->nsince + 1, a->alloc_since);
	ps = &a->since[a->nsince++];
	ps->method = m->name;
	ps->version = v[0];
	ps->missing = v[1];
	ps->instead = v[2];
	ps->req_origin = *origin;
	return 0;
fail:
	for (size_t i = 0; i < 3; i++)
		free(v[i]);
	return -1;
}

/* `verify.<name>` of a method of the table that declares its recipe
 * settings (trust/method.h): its file's URLs and its params. */
/*
 * `components.<n>.tlog_source: exported` (one line in any layer): each
 * transparency-log lookup of the component's artifacts (cosign's `rekor`)
 * is replaced by the entry `winbuild mirror` exported beside the artifact
 * (the method's aux file "${url}<suffix>", mirror rules applied), whatever
 * the artifact's own map says about the log's URL. The entry is checked
 * exactly as a lookup's answer is, so the switch never loosens trust. An
 * artifact that names its own entry keeps it; one that asks no log
 * (cosign's `tlog: none`) is left alone.
 */
static int exported_entry(struct resolver *r, const struct rnode *n,
			  const struct trust_method *m, struct trust_req *q,
			  const struct vars *vs, struct plan_artifact *a, const char *ctx)
{
	struct trust_aux_def d;
	char tmpl[64], what[256];

	if (!r->tlog_exported || !m->lookup_param || trust_req_urls(q, m->lookup_aux)->nr ||
	    (m->lookup_wanted && !m->lookup_wanted(q)))
		return 0;
	d = trust_method_aux(m, m->lookup_aux);
	snprintf(tmpl, sizeof(tmpl), "${url}%s", d.suffix);
	snprintf(what, sizeof(what), "%s.verify.%s.%s (tlog_source: exported)", ctx, m->name,
		 d.param);
	return aux_urls(r, n, NULL, tmpl, vs, a, what, "signature URL",
			trust_req_urls_mut(q, m->lookup_aux));
}

static int convert_method(struct resolver *r, const struct trust_method *m,
			  const struct rnode *n, const struct vars *vs,
			  struct plan_artifact *a, const char *ctx)
{
	struct trust_req *q = trust_spec_add(&a->verify, m, &n->origin);
	struct wb_err me = WB_ERR_INIT;
	char what[256], noun[64];
	const struct rnode *ln;

	for (size_t k = 0; k < trust_method_naux(m); k++) {
		struct trust_aux_def d = trust_method_aux(m, k);
		const struct rnode *un = rnode_get(n, d.param);

		if (!un && !d.default_url && (d.flags & TRUST_AUX_OPTIONAL))
			continue;
		snprintf(what, sizeof(what), "%s.verify.%s.%s", ctx, m->name, d.param);
		if (aux_urls(r, n, un, d.default_url, vs, a, what, "signature URL",
			     trust_req_urls_mut(q, k)))
			return -1;
	}
	for (size_t i = 0; m->params[i].name; i++) {
		const struct rnode *pn = rnode_get(n, m->params[i].name);
		char *v;

		if (!pn)
			continue;
		snprintf(what, sizeof(what), "%s.verify.%s.%s", ctx, m->name, m->params[i].name);
		if (!(v = expand(r, vs, pn, what)))
			return -1;
		if (m->params[i].file) {
			char *path = relative_to(pn->origin.file, v);
			free(v);
			v = path;
			if (!fs_exists(v)) {
				err_at(r, &pn->origin, "%s: file '%s' does not exist", what, v);
				free(v);
				return -1;
			}
		}
		trust_req_set_param(q, m->params[i].name, v, m->params[i].file, &pn->origin);
		free(v);
	}
	if ((ln = rnode_get(n, "since")) && convert_since(r, ln, vs, a, m, &n->origin, ctx))
		return -1;
	if (exported_entry(r, n, m, q, vs, a, ctx))
		return -1;
	if (m->validate && m->validate(q, &me) < 0)
		return err_at(r, &n->origin, "%s.verify.%s: %s", ctx, m->name, me.msg);
	if (m->warning && m->warning(q))
		warn_at(r->plan, &n->origin, "%s.verify.%s: %s", ctx, m->name, m->warning(q));
	if (!m->lookup_param)
		return 0;
	/* the lookup after the download (a Rekor search): its base URL obeys
	 * the mirror rules like any URL, so mirror_only without a rule for it
	 * is an error here, never a connection to the internet at fetch time */
	ln = r->tlog_exported ? NULL : rnode_get(n, m->lookup_param);
	if (ln && trust_req_urls(q, m->lookup_aux)->nr)
		return err_at(r, &ln->origin, "%s.verify.%s: give either '%s' or '%s', not both",
			      ctx, m->name, m->lookup_param,
			      trust_method_aux(m, m->lookup_aux).param);
	if (m->lookup_wanted && !m->lookup_wanted(q)) {
		if (ln)
			return err_at(r, &ln->origin, "%s.verify.%s: '%s' is never asked with "
				      "this setting (no transparency log)", ctx, m->name,
				      m->lookup_param);
		return 0;
	}
	if (trust_req_urls(q, m->lookup_aux)->nr)
		return 0;
	snprintf(what, sizeof(what), "%s.verify.%s.%s", ctx, m->name, m->lookup_param);
	snprintf(noun, sizeof(noun), "%s URL", m->lookup_param);   /* "rekor URL" */
	return aux_urls(r, n, ln, m->lookup_default, vs, a, what, noun, &q->lookup);
}

static int convert_verify(struct resolver *r, const struct rnode *vn,
			  const struct vars *vs, struct plan_artifact *a,
			  const char *ctx)
{
	struct trust_spec *v = &a->verify;
	const struct rnode *n;
	char what[256];

	v->origin = vn->origin;
	if ((n = rnode_get(vn, "sha256"))) {
		v->sha256 = lower(xstrdup(n->scalar));
		v->sha256_origin = n->origin;
		if (!is_hex(v->sha256, 64))
			return err_at(r, &n->origin, "'%s.verify.sha256' must be 64 hex digits", ctx);
	}
	if ((n = rnode_get(vn, "sha512"))) {
		v->sha512 = lower(xstrdup(n->scalar));
		v->sha512_origin = n->origin;
		if (!is_hex(v->sha512, 128))
			return err_at(r, &n->origin, "'%s.verify.sha512' must be 128 hex digits", ctx);
	}
	if ((n = rnode_get(vn, "source")))
		v->source = xstrdup(n->scalar);
	if ((n = rnode_get(vn, "needs_pin")))
		v->needs_pin = xstrdup(n->scalar);
	for (int alg = 0; alg < 2; alg++) {
		const char *key = alg ? "sha512_url" : "sha256_url";
		struct trust_req *q;
		char *u;

		if (!(n = rnode_get(vn, key)))
			continue;
		snprintf(what, sizeof(what), "%s.verify.%s", ctx, key);
		if (!(u = expand(r, vs, n, what)))
			return -1;
		q = trust_spec_add(v, trust_method_find(key), &n->origin);
		if (url_check(r, u, &n->origin, what) ||
		    url_layout_check(r, u, &n->origin, what) ||
		    apply_mirrors(r, u, &n->origin, "checksum URL", !a->replaced, &q->urls)) {
			free(u);
			return -1;
		}
		free(u);
	}
	if ((n = rnode_get(vn, "minisign"))) {
		struct trust_req *q = trust_spec_add(v, &trust_m_minisign, &n->origin);

		snprintf(what, sizeof(what), "%s.verify.minisign.url", ctx);
		if (signature_urls(r, n, rnode_get(n, "url"), vs, a, what, &q->urls) ||
		    add_keys(r, rnode_get(n, "keys"), r->nlayers, &q->keys,
			     &q->nkeys, &q->alloc_keys))
			return -1;
	}
	for (size_t t = 0; trust_methods[t]; t++)
		if (trust_methods[t]->params && (n = rnode_get(vn, trust_methods[t]->name)) &&
		    convert_method(r, trust_methods[t], n, vs, a, ctx))
			return -1;
	return 0;
}

/* The artifact's first requirement of method M, or NULL. */
static struct trust_req *first_req(struct trust_spec *v, const struct trust_method *m)
{
	for (size_t i = 0; i < v->nreqs; i++)
		if (v->reqs[i].method == m)
			return &v->reqs[i];
	return NULL;
}

/*
 * The top-level `signatures: {url, keys}` of every layer (image recipe,
 * override, --set) is a requirement of its own, ANDed with the artifact's
 * `verify.minisign` and with every other layer's: policy only tightens, so
 * a higher layer's keys are never added to a list that the component's own
 * key could satisfy. A layer's url defaults to the merged `signatures.url`,
 * then to "${url}.minisig". The first requirement fills the artifact's own
 * slot when it has no minisign of its own.
 */
static int convert_signatures(struct resolver *r, const struct vars *vs,
			      struct plan_artifact *a, const char *ctx)
{
	struct trust_spec *v = &a->verify;
	const struct rnode *merged_url = rnode_get(rnode_get(r->top, "signatures"), "url");
	char what[256];

	snprintf(what, sizeof(what), "signatures.url for %s", ctx);
	for (size_t i = 0; i < r->nlayers; i++) {
		const struct rnode *sg = r->layers[i].sigs, *un;
		struct trust_req q, *own = first_req(v, &trust_m_minisign);
		int dup = 0;

		if (!sg || !rnode_get(sg, "keys"))
			continue;
		memset(&q, 0, sizeof(q));
		q.method = &trust_m_minisign;
		q.origin = sg->origin;
		/* the first requirement fills the artifact's own slot */
		q.layered = own != NULL;
		un = rnode_get(sg, "url");
		if (signature_urls(r, sg, un ? un : merged_url, vs, a, what, &q.urls) ||
		    add_keys(r, rnode_get(sg, "keys"), i, &q.keys, &q.nkeys,
			     &q.alloc_keys)) {
			trust_req_release(&q);
			return -1;
		}
		if (!q.nkeys) {
			trust_req_release(&q);
			return err_at(r, &sg->origin, "'signatures.keys' is empty");
		}
		for (size_t k = 0; !dup && k < v->nreqs; k++)
			dup = trust_req_same(&q, &v->reqs[k]);
		if (dup) {
			trust_req_release(&q);
			continue;
		}
		*trust_spec_add(v, q.method, NULL) = q;
	}
	return 0;
}

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

static unsigned long long to_ull(const struct rnode *n)
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
		a->strip = (n = rnode_get(un, "strip")) ? (int)to_ull(n) : 0;
		if (a->strip > 64)
			return err_at(r, &n->origin, "'%s.unpack.strip' must be at most 64", ctx);
		/* ${var}s expand in the globs, so a component can pick the
		 * folder of the image's Windows (virtio-win's 2k22/) */
		snprintf(what, sizeof(what), "%s.unpack.include", ctx);
		if ((n = rnode_get(un, "include")))
			for (size_t i = 0; i < n->nr; i++) {
				char *g = expand(r, vs, n->items[i], what);

				if (!g)
					return -1;
				wb_strlist_push(&a->include, g);
				free(g);
			}
		a->format = xstrdup((n = rnode_get(un, "format")) ? n->scalar : "auto");
		n = rnode_get(un, "limits");
		a->limits.max_bytes = to_ull(rnode_get(n, "max_bytes"));
		a->limits.max_entries = to_ull(rnode_get(n, "max_entries"));
		a->limits.max_ratio = to_ull(rnode_get(n, "max_ratio"));
		a->limits.max_seconds = to_ull(rnode_get(n, "max_seconds"));
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

static int policy_check_artifact(struct resolver *r, struct plan_artifact *a,
				 const struct rnode *vn)
{
	const struct trust_policy *pol = &r->plan->policy;
	struct trust_spec *v = &a->verify;
	char where[512];

	size_t nsig = 0, nchecksum = 0;

	for (size_t i = 0; i < v->nreqs; i++) {
		if (v->reqs[i].method->flags & TRUST_SIGNATURE)
			nsig++;
		if (v->reqs[i].method->flags & TRUST_CHECKSUM)
			nchecksum++;
	}
	if (pol->forbid_checksum_urls && nchecksum) {
		size_t k = 0;

		for (size_t i = 0; i < v->nreqs; i++) {
			if (v->reqs[i].method->flags & TRUST_CHECKSUM)
				trust_req_release(&v->reqs[i]);
			else
				v->reqs[k++] = v->reqs[i];
		}
		v->nreqs = k;
		if (!v->sha256 && !v->sha512 && !v->nreqs) {
			wb_origin_format(&pol->checksum_urls_origin, where, sizeof(where));
			return err_at(r, &vn->origin,
				      "artifact '%s' is verified only by a checksum file, which policy.checksum_urls: forbid does not accept (%s)",
				      a->name, where);
		}
	}
	if (pol->require_signature && !nsig) {
		struct buf kinds = BUF_INIT;
		int ret;

		/* the methods that count, from the table: "minisign, sigstore, ..." */
		for (const struct trust_method *const *m = trust_methods; *m; m++)
			if ((*m)->flags & TRUST_SIGNATURE)
				buf_addf(&kinds, "%s%s", kinds.len ? ", " : "", (*m)->name);
		wb_origin_format(&pol->require_origin, where, sizeof(where));
		ret = err_at(r, &vn->origin,
			     "artifact '%s' has no signature (%s), but policy.require is 'signature' (%s)",
			     a->name, kinds.ptr, where);
		buf_release(&kinds);
		return ret;
	}
	if (v->needs_pin && (v->sha256 || v->sha512 || v->nreqs)) {
		/* another method verifies it: no pin needed after all */
		free(v->needs_pin);
		v->needs_pin = NULL;
	}
	if (!v->sha256 && !v->sha512 && !v->nreqs && !v->needs_pin)
		return err_at(r, &vn->origin,
			      "artifact '%s' has no verification: give sha256, sha512, sha256_url, sha512_url, minisign or needs_pin",
			      a->name);
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
	const struct rnode *un = rnode_get(an, "url"), *vn = rnode_get(an, "verify");
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
	vars_add_all(vs, base);
	vars_add(vs, "name", a->name, 0);
	snprintf(what, sizeof(what), "%s.url", ctx);
	if (!(url = expand(r, vs, un, what)))
		return -1;
	a->upstream_url = url;
	a->url_origin = un->origin;
	if (url_check(r, url, &un->origin, what) ||
	    url_layout_check(r, url, &un->origin, what))
		return -1;
	a->filename = url_filename(url);
	if (!*a->filename)
		return err_at(r, &un->origin, "'%s' must end in a file name: '%s'", what, url);
	if (apply_mirrors(r, url, &un->origin, "URL", !a->replaced, &a->urls))
		return -1;
	/* ${url}, ${filename} after the url itself is known */
	vars_prepend(vs, "filename", a->filename, 0);
	vars_prepend(vs, "url", a->upstream_url, 0);
	if (convert_verify(r, vn, vs, a, ctx) ||
	    convert_signatures(r, vs, a, ctx))
		return -1;
	if (convert_action(r, vs, an, a, ctx))
		return -1;
	return policy_check_artifact(r, a, vn);
}

static int convert_artifact(struct resolver *r, const struct rnode *an,
			    const struct plan_component *c, const struct vars *base,
			    struct plan_artifact *a)
{
	struct vars vs = { 0 };
	int ret = convert_artifact_in(r, an, c, base, &vs, a);

	vars_release(&vs);
	return ret;
}

/* ---- authenticode ---- */

/* `roots` node K of the map named WHAT: resolved against the file that
 * sets it, and readable now. New string in *OUT, or -1. */
static int auth_roots(struct resolver *r, const struct rnode *k, const char *what,
		      char **out)
{
	*out = relative_to(k->origin.file, k->scalar);
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
		if (is_hex(v, 64)) {
			char *l = lower(xstrdup(v));
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
static int convert_site_signing(struct resolver *r, const struct rnode *n)
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

/*
 * The `authenticode` map N (or none) over GLOBAL (or none) into OUT.
 * Without a global policy N's roots and publishers are the policy. Over
 * one, N can only narrow it: N's roots and publishers (a missing one taken
 * from GLOBAL) become a further trust set that must hold as well as every
 * one of GLOBAL's; N's require can only tighten a global require: true.
 * `roots` is relative to the file that sets it and must be readable now.
 */
static int convert_authenticode(struct resolver *r, const struct rnode *n,
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
static int layer_authenticode(struct resolver *r)
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
static int layer_component_authenticode(struct resolver *r, const char *name,
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
		if (add_map_trust(r, n, what, a, own_roots(a), own_roots_origin(a)))
			return -1;
	}
	return 0;
}

/* A top-level authenticode.require: true in any layer holds: later layers
 * (overrides, --set) may tighten it, never loosen it. */
static void tighten_authenticode(struct resolver *r)
{
	struct plan_authenticode *a = &r->plan->authenticode;

	for (size_t i = 0; i < r->nlayers; i++) {
		const struct rnode *n = rnode_get(r->layers[i].auth, "require");

		if (a->set && !a->require && n && schema_bool(n) == 1) {
			a->require = 1;
			a->require_origin = n->origin;
		}
	}
}

/* ---- components ---- */

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

static int load_component(struct resolver *r, struct rnode *entry, struct rnode **out)
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
	path = relative_to(from, rel);
	free(rel);
	if (!fn && !fs_exists(path)) {
		ret = unknown_component(r, entry, path);
		free(path);
		return ret;
	}
	r->ninclude = 0;
	ret = load_kind(r, path, "component", &at, &comp);
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
	r->comp_auth = clone_or_null(rnode_get(comp, "authenticode"));
	*out = rnode_merge(comp, rnode_clone(entry));
	strip_nulls(*out);
	return 0;
}

static void copy_strlist(const struct rnode *n, struct wb_strlist *out)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nr; i++)
		wb_strlist_push(out, n->items[i]->scalar);
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
		} else {
			return 0;
		}
	}
	return seg > 0;
}

static int convert_registry(struct resolver *r, const struct rnode *n, struct plan_component *c)
{
	if (!n || !n->nr)
		return 0;
	c->registry = xcalloc(n->nr, sizeof(*c->registry));
	for (size_t i = 0; i < n->nr; i++) {
		const struct rnode *e = n->items[i], *k = rnode_get(e, "key"),
			*nm = rnode_get(e, "name"), *v = rnode_get(e, "value");
		const char *type = scalar(e, "type");

		if (strncasecmp(k->scalar, "HKLM:\\", 6) || strlen(k->scalar) > 255 ||
		    !reg_chars_ok(k->scalar + 6, 1))
			return err_at(r, &k->origin, "registry key '%s' is not HKLM:\\ followed by "
				      "names of letters, digits, space, '.', '_' or '-' separated by '\\'",
				      k->scalar);
		if (strlen(nm->scalar) > 255 || !reg_chars_ok(nm->scalar, 0))
			return err_at(r, &nm->origin, "registry value name '%s' is not letters, "
				      "digits, space, '.', '_' or '-'", nm->scalar);
		if (!strcmp(type, "dword")) {
			unsigned long long d = to_ull(v);

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
		c->registry[i].value = xstrdup(v->scalar);
		c->nregistry++;
	}
	return 0;
}

/* A component's directories, with where each was written (a directory
 * that is also a file's destination is refused once every artifact is
 * known: dirs_clash). */
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

/* ---- services and generated files (docs/recipes.md, "services") ---- */

/* A Windows path of a service or generated file: on C:, inside the tree
 * (winpath.c's rules), normalised to '\'; *TREE gets the tree path. */
static char *node_winpath(struct resolver *r, const struct rnode *n, const char *what,
			  char **tree)
{
	const char *why = NULL;
	char *t = winpath_to_tree(n->scalar, &why), *w;

	if (!t) {
		err_at(r, &n->origin, "bad Windows path '%s' in '%s': %s (a service "
		       "runs a file of the staged tree)", n->scalar, what, why);
		return NULL;
	}
	w = xstrdup(n->scalar);
	for (char *p = w; *p; p++)
		if (*p == '/')
			*p = '\\';
	w[0] = 'C';
	if (tree)
		*tree = t;
	else
		free(t);
	return w;
}

/* S, from N, lands in an sc.exe binPath, an nssm AppParameters and a
 * PowerShell native argument list: the ps_binpath sink must accept it. */
static int native_arg_ok(struct resolver *r, const struct rnode *n, const char *what,
			 const char *s)
{
	const char *why;
	size_t at;
	struct buf b = BUF_INIT;
	int ret;

	if (tmpl_sink_accepts("ps_binpath", s, &why, &at))
		return 0;
	tmpl_describe(&b, s);
	ret = err_at(r, &n->origin, "'%s': '%s' %s (byte %zu); it would not reach the "
		     "service as one argument (PowerShell 5.1, sc.exe binPath, "
		     "CommandLineToArgvW)", what, b.ptr, why, at);
	buf_release(&b);
	return ret;
}

/* Whether tree path T is a file component C stages: an artifact installs
 * it or unpacks into a directory above it, or a generate entry writes it. */
static int component_stages(const struct plan *p, const char *comp, const char *t)
{
	for (size_t i = 0; i < p->nartifacts; i++) {
		const struct plan_artifact *a = &p->artifacts[i];
		size_t n = strlen(a->dest_tree);

		if (strcmp(a->component, comp))
			continue;
		if (a->action != PLAN_UNPACK ? !strcasecmp(a->dest_tree, t) :
		    !strncasecmp(a->dest_tree, t, n) && t[n] == '/' && t[n + 1])
			return 1;
	}
	for (size_t i = 0; i < p->ngenerate; i++)
		if (!strcmp(p->generate[i].component, comp) &&
		    !strcasecmp(p->generate[i].dest_tree, t))
			return 1;
	return 0;
}

static int expand_list(struct resolver *r, const struct vars *vs, const struct rnode *l,
		       const char *what, struct wb_strlist *out)
{
	for (size_t i = 0; l && i < l->nr; i++) {
		char *s = expand(r, vs, l->items[i], what);

		if (!s || native_arg_ok(r, l->items[i], what, s)) {
			free(s);
			return -1;
		}
		wb_strlist_push(out, s);
		free(s);
	}
	return 0;
}

static int convert_generate(struct resolver *r, const struct rnode *cn,
			    const struct plan_component *c, const struct vars *vs)
{
	struct plan *p = r->plan;
	const struct rnode *l = rnode_get(cn, "generate");
	char what[256];

	for (size_t i = 0; l && i < l->nr; i++) {
		const struct rnode *g = l->items[i], *tn = rnode_get(g, "template"),
			*vn = rnode_get(g, "vars");
		struct plan_generate *out;
		const char *t = tn->scalar;

		snprintf(what, sizeof(what), "components.%s.generate[%zu]", c->name, i + 1);
		/* a template beside the component file, never above it */
		if (!*t || t[0] == '/' || strstr(t, "..") || strchr(t, '\\') ||
		    strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			   "0123456789_.-/") != strlen(t))
			return bad_grammar(r, &tn->origin, what, t, "a template path "
					   "relative to the component file ([A-Za-z0-9_.-/], "
					   "no '..')");
		ALLOC_GROW(p->generate, p->ngenerate + 1, p->alloc_generate);
		out = &p->generate[p->ngenerate++];
		memset(out, 0, sizeof(*out));
		out->component = xstrdup(c->name);
		out->template_path = relative_to(c->file, t);
		out->origin = g->origin;
		if (!(out->dest_win = node_winpath(r, rnode_get(g, "to"), what, &out->dest_tree)))
			return -1;
		for (size_t k = 0; vn && k < vn->nr; k++) {
			char *v = expand(r, vs, vn->items[k], what), *kv;

			if (!v)
				return -1;
			kv = xasprintf("%s=%s", vn->items[k]->key, v);
			wb_strlist_push(&out->vars, kv);
			free(kv);
			free(v);
		}
	}
	return 0;
}

static int convert_services(struct resolver *r, const struct rnode *cn,
			    const struct plan_component *c, const struct vars *vs)
{
	struct plan *p = r->plan;
	const struct rnode *l = rnode_get(cn, "services");
	char what[256];

	for (size_t i = 0; l && i < l->nr; i++) {
		const struct rnode *sn = l->items[i], *n;
		struct plan_service *s;
		char *tree = NULL;
		const char *name;
		size_t len;

		snprintf(what, sizeof(what), "components.%s.services[%zu]", c->name, i + 1);
		n = rnode_get(sn, "name");
		name = n && n->scalar ? n->scalar : "";
		len = strlen(name);
		if (!len || len > 64 || !isalnum((unsigned char)name[0]) ||
		    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			   "0123456789_.-") != len)
			return bad_grammar(r, n ? &n->origin : &sn->origin, what, name, "a service name "
					   "([A-Za-z0-9][A-Za-z0-9_.-]*, at most 64)");
		/* the services step creates, reconfigures or deletes (nssm) a
		 * service by this name: never one of Windows' own */
		if (winreserved_service(name))
			return err_at(r, &n->origin, "'%s': service name '%s' is a service "
				      "of Windows itself (lib/winreserved.c lists them); the "
				      "services step would repoint or replace it: give the "
				      "component's service a name of its own", what, name);
		if (plan_find_service(p, name)) {
			char where[512];

			wb_origin_format(&plan_find_service(p, name)->origin, where, sizeof(where));
			return err_at(r, &n->origin, "service '%s' is declared twice (also "
				      "by component '%s', %s)", name,
				      plan_find_service(p, name)->component, where);
		}
		ALLOC_GROW(p->services, p->nservices + 1, p->alloc_services);
		s = &p->services[p->nservices++];
		memset(s, 0, sizeof(*s));
		s->name = xstrdup(name);
		s->component = xstrdup(c->name);
		s->origin = sn->origin;
		n = rnode_get(sn, "binary");
		s->binary_origin = n->origin;
		if (!(s->binary = node_winpath(r, n, what, &tree)) ||
		    native_arg_ok(r, n, what, s->binary))
			goto fail;
		if (!component_stages(p, c->name, tree)) {
			err_at(r, &n->origin, "'%s': binary '%s' is not a file component "
			       "'%s' stages (no artifact of it installs or unpacks it, no "
			       "generate entry writes it)", what, s->binary, c->name);
			goto fail;
		}
		free(tree);
		tree = NULL;
		if ((n = rnode_get(sn, "log_runner"))) {
			if (!(s->log_runner = node_winpath(r, n, what, &tree)) ||
			    native_arg_ok(r, n, what, s->log_runner))
				goto fail;
			if (!component_stages(p, c->name, tree)) {
				err_at(r, &n->origin, "'%s': log_runner '%s' is not a file "
				       "component '%s' stages", what, s->log_runner, c->name);
				goto fail;
			}
			free(tree);
			tree = NULL;
		}
		if ((n = rnode_get(sn, "log_file")) &&
		    (!(s->log_file = node_winpath(r, n, what, NULL)) ||
		     native_arg_ok(r, n, what, s->log_file)))
			goto fail;
		if (expand_list(r, vs, rnode_get(sn, "args"), what, &s->args) ||
		    expand_list(r, vs, rnode_get(sn, "log_runner_args"), what, &s->log_runner_args) ||
		    expand_list(r, vs, rnode_get(sn, "sc_args"), what, &s->sc_args))
			goto fail;
		if ((n = rnode_get(sn, "depends_on"))) {
			s->dep_origins = xcalloc(n->nr ? n->nr : 1, sizeof(*s->dep_origins));
			for (size_t k = 0; k < n->nr; k++) {
				wb_strlist_push(&s->depends_on, n->items[k]->scalar);
				s->dep_origins[k] = n->items[k]->origin;
			}
		}
		n = rnode_get(sn, "manager");
		s->manager_origin = n ? n->origin : sn->origin;
		s->manager = xstrdup(!n || !strcmp(n->scalar, "node") ? p->service_manager :
				     n->scalar);
		s->kubeadm_flags = schema_bool(rnode_get(sn, "kubeadm_flags")) == 1;
		n = rnode_get(sn, "wrapper");
		if (s->kubeadm_flags != !!n)
			return err_at(r, n ? &n->origin : &sn->origin, "'%s': %s", what, n ?
				      "'wrapper' is the start script of a service with "
				      "kubeadm_flags: true, and this one has none" :
				      "kubeadm_flags: true needs 'wrapper', the Windows path "
				      "of the start script that reads kubeadm-flags.env");
		if (n && (!(s->wrapper = node_winpath(r, n, what, NULL)) ||
			  native_arg_ok(r, n, what, s->wrapper)))
			goto fail;
		/* under sc.exe something must answer the service manager: the
		 * program (sc_args), never powershell.exe running a wrapper */
		if (s->kubeadm_flags && !strcmp(s->manager, "sc") && !s->log_runner)
			return err_at(r, &s->manager_origin, "'%s': under sc.exe a service with "
				      "kubeadm_flags runs through 'log_runner' (kube-log-runner), "
				      "and none is declared", what);
		if (s->log_runner_args.nr && !s->log_runner)
			return err_at(r, &rnode_get(sn, "log_runner_args")->origin, "'%s': "
				      "'log_runner_args' are flags of 'log_runner', and none "
				      "is declared", what);
		if (s->log_runner && !s->log_file)
			return err_at(r, &rnode_get(sn, "log_runner")->origin, "'%s': "
				      "'log_runner' needs 'log_file'", what);
		continue;
fail:
		free(tree);
		return -1;
	}
	return 0;
}

/*
 * Every enabled component converted: each dependency names a declared
 * service, nssm is enabled where a service needs it, and the services are
 * put in dependency order (a cycle is an error at the edge that closes it).
 */
static int order_services(struct resolver *r)
{
	struct plan *p = r->plan;
	struct plan_service *sorted = xcalloc(p->nservices ? p->nservices : 1, sizeof(*sorted));
	unsigned char *state = xcalloc(p->nservices ? p->nservices : 1, 1);
	size_t nsorted = 0;
	int ret = 0;

	for (size_t i = 0; i < p->nservices; i++) {
		const struct plan_service *s = &p->services[i];

		for (size_t k = 0; k < s->depends_on.nr; k++)
			if (!plan_find_service(p, s->depends_on.v[k])) {
				ret = err_at(r, &s->dep_origins[k], "service '%s' depends on "
					     "'%s', which no enabled component declares in "
					     "'services'", s->name, s->depends_on.v[k]);
				goto out;
			}
		if (!strcmp(s->manager, "nssm") && !plan_find_component(p, "nssm")) {
			ret = err_at(r, &s->manager_origin, "service '%s' runs under nssm, and "
				     "component 'nssm' is not enabled (--set "
				     "components.nssm.enabled=true)", s->name);
			goto out;
		}
	}
	/* repeated passes: a service goes once all its dependencies went */
	while (nsorted < p->nservices) {
		size_t before = nsorted;

		for (size_t i = 0; i < p->nservices; i++) {
			const struct plan_service *s = &p->services[i];
			size_t k;

			if (state[i])
				continue;
			for (k = 0; k < s->depends_on.nr; k++)
				if (!state[plan_find_service(p, s->depends_on.v[k]) - p->services])
					break;
			if (k < s->depends_on.nr)
				continue;
			state[i] = 1;
			sorted[nsorted++] = *s;
		}
		if (nsorted == before) {
			for (size_t i = 0; i < p->nservices; i++)
				if (!state[i]) {
					ret = err_at(r, &p->services[i].dep_origins[0], "service '%s' "
						     "is in a dependency cycle", p->services[i].name);
					goto out;
				}
		}
	}
	if (p->nservices)   /* services is NULL then: memcpy(NULL, ...) is UB */
		memcpy(p->services, sorted, p->nservices * sizeof(*sorted));
out:
	free(sorted);
	free(state);
	return ret;
}

static void flatten(struct plan *p, const struct rnode *n, const char *prefix);

/* Tree paths A and B are one directory on Windows (case, 8.3 names and
 * trailing dots and spaces folded: lib/winreserved.c). */
static int same_dir(const char *a, const char *b)
{
	return winreserved_under(a, b) && winreserved_under(b, a);
}

/* Directory DIR is the one the file at tree path FILE lands in. */
static int in_parent_of(const char *dir, const char *file)
{
	const char *slash = strrchr(file, '/');
	char *parent;
	int ret;

	if (!slash)
		return 0;
	parent = xstrndup(file, (size_t)(slash - file));
	ret = same_dir(dir, parent);
	free(parent);
	return ret;
}

/*
 * What a component adds to the machine PATH or to Defender's exclusions
 * must be a directory it owns (docs/recipes.md, "path"): one of its own
 * `directories`, at or below where one of its artifacts unpacks, or the
 * directory one of its files is installed or generated into; and never a
 * system location (lib/winreserved.c: C:\, Windows, Users, ...), which no
 * component owns. image-builder's ansible roles add fixed directories
 * (ansible/windows/roles/.../tasks: C:\k, the containerd directory); here
 * the components are data anyone may write, so the rule is checked.
 */
static int owned_dirs(struct resolver *r, const struct rnode *l, const char *what,
		      const struct plan_component *c)
{
	const struct plan *p = r->plan;

	for (size_t i = 0; l && i < l->nr; i++) {
		const char *why = NULL, *sys;
		char *t = winpath_to_tree(l->items[i]->scalar, &why);
		int owned = 0;

		if (!t)
			return err_at(r, &l->items[i]->origin, "bad Windows path '%s' in "
				      "'%s': %s", l->items[i]->scalar, what, why);
		if ((sys = winreserved_location(t))) {
			err_at(r, &l->items[i]->origin, "'%s' entry '%s' of component '%s' "
			       "is a system location (%s%s): a component adds only "
			       "directories it owns", what, l->items[i]->scalar, c->name,
			       *sys == 'C' ? "" : "C:\\", sys);
			free(t);
			return -1;
		}
		for (size_t k = 0; !owned && k < c->directories.nr; k++) {
			char *d = winpath_to_tree(c->directories.v[k], &why);

			owned = d && same_dir(t, d);
			free(d);
		}
		for (size_t k = 0; !owned && k < p->nartifacts; k++) {
			const struct plan_artifact *a = &p->artifacts[k];

			if (strcmp(a->component, c->name))
				continue;
			if (a->action == PLAN_UNPACK)
				owned = winreserved_under(t, a->dest_tree);
			else
				owned = in_parent_of(t, a->dest_tree);
		}
		for (size_t k = 0; !owned && k < p->ngenerate; k++) {
			const struct plan_generate *g = &p->generate[k];

			owned = !strcmp(g->component, c->name) && in_parent_of(t, g->dest_tree);
		}
		free(t);
		if (!owned)
			return err_at(r, &l->items[i]->origin, "'%s' entry '%s' is not a "
				      "directory component '%s' owns (one of its 'directories', "
				      "or where one of its artifacts unpacks or one of its files "
				      "is installed or generated)", what, l->items[i]->scalar,
				      c->name);
	}
	return 0;
}

/*
 * A version written "v1.35.2" (image-builder's kubernetes_semver habit)
 * would give ".../vv1.35.2/..." in every URL that adds the 'v' itself, so
 * it is refused where the 'v' was written: the version node N, or the
 * variable its ${...} names (component vars, then image vars).
 */
static int leading_v(struct resolver *r, const struct rnode *cn, const struct rnode *n,
		     const char *ctx, const char *value)
{
	const struct rnode *at = n;
	char what[256], giving[512] = "";

	snprintf(what, sizeof(what), "%s", ctx);
	for (const char *p = strstr(n->scalar, "${"); p && at == n; p = strstr(p + 2, "${")) {
		char *name = xstrndup(p + 2, strcspn(p + 2, ":}"));
		const struct rnode *vn = rnode_get(rnode_get(cn, "vars"), name);

		if (!vn)
			vn = rnode_get(rnode_get(r->top, "vars"), name);
		if (vn && vn->type == RNODE_SCALAR && vn->scalar[0] == 'v') {
			at = vn;
			snprintf(what, sizeof(what), "vars.%s", name);
		}
		free(name);
	}
	if (at != n)
		snprintf(giving, sizeof(giving), " (giving %s '%s')", ctx, value);
	return err_at(r, &at->origin, "%s is '%s'%s: write versions without a leading 'v' "
		      "('%s'), the recipes add it where upstream's URLs have one "
		      "(.../v${version}/...)", what, at->scalar, giving, at->scalar + 1);
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
	if (!(c->version = expand(r, vs, n, ctx)))
		return -1;
	c->version_origin = n->origin;
	if (c->version[0] == 'v' && c->version[1] >= '0' && c->version[1] <= '9')
		return leading_v(r, cn, n, ctx, c->version);
	if (!tmpl_version_ok(c->version))
		return bad_grammar(r, &n->origin, ctx, c->version, "a version "
				   "(digits and dots, optional v, -pre and +build parts)");
	vars_prepend(vs, "version", c->version, 0);
	if ((n = rnode_get(cn, "purl"))) {
		snprintf(ctx, sizeof(ctx), "components.%s.purl", cn->key);
		if (!(c->purl = expand(r, vs, n, ctx)))
			return -1;
	}
	snprintf(ctx, sizeof(ctx), "components.%s", cn->key);
	if (convert_winpaths(r, rnode_get(cn, "path"), "path", &c->path) ||
	    convert_directories(r, rnode_get(cn, "directories"), c) ||
	    convert_winpaths(r, rnode_get(cn, "defender_exclusions"), "defender_exclusions",
			     &c->defender_exclusions))
		return -1;
	if ((n = rnode_get(cn, "firewall"))) {
		c->firewall = xcalloc(n->nr ? n->nr : 1, sizeof(*c->firewall));
		for (size_t i = 0; i < n->nr; i++) {
			const struct rnode *fw = n->items[i], *pn = rnode_get(fw, "port");
			const struct rnode *pr = rnode_get(fw, "protocol");
			unsigned long long port = to_ull(pn);
			if (!pn || port < 1 || port > 65535)
				return err_at(r, pn ? &pn->origin : &fw->origin,
					      "firewall port must be 1-65535, not '%s'",
					      pn ? pn->scalar : "");
			c->firewall[i].name = xstrdup(scalar(fw, "name"));
			c->firewall[i].port = (int)port;
			c->firewall[i].protocol = xstrdup(pr ? pr->scalar : "TCP");
			c->nfirewall++;
		}
	}
	if (convert_winpaths(r, rnode_get(cn, "admin_directories"), "admin_directories",
			     &c->admin_directories) ||
	    convert_registry(r, rnode_get(cn, "registry"), c))
		return -1;
	if (convert_authenticode(r, rnode_get(cn, "authenticode"), &p->authenticode,
				 &c->authenticode, ctx) ||
	    layer_component_authenticode(r, c->name, &c->authenticode, ctx))
		return -1;
	arts = rnode_get(cn, "artifacts");
	if (!arts->nr)
		return err_at(r, &arts->origin, "'%s.artifacts' is empty", ctx);
	for (size_t i = 0; i < arts->nr; i++) {
		const struct rnode *an = arts->items[i];
		struct plan_artifact *a;
		const struct plan_artifact *dup = plan_find_artifact(p, an->key);

		if (name_check(r, &an->key_origin, "artifact name", an->key))
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
		ret = convert_artifact(r, an, c, vs, a);
		r->tlog_exported = NULL;
		if (ret)
			return -1;
	}
	if (convert_generate(r, cn, c, vs) || convert_services(r, cn, c, vs) ||
	    owned_dirs(r, rnode_get(cn, "path"), "path", c) ||
	    owned_dirs(r, rnode_get(cn, "defender_exclusions"), "defender_exclusions", c))
		return -1;
	snprintf(ctx, sizeof(ctx), "components.%s", cn->key);
	flatten(p, cn, ctx);
	return 0;
}

/* Destinations that are one place on Windows spelled two ways (case, 8.3
 * aliases) are refused here, at the later one; the same path twice is for
 * the stage's claims to judge. */
static int dest_clashes(struct resolver *r)
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
static int dirs_clash(struct resolver *r)
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

static int convert_component(struct resolver *r, struct rnode *cn,
			     const struct vars *image_vars)
{
	struct vars vs = { 0 };
	int ret = convert_component_in(r, cn, image_vars, &vs);

	vars_release(&vs);
	return ret;
}

/* ---- one source per version ---- */

/*
 * An image variable named after a component (`<name>_version`, a '-' as
 * '_': vars.kubernetes_version) is that component's version: other values
 * derive from it (crictl's `${kubernetes_version:minor}.0`), so the two
 * must not disagree. The shipped recipes derive the component's version
 * from the variable (components.kubernetes.version: "${kubernetes_version}");
 * a layer that sets only one of them to another value is an error naming
 * both places.
 */
static int versions_agree(struct resolver *r, const struct vars *image_vars)
{
	const struct rnode *vars = rnode_get(r->top, "vars");

	for (size_t i = 0; vars && i < r->plan->ncomponents; i++) {
		const struct plan_component *c = &r->plan->components[i];
		char *name = xasprintf("%s_version", c->name), *val, what[256], where[512];
		const struct rnode *vn;
		int ret = 0;

		for (char *q = name; *q; q++)
			if (*q == '-')
				*q = '_';
		vn = rnode_get(vars, name);
		snprintf(what, sizeof(what), "vars.%s", name);
		val = vn && vn->type == RNODE_SCALAR ? expand(r, image_vars, vn, what) : NULL;
		if (vn && vn->type == RNODE_SCALAR && !val)
			ret = -1;
		else if (val && strcmp(val, c->version)) {
			wb_origin_format(&vn->origin, where, sizeof(where));
			ret = err_at(r, &c->version_origin, "components.%s.version is '%s', but "
				     "%s is '%s' (%s): both name the version of '%s'; set %s "
				     "(components.%s.version follows it as \"${%s}\")",
				     c->name, c->version, what, val, where, c->name, what,
				     c->name, name);
		}
		free(val);
		free(name);
		if (ret)
			return -1;
	}
	return 0;
}

static void warn_at(struct plan *p, const struct wb_origin *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void warn_at(struct plan *p, const struct wb_origin *o, const char *fmt, ...)
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

/* MAJOR.MINOR of a version (an optional leading v); -1 when it has none. */
static int major_minor(const char *v, long *maj, long *min)
{
	char *end;

	if (*v == 'v')
		v++;
	*maj = strtol(v, &end, 10);
	if (end == v || *end != '.')
		return -1;
	v = end + 1;
	*min = strtol(v, &end, 10);
	return end == v ? -1 : 0;
}

/*
 * Values that cannot be derived and look inconsistent: warnings, not
 * errors (the user may know better). crictl on another minor than
 * Kubernetes (cri-tools vX.Y is released for Kubernetes X.Y; the shipped
 * recipes derive it unless it is set); a containerd major the node config
 * has no template for (stage/generate.c: 1.x config version 2, 2.x
 * version 3); containerd 1.x under Kubernetes 1.36 or later (1.35 was the
 * last release to support containerd 1.x, SIG Node in the 1.35 release
 * notes).
 */
static void version_warnings(struct resolver *r)
{
	struct plan *p = r->plan;
	const struct plan_component *k8s = plan_find_component(p, "kubernetes");
	const struct plan_component *cri = plan_find_component(p, "crictl");
	const struct plan_component *ctd = plan_find_component(p, "containerd");
	long kmaj = 0, kmin = 0, maj, min;
	int have_k8s = k8s && !major_minor(k8s->version, &kmaj, &kmin);
	char where[512] = "";

	if (have_k8s)
		wb_origin_format(&k8s->version_origin, where, sizeof(where));
	if (have_k8s && cri && !major_minor(cri->version, &maj, &min) &&
	    (maj != kmaj || min != kmin))
		warn_at(p, &cri->version_origin, "crictl %s is not on Kubernetes' minor "
			"%ld.%ld (components.kubernetes.version %s, %s): cri-tools "
			"v%ld.%ld.x is the release for Kubernetes %ld.%ld; without "
			"components.crictl.version set, crictl follows Kubernetes",
			cri->version, kmaj, kmin, k8s->version, where, kmaj, kmin, kmaj, kmin);
	if (!ctd || major_minor(ctd->version, &maj, &min))
		return;
	if (maj != 1 && maj != 2)
		warn_at(p, &ctd->version_origin, "containerd %s: the node config winbuild "
			"writes knows containerd 1.x (config version 2) and 2.x (version 3) "
			"only; the stage will refuse this version", ctd->version);
	else if (maj == 1 && have_k8s && (kmaj > 1 || (kmaj == 1 && kmin >= 36)))
		warn_at(p, &ctd->version_origin, "containerd %s with Kubernetes %s (%s): "
			"Kubernetes 1.35 was the last release to support containerd 1.x; "
			"use containerd 2.0 or later", ctd->version, k8s->version, where);
}

/*
 * Every `verify.<method>.since` against its component's final version (the
 * recipe's, an override's, --set's): an older version cannot meet that
 * requirement (containerd publishes build provenance from 2.0 on), so the
 * plan stops here, at the version, naming the requirement and the way out,
 * instead of a 404 at fetch time. Replacing the artifact's verify (an
 * override) drops the requirement with its `since`.
 */
static int since_met(struct resolver *r)
{
	for (size_t i = 0; i < r->plan->nartifacts; i++) {
		const struct plan_artifact *a = &r->plan->artifacts[i];
		const struct plan_component *c = plan_find_component(r->plan, a->component);
		long maj, min, smaj, smin;
		char where[512];

		for (size_t k = 0; c && k < a->nsince; k++) {
			const struct plan_since *ps = &a->since[k];

			if (major_minor(c->version, &maj, &min) ||
			    major_minor(ps->version, &smaj, &smin) ||
			    maj > smaj || (maj == smaj && min >= smin))
				continue;
			wb_origin_format(&ps->req_origin, where, sizeof(where));
			return err_at(r, &c->version_origin, "%s %s publishes no %s, but "
				      "artifact '%s' requires it (verify.%s, %s): use %s %s "
				      "or later%s%s", c->name, c->version, ps->missing, a->name,
				      ps->method, where, c->name, ps->version,
				      ps->instead ? ", or " : "", ps->instead ? ps->instead : "");
		}
	}
	return 0;
}

/* ---- top-level values ---- */

static void add_value(struct plan *p, const char *key, const char *value,
		      const struct wb_origin *o)
{
	ALLOC_GROW(p->values, p->nvalues + 1, p->alloc_values);
	p->values[p->nvalues].key = xstrdup(key);
	p->values[p->nvalues].value = xstrdup(value);
	p->values[p->nvalues].origin = *o;
	p->nvalues++;
}

static void flatten(struct plan *p, const struct rnode *n, const char *prefix)
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

static void resolve_policy(struct resolver *r)
{
	struct trust_policy *pol = &r->plan->policy;

	pol->allow_http = 1;
	/* Policy only tightens: a later layer cannot loosen what an earlier
	 * layer required (so no flag undoes an override's require: signature). */
	for (size_t i = 0; i < r->nlayers; i++) {
		const struct rnode *l = r->layers[i].policy, *n;

		if (!l)
			continue;

		if ((n = rnode_get(l, "require")) && !strcmp(n->scalar, "signature") &&
		    !pol->require_signature) {
			pol->require_signature = 1;
			pol->require_origin = n->origin;
		}
		if ((n = rnode_get(l, "allow_http")) && schema_bool(n) == 0 &&
		    pol->allow_http) {
			pol->allow_http = 0;
			pol->allow_http_origin = n->origin;
		}
		if ((n = rnode_get(l, "checksum_urls")) && !strcmp(n->scalar, "forbid") &&
		    !pol->forbid_checksum_urls) {
			pol->forbid_checksum_urls = 1;
			pol->checksum_urls_origin = n->origin;
		}
	}
	/* an unverified ISO needs an explicit allow, and a forbid in any layer
	 * (earlier or later) holds */
	for (size_t i = 0; i < r->nlayers; i++) {
		const struct rnode *n = rnode_get(r->layers[i].policy, "unverified_iso");

		if (!n)
			continue;
		if (!strcmp(n->scalar, "forbid")) {
			pol->allow_unverified_iso = 0;
			pol->unverified_iso_origin = n->origin;
			break;
		}
		if (!pol->allow_unverified_iso) {
			pol->allow_unverified_iso = 1;
			pol->unverified_iso_origin = n->origin;
		}
	}
}

/* The Windows ISO of the ISO builders (lib/platform.c) must
 * be pinned by windows.iso_sha256; "none" or nothing only under an explicit
 * policy.unverified_iso: allow. The plan downloads no ISO, so a missing pin
 * is only recorded (iso_missing): emit and build refuse where the ISO is
 * used (plan_require_iso()), plan, fetch and stage warn. */
static int resolve_iso(struct resolver *r, const struct rnode *win)
{
	struct plan *p = r->plan;
	const struct rnode *n = rnode_get(win, "iso_sha256");
	int iso_builders = 0;

	for (size_t i = 0; i < p->builders.nr; i++)
		iso_builders |= platform_builder_is_iso(p->builders.v[i]);
	if (n)
		p->windows_iso_origin = n->origin;
	if (n && strcmp(n->scalar, "none")) {
		if (!is_hex(n->scalar, 64))
			return err_at(r, &n->origin,
				      "'windows.iso_sha256' must be 64 hex digits (the ISO's SHA-256) or \"none\", not '%s'",
				      n->scalar);
		p->windows_iso_sha256 = lower(xstrdup(n->scalar));
		return 0;
	}
	if (!iso_builders)
		return 0;
	if (!p->policy.allow_unverified_iso) {
		p->iso_missing = n ? 2 : 1;
		p->iso_missing_origin = n ? n->origin : win->origin;
		return 0;
	}
	p->iso_unverified = 1;
	return 0;
}

/* --builder NAME...: the plan keeps only these of packer.builders (N, or
 * every builder when N is NULL), in the order given. */
static int narrow_builders(struct resolver *r, const struct rnode *n)
{
	struct plan *p = r->plan;
	struct wb_strlist sel = WB_STRLIST_INIT;

	if (!r->in->nbuilders)
		return 0;
	for (size_t i = 0; i < r->in->nbuilders; i++) {
		const char *b = r->in->builders[i];
		int in_plan = wb_strlist_has(&p->builders, b);

		if (!in_plan && !platform_builder(b)) {
			char names[256];

			platform_set_join(PLATFORM_SET_BUILDERS, ", ", names, sizeof(names));
			return wb_error(r->e, WB_EUSAGE, "unknown builder '%s' (%s)", b, names);
		}
		if (!in_plan) {
			struct buf all = BUF_INIT;
			char where[512] = "the default: every builder";
			int ret;

			if (n)
				wb_origin_format(&n->origin, where, sizeof(where));
			for (size_t k = 0; k < p->builders.nr; k++)
				buf_addf(&all, "%s%s", k ? ", " : "", p->builders.v[k]);
			ret = wb_error(r->e, WB_EUSAGE, "--builder '%s' is not one of the recipe's "
				       "packer.builders (%s; %s): --builder narrows that list, "
				       "widen it with --set 'packer.builders=[...]'", b, all.ptr, where);
			buf_release(&all);
			wb_strlist_release(&sel);
			return ret;
		}
		wb_strlist_push_unique(&sel, b);
	}
	wb_strlist_release(&p->builders);
	p->builders = sel;
	return 0;
}

/*
 * packer.builders (default: every builder of the platform table), each
 * builder's cloudbase-init provider (issue 14: each image reads its own
 * platform's metadata), and what the recipe's Windows asks of the
 * builders' base images (issue 26, D14/D15).
 */
static int convert_builders(struct resolver *r, const struct rnode *top)
{
	struct plan *p = r->plan;
	const struct rnode *n = rnode_get(rnode_get(top, "packer"), "builders");
	const struct rnode *pv = rnode_get(rnode_get(top, "cloudbase_init"), "provider");
	const struct rnode *win = rnode_get(top, "windows");
	char names[256];

	platform_set_join(PLATFORM_SET_BUILDERS, ", ", names, sizeof(names));
	if (n) {
		for (size_t i = 0; i < n->nr; i++)
			if (!platform_builder(n->items[i]->scalar))
				return err_at(r, &n->items[i]->origin,
					      "unknown Packer builder '%s' (%s)",
					      n->items[i]->scalar, names);
		copy_strlist(n, &p->builders);
	} else {
		/* every builder of the table that has an image of the recipe's
		 * Windows to start from (a cloud without Server Core images is
		 * left out of a Server Core recipe that names no builders) */
		for (size_t i = 0; i < platform_nbuilders; i++)
			if (!platform_builders[i].base_var ||
			    platform_base_image(&platform_builders[i], p->windows_version,
						p->windows_desktop))
				wb_strlist_push(&p->builders, platform_builders[i].name);
	}
	if (narrow_builders(r, n))
		return -1;
	for (size_t i = 0; i < p->builders.nr; i++) {
		const struct platform_builder *b = platform_builder(p->builders.v[i]);
		const char *prov = platform_provider_for(b, p->cloudbase_provider);

		if (!prov)
			return err_at(r, pv ? &pv->origin : &top->origin,
				      "cloudbase_init.provider '%s' contradicts "
				      "Packer builder '%s': its image would ask a metadata "
				      "service that platform does not have (use 'auto', or "
				      "narrow packer.builders)", p->cloudbase_provider,
				      p->builders.v[i]);
		wb_strlist_push(&p->builder_providers, prov);
		/* D15: a cloud builder starts from the cloud's own image, which
		 * the clouds publish as Datacenter only */
		if (b->fw == PLATFORM_FW_NONE && strcmp(p->windows_edition, "datacenter"))
			return err_at(r, rnode_get(win, "edition") ?
				      &rnode_get(win, "edition")->origin : &win->origin,
				      "windows.edition '%s': Packer builder '%s' starts from "
				      "the cloud's Windows Server image, which is published as "
				      "Datacenter only (use edition: datacenter, or narrow "
				      "packer.builders to the ISO builders)",
				      p->windows_edition, b->name);
		/* D15: never the other installation type instead: a platform
		 * without a Server Core image takes no Server Core recipe */
		if (b->base_var && !platform_base_image(b, p->windows_version, p->windows_desktop))
			return err_at(r, rnode_get(win, "desktop_experience") ?
				      &rnode_get(win, "desktop_experience")->origin : &win->origin,
				      "Packer builder '%s' has no %s image of Windows Server %s "
				      "to start from (use windows.desktop_experience: %s, or "
				      "narrow packer.builders)", b->name,
				      p->windows_desktop ? "Desktop Experience" : "Server Core",
				      p->windows_version, p->windows_desktop ? "false" : "true");
	}
	return 0;
}

/* "file://${override_dir}/REST" (what `winbuild mirror` writes into the
 * export's override): the directory of the file that says it, absolute,
 * so the export works wherever it is moved; NULL for any other URL. */
static char *override_dir_url(const char *to, const struct wb_origin *o)
{
	static const char pre[] = "file://${override_dir}";
	char *dir, *abs, *ret;

	if (strncmp(to, pre, sizeof(pre) - 1) || !o->file || o->file[0] == '-' ||
	    !strncmp(o->file, "env ", 4))
		return NULL;
	dir = fs_dirname(o->file);
	abs = realpath(dir, NULL);
	ret = abs ? xasprintf("file://%s%s", abs, to + sizeof(pre) - 1) : NULL;
	free(dir);
	free(abs);
	return ret;
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
	p->cni = str_or(n, "cni", "none");
	if (rnode_get(n, "windows_features"))
		copy_strlist(rnode_get(n, "windows_features"), &p->windows_features);
	else
		wb_strlist_push(&p->windows_features, "Containers");
	if (convert_builders(r, top))
		return -1;
	resolve_policy(r);
	if (resolve_iso(r, rnode_get(top, "windows")))
		return -1;
	n = rnode_get(top, "packer");
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
			const char *from = scalar(m, "from"), *to = scalar(m, "to");
			char *to_dir = override_dir_url(to, &rnode_get(m, "to")->origin);

			if (to_dir)
				to = to_dir;
			if (url_check(r, from, &rnode_get(m, "from")->origin, "mirrors.from") ||
			    url_check(r, to, &rnode_get(m, "to")->origin, "mirrors.to")) {
				free(to_dir);
				return -1;
			}
			p->mirrors[i].from = xstrdup(from);
			p->mirrors[i].to = xstrdup(to);
			free(to_dir);
			p->mirrors[i].origin = m->origin;
			p->nmirrors++;
		}
	}
	if ((n = rnode_get(top, "replace"))) {
		/* checked once every artifact is known (below) */
	}

	vars_add_map(image_vars, rnode_get(top, "vars"));
	vars_add(image_vars, "windows_version", p->windows_version, 0);

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
	if (dest_clashes(r) || dirs_clash(r) || order_services(r) ||
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
	rnode_free(r.top);
	for (size_t i = 0; i < r.nlayers; i++) {
		rnode_free(r.layers[i].policy);
		rnode_free(r.layers[i].auth);
		rnode_free(r.layers[i].sigs);
		rnode_free(r.layers[i].keys);
		rnode_free(r.layers[i].comps);
	}
	rnode_free(r.comp_auth);
	free(r.layers);
	vars_release(&r.image_vars);
	if (ret)
		plan_release(plan);
	return ret;
}
