/*
 * winbuild stage: build OUT/<name>/tree (the Windows system drive) and
 * OUT/<name>/manifest.json from verified cache entries (docs/stage.md).
 *
 * The stage knows nothing of fetching: the caller (cmd/stage.c) fetches
 * and hands over, per plan artifact, the cache entry and its verified
 * digest. Every byte is re-hashed while it is read here; a mismatch fails
 * with WB_EVERIFY and names the artifact in RES->bad_artifact so the caller
 * can quarantine the entry. Nothing here prints.
 */
#ifndef WB_STAGE_H
#define WB_STAGE_H

#include <stddef.h>
#include <time.h>

#include "lib/err.h"
#include "recipe/plan.h"
#include "stage/tree.h"
#include "trust/sign.h"

struct lockfile;
struct json_t;

/* One plan artifact's verified bytes (parallel to plan->artifacts). */
struct stage_input {
	const char *path;          /* cache entry (for messages) */
	int fd;                    /* open on the verified file (read from
				    * here, never from PATH, which a cache
				    * writer may have swapped since); -1:
				    * PATH is opened, without following a
				    * link, and hashed */
	const char *sha256;        /* verified digest, 64 hex */
	unsigned long long size;
	const char *url;           /* the URL the bytes came from */
	int fresh;                 /* FD's bytes were hashed by this run
				    * (fetch_item.hashed: the file this
				    * process wrote as the bytes arrived, or
				    * a hit fetch re-hashed whose inode only
				    * winbuild's user can write): not hashed
				    * again, copied or unpacked. Any other
				    * hit (an entry some other user may have
				    * planted and can still write) is hashed
				    * while it is read, and checked before any
				    * file becomes visible */
	int teed;                  /* fresh, and every byte also went to the
				    * file stage_tee_open gave for it */
};

struct stage_opts {
	const char *out_dir;       /* OUT */
	const char *templates_dir; /* recipes/templates */
	time_t source_date_epoch;  /* every mtime in the tree */
	/* the site's code-signing key for the recipe's site_signing
	 * (stage/sitesign.h); NULL: none given */
	const struct sign_opts *sign;
	int sign_strict;           /* a key without site_signing is an error */
	/* --locked: the lock file read (LOCK_PATH), whose "site_signed"
	 * entries the signed files must match (sitesign_check_locked) before
	 * the tree is final; NULL: not locked */
	const struct lockfile *locked;
	const char *lock_path;
	const char *cache_dir;     /* the cache the plan's images: are read
				    * from (stage/oci.h); NULL: none */
	/* Test hook, called at named points: "begin", "artifact",
	 * "sign" (upstream checks done, before site signing),
	 * "generated", "before-swap", "after-swap", "done". May be NULL. */
	tree_hook_fn *hook;
	void *hook_ctx;
};

struct stage_result {
	const struct plan_artifact *bad_artifact; /* on WB_EVERIFY, or NULL */
	size_t nfiles, ndirs, ngenerated;
	size_t nreused;            /* artifacts whose files were reused from
				    * the previous tree (docs/stage.md) */
	struct wb_strlist preps;   /* "ARTIFACT PREPKEY" of each artifact, for
				    * the stamp (stamp_write) */
	char *tree_dir;            /* OUT/<name>/tree (new string) */
	char *manifest_path;       /* OUT/<name>/manifest.json (new string) */
	struct json_t *images;     /* manifest.json's "images" (stage_images) */
};

/*
 * A stage in steps, so the slow part overlaps the downloads:
 *
 *   stage_begin()   lock OUT/<name>, make the temp dir and the component
 *                   directories, start the preparing thread
 *   stage_feed()    artifact I's bytes are verified: copy or unpack them
 *                   into its scratch dir on that thread (tree.h), at once
 *   stage_finish()  in plan order, wait for each artifact and move it into
 *                   the tree; Authenticode, generated files, swap, manifest
 *   stage_end()     stop the thread, remove what is left; always call it
 *
 * Artifacts not fed by stage_finish() are prepared then, on its thread.
 * stage_run() does all four for inputs that are all ready.
 */
struct stage_worker;

struct stage {
	const struct plan *plan;
	const struct stage_opts *o;
	struct tree t;
	struct stage_worker *w;
};

int stage_begin(struct stage *s, const struct plan *plan,
		const struct stage_opts *o, struct wb_err *e);
/* IN (copied; its strings must outlive the stage) is plan artifact I's
 * verified bytes. Call from the thread that calls stage_finish. */
void stage_feed(struct stage *s, size_t i, const struct stage_input *in);
/* As plan artifact I's download begins (before stage_feed): a file for a
 * second copy of its bytes as they arrive, its single file in the scratch
 * dir, so a fresh copy needs no copy once verified (stage_input.teed);
 * -1 when the artifact is unpacked or nothing can be opened. The caller
 * closes the descriptor. Any thread. */
int stage_tee_open(struct stage *s, size_t i);
int stage_finish(struct stage *s, struct stage_result *res, struct wb_err *e);
void stage_end(struct stage *s);

int stage_run(const struct plan *plan, const struct stage_input *in,
	      const struct stage_opts *o, struct stage_result *res,
	      struct wb_err *e);
void stage_result_release(struct stage_result *res);

/* Where stage_generate puts each provider's cloudbase-init conf pair
 * (tree path; <provider>/<file> below it), for step 03 to pick from. */
#define STAGE_CBI_CONF_DIR "ProgramData/winbuild/cloudbase-init"

/* The generated files (generate.c): containerd config.toml, cloudbase-init
 * conf files, CNI conflist, kubelet service helper, rendered from the
 * templates in TEMPLATES_DIR into T. Errors: WB_EUSAGE (template, value),
 * WB_ESTAGE (collision), WB_EIO. */
int stage_generate(struct tree *t, const struct plan *plan,
		   const char *templates_dir, struct wb_err *e);

/* Write OUT/<name>/manifest.json (manifest.c, docs/manifest.md), with
 * IMAGES (stage_images' entries; NULL or empty: no "images"). */
int stage_write_manifest(const char *path, const struct plan *plan,
			 const struct stage_input *in, const struct tree *t,
			 struct json_t *images, time_t epoch, struct wb_err *e);

#endif
