/*
 * Variables: ${name} and ${name:transform} expansion over an ordered set
 * (first match wins), capped in depth and in size.
 *
 * @where includes, override layers, `WINBUILD_SET`, `--set`, `${var}`
 *   expansion -- `${var}` expansion
 */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "recipe/resolve_int.h"

void vars_add(struct vars *vs, const char *name, const char *value, int raw)
{
	ALLOC_GROW(vs->v, vs->nr + 1, vs->alloc);
	vs->v[vs->nr++] = (struct var){ name, value, raw };
}

/* Put NAME first: it wins over every variable already in VS. */
void vars_prepend(struct vars *vs, const char *name, const char *value, int raw)
{
	ALLOC_GROW(vs->v, vs->nr + 1, vs->alloc);
	memmove(vs->v + 1, vs->v, vs->nr * sizeof(vs->v[0]));
	vs->v[0] = (struct var){ name, value, raw };
	vs->nr++;
}

/* Append every variable of FROM to VS (FROM's lose to VS's own). */
void vars_add_all(struct vars *vs, const struct vars *from)
{
	for (size_t i = 0; i < from->nr; i++)
		vars_add(vs, from->v[i].name, from->v[i].value, from->v[i].raw);
}

void vars_release(struct vars *vs)
{
	free(vs->v);
	memset(vs, 0, sizeof(*vs));
}

void vars_add_map(struct vars *vs, const struct rnode *map)
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
char *vars_expand(struct resolver *r, const struct vars *vs,
	     const struct rnode *n, const char *what)
{
	struct buf b = BUF_INIT;

	if (expand_into(r, vs, n->scalar, &n->origin, what, 0, &b)) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}
