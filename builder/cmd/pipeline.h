/*
 * The one driver (pipeline.c): recipe -> fetch (+ trust) -> stage -> emit.
 * The commands are thin entry points over it: fetch, lock and mirror run
 * the recipe and fetch steps (then do their own output), stage runs up to
 * the stage, emit and build run everything (emit stages only when nothing
 * is staged). Each image of a run is one struct pipe_image, resolved once
 * (its warnings print once); today a run has one image.
 *
 * Ownership: the pipeline owns its images, and each image its plan, its
 * fetch items and its stage step; pipe_release frees all of it. Messages
 * go through msg.c; the steps print their own errors only where this
 * header says so.
 */
#ifndef WB_CMD_PIPELINE_H
#define WB_CMD_PIPELINE_H

#include <time.h>

#include "cmd/cmd.h"
#include "fetch/fetch.h"
#include "recipe/plan.h"
#include "stage/stage.h"

struct cache;

enum pipe_step {
	PIPE_FETCH = 1u << 0,   /* every artifact verified into the cache */
	PIPE_STAGE = 1u << 1,   /* OUT/<name>/tree, manifest.json, sbom.cdx.json */
	PIPE_EMIT = 1u << 2,    /* OUT/<name>/packer; stages first unless
				 * PIPE_STAGE_ALWAYS is off and a manifest is
				 * there */
	PIPE_STAGE_ALWAYS = 1u << 3,   /* with PIPE_EMIT: stage even when staged
					* (build); without: only when nothing is
					* staged (emit) */
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
	char *templates_dir;          /* owned: cmd_templates_dir() */
	char *cache_dir;              /* owned: cache_default_dir(), for images: */
	struct stage_opts o;
	struct pipe_test_hook th;
	int never;                    /* always stage (test hooks) */
	char *dir;                    /* owned: OUT/<name>, once gated */
	struct stage st;
	int begun;                    /* stage_begin succeeded: stage_end it */
	struct stage_result res;
	struct lockfile *lock;        /* owned: --locked with site signing, the
				       * lock its signed files must match */
};

struct pipe_image {
	const char *recipe;           /* as given: a path or a shipped name */
	struct plan plan;             /* resolved once, by pipe_resolve */
	int resolved;
	struct fetch_item *items;     /* plan.nartifacts of them once fetched
				       * (also after a failed fetch), or NULL */
	int staging;                  /* this image is staged (PIPE_STAGE, or
				       * emit with nothing staged yet) */
	int up_to_date;               /* the stage step found nothing changed */
	struct pipe_stage stage;      /* when STAGING */
};

struct pipeline {
	struct wb_run *run;
	unsigned steps;               /* enum pipe_step */
	int accept_new;               /* lock --accept-new */
	const struct sign_opts *emit_sign;   /* emit --sign-scripts key, or NULL */
	struct pipe_image *images;    /* owned */
	size_t nimages;
};

/* One image per recipe: today run->positional.v[0]. */
void pipe_init(struct pipeline *p, struct wb_run *run, unsigned steps);
void pipe_release(struct pipeline *p);

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
 * artifacts), for the plan's Windows build. */
int pipe_fetch_images(struct wb_run *run, const struct plan *plan, struct cache *c,
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
 * stamp, print the summary. Prints its errors; returns the exit code. */
int pipestage_finish(struct pipe_stage *s, const struct plan *plan,
		     const struct fetch_item *items);

#endif
