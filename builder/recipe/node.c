/* YAML → struct rnode, with origins and limits; merge.
 *
 * @where YAML to a tree with `file:line:col` origins, size, depth and alias
 *   limits
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "recipe/node.h"

const char *wb_intern(struct wb_strlist *names, const char *name)
{
	for (size_t i = 0; i < names->nr; i++)
		if (!strcmp(names->v[i], name))
			return names->v[i];
	wb_strlist_push(names, name);
	return names->v[names->nr - 1];
}

struct rnode *rnode_new(enum rnode_type type, const struct wb_origin *origin)
{
	struct rnode *n = xcalloc(1, sizeof(*n));

	n->type = type;
	if (origin)
		n->origin = *origin;
	return n;
}

struct rnode *rnode_new_scalar(const char *s, const struct wb_origin *origin)
{
	struct rnode *n = rnode_new(RNODE_SCALAR, origin);

	n->scalar = xstrdup(s);
	n->plain = 1;
	return n;
}

void rnode_free(struct rnode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nr; i++)
		rnode_free(n->items[i]);
	free(n->items);
	free(n->key);
	free(n->scalar);
	free(n);
}

struct rnode *rnode_clone(const struct rnode *n)
{
	struct rnode *c = xcalloc(1, sizeof(*c));

	c->type = n->type;
	c->key = n->key ? xstrdup(n->key) : NULL;
	c->key_origin = n->key_origin;
	c->origin = n->origin;
	c->scalar = n->scalar ? xstrdup(n->scalar) : NULL;
	c->plain = n->plain;
	for (size_t i = 0; i < n->nr; i++)
		rnode_append(c, rnode_clone(n->items[i]));
	return c;
}

struct rnode *rnode_get(const struct rnode *n, const char *key)
{
	if (!n || n->type != RNODE_MAP)
		return NULL;
	for (size_t i = 0; i < n->nr; i++)
		if (!strcmp(n->items[i]->key, key))
			return n->items[i];
	return NULL;
}

struct rnode *rnode_take(struct rnode *n, const char *key)
{
	if (!n || n->type != RNODE_MAP)
		return NULL;
	for (size_t i = 0; i < n->nr; i++) {
		if (strcmp(n->items[i]->key, key))
			continue;
		struct rnode *c = n->items[i];
		memmove(n->items + i, n->items + i + 1,
			(n->nr - i - 1) * sizeof(*n->items));
		n->nr--;
		return c;
	}
	return NULL;
}

void rnode_append(struct rnode *n, struct rnode *child)
{
	ALLOC_GROW(n->items, n->nr + 1, n->alloc);
	n->items[n->nr++] = child;
}

void rnode_set(struct rnode *n, const char *key, struct rnode *child)
{
	for (size_t i = 0; i < n->nr; i++) {
		if (strcmp(n->items[i]->key, key))
			continue;
		if (!child->key)
			child->key = xstrdup(key);
		rnode_free(n->items[i]);
		n->items[i] = child;
		return;
	}
	if (!child->key)
		child->key = xstrdup(key);
	rnode_append(n, child);
}

struct rnode *rnode_merge(struct rnode *dst, struct rnode *src)
{
	if (!dst)
		return src;
	if (!src)
		return dst;
	if (dst->type != RNODE_MAP || src->type != RNODE_MAP) {
		if (dst->key && !src->key) {
			src->key = dst->key;
			src->key_origin = dst->key_origin;
			dst->key = NULL;
		}
		rnode_free(dst);
		return src;
	}
	for (size_t i = 0; i < src->nr; i++) {
		struct rnode *s = src->items[i];
		struct rnode *d = rnode_take(dst, s->key);

		src->items[i] = NULL;
		if (d) {
			/* a merged map keeps the key origin of its first
			 * declaration (so "relative to the file that names it"
			 * stays the recipe); a replaced value takes the new one */
			int both_maps = d->type == RNODE_MAP && s->type == RNODE_MAP;
			struct wb_origin ko = both_maps ? d->key_origin : s->key_origin;
			char *k = xstrdup(s->key);
			struct rnode *m = rnode_merge(d, s);
			free(m->key);
			m->key = k;
			m->key_origin = ko;
			rnode_append(dst, m);
		} else {
			rnode_append(dst, s);
		}
	}
	src->nr = 0;
	rnode_free(src);
	return dst;
}

/* ---- loading ---- */

struct loader {
	yaml_parser_t parser;
	const char *file;        /* interned */
	size_t nodes;
	const char *text;        /* the input, to turn byte offsets into lines */
	size_t len;
	struct wb_err *e;
};

