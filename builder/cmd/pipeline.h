/*
 * The one driver (pipeline.c): recipe -> fetch (+ trust) -> stage -> emit.
 * The commands are thin entry points over it: fetch, lock and mirror run
 * the recipe and fetch steps (then do their own output), stage runs up to
 * the stage, emit and build run everything (emit stages only when nothing
 * is staged). Each image of a run is one struct pipe_image, resolved once
 * (its warnings print once). build and stage take several recipes or a
 * matrix file (matrix.c): the image matrix, one fetch over the union of
 * the images' artifacts (fetch groups below), then each image's stage and
 * emit into its own OUT/<name>, one lock each, a table and one --json
 * result with an entry per image (docs/matrix.md).
 *
 * Ownership: the pipeline owns its images, and each image its plan, its
 * fetch items and its stage step; pipe_release frees all of it. Messages
 * go through msg.c; the steps print their own errors only where this
 * header says so.
 *
 * @where the one driver (recipe, fetch, stage, emit) that `fetch`, `lock`,
 *   `mirror`, `stage`, `emit` and `build` run through -- cmd/ and the driver
 *   in docs/architecture.md
 */
#ifndef WB_CMD_PIPELINE_H
#define WB_CMD_PIPELINE_H

#include <signal.h>
#include <time.h>

#include "cmd/cmd.h"
#include "fetch/fetch.h"
#include "lib/buf.h"
#include "recipe/plan.h"
#include "stage/stage.h"

struct cache;
struct lockfile;
struct json_t;

enum pipe_step {
	PIPE_FETCH = 1u << 0,   /* every artifact verified into the cache */
	PIPE_STAGE = 1u << 1,   /* OUT/<name>/tree, manifest.json, sbom.cdx.json */
	PIPE_EMIT = 1u << 2,    /* OUT/<name>/packer; stages first unless
				 * PIPE_STAGE_ALWAYS is off and a manifest is
				 * there */
	PIPE_STAGE_ALWAYS = 1u << 3,   /* with PIPE_EMIT: stage even when staged
					* (build); without: only when nothing is
					* staged (emit) */
	PIPE_LOCK = 1u << 4,    /* a matrix without a stage (lock --matrix)
				 * writes each fetched image's lock; a stage
				 * writes it anyway */
};

/*
 * Test hooks (docs/stage.md), for the kill-safety and corruption tests:
 *   WINBUILD_TEST_KILL_AT=POINT[:N]  SIGKILL this process the Nth time
 *                                    (default 1st) the stage reaches POINT
 *   WINBUILD_TEST_RUN_AT=POINT:CMD   run CMD with sh -c the first time the
 *                                    stage reaches POINT
 */
struct pipe_test_hook {
	char kill_point[64], run_point[64];
	long kill_remaining;
	const char *run_cmd;
};

/* The stage step of one image (pipestage.c): the up-to-date gate, the
 * stage begun before the downloads and fed as each artifact is verified
 * (or its download teed), quarantine of an entry that no longer matches,
 * the SBOM and the stamp. */
struct pipe_stage {
	struct wb_run *run;
	const struct wb_strlist *extra_sets;   /* a matrix image's own --set
					 * pairs (after the run's), or NULL */
	char *templates_dir;          /* owned: cmd_templates_dir() */
	char *cache_dir;              /* owned: cache_default_dir(), for images: */
	const struct registry_image *pulled;   /* the image's images: as the
						* fetch verified them (the SBOM) */
	struct stage_opts o;
	struct pipe_test_hook th;
	int never;                    /* always stage (test hooks) */
	char *dir;                    /* owned: OUT/<name>, once gated */
	char **pins;                  /* owned: the lock pins the gate saw, per
				       * artifact (NULL: none), for the stamp */
	size_t npins;
	struct stage st;
	int begun;                    /* stage_begin succeeded: stage_end it */
	struct stage_result res;
	struct lockfile *lock;        /* owned: --locked with site signing, the
				       * lock its signed files must match */
	const char *lock_path;        /* the image's lock file (pipe_fetch) */
	int record_later;             /* a matrix: the caller records the
				       * site-signed digests after it wrote
				       * the image's lock */
	struct wb_err err;            /* pipestage_work's error */
	int finish_failed;            /* ... from stage_finish (quarantine) */
};

