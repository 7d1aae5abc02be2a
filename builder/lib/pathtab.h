/*
 * The table of paths placed on the Windows side, compared as Windows
 * compares names: keyed by winpath_fold(path) (lib/winpath.h: Unicode
 * upper-casing as NTFS's $UpCase table does), so "Bin/A.exe" and
 * "bin/a.EXE" are one place. Used by the extractor (the paths one archive
 * places, stage/extract_write.c) and by the staged tree (the paths every
 * artifact and generated file claims, stage/tree.c). Each caller words
 * its own refusal from the entry a clash returns.
 *
 * An open-addressing hash table; entries stay where they are until the
 * table grows, so an entry pointer is good until the next add.
 * Ownership: the table owns every key, path and owner string.
 */
#ifndef WB_PATHTAB_H
#define WB_PATHTAB_H

#include <stddef.h>

struct pathtab_entry {
	char *key;                 /* winpath_fold(path) or the caller's own
				      key (pathtab_add_key); NULL: free slot */
	char *path;                /* as first placed */
	char *owner;               /* who placed it, for messages */
	int is_dir;
	int tag;                   /* the caller's (tree.c: an 8.3 alias kind) */
};

struct pathtab {
	struct pathtab_entry *slots;
	size_t n, cap;             /* used slots, slots (0 or a power of 2) */
};

#define PATHTAB_INIT { NULL, 0, 0 }

enum {
	PATHTAB_CLASH = -1,        /* the folded path is taken: *OLD says by what */
	PATHTAB_AGAIN = 0,         /* a directory placed again, same spelling */
	PATHTAB_NEW = 1,
};

/*
 * Place PATH (a directory if IS_DIR) for OWNER. A directory may be placed
 * again with the same spelling (PATHTAB_AGAIN); anything else whose folded
 * form equals PATH's is PATHTAB_CLASH with *OLD set to it: the same path
 * twice, a case variant, or a file where a directory is (or the reverse).
 */
int pathtab_place(struct pathtab *t, const char *path, const char *owner,
		  int is_dir, struct pathtab_entry **old);

/* The entry under KEY exactly (no folding), or NULL. */
struct pathtab_entry *pathtab_find_key(struct pathtab *t, const char *key);

/* Add an entry under KEY (taken over; not already in T) for PATH. */
struct pathtab_entry *pathtab_add_key(struct pathtab *t, char *key,
				      const char *path, const char *owner,
				      int is_dir);

/* The next used entry from *POS on (start with *POS = 0), or NULL. */
struct pathtab_entry *pathtab_next(struct pathtab *t, size_t *pos);

void pathtab_release(struct pathtab *t);

#endif
