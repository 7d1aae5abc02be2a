/*
 * The recipe tree: YAML loaded into maps, lists and scalars that remember
 * where they came from. Every file kind (image, component, override) and
 * every --set pair becomes such a tree; recipe/layers.c merges them in
 * precedence order and the resolver converts the result into a struct plan.
 *
 * Ownership: a node owns its key, scalar and children. rnode_free frees a
 * whole subtree. Origins point to interned file names owned elsewhere.
 */
#ifndef WB_RNODE_H
#define WB_RNODE_H

#include <stddef.h>

#include "lib/err.h"
#include "lib/strlist.h"
#include "recipe/plan.h"

/* Limits that keep a hostile recipe from hanging or exhausting memory. */
#define RNODE_MAX_FILE (1024 * 1024)     /* bytes per recipe file */
#define RNODE_MAX_DEPTH 32               /* nesting of maps and lists */
#define RNODE_MAX_NODES 100000           /* nodes per file */
#define RNODE_MAX_SCALAR (64 * 1024)     /* bytes per scalar */

enum rnode_type {
	RNODE_SCALAR = 1,
	RNODE_MAP,
	RNODE_LIST,
};

struct rnode {
	enum rnode_type type;
	char *key;                  /* set when the node is a map member */
	struct wb_origin key_origin;
	struct wb_origin origin;    /* of the value */
	char *scalar;               /* RNODE_SCALAR */
	int plain;                  /* unquoted scalar (may be bool/int) */
	struct rnode **items;       /* RNODE_MAP members or RNODE_LIST items */
	size_t nr, alloc;
};

/*
 * Load one YAML document from PATH (at most RNODE_MAX_FILE bytes). File
 * names are interned into NAMES. Errors (WB_EUSAGE) read
 * "path:line:col: message". YAML aliases are refused; anchors are ignored.
 */
int rnode_load_file(const char *path, struct wb_strlist *names,
		    struct rnode **out, struct wb_err *e);

/* The same from LEN bytes of TEXT in memory, named NAME in origins and
 * messages (used by the fuzzer; TEXT need not be NUL-terminated). */
int rnode_load_buffer(const char *text, size_t len, const char *name,
		      struct wb_strlist *names, struct rnode **out, struct wb_err *e);

/* Load a YAML flow value (for --set) from TEXT; origins are ORIGIN. */
int rnode_load_string(const char *text, const struct wb_origin *origin,
		      struct rnode **out, struct wb_err *e);

/* Give N and its whole subtree ORIGIN. */
void rnode_set_origin(struct rnode *n, const struct wb_origin *origin);

struct rnode *rnode_new(enum rnode_type type, const struct wb_origin *origin);
struct rnode *rnode_new_scalar(const char *s, const struct wb_origin *origin);
void rnode_free(struct rnode *n);
struct rnode *rnode_clone(const struct rnode *n);

/* Member KEY of map N, or NULL (N may be NULL or not a map). */
struct rnode *rnode_get(const struct rnode *n, const char *key);
/* Remove and return member KEY of map N (caller frees), or NULL. */
struct rnode *rnode_take(struct rnode *n, const char *key);
/* Append CHILD (a map member needs child->key set). */
void rnode_append(struct rnode *n, struct rnode *child);
/* Set member KEY of map N to CHILD, replacing (and freeing) an old one. */
void rnode_set(struct rnode *n, const char *key, struct rnode *child);

/*
 * Merge SRC over DST, consuming SRC: maps merge key by key, anything else
 * replaces. Returns the merged node (DST, or SRC when types differ).
 */
struct rnode *rnode_merge(struct rnode *dst, struct rnode *src);

/* Intern NAME into NAMES and return the stored pointer. */
const char *wb_intern(struct wb_strlist *names, const char *name);

#endif