struct pipe_image {
	const char *recipe;           /* as given: a path or a shipped name */
	/* a matrix entry's own values (matrix.c), all empty outside one */
	char *recipe_owned;           /* RECIPE when the matrix file made it */
	char *suffix;                 /* appended to the recipe's image name */
	struct wb_strlist sets;       /* after the run's --set */
	struct wb_strlist builders;   /* instead of the run's --builder */
	char *where;                  /* "matrix.yaml:4:5" of the entry, or NULL */
	char *lock_path;              /* owned: <name>.lock in a matrix, else NULL
				       * (the run's) */
	struct lockfile *lf;          /* its lock, read by the fetch step */
	int borrowed;                 /* ITEMS are views of a fetch group's
				       * items (copied as each is done); only
				       * FD_OWNED fds are the image's */
	unsigned char *fd_owned;      /* per item, when BORROWED */
	int failed;                   /* its exit code once it failed, else 0 */
	int images_failed;            /* the exit code of its images: pull
				       * (pipe_group_fetch), else 0: a group's
				       * fetch error is charged to this image
				       * only */
	struct wb_strlist errors;     /* its "not built" lines (--json) */
	int worked, work_ret;         /* pipestage_work ran on its thread */
	int emitted, emit_ret;        /* the same for its Packer inputs */
	struct wb_err emit_err;
	int capturing;                /* in a step whose lines become ERRORS */
	double secs;                  /* run start to this image done */
	struct json_t *json;          /* its --json entry in a matrix */
	struct registry_image *pulled; /* plan.nimages: what the fetch pulled
					* (registry_image_release), or NULL */
	struct plan plan;             /* resolved once, by pipe_resolve */
	int resolved;
	struct fetch_item *items;     /* plan.nartifacts of them once fetched
				       * (also after a failed fetch), or NULL */
	int staging;                  /* this image is staged (PIPE_STAGE, or
				       * emit with nothing staged yet) */
	int up_to_date;               /* the stage step found nothing changed */
	int kept;                     /* a matrix kept its previous outputs */
	char *kept_out;               /* owned: OUT/<name> then, or NULL */
	char *prev_dir;               /* owned: OUT/.<name>.prev.<pid>, a copy
				       * of OUT/<name>'s entries, or NULL */
	struct buf prev_lock;         /* its lock's bytes, when HAD_LOCK */
	int had_lock;
	struct buf prev_stamp;        /* OUT/<name>/.stage-stamp's, when
				       * HAD_STAMP */
	int had_stamp;
	struct pipe_stage stage;      /* when STAGING */
};

/* One fetch over several images (fetch_group in pipeline.c): the union
 * of their artifacts, one item per distinct artifact (the same ref spec
 * and lock pin: the same URLs, verification and policy), each routed to
 * every (image, artifact index) that uses it. The images of one group
 * share the policy the engine applies (fetch_all takes one plan's). */
struct pipe_route {
	struct pipe_image *img;
	size_t k;                     /* the artifact's index in IMG's plan */
	size_t next;                  /* the item's next route, or SIZE_MAX */
	int tee;                      /* the download is teed to IMG's stage */
	int copied;                   /* IMG->items[K] holds the result */
};

struct pipe_group {
	struct fetch_item *items;     /* owned when several images share it */
	size_t n;
	struct pipe_route *routes;
	size_t nroutes, alloc;
	size_t *first;                /* per item: its first route */
	int shared;                   /* ITEMS are the group's own */
};

struct pipeline {
	struct wb_run *run;
	unsigned steps;               /* enum pipe_step */
	int accept_new;               /* lock --accept-new */
	const struct sign_opts *emit_sign;   /* emit --sign-scripts key, or NULL */
	struct pipe_image *images;    /* owned */
	size_t nimages;
	int matrix;                   /* several images, or a matrix file */
	struct pipe_group *groups;    /* the fetch groups of a matrix run */
	size_t ngroups;
	size_t downloaded, distinct;  /* of the matrix's union of artifacts */
	double t0;                    /* the matrix run's start */
};

/* One image per recipe of run->positional (or MATRIX's entries when the
 * caller loads a matrix file with pipe_matrix_load). */
void pipe_init(struct pipeline *p, struct wb_run *run, unsigned steps);
void pipe_release(struct pipeline *p);
/* build, stage: one image per recipe of run->positional (a matrix when
 * there are several). */
void pipe_add_recipes(struct pipeline *p);

/* build, stage: the images of the matrix file MATRIX, or one per recipe
 * given (matrix.c). 0, or the exit code after printing the error. */
