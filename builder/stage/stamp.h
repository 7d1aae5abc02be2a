/*
 * The up-to-date check of a stage (docs/stage.md, "Doing nothing when
 * nothing changed"). After a complete stage, OUT/<name>/.stage-stamp holds
 *
 *   winbuild-stage-stamp 1
 *   key <sha256 of every input of the stage>
 *   tree <sha256 of the tree's metadata: path, type, mode, size, inode,
 *         ctime, mtime of every entry of tree/ and of manifest.json>
 *   prep <artifact> <sha256 of what its files in the tree depend on>
 *   ...
 *
 * The next stage with the same key and an untouched tree (same
 * fingerprint: any write, chmod, touch, rename, add or remove changes a
 * ctime, an inode or the listing) does nothing. A stage with another key
 * but an untouched tree reuses the files of every artifact whose prep key
 * is unchanged ("Re-staging only what changed"). Nothing here prints.
 */
#ifndef WB_STAMP_H
#define WB_STAMP_H

#include <time.h>

#include "lib/err.h"
#include "lib/strlist.h"
#include "recipe/plan.h"
#include "trust/sign.h"

struct stamp_inputs {
	const struct plan *plan;
	const struct wb_strlist *sets;   /* --set pairs, in order */
	const char *env_set;             /* WINBUILD_SET, or NULL */
	const char *const *ref_specs;    /* per artifact: fetch_ref_spec() */
	const char *const *sha256s;      /* per artifact: the verified digest */
	const char *templates_dir;
	time_t epoch;                    /* SOURCE_DATE_EPOCH */
	const struct sign_opts *sign;    /* the site's key (site_signing), or NULL */
};

/* OUT: 64 hex. Hashes the winbuild version and binary, the contents of
 * every file the plan was loaded from (plan->interned: recipe, includes,
 * components, overrides) and of every file it names (Authenticode roots of
 * every layer and component, minisign key files), the --set/WINBUILD_SET
 * pairs, each artifact's ref spec and digest, the contents of every
 * template (an error past 64 directories deep), the site's signing key
 * and roots when the plan has site_signing, the epoch. */
int stamp_key(const struct stamp_inputs *in, char out[65], struct wb_err *e);

/* 1 when DIR (OUT/<name>) holds a stamp with KEY, no temp dir of another
 * run, and a tree whose fingerprint matches; 0 otherwise; -1 on error. */
int stamp_check(const char *dir, const char *key, struct wb_err *e);

/* 1 when DIR's stamp still describes its tree (any key): PREPS gets its
 * "ARTIFACT PREPKEY" lines. 0 otherwise, -1 on a read error. Call under the
 * stage lock (tree.h), before anything changes. */
int stamp_reusable(const char *dir, struct wb_strlist *preps, struct wb_err *e);

/* The prep key of artifact A with the verified digest SHA256: the winbuild
 * binary, name, component, digest, action, destination, strip, include,
 * limits and EPOCH. Equal keys give the same files with the same modes and
 * mtimes in the tree. OUT: 64 hex. */
int stamp_prep_key(const struct plan_artifact *a, const char *sha256,
		   time_t epoch, char out[65], struct wb_err *e);

/* Write DIR/.stage-stamp for KEY and the tree as it is now, with PREPS
 * ("ARTIFACT PREPKEY" lines; may be NULL). */
int stamp_write(const char *dir, const char *key, const struct wb_strlist *preps,
		struct wb_err *e);

/* Remove DIR/.stage-stamp (before a stage changes anything). */
void stamp_remove(const char *dir);

#endif
