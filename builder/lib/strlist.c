/* @where buffers, allocation, string lists, logging */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "strlist.h"

void wb_strlist_push(struct wb_strlist *l, const char *s)
{
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	l->v[l->nr++] = xstrdup(s);
}

int wb_strlist_has(const struct wb_strlist *l, const char *s)
{
	for (size_t i = 0; i < l->nr; i++)
		if (!strcmp(l->v[i], s))
			return 1;
	return 0;
}

void wb_strlist_push_unique(struct wb_strlist *l, const char *s)
{
	if (!wb_strlist_has(l, s))
		wb_strlist_push(l, s);
}

void wb_strlist_release(struct wb_strlist *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->nr = l->alloc = 0;
}

int wb_strlist_equal(const struct wb_strlist *a, const struct wb_strlist *b)
{
	if (a->nr != b->nr)
		return 0;
	for (size_t i = 0; i < a->nr; i++)
		if (strcmp(a->v[i], b->v[i]))
			return 0;
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void wb_strlist_sort(struct wb_strlist *l)
{
	if (l->nr > 1)
		qsort(l->v, l->nr, sizeof(*l->v), cmp_str);
}