int cmd_pipe_images(struct pipeline *p, const char *matrix);
/* matrix.c: the images of the matrix file PATH (docs/matrix.md), replacing
 * P's. 0, or -1 with E (WB_EUSAGE, "file:line:col: message"). */
int pipe_matrix_load(struct pipeline *p, const char *path, struct wb_err *e);

/* Resolve IMG's recipe with the run's -O, $WINBUILD_SET and --set (a
 * shipped name found in the data directory), print the plan's warnings,
 * and default run->lock_path to "<image name>.lock". 0, or -1 with E. */
int pipe_resolve(struct pipeline *p, struct pipe_image *img, struct wb_err *e);

/* Fetch and verify every artifact of IMG (resolved) into the cache: the
 * lock file read (and --locked checked), the cache opened, the progress
 * shown, SIGINT/SIGTERM turned into exit 130. With PIPE_STAGE the stage
 * step gates it when IMG->staging (1: up to date, nothing fetched, items
 * without paths) and begins before the first transfer. 0, 1, or -1 with E (IMG->items then
 * holds each item's result, or is NULL when nothing was fetched). */
int pipe_fetch(struct pipeline *p, struct pipe_image *img, struct wb_err *e);
/* pipeimages.c: pull PLAN's images: into the open cache C (after the
 * artifacts), for the plan's Windows build, each with the cosign signature
 * its plan requires verified. A needs_pin image takes the digest of its
 * entry in the lock LF (NULL: none) into PLAN; without one, ACCEPT_NEW
 * (lock --accept-new) resolves its tag. Under --locked, the manifest for
 * the build must be the lock's. OUT (PLAN->nimages of them) gets what was
 * pulled (the caller releases each with registry_image_release). */
struct registry_image;
struct lockfile;
struct ocisig_policy;
struct sigstore_root;
/* The cosign policy C (images.<key>.cosign, or image pull's options) in
 * POL, its trusted root (C's, or the shipped one) in ROOT and key in KEY
 * (the caller releases both): 1, or 0 when C requires no signature, or -1
 * with E prefixed by WHAT. */
int pipe_image_cosign_policy(const char *what, const struct plan_image_cosign *c,
			     struct ocisig_policy *pol, struct sigstore_root *root,
			     struct buf *key, struct wb_err *e);
/* The lock's "images" object (fetch/lockfile.h) for what PULLED (NULL: none)
 * holds of PLAN's images. A new object. */
struct json_t *pipe_images_lock_json(const struct plan *plan,
				     const struct registry_image *pulled);
/* -1 with E (the recipe line, the image, its needs_pin reason) when IM has
 * no digest, LI (its lock entry, or NULL) none either, and ACCEPT_NEW
 * cannot pin its tag; else 0. */
struct lock_image;
int pipe_image_unpinned(const struct plan_image *im, const struct lock_image *li,
			int accept_new, struct wb_err *e);
/* fetch and lock with several RECIPEs or --matrix FILE (MATRIX, or NULL):
 * the matrix driver with STEPS (PIPE_FETCH, and PIPE_LOCK for lock),
 * ACCEPT_NEW for lock --accept-new; USAGE after a usage error. The exit
 * code (the worst image's). cmd/pipematrix.c. */
int pipe_matrix_command(struct wb_run *run, const char *matrix, unsigned steps,
			int accept_new, const char *usage);
/* Print on stdout (stderr under --json) each pin IMG's fetch made under
 * --accept-new (artifacts and images), to review; their names ("images.KEY"
 * for an image) in a new JSON array. */
struct json_t *pipe_report_pinned(struct wb_run *run, const struct pipe_image *img);
int pipe_fetch_images(struct wb_run *run, struct plan *plan, const struct lockfile *lf,
		      int accept_new, struct cache *c, struct registry_image *out,
		      struct wb_err *e);
/* After pipe_fetch failed: print what failed (E, or each failed item's
 * message), return the exit code. */
int pipe_fetch_failed(struct pipeline *p, const struct pipe_image *img,
		      const struct wb_err *e);
/* Print each failed item's message; E's message when no item failed (an
 * interrupt, an engine error). */
void pipe_fetch_report(const struct pipe_image *img, const struct wb_err *e);

/* stage, emit, build: every step of P->steps for every image; prints its
 * errors and the summary lines, fills --json; returns the exit code. */
int pipe_run(struct pipeline *p);

/* Write OUT/<name>/packer for IMG's plan (its builders already narrowed by
 * --builder) from the staged manifest, signing the scripts with
 * P->emit_sign unless NULL. Prints errors, returns the exit code. */
