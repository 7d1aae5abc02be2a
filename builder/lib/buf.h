/*
 * struct buf: a growable byte buffer, always NUL-terminated, never NULL
 * after BUF_INIT/buf_init. buf_release frees the contents; buf_detach hands
 * the memory to the caller (who frees it) and leaves the buffer empty.
 *
 * Allocation failure aborts the process (xmalloc and friends): there is no
 * useful recovery from out-of-memory in a build tool.
 */
#ifndef WB_BUF_H
#define WB_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *ptr;
	size_t len;
	size_t cap;
};

extern char buf_empty[];
#define BUF_INIT { buf_empty, 0, 0 }

void buf_init(struct buf *b);
void buf_release(struct buf *b);
char *buf_detach(struct buf *b, size_t *len);
void buf_grow(struct buf *b, size_t extra);
void buf_add(struct buf *b, const void *data, size_t len);
void buf_adds(struct buf *b, const char *s);
void buf_addc(struct buf *b, char c);
void buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_vaddf(struct buf *b, const char *fmt, va_list ap);
void buf_reset(struct buf *b);
/* Append S with JSON string escaping (no surrounding quotes). */
void buf_add_json_escaped(struct buf *b, const char *s);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* N bytes at P, NUL bytes and all, as a new buffer with a NUL after them
 * (git's xmemdupz): bytes from outside, where xstrndup would stop early. */
char *xmemdupz(const void *p, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Grow array P (of *NR used, *ALLOC allocated) to hold at least N items. */
#define ALLOC_GROW(p, n, alloc) do { \
	if ((size_t)(n) > (alloc)) { \
		size_t na_ = (alloc) ? (alloc) * 2 : 8; \
		if (na_ < (size_t)(n)) na_ = (size_t)(n); \
		(p) = xrealloc((p), na_ * sizeof(*(p))); \
		(alloc) = na_; \
	} \
} while (0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
