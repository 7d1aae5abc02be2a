/* struct wb_strlist: an owned list of owned strings. */
#ifndef WB_STRLIST_H
#define WB_STRLIST_H

#include <stddef.h>

struct wb_strlist {
	char **v;
	size_t nr, alloc;
};

#define WB_STRLIST_INIT { NULL, 0, 0 }

void wb_strlist_push(struct wb_strlist *l, const char *s);
/* 1 when L holds S. */
int wb_strlist_has(const struct wb_strlist *l, const char *s);
/* Push only if not already present. */
void wb_strlist_push_unique(struct wb_strlist *l, const char *s);
void wb_strlist_release(struct wb_strlist *l);
/* 1 when A and B hold the same strings in the same order. */
int wb_strlist_equal(const struct wb_strlist *a, const struct wb_strlist *b);
/* Sort L in strcmp order. */
void wb_strlist_sort(struct wb_strlist *l);

#endif