int pipe_emit(struct pipeline *p, const struct pipe_image *img);

/* The pieces of the steps the matrix run (pipematrix.c) puts together
 * its own way; pipe_fetch and pipe_run use them for one image. */
int pipe_open_cache(struct wb_run *run, struct cache *c, struct wb_err *e);
/* Read IMG's lock (kept in IMG->lf: its pins until the fetch is done). */
int pipe_image_read_lock(struct pipeline *p, struct pipe_image *img, struct wb_err *e);
/* IMG's items, and (staging) its gate and stage begun in the open cache C:
 * 1 up to date, 0 to fetch, -1 with E. */
int pipe_image_prepare(struct pipeline *p, struct pipe_image *img, struct cache *c,
		       struct wb_err *e);
struct pipe_group *pipe_group_new(struct pipeline *p);
/* G over its N images IMGS (one: its own items; several: their union). */
void pipe_group_build(struct pipe_group *g, struct pipe_image **imgs, size_t n);
/* fetch_all over G with PLAN's policy; every route gets its result. */
int pipe_group_fetch(struct pipeline *p, struct pipe_group *g, const struct plan *plan,
		     struct cache *c, struct wb_err *e);
/* Whether P's steps stage IMG (emit: only when nothing is staged). */
int pipe_needs_stage(const struct pipeline *p, const struct pipe_image *img);
/* pipe_emit in two halves: the Packer inputs written, printing nothing (0,
 * or -1 with E; under pipe_catch_interrupts), then the error or the
 * --json field and the paths (WORKED: the first half's result). */
int pipe_emit_work(struct pipeline *p, const struct pipe_image *img, struct wb_err *e);
int pipe_emit_report(struct pipeline *p, const struct pipe_image *img, int worked,
		     const struct wb_err *e);
/* SIGINT/SIGTERM only set the flag the fetch and emit watch (exit 130). */
void pipe_catch_interrupts(struct sigaction *old_int, struct sigaction *old_term);
void pipe_restore_interrupts(const struct sigaction *old_int,
			     const struct sigaction *old_term);

/* pipematrix.c: stage, emit, build of P: the matrix run when P has
 * several images (or a matrix file), else pipe_run. The exit code. */
int cmd_pipe_run(struct pipeline *p);

/* pipestage.c: the stage step, driven by pipe_fetch and pipe_run. */
int pipestage_init(struct pipe_stage *s, struct wb_run *run, struct wb_err *e);
void pipestage_release(struct pipe_stage *s);
/* 1 when OUT/<name> holds a stamp for exactly these inputs (the cache C
 * gives the refs' digests); 0: stage (S->dir is set either way). */
int pipestage_gate(struct pipe_stage *s, const struct plan *plan,
		   const struct fetch_item *items, struct cache *c);
/* Not up to date: lock OUT/<name> and make the temp tree. -1 with E. */
int pipestage_start(struct pipe_stage *s, const struct plan *plan, struct wb_err *e);
/* Artifact I's download begins: a file for a copy of its bytes, or -1. */
int pipestage_tee_open(struct pipe_stage *s, size_t i);
/* Artifact I (ITEM) is verified: prepare it now, while others download. */
void pipestage_feed(struct pipe_stage *s, size_t i, const struct fetch_item *item);
/* Every artifact fetched: feed the rest, finish the tree (quarantine the
 * cache entry of an artifact whose bytes changed), write the SBOM and the
 * stamp, print the summary. Prints its errors; returns the exit code.
 * pipestage_work() then pipestage_report(). */
int pipestage_finish(struct pipe_stage *s, const struct plan *plan,
		     const struct fetch_item *items);
/* After a stage that site-signed files, not --locked: their digests into
 * the lock file's "site_signed" (fetch/lockfile.h) at S->lock_path, when
 * it exists; `lock` itself never signs. Prints its errors; the exit code. */
int pipestage_record_site_signed(struct pipe_stage *s, const struct plan *plan);
/* The work of pipestage_finish, printing nothing and touching nothing
 * the run shares (a matrix runs one per image on threads of its own):
 * 0, or -1 with S->err. */
int pipestage_work(struct pipe_stage *s, const struct plan *plan,
		   const struct fetch_item *items);
/* The rest, on the run's thread, given WORKED (pipestage_work's result):
 * the error and the quarantine, or the --json fields and the summary. */
int pipestage_report(struct pipe_stage *s, const struct plan *plan,
		     const struct fetch_item *items, int worked);

#endif
