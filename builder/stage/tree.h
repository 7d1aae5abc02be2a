/*
 * The staged tree under construction: OUT/<name>/tree, built in a temp dir
 * beside it and swapped into place only when complete (docs/stage.md).
 *
 *   OUT/<name>/.stage.lock          flock, held for the whole run
 *   OUT/<name>/.tree.tmp.<pid>/     everything of one run:
 *       tree/                       the new tree
 *       prep/<artifact>/            one artifact's files, prepared before
 *                                   they are moved into tree/
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
#include "lib/pathtab.h"
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
	/* set when the site signed the file (stage/sitesign.c): the digest
	 * of the upstream bytes (SHA256 is then the signed file's) and the
	 * site signature as verified after signing */
	char upstream_sha256[65];
	struct authenticode_result *site_signature;  /* owned */
};

struct tree {
	char *dir;                  /* OUT/<name> */
	char *tmp;                  /* OUT/<name>/.tree.tmp.<pid> */
	char *root;                 /* tmp/tree: the tree being built */
	char *final;                /* OUT/<name>/tree */
	int lock_fd;
	time_t mtime;               /* every file and directory gets this */
	struct pathtab claims;      /* every claimed path, by owner; 8.3
				       alias keys too (tree.c) */
	struct tree_file *files;    /* in claim order; tree_sort_files sorts */
	size_t nfiles, alloc_files;
	struct wb_strlist dirs;     /* directories created by tree_mkdir */
};

#define TREE_INIT { NULL, NULL, NULL, NULL, -1, 0, PATHTAB_INIT, NULL, 0, 0, \
		    WB_STRLIST_INIT }

/*
 * Lock OUT/<NAME>, remove temp dirs of killed runs, create a fresh temp
 * dir. Errors are WB_EIO. Call tree_release() either way.
 */
int tree_begin(struct tree *t, const char *out, const char *name, time_t mtime,
	       struct wb_err *e);

/*
 * An artifact's files, prepared outside the tree, then adopted into it.
 *
 * Preparing (copying a cache entry, unpacking an archive) is the slow part
 * and touches nothing of struct tree: it writes below SCRATCH only
 * (tree_scratch(), one per artifact), so stage.c prepares artifacts on a
 * worker thread while others still download. Adopting claims each file's
 * tree path, moves it in and records it: cheap, on the stage's thread, in
 * plan order, so collisions are reported alike whatever finished first.
 */
struct tree_piece {
	char *scratch;                /* the artifact's scratch dir */
	struct extract_result files;  /* paths relative to SCRATCH */
	int single;                   /* one file, adopted at DEST itself */
};

/* TMP/prep/<ARTIFACT> of T (new string). */
char *tree_scratch(const struct tree *t, const char *artifact);

/* Copy the cache file open as SRC_FD (-1: open SRC, never through a
 * link; SRC names it in messages) to SCRATCH/NAME as a single-file piece.
 * FRESH: SRC_FD is the file this process wrote and verified as
 * EXPECT_SHA256 (64 hex) moments ago, so the copy is not hashed (a reflink (FICLONE) where the filesystem shares
 * blocks, else a bulk copy, lib/bulk.h); never a hard link: the tree's
 * modes and mtimes would change the cache entry.
 * Otherwise the bytes are hashed while copied, and WB_EVERIFY when they
 * are not EXPECT_SHA256. Release P either way. */
int tree_prepare_copy(const char *scratch, int src_fd, const char *src,
		      const char *expect_sha256, int fresh, const char *name,
		      struct tree_piece *p, struct wb_err *e);

/* SCRATCH/NAME, created for the second copy of a download's bytes as they
 * arrive (fetch_opts.tee_open): an fd open for writing, or -1. */
int tree_tee_open(const char *scratch, const char *name);

/* The tee file SCRATCH/NAME as a single-file piece: it holds the SIZE
 * bytes this process verified as SHA256 (64 hex) while they arrived, so
 * nothing is copied; WB_EIO when it is not a regular file of SIZE bytes.
 * Release P either way. */
int tree_prepare_teed(const char *scratch, const char *sha256,
		      unsigned long long size, const char *name,
		      struct tree_piece *p, struct wb_err *e);

/* Remove the tee file SCRATCH/NAME that will not be used (no error when
 * there is none). */
void tree_tee_discard(const char *scratch, const char *name);

/* Extract the archive open as ARCHIVE_FD (-1: open ARCHIVE; it names it
 * in messages) with SPEC into SCRATCH, verifying it against EXPECT_SHA256
 * in the same pass; NULL when ARCHIVE_FD is the file this process wrote and
 * verified moments ago (a fresh download: hashing it again would be a
 * second pass over every byte). Release P either way. */
int tree_prepare_unpack(const char *scratch, int archive_fd, const char *archive,
			const char *expect_sha256, const struct extract_spec *spec,
			struct tree_piece *p, struct wb_err *e);

/* Reuse the files OLD (paths relative to DEST, or the basename of DEST
 * when SINGLE) of the previous tree OLD_ROOT, which the stage stamp vouches
 * for (stamp.h): hard links into SCRATCH, no byte read or written. The
 * previous tree is swapped out and removed at commit, so the new tree ends
 * up the only owner of these inodes; modes and mtimes come out the same
 * (the prep key holds the epoch). Release P either way. */
int tree_prepare_reuse(const char *scratch, const char *old_root,
		       const char *dest, const struct extract_result *old,
		       int single, struct tree_piece *p, struct wb_err *e);

/* Claim the tree paths of P's files below DEST (tree path, "" = root; a
 * single file is placed at DEST), move them into T and record them. */
int tree_adopt(struct tree *t, struct tree_piece *p, const char *dest,
	       const char *artifact, const char *component, struct wb_err *e);

void tree_piece_release(struct tree_piece *p);

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
