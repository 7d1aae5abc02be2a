#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "pathtab.h"
#include "winpath.h"

static size_t hash_str(const char *s)
{
	size_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static struct pathtab_entry *slot(struct pathtab_entry *t, size_t cap,
				  const char *key)
{
	size_t i = hash_str(key) & (cap - 1);

	while (t[i].key && strcmp(t[i].key, key))
		i = (i + 1) & (cap - 1);
	return &t[i];
}

static void grow(struct pathtab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 256;
	struct pathtab_entry *nt = xcalloc(ncap, sizeof(*nt));

	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].key)
			*slot(nt, ncap, t->slots[i].key) = t->slots[i];
	free(t->slots);
	t->slots = nt;
	t->cap = ncap;
}

struct pathtab_entry *pathtab_find_key(struct pathtab *t, const char *key)
{
	struct pathtab_entry *s;

	if (!t->cap)
		return NULL;
	s = slot(t->slots, t->cap, key);
	return s->key ? s : NULL;
}

struct pathtab_entry *pathtab_add_key(struct pathtab *t, char *key,
				      const char *path, const char *owner,
				      int is_dir)
{
	struct pathtab_entry *s;

	if ((t->n + 1) * 4 > t->cap * 3)
		grow(t);
	s = slot(t->slots, t->cap, key);
	s->key = key;
	s->path = xstrdup(path);
	s->owner = xstrdup(owner);
	s->is_dir = is_dir;
	s->tag = 0;
	t->n++;
	return s;
}

/*
 * @where the one case-insensitive path table (what an archive places, what
 *   every artifact and generated file claims, 8.3 alias keys) -- keyed by
 *   `winpath_fold()`
 */
int pathtab_place(struct pathtab *t, const char *path, const char *owner,
		  int is_dir, struct pathtab_entry **old)
{
	char *key = winpath_fold(path);
	struct pathtab_entry *s = pathtab_find_key(t, key);

	if (!s) {
		pathtab_add_key(t, key, path, owner, is_dir);
		return PATHTAB_NEW;
	}
	free(key);
	if (is_dir && s->is_dir && !strcmp(s->path, path))
		return PATHTAB_AGAIN;
	*old = s;
	return PATHTAB_CLASH;
}

struct pathtab_entry *pathtab_next(struct pathtab *t, size_t *pos)
{
	while (*pos < t->cap) {
		struct pathtab_entry *s = &t->slots[(*pos)++];

		if (s->key)
			return s;
	}
	return NULL;
}

void pathtab_release(struct pathtab *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->slots[i].key);
		free(t->slots[i].path);
		free(t->slots[i].owner);
	}
	free(t->slots);
	t->slots = NULL;
	t->n = t->cap = 0;
}
