/*
 * The recipe schema: one table per kind of map, listing every key a file
 * may hold (docs/recipes.md documents the same tables). schema_check()
 * rejects unknown keys, wrong types and missing required keys with
 * "file:line:col: ..." naming the key.
 */
#ifndef WB_SCHEMA_H
#define WB_SCHEMA_H

#include "lib/platform.h"
#include "recipe/node.h"

enum schema_type {
	S_STR = 1,     /* scalar */
	S_BOOL,        /* true / false */
	S_INT,         /* non-negative decimal integer */
	S_ENUM,        /* scalar, one of `enums` ("a|b|c"), or of the platform
			  table's set S_PLATFORM(set) in `flags` (lib/platform.h) */
	S_STRLIST,     /* list of scalars */
	S_STRMAP,      /* map of scalars */
	S_MAP,         /* map checked against `sub` */
	S_MAPOF,       /* map whose values are maps checked against `sub` */
	S_LISTOF,      /* list of maps checked against `sub` */
	S_KEYLIST,     /* list of key names (scalars) or key maps (`sub`) */
	S_SKIP,        /* checked elsewhere */
};

enum schema_flags {
	S_REQUIRED = 1 << 0,
	S_PARTIAL = 1 << 1,    /* the maps below are completed elsewhere (an
				  image's component entries are merged over
				  their files): their required keys are
				  checked there, not here */
};
/* An S_ENUM whose names are the platform table's SET (enum platform_set) */
#define S_PLATFORM(set) ((unsigned)(set) << 4)
#define S_PLATFORM_SET(flags) ((enum platform_set)(((flags) >> 4) & 0xff))
/* A component key whose values become a Windows object of KIND (enum
 * winobj_kind, recipe/winobj.h): recipe/winobj.c's guard checks every value
 * of every key so marked (tests/cli/redteam_winnames.bats enumerates them) */
#define S_WIN(kind) ((unsigned)(kind) << 12)
#define S_WIN_KIND(flags) ((int)(((flags) >> 12) & 0xf))

/*
 * How a later layer (an override, windows_versions, WINBUILD_SET, --set, a
 * matrix variation's set) may change a trust-relevant key an earlier layer
 * set (issue 41 item 2): every key below the image's trust sections
 * declares one (tests/cli/layers_tighten.bats enumerates them), and
 * tighten_only() in recipe/layers.c applies it to every layer.
 * @where layers only tighten: the direction of every trust key, applied to
 *   every layer -- `S_TRUST` in the image schema
 */
enum schema_trust {
	T_NONE,     /* not a trust key (outside the trust sections) */
	T_FREE,     /* declared free: no layer's value can loosen anything
		       (the comment beside the key says why) */
	T_LAYERS,   /* each layer's value holds on its own (push_policy_layer:
		       policy, authenticode, signatures, keys) */
	T_SET,      /* may be changed, never unset (null) */
	T_ON,       /* a flag that, once true, stays true */
	T_OFF,      /* a flag that, once false, stays false */
	T_ENTRIES,  /* a map whose entries may be added, never removed */
};
#define S_TRUST(dir) ((unsigned)(dir) << 16)
#define S_TRUST_DIR(flags) ((enum schema_trust)(((flags) >> 16) & 0xf))

/* schema_check reports at most this many errors (then counts the rest). */
#define SCHEMA_MAX_ERRORS 20

struct schema_key {
	const char *name;
	enum schema_type type;
	const struct schema_key *sub;
	const char *enums;
	unsigned flags;
};

extern const struct schema_key schema_image[];
extern const struct schema_key schema_component[];
extern const struct schema_key schema_policy[];
extern const struct schema_key schema_authenticode[];
extern const struct schema_key schema_signatures[];
extern const struct schema_key schema_container_image[];   /* images.<key> */
extern const struct schema_key schema_override_only[];

/* Check map N against TABLE. CTX names N in messages ("artifact 'x'").
 * With NO_REQUIRED, missing required keys are not errors. The walk goes on
 * after an error: E holds every error found, one "file:line:col: ..." per
 * line in the order found (an unknown key with the nearest valid key at
 * that place), at most SCHEMA_MAX_ERRORS of them, then a line counting
 * the rest. */
int schema_check(const struct rnode *n, const struct schema_key *table,
		 const char *ctx, int no_required, struct wb_err *e);

/* Parse a S_BOOL scalar (true/false). Returns 0/1, or -1 if not a bool. */
int schema_bool(const struct rnode *n);

#endif
