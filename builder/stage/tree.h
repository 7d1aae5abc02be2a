/*
 * The staged tree under construction: OUT/<name>/tree, built in a temp dir
 * beside it and swapped into place only when complete (docs/stage.md).
 *
 *   OUT/<name>/.stage.lock          flock, held for the whole run
 *   OUT/<name>/.tree.tmp.<pid>/     everything of one run:
 *       tree/                       the new tree
 *       unpack/<artifact>/          scratch for one archive
 *   OUT/<name>/tree/                the previous (then the new) tree
 *
 * Every path placed in the tree is claimed first: two owners (artifacts or
 * generated files) placing the same path, or paths equal under Windows'
 * case folding, or a file where another owner needs a directory, are
 * refused with both owners named (WB_ESTAGE). Nothing here prints.
 */
#ifndef WB_TREE_H
#define WB_TREE_H

#include <stddef.h>
#include <time.h>

#include "lib/err.h"
#include "lib/strlist.h"
#include "stage/extract.h"

struct authenticode_result;

struct tree_file {
	char *path;                 /* tree path, '/' separators */
	unsigned long long size;
	char sha256[65];
	const char *artifact;       /* borrowed; NULL for a generated file */
	const char *component;      /* borrowed */
	struct authenticode_result *authenticode; /* owned; set when the
					 file's Authenticode was checked */
};

struct tree {
	char *dir;                  /* OUT/<name> */
	char *tmp;                  /* OUT/<name>/.tree.tmp.<pid> */
	char *root;                 /* tmp/tree: the tree being built */
	char *final;                /* OUT/<name>/tree */
	int lock_fd;
	time_t mtime;               /* every file and directory gets this */
	void *claims;               /* tsearch root of struct claim */
	struct tree_file *files;    /* in claim order; tree_sort_files sorts */
	size_t nfiles, alloc_files;
	struct wb_strlist dirs;     /* directories created by tree_mkdir */
};

#define TREE_INIT { NULL, NULL, NULL, NULL, -1, 0, NULL, NULL, 0, 0, WB_STRLIST_INIT }

/*
 * Lock OUT/<NAME>, remove temp dirs of killed runs, create a fresh temp
 * dir. Errors are WB_EIO. Call tree_release() either way.
 */
int tree_begin(struct tree *t, const char *out, const char *name, time_t mtime,
	       struct wb_err *e);

/* Copy the cache file SRC to the tree path PATH, hashing in the same pass;
 * WB_EVERIFY when the bytes do not hash to EXPECT_SHA256 (64 hex). */
int tree_copy_verified(struct tree *t, const char *src, const char *expect_sha256,
		       const char *path, const char *artifact,
		       const char *component, struct wb_err *e);

/* Copy SRC, which this process verified as EXPECT_SHA256 moments ago, to
 * PATH without reading it in user space: a reflink (FICLONE) where the
 * filesystem shares blocks, else copy_file_range(2), else read/write. Never
 * a hard link: the tree's modes and mtimes would change the cache entry. */
int tree_copy_fresh(struct tree *t, const char *src, const char *expect_sha256,
		    const char *path, const char *artifact, const char *component,
		    struct wb_err *e);

/* Extract ARCHIVE (verified against EXPECT_SHA256 in the same pass) with
 * SPEC into the tree directory DEST (tree path, "" = root). */
int tree_unpack(struct tree *t, const char *archive, const char *expect_sha256,
		const struct extract_spec *spec, const char *dest,
		const char *artifact, const char *component, struct wb_err *e);

/* Write a generated file (artifact NULL) at PATH. */
int tree_write(struct tree *t, const char *path, const void *data, size_t len,
	       const char *component, struct wb_err *e);

/* Create the directory PATH (and its parents) for COMPONENT. */
int tree_mkdir(struct tree *t, const char *path, const char *component,
	       struct wb_err *e);

/* Called at named points of tree_commit ("before-swap", "after-swap"). */
typedef void tree_hook_fn(void *ctx, const char *point);

/*
 * Normalise modes and mtimes (sorted walk), then swap the new tree into
 * OUT/<name>/tree (RENAME_EXCHANGE with an old tree, which is then removed;
 * a plain rename otherwise). Sorts t->files by path. Errors: WB_EIO.
 */
int tree_commit(struct tree *t, tree_hook_fn *hook, void *hook_ctx,
		struct wb_err *e);

/* Remove the temp dir (if still there), unlock, free. */
void tree_release(struct tree *t);

/* File mode winbuild gives PATH: 0755 for .exe/.dll/.ps1/.cmd/.bat, else
 * 0644. */
unsigned tree_file_mode(const char *path);

#endif