static struct wb_origin mark_origin(const struct loader *l, const yaml_mark_t *m)
{
	struct wb_origin o = { l->file, (int)m->line + 1, (int)m->column + 1 };
	return o;
}

static int load_error(struct loader *l, const yaml_mark_t *m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int load_error(struct loader *l, const yaml_mark_t *m, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->file[0] == '-' || !strncmp(l->file, "env ", 4))
		return wb_error(l->e, WB_EUSAGE, "%s: %s", l->file, msg);
	return wb_error(l->e, WB_EUSAGE, "%s:%zu:%zu: %s", l->file, m->line + 1,
			m->column + 1, msg);
}

static int next_event(struct loader *l, yaml_event_t *ev)
{
	if (yaml_parser_parse(&l->parser, ev))
		return 0;
	{
		yaml_mark_t m = l->parser.problem_mark;
		const char *problem = l->parser.problem ? l->parser.problem : "syntax error";

		if (l->parser.error == YAML_READER_ERROR) {
			/* the reader only knows a byte offset: find its line */
			size_t off = l->parser.problem_offset;
			m.line = 0;
			m.column = 0;
			for (size_t i = 0; i < off && i < l->len; i++) {
				if (l->text[i] == '\n') {
					m.line++;
					m.column = 0;
				} else {
					m.column++;
				}
			}
			return load_error(l, &m, "not valid UTF-8 YAML text (%s)",
					  problem);
		}
		if (l->parser.context)
			return load_error(l, &m, "YAML syntax error: %s %s",
					  problem, l->parser.context);
		return load_error(l, &m, "YAML syntax error: %s", problem);
	}
}

static int load_node(struct loader *l, yaml_event_t *ev, int depth,
		     struct rnode **out);

static int load_children(struct loader *l, struct rnode *n, int depth,
			 yaml_event_type_t end)
{
	for (;;) {
		yaml_event_t ev;
		struct rnode *key = NULL, *val = NULL;

		if (next_event(l, &ev))
			return -1;
		if (ev.type == end) {
			yaml_event_delete(&ev);
			return 0;
		}
		if (n->type == RNODE_LIST) {
			if (load_node(l, &ev, depth + 1, &val))
				return -1;
			rnode_append(n, val);
			continue;
		}
		/* mapping: key event in ev, then the value */
		if (ev.type != YAML_SCALAR_EVENT) {
			yaml_mark_t m = ev.start_mark;
			yaml_event_delete(&ev);
			return load_error(l, &m, "map keys must be plain strings");
		}
		if (load_node(l, &ev, depth + 1, &key))
			return -1;
		if (rnode_get(n, key->scalar)) {
			struct rnode *prev = rnode_get(n, key->scalar);
			yaml_mark_t m = { 0, (size_t)key->origin.line - 1,
					  (size_t)key->origin.col - 1 };
			int r = load_error(l, &m, "duplicate key '%s' (first at line %d)",
					   key->scalar, prev->key_origin.line);
			rnode_free(key);
			return r;
		}
		if (next_event(l, &ev)) {
			rnode_free(key);
			return -1;
		}
		if (load_node(l, &ev, depth + 1, &val)) {
			rnode_free(key);
			return -1;
		}
		val->key = key->scalar;
		val->key_origin = key->origin;
		key->scalar = NULL;
		rnode_free(key);
		rnode_append(n, val);
	}
}

/* Consumes EV. */
static int load_node(struct loader *l, yaml_event_t *ev, int depth,
		     struct rnode **out)
{
	struct wb_origin o = mark_origin(l, &ev->start_mark);
	yaml_mark_t m = ev->start_mark;
	struct rnode *n;

