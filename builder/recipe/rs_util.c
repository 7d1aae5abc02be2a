/*
 * The small helpers every file of the resolver shares (prefix rs_): a
 * map's scalar, a path relative to the file that names it, a warning or a
 * grammar error at a node, the values --explain prints, and the release of
 * a struct resolver. The driver is resolve.c; resolve_int.h lists the rest.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/tmpl.h"
#include "recipe/resolve_int.h"

/* A value that is not in its grammar (class 5: checked before anything is
 * rendered): the key, the value escaped, what it must be. */
int rs_bad_grammar(struct resolver *r, const struct wb_origin *o, const char *key,
		const char *value, const char *what)
{
	struct buf b = BUF_INIT;
	int ret;

	tmpl_describe(&b, value);
	ret = err_at(r, o, "%s '%s' is not %s", key, b.ptr, what);
	buf_release(&b);
	return ret;
}

const char *rs_scalar(const struct rnode *n, const char *key)
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
char *rs_relative_to(const char *from, const char *rel)
{
	char *dir, *p;

	if (rel[0] == '/' || !from || from[0] == '-' || !strncmp(from, "env ", 4))
		return xstrdup(rel);
	dir = fs_dirname(from);
	p = fs_join(dir, rel);
	free(dir);
	return path_clean(p);
}

char *rs_lower(char *s)
{
	for (char *p = s; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

void rs_warn_at(struct plan *p, const struct wb_origin *o, const char *fmt, ...)
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

void rs_add_value(struct plan *p, const char *key, const char *value,
		  const struct wb_origin *o)
{
	ALLOC_GROW(p->values, p->nvalues + 1, p->alloc_values);
	p->values[p->nvalues].key = xstrdup(key);
	p->values[p->nvalues].value = xstrdup(value);
	p->values[p->nvalues].origin = *o;
	p->nvalues++;
}

void rs_flatten(struct plan *p, const struct rnode *n, const char *prefix)
{
	if (n->type == RNODE_SCALAR) {
		rs_add_value(p, prefix, n->scalar, &n->origin);
		return;
	}
	if (n->type == RNODE_LIST && (!n->nr || n->items[0]->type == RNODE_SCALAR)) {
		struct buf b = BUF_INIT;
		buf_addc(&b, '[');
		for (size_t i = 0; i < n->nr; i++)
			buf_addf(&b, "%s%s", i ? ", " : "",
				 n->items[i]->type == RNODE_SCALAR ? n->items[i]->scalar : "…");
		buf_addc(&b, ']');
		rs_add_value(p, prefix, b.ptr, &n->origin);
		buf_release(&b);
		return;
	}
	for (size_t i = 0; i < n->nr; i++) {
		/* no fixed buffer: a long key is never cut into another's */
		char *key = n->type == RNODE_MAP ?
			xasprintf("%s%s%s", prefix, *prefix ? "." : "", n->items[i]->key) :
			xasprintf("%s[%zu]", prefix, i + 1);

		rs_flatten(p, n->items[i], key);
		free(key);
	}
}

char *rs_str_or(const struct rnode *n, const char *key, const char *def)
{
	const char *s = rs_scalar(n, key);

	return xstrdup(s ? s : def);
}

void rs_copy_strlist(const struct rnode *n, struct wb_strlist *out)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nr; i++)
		wb_strlist_push(out, n->items[i]->scalar);
}

void rs_release(struct resolver *r)
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
