/*
 * Site signing (docs/authenticode.md, "Site signing"): the site's own
 * Authenticode signature on the staged .exe, .dll and .msi files a
 * recipe's `site_signing:` selects, for clusters that enforce App Control
 * (WDAC) or AppLocker with the site's publisher.
 *
 * It runs in the stage after every artifact was verified and placed in the
 * run's private temp tree and after the upstream Authenticode check
 * (check_authenticode() in stage/stage.c), on those private files only:
 * each is signed by osslsigncode into a new file that replaces it by
 * rename (trust/sign.h), so no cache entry, previous tree or hard link
 * ever sees the signed bytes. Each signed file is then verified against
 * the site's roots and publishers before the tree can become final.
 */
#ifndef WB_STAGE_SITESIGN_H
#define WB_STAGE_SITESIGN_H

#include <time.h>

#include "fetch/lockfile.h"
#include "lib/err.h"
#include "recipe/plan.h"
#include "stage/manifest.h"
#include "stage/tree.h"
#include "trust/sign.h"

/* Before anything is staged: a plan with site_signing needs a key SO, and
 * a key given to stage (REQUIRE_USE) needs a site_signing to sign for.
 * Errors are WB_EUSAGE naming what to add or drop. */
int sitesign_check(const struct plan *plan, const struct sign_opts *so,
		   int require_use, struct wb_err *e);

/* 1 when some file of artifact A may be signed (its component is
 * selected): its files are then never reused from a previous tree. */
int sitesign_artifact(const struct plan *plan, const struct plan_artifact *a);

/*
 * Sign every selected artifact file of T with SO at signing time EPOCH:
 * each file's bytes must still have the digest the stage recorded, are
 * signed, re-hashed and verified with the site's roots and publishers
 * (require: signed). On success each signed file's SHA256 and SIZE are the
 * signed bytes', UPSTREAM_SHA256 the verified upstream digest, and
 * SITE_SIGNATURE the check's result. Errors: WB_EVERIFY (changed bytes, a
 * signed file that does not verify), WB_EIO (osslsigncode failed), each
 * naming the artifact and the file.
 */
int sitesign_tree(struct tree *t, const struct plan *plan,
		  const struct sign_opts *so, time_t epoch, struct wb_err *e);

/*
 * --locked (fetch/lockfile.h, "site_signed"): every file of T the site
 * signed must be in LF (read from LOCK_PATH) with the same upstream digest
 * and signer certificate, and, unless the lock says it was timestamped,
 * the same signed digest; and every entry of LF must be a file signed
 * now. WB_EVERIFY naming the file, the expected and the actual digest.
 */
int sitesign_check_locked(const struct tree *t, const struct lockfile *lf,
			  const char *lock_path, struct wb_err *e);

/* The same check for the N files NOW says were signed (the gate holds a
 * previous stage's manifest to the lock with it: sitesign_manifest_entries). */
int sitesign_check_locked_set(const struct lock_signed *now, size_t n,
			      const struct lockfile *lf, const char *lock_path,
			      struct wb_err *e);

/* The site-signed files a staged manifest M records, as lock entries (*N
 * of them; the strings are M's, free only the array). */
struct lock_signed *sitesign_manifest_entries(const struct staged_manifest *m, size_t *n);

/* The lock's record of T's site-signed files (*N of them, in T's order;
 * the strings are T's): for lockfile_set_site_signed. TIMESTAMPED: the
 * signatures carry a timestamp (not reproducible). Free the array only. */
struct lock_signed *sitesign_lock_entries(const struct tree *t, int timestamped,
					  size_t *n);

#endif