	*out = NULL;
	if (++l->nodes > RNODE_MAX_NODES) {
		yaml_event_delete(ev);
		return load_error(l, &m, "too many nodes (limit %d)", RNODE_MAX_NODES);
	}
	if (depth > RNODE_MAX_DEPTH) {
		yaml_event_delete(ev);
		return load_error(l, &m, "nested deeper than %d levels", RNODE_MAX_DEPTH);
	}
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		yaml_event_delete(ev);
		return load_error(l, &m, "YAML aliases are not supported (write the value out)");
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.length > RNODE_MAX_SCALAR) {
			yaml_event_delete(ev);
			return load_error(l, &m, "value longer than %d bytes",
					  RNODE_MAX_SCALAR);
		}
		if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length)) {
			yaml_event_delete(ev);
			return load_error(l, &m, "NUL byte in value");
		}
		n = rnode_new(RNODE_SCALAR, &o);
		n->scalar = xstrndup((const char *)ev->data.scalar.value,
				     ev->data.scalar.length);
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		/* plain "~" and "null" are YAML's null: keep them as empty */
		yaml_event_delete(ev);
		*out = n;
		return 0;
	case YAML_SEQUENCE_START_EVENT:
		yaml_event_delete(ev);
		n = rnode_new(RNODE_LIST, &o);
		if (load_children(l, n, depth, YAML_SEQUENCE_END_EVENT)) {
			rnode_free(n);
			return -1;
		}
		*out = n;
		return 0;
	case YAML_MAPPING_START_EVENT:
		yaml_event_delete(ev);
		n = rnode_new(RNODE_MAP, &o);
		if (load_children(l, n, depth, YAML_MAPPING_END_EVENT)) {
			rnode_free(n);
			return -1;
		}
		*out = n;
		return 0;
	default:
		yaml_event_delete(ev);
		return load_error(l, &m, "unexpected YAML event");
	}
}

static int load_document(struct loader *l, struct rnode **out)
{
	yaml_event_t ev;
	yaml_mark_t start = { 0, 0, 0 };
	int ret = -1;

	*out = NULL;
	if (next_event(l, &ev))
		return -1;
	if (ev.type != YAML_STREAM_START_EVENT) {
		yaml_event_delete(&ev);
		return load_error(l, &start, "not a YAML stream");
	}
	yaml_event_delete(&ev);
	if (next_event(l, &ev))
		return -1;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		return load_error(l, &start, "empty file (expected a map starting with 'kind:')");
	}
	yaml_event_delete(&ev);   /* DOCUMENT_START */
	if (next_event(l, &ev))
		return -1;
	if (load_node(l, &ev, 0, out))
		return -1;
	if (next_event(l, &ev))
		goto fail;
	yaml_event_delete(&ev);   /* DOCUMENT_END */
	if (next_event(l, &ev))
		goto fail;
	if (ev.type != YAML_STREAM_END_EVENT) {
		yaml_mark_t m = ev.start_mark;
		yaml_event_delete(&ev);
		load_error(l, &m, "more than one YAML document in one file");
		goto fail;
	}
	yaml_event_delete(&ev);
	return 0;
fail:
	rnode_free(*out);
	*out = NULL;
	return ret;
}

int rnode_load_buffer(const char *text, size_t len, const char *name,
		      struct wb_strlist *names, struct rnode **out, struct wb_err *e)
{
	struct loader l;
	int ret;

	*out = NULL;
	if (len > RNODE_MAX_FILE)
		return wb_error(e, WB_EUSAGE, "'%s' is larger than %d bytes", name,
				RNODE_MAX_FILE);
	memset(&l, 0, sizeof(l));
	l.text = text;
	l.len = len;
	l.file = wb_intern(names, name);
	l.e = e;
	if (!yaml_parser_initialize(&l.parser))
		return wb_error(e, WB_EIO, "cannot initialise the YAML parser");
	yaml_parser_set_input_string(&l.parser, (const unsigned char *)text, len);
	ret = load_document(&l, out);
	yaml_parser_delete(&l.parser);
	return ret;
}

int rnode_load_file(const char *path, struct wb_strlist *names,
		    struct rnode **out, struct wb_err *e)
{
	struct buf b = BUF_INIT;
	int ret;

	*out = NULL;
	if (fs_read_file(path, RNODE_MAX_FILE, WB_EUSAGE, &b, e) < 0) {
		buf_release(&b);
		return -1;
	}
	ret = rnode_load_buffer(b.ptr, b.len, path, names, out, e);
	buf_release(&b);
	return ret;
}

void rnode_set_origin(struct rnode *n, const struct wb_origin *origin)
{
	n->origin = *origin;
	if (n->key)
		n->key_origin = *origin;
	for (size_t i = 0; i < n->nr; i++)
		rnode_set_origin(n->items[i], origin);
}

int rnode_load_string(const char *text, const struct wb_origin *origin,
		      struct rnode **out, struct wb_err *e)
{
	struct loader l;
	int ret;

	memset(&l, 0, sizeof(l));
	l.file = origin->file;
	l.e = e;
	if (!yaml_parser_initialize(&l.parser))
		return wb_error(e, WB_EIO, "cannot initialise the YAML parser");
	yaml_parser_set_input_string(&l.parser, (const unsigned char *)text,
				     strlen(text));
	l.text = text;
	l.len = strlen(text);
	ret = load_document(&l, out);
	yaml_parser_delete(&l.parser);
	if (!ret)
		rnode_set_origin(*out, origin);
	return ret;
}
