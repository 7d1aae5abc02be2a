/* @where buffers, allocation, string lists, logging */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

char buf_empty[1];

static void die_oom(size_t n)
{
	fprintf(stderr, "winbuild: fatal: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die_oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die_oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		die_oom(n);
	return q;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die_oom(strlen(s));
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		die_oom(n);
	return p;
}

char *xmemdupz(const void *p, size_t n)
{
	char *r = xmalloc(n + 1);

	memcpy(r, p, n);
	r[n] = '\0';
	return r;
}

char *xasprintf(const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	return buf_detach(&b, NULL);
}

void buf_init(struct buf *b)
{
	b->ptr = buf_empty;
	b->len = 0;
	b->cap = 0;
}

void buf_release(struct buf *b)
{
	if (b->cap)
		free(b->ptr);
	buf_init(b);
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p;

	if (len)
		*len = b->len;
	p = b->cap ? b->ptr : xcalloc(1, 1);
	buf_init(b);
	return p;
}

void buf_grow(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	if (need < b->cap * 2)
		need = b->cap * 2;
	if (need < 64)
		need = 64;
	if (b->cap) {
		b->ptr = xrealloc(b->ptr, need);
	} else {
		b->ptr = xmalloc(need);
		b->ptr[0] = '\0';
	}
	b->cap = need;
}

void buf_add(struct buf *b, const void *data, size_t len)
{
	buf_grow(b, len);
	memcpy(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
}

void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_addc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->cap)
		b->ptr[0] = '\0';
}

void buf_add_json_escaped(struct buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"': buf_adds(b, "\\\""); break;
		case '\\': buf_adds(b, "\\\\"); break;
		case '\n': buf_adds(b, "\\n"); break;
		case '\r': buf_adds(b, "\\r"); break;
		case '\t': buf_adds(b, "\\t"); break;
		default:
			if (c < 0x20)
				buf_addf(b, "\\u%04x", c);
			else
				buf_addc(b, (char)c);
		}
	}
}
