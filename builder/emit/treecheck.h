/*
 * Re-check a staged output (OUT/<name>/: manifest.json + tree/) against its
 * manifest, for `winbuild verify`: every file the manifest lists must exist
 * with its size and SHA-256, every directory it lists must exist, and
 * nothing else may be in the tree; every file the site signed
 * (stage/sitesign.h) must carry a site signature that verifies with the
 * site's roots, from the certificate the manifest names. Nothing here
 * prints.
 *
 * treecheck_node holds an image's system drive (mounted, or the engine
 * tier's simulated C:) to the same manifest: every file the node keeps
 * ("lifetime": "node") in place with its size and SHA-256, every build-only
 * file ("lifetime": "build") absent, removed by the step that used it
 * (docs/manifest.md), every listed directory there, and the drive's copy
 * of manifest.json (step 02 places it) the build's. A drive holds
 * everything else Windows has, so nothing is "extra" there.
 */
#ifndef WB_EMIT_TREECHECK_H
#define WB_EMIT_TREECHECK_H

#include <stddef.h>

#include "lib/err.h"
#include "lib/strlist.h"

enum treecheck_kind {
	TREECHECK_MODIFIED = 1,  /* size or SHA-256 differs, or not a file */
	TREECHECK_MISSING,       /* listed in the manifest, absent */
	TREECHECK_EXTRA,         /* in the tree, not in the manifest */
	TREECHECK_SIGNATURE,     /* its site signature does not verify */
	TREECHECK_LEFTOVER,      /* node: a build-only file still on the drive */
};

struct treecheck_problem {
	enum treecheck_kind kind;
	char *path;     /* relative to tree/, '/' separated; node: the Windows path */
	char *detail;   /* e.g. "sha256 abc..., manifest def..." or NULL */
};

struct treecheck {
	struct treecheck_problem *v;   /* sorted by path */
	size_t nr, alloc;
	size_t nfiles, ndirs;          /* what the manifest lists */
	size_t nsigned;                /* site signatures checked */
	struct wb_strlist absent;      /* node: the build-only files absent, as
					  they should be (Windows paths) */
};

/* Check DIR (holding manifest.json and tree/), the site signatures with
 * SITE_ROOTS (a PEM file). Returns 0 with RES filled (RES->nr problems),
 * or -1: WB_EIO unreadable, WB_ESTAGE bad manifest, WB_EUSAGE site-signed
 * files and no SITE_ROOTS. */
int treecheck_run(const char *dir, const char *site_roots, struct treecheck *res,
		  struct wb_err *e);
/* Check DRIVE (the root of an image's system drive, C:\) against DIR's
 * manifest.json. Returns and errors as treecheck_run; DRIVE not a
 * directory is WB_EUSAGE. */
int treecheck_node(const char *dir, const char *drive, const char *site_roots,
		   struct treecheck *res, struct wb_err *e);
void treecheck_release(struct treecheck *res);
const char *treecheck_kind_name(enum treecheck_kind k);

#endif
