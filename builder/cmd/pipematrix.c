/*
 * The image matrix's run (pipeline.h, docs/matrix.md): every image
 * resolved (an error, or two images of one name, stops the run before
 * anything is fetched), one fetch per group of images sharing a policy
 * over the union of their artifacts (pipeline.c's fetch groups), then
 * each image's stage and Packer inputs on a thread of its own, their
 * messages, locks and --json entries one image at a time, and the table.
 * An image that fails is named and leaves the others to complete; the
 * exit code is the worst.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cmd/pipeline.h"
#include "fetch/cache.h"
#include "fetch/lockfile.h"
#include "lib/buf.h"
#include "lib/fs.h"

static double now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* "image 'NAME' (RECIPE, matrix.yaml:4:5)" for messages, in BUF. */
static const char *image_label(const struct pipe_image *img, char *buf, size_t len)
{
	if (img->resolved)
		snprintf(buf, len, "image '%s' (%s%s%s)", img->plan.name, img->recipe,
			 img->where ? ", " : "", img->where ? img->where : "");
	else
		snprintf(buf, len, "the image of %s%s%s", img->recipe, img->where ? " at " : "",
			 img->where ? img->where : "");
	return buf;
}

/* The worst of two exit codes: an interrupt, then the lowest nonzero
 * (verification 1 before usage 2 before network 3 ...), as fetch_all
 * ranks its items. */
static int worse(int a, int b)
{
	if (a == WB_EINTR || b == WB_EINTR)
		return WB_EINTR;
	if (!a || !b)
		return a ? a : b;
	return a < b ? a : b;
}

/* The policy fetch_all applies to every item (the engine reads the plan's
 * policy and mirror_only only): images that agree on it share a fetch. */
static int same_fetch_policy(const struct plan *a, const struct plan *b)
{
	return a->policy.require_signature == b->policy.require_signature &&
	       a->policy.allow_http == b->policy.allow_http &&
	       a->policy.forbid_checksum_urls == b->policy.forbid_checksum_urls &&
	       a->policy.allow_unverified_iso == b->policy.allow_unverified_iso &&
	       a->mirror_only == b->mirror_only;
}

/* Mark IMG failed with CODE and say so after the errors above. */
static void image_fail(struct pipe_image *img, int code, const char *what)
{
	char label[512], *msg;

	img->failed = code ? code : WB_EIO;
	msg = xasprintf("%s not built: %s (exit %d)", image_label(img, label, sizeof(label)),
			what, img->failed);
	cmd_errorf("%s", msg);
	if (!img->capturing)   /* else image_step keeps every line */
		wb_strlist_push(&img->errors, msg);
	free(msg);
}

/* ---- each image atomic (issue 41, docs/matrix.md) ------------------------
 *
 * An image's stage swaps its tree in and writes its manifest and lock
 * before its Packer inputs are written (emit reads the staged manifest),
 * so an image that fails later would leave a new tree and lock beside old
 * Packer inputs. Before its stage each image keeps its previous outputs:
 * OUT/<name>'s entries as hard links (its stage reuses the old tree, so
 * they cannot simply move aside; the stage and emit replace files by
 * rename, never in place) and its lock's bytes. An image that fails gets
 * them back; one that succeeds drops them. */

/* Remove IMG's outputs in OUT/<name>: not its dot entries (the flock
 * files ".lock" and ".stage.lock", temp dirs; the stamp is image_settle's),
 * which fs_copy_tree does not keep either. */
static int clear_outputs(const char *dir, struct wb_err *e)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int ret = 0;

	if (!d)
		return errno == ENOENT ? 0 : wb_error(e, WB_EIO, "cannot read '%s': %s", dir,
						      strerror(errno));
	while (ret == 0 && (de = readdir(d))) {
		char *path;
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		path = fs_join(dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			ret = fs_remove_below(dir, path, e);
		else if (unlink(path) < 0 && errno != ENOENT)
			ret = wb_error(e, WB_EIO, "cannot remove '%s': %s", path, strerror(errno));
		free(path);
	}
	closedir(d);
	return ret;
}

/* Drop what IMG kept: nothing of it will be given back. */
static void image_unkeep(struct pipe_image *img)
{
	if (img->prev_dir) {
		struct wb_err ignore = WB_ERR_INIT;
		char *parent = fs_dirname(img->kept_out);

		fs_remove_below(parent, img->prev_dir, &ignore);
		free(parent);
	}
	free(img->prev_dir);
	img->prev_dir = NULL;
	free(img->kept_out);
	img->kept_out = NULL;
	buf_release(&img->prev_lock);
	buf_release(&img->prev_stamp);
	img->kept = 0;
}

/* Keep IMG's lock and stage stamp as they are before its stage begins
 * (which removes the stamp: stage/stage.c's load_reuse).
 * @where a matrix image atomic: its previous outputs and lock kept as its
 *   stage begins, put back when it fails -- a copy: `fs_copy_tree()`
 */
static int image_keep(struct pipeline *p, struct pipe_image *img, struct wb_err *e)
{
	char *stamp;
	int r = 0;

	img->kept = 1;
	img->kept_out = fs_join(p->run->out_dir, img->plan.name);
	img->prev_lock = (struct buf)BUF_INIT;
	img->prev_stamp = (struct buf)BUF_INIT;
	stamp = fs_join(img->kept_out, ".stage-stamp");
	img->had_lock = fs_exists(img->lock_path);
	img->had_stamp = fs_exists(stamp);
	if ((img->had_lock && fs_read_file(img->lock_path, SIZE_MAX, WB_EIO, &img->prev_lock,
					   e) < 0) ||
	    (img->had_stamp && fs_read_file(stamp, SIZE_MAX, WB_EIO, &img->prev_stamp, e) < 0)) {
		image_unkeep(img);
		r = -1;
	}
	free(stamp);
	return r;
}

/* Once its stage began (the tree not yet swapped), copy IMG's other
 * outputs aside. A copy, not hard links: the stamp's tree fingerprint
 * holds each file's ctime (stage/stamp.c), which a link changes. */
static int image_keep_tree(struct pipe_image *img, struct wb_err *e)
{
	char *parent;

	if (!fs_exists(img->kept_out))
		return 0;
	parent = fs_dirname(img->kept_out);
	img->prev_dir = xasprintf("%s/.%s.prev.%ld", parent, fs_basename(img->kept_out),
				  (long)getpid());
	free(parent);
	if (fs_remove_below(parent = fs_dirname(img->kept_out), img->prev_dir, e) < 0 ||
	    fs_copy_tree(img->kept_out, img->prev_dir, e) < 0) {
		free(parent);
		image_unkeep(img);
		return -1;
	}
	free(parent);
	return 0;
}

/* Give a failed IMG its kept outputs and lock back, or (it succeeded)
 * drop them.
 * @where a matrix image atomic: its previous outputs and lock kept as its
 *   stage begins, put back when it fails -- put back when it fails
 */
static void image_settle(struct pipe_image *img)
{
	struct wb_err e = WB_ERR_INIT;
	const char *dir = img->kept_out;
	char *parent;
	int r = 0;

	if (!img->kept)
		return;
	parent = fs_dirname(dir);
	if (img->failed) {
		r = clear_outputs(dir, &e);
		if (!r && img->prev_dir) {
			DIR *d = opendir(img->prev_dir);
			struct dirent *de;

			while (d && !r && (de = readdir(d))) {
				char *from, *to;

				if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
					continue;
				from = fs_join(img->prev_dir, de->d_name);
				to = fs_join(dir, de->d_name);
				if (rename(from, to) < 0)
					r = wb_error(&e, WB_EIO, "cannot put '%s' back: %s", to,
						     strerror(errno));
				free(from);
				free(to);
			}
			if (d)
				closedir(d);
		}
		if (!r) {
			char *stamp = fs_join(dir, ".stage-stamp");

			if (img->had_stamp)
				r = fs_write_atomic(stamp, img->prev_stamp.ptr,
						    img->prev_stamp.len, 0644, &e);
			else if (unlink(stamp) < 0 && errno != ENOENT)
				r = wb_error(&e, WB_EIO, "cannot remove '%s': %s", stamp,
					     strerror(errno));
			free(stamp);
		}
		if (!r)
			r = img->had_lock ? fs_write_atomic(img->lock_path, img->prev_lock.ptr,
							    img->prev_lock.len, 0644, &e) :
			    unlink(img->lock_path) < 0 && errno != ENOENT ?
			    wb_error(&e, WB_EIO, "cannot remove '%s': %s", img->lock_path,
				     strerror(errno)) : 0;
		if (r)
			cmd_errorf("%s; the previous outputs of '%s' are in '%s'", e.msg,
				   img->plan.name, img->prev_dir ? img->prev_dir : "(none)");
	}
	free(parent);
	if (r) {   /* what is left of the copy stays for the user */
		free(img->prev_dir);
		img->prev_dir = NULL;
	}
	image_unkeep(img);
}

/* Fetch every staging image of P that is not up to date (every image of
 * a run without a stage: fetch and lock --matrix, which keep no OUT): one
 * fetch per group of images sharing a policy, over the union of their
 * artifacts.
 * @where a matrix image atomic: its previous outputs and lock kept as its
 *   stage begins, put back when it fails -- a container image's failure
 *   charged to its own image (`images_failed`)
 */
static void matrix_fetch(struct pipeline *p)
{
	struct wb_run *run = p->run;
	struct wb_err e = WB_ERR_INIT;
	struct cache c = CACHE_INIT;
	struct pipe_image **todo = xcalloc(p->nimages + 1, sizeof(*todo));
	size_t ntodo = 0;
	int fetch_only = !(p->steps & (PIPE_STAGE | PIPE_EMIT));

	if (pipe_open_cache(run, &c, &e) < 0) {
		int code = cmd_fail(&e);

		for (size_t i = 0; i < p->nimages; i++)
			if (p->images[i].staging || fetch_only)
				image_fail(&p->images[i], code, "the cache cannot be opened");
		free(todo);
		return;
	}
	for (size_t i = 0; i < p->nimages; i++) {
		struct pipe_image *img = &p->images[i];
		int r;

		if (!img->staging && !fetch_only)
			continue;
		e = (struct wb_err)WB_ERR_INIT;
		if (!fetch_only && image_keep(p, img, &e) < 0) {
			image_fail(img, cmd_fail(&e), "its previous outputs could not be kept");
			continue;
		}
		r = pipe_image_read_lock(p, img, &e) < 0 ? -1 : pipe_image_prepare(p, img, &c, &e);
		if (r < 0)
			image_fail(img, cmd_fail(&e), "its lock or stage could not begin");
		else if (r == 1)
			img->up_to_date = 1;
		else
			todo[ntodo++] = img;
		if (r == 1)   /* nothing will change */
			image_settle(img);
		else if (r == 0 && !fetch_only && image_keep_tree(img, &e) < 0)
			cmd_warnf("%s; if it fails, its previous outputs are not put back",
				  e.msg);
	}
	for (size_t i = 0; i < ntodo; i++) {
		struct pipe_image **grp;
		struct pipe_group *g;
		size_t n = 0, failed = 0, imgfail = 0;
		int ret;

		if (!todo[i])
			continue;
		grp = xcalloc(ntodo + 1, sizeof(*grp));
		for (size_t j = i; j < ntodo; j++)
			if (todo[j] && same_fetch_policy(&todo[i]->plan, &todo[j]->plan)) {
				grp[n++] = todo[j];
				if (j != i)
					todo[j] = NULL;
			}
		g = pipe_group_new(p);
		pipe_group_build(g, grp, n);
		p->distinct += g->n;
		e = (struct wb_err)WB_ERR_INIT;
		ret = pipe_group_fetch(p, g, &grp[0]->plan, &c, &e);
		for (size_t u = 0; u < g->n; u++) {
			if (!g->items[u].status && !g->items[u].from_cache)
				p->downloaded++;
			if (g->items[u].status && !run->offline && e.code != WB_EINTR) {
				/* once, however many images use it */
				cmd_errorf("%s", g->items[u].err.msg);
				failed++;
			}
		}
		for (size_t k = 0; k < n; k++)
			imgfail += grp[k]->images_failed != 0;
		if (ret < 0 && (!failed || run->offline || e.code == WB_EINTR))
			cmd_fail(&e);
		for (size_t k = 0; k < n; k++) {
			struct pipe_image *img = grp[k];
			size_t bad = 0;
			int code = 0;

			for (size_t a = 0; a < img->plan.nartifacts; a++)
				if (img->items[a].status) {
					code = worse(code, img->items[a].status);
					bad++;
				}
			/* a container image's failure is its image's own
			 * (images_failed): the group's error marks every image
			 * only when nobody's artifact or image explains it */
			if (img->images_failed)
				code = worse(code, img->images_failed);
			if (ret < 0 && (e.code == WB_EINTR || (!failed && !bad && !imgfail)))
				code = e.code ? e.code : WB_EIO;
			if (code) {
				char what[128];

				snprintf(what, sizeof(what), "%zu of its %zu artifacts failed", bad,
					 img->plan.nartifacts);
				image_fail(img, code, e.code == WB_EINTR ? "interrupted" :
					   bad ? what : img->images_failed ?
					   "its container images failed" : "the fetch failed");
			}
		}
		free(grp);
	}
	free(todo);
	cache_close(&c);
}

/* A matrix writes each fetched image's lock, as `winbuild lock` would. */
static int matrix_write_lock(struct pipeline *p, struct pipe_image *img)
{
	struct wb_err e = WB_ERR_INIT;
	json_t *images = pipe_images_lock_json(&img->plan, img->pulled);
	int r = lockfile_write(img->lock_path, img->plan.name, img->plan.windows_iso_sha256,
			       img->items, img->plan.nartifacts, images, &e);

	json_decref(images);
	if (r < 0)
		return cmd_fail(&e);
	cmd_json_set(p->run, "lock", json_string(img->lock_path));
	return WB_OK;
}

/* The stage of IMG after the shared fetch (its work done on a thread:
 * matrix_stage_work): the --json fields, the summary, its lock. Its exit
 * code. */
static int matrix_stage_step(struct pipeline *p, struct pipe_image *img)
{
	struct wb_run *run = p->run;
	int ret = img->failed;

	if (img->items && !img->up_to_date)
		cmd_json_fetch(run, &img->plan, img->items);
	if (img->staging) {
		const char *dir = img->stage.dir;

		cmd_json_set(run, "up_to_date", json_boolean(img->up_to_date));
		if (dir) {
			cmd_json_set(run, "out", json_string(dir));
			cmd_json_set(run, "tree", json_pack("s+", dir, "/tree"));
			cmd_json_set(run, "manifest", json_pack("s+", dir, "/manifest.json"));
		}
	}
	/* -q only hides the line: an up-to-date image has no stage to finish
	 * (nothing was fetched, img->items is NULL; finishing it anyway was
	 * the SIGSEGV of `build A B -q`, issue 41). */
	/* lock --matrix: no stage, each fetched image's lock, its new pins */
	if (!ret && !img->staging && (p->steps & PIPE_LOCK) && img->items) {
		json_decref(pipe_report_pinned(run, img));
		ret = matrix_write_lock(p, img);
		if (ret)
			image_fail(img, ret, "its lock could not be written");
	}
	if (!ret && img->staging && img->up_to_date) {
		if (!run->quiet)
			fprintf(stderr, "up to date: %s/tree (nothing changed since the last stage)\n",
				img->stage.dir);
	} else if (!ret && img->staging) {
		img->stage.record_later = 1;
		ret = img->worked ? pipestage_report(&img->stage, &img->plan, img->items,
						     img->work_ret) :
		      pipestage_finish(&img->stage, &img->plan, img->items);
		if (!ret)
			ret = matrix_write_lock(p, img);
		if (!ret)
			ret = pipestage_record_site_signed(&img->stage, &img->plan);
		if (ret)
			image_fail(img, ret, "its stage failed");
	}
	img->secs = now_secs() - p->t0;
	return ret;
}

/* The Packer inputs of IMG, written on a thread (matrix_emit_work). */
static int matrix_emit_step(struct pipeline *p, struct pipe_image *img)
{
	int ret;

	if (!img->emitted)
		return img->failed;
	ret = pipe_emit_report(p, img, img->emit_ret, &img->emit_err);
	if (ret)
		image_fail(img, ret, "its Packer inputs could not be written");
	return ret;
}

/* FN's step for IMG with IMG's --json object as the result, the error
 * lines printed meanwhile kept as IMG's. */
static int image_step(struct pipeline *p, struct pipe_image *img,
		      int (*fn)(struct pipeline *, struct pipe_image *))
{
	struct wb_run *run = p->run;
	json_t *top = run->json_result;
	size_t nerr = cmd_reported_errors()->nr;
	int r;

	if (run->json) {
		if (!img->json) {
			img->json = json_object();
			json_object_set_new(img->json, "image", json_string(img->plan.name));
		}
		run->json_result = img->json;
	}
	img->capturing = 1;
	r = fn(p, img);
	img->capturing = 0;
	for (size_t k = nerr; k < cmd_reported_errors()->nr; k++)
		wb_strlist_push(&img->errors, cmd_reported_errors()->v[k]);
	if (run->json)
		run->json_result = top;
	return r;
}

struct emit_job {
	struct pipeline *p;
	struct pipe_image *img;
	pthread_t th;
	int started;
};

static void *emit_thread(void *arg)
{
	struct emit_job *j = arg;

	j->img->emit_ret = pipe_emit_work(j->p, j->img, &j->img->emit_err);
	j->img->secs = now_secs() - j->p->t0;
	return NULL;
}

/* Write the Packer inputs of every image staged without failure, each on
 * a thread of its own (different OUT/<name>/packer; emit/ prints nothing),
 * under one SIGINT/SIGTERM handler: each emit sees the flag and removes
 * its temp dir. Their messages follow, one image at a time. */
static void matrix_emit_work(struct pipeline *p)
{
	struct emit_job *jobs = xcalloc(p->nimages + 1, sizeof(*jobs));
	struct sigaction old_int, old_term;

	pipe_catch_interrupts(&old_int, &old_term);
	for (size_t i = 0; i < p->nimages; i++) {
		struct pipe_image *img = &p->images[i];

		if (img->failed)
			continue;
		img->emitted = 1;
		img->emit_err = (struct wb_err)WB_ERR_INIT;
		jobs[i].p = p;
		jobs[i].img = img;
		jobs[i].started = pthread_create(&jobs[i].th, NULL, emit_thread, &jobs[i]) == 0;
		if (!jobs[i].started)   /* no thread: here, now */
			emit_thread(&jobs[i]);
	}
	for (size_t i = 0; i < p->nimages; i++)
		if (jobs[i].started)
			pthread_join(jobs[i].th, NULL);
	pipe_restore_interrupts(&old_int, &old_term);
	free(jobs);
}

static void *stage_work(void *arg)
{
	struct pipe_image *img = arg;

	img->work_ret = pipestage_work(&img->stage, &img->plan, img->items);
	return NULL;
}

/* Finish the stages of every image that was fetched, each on a thread of
 * its own: the trees, manifests, SBOMs and stamps of different OUT/<name>
 * share nothing (the items they read are the shared fetch's, read only),
 * and most of the work is the filesystem's (bench/README.md, "Matrix").
 * Their messages follow, one image at a time (matrix_stage_step). */
static void matrix_stage_work(struct pipeline *p)
{
	pthread_t *th = xcalloc(p->nimages + 1, sizeof(*th));
	unsigned char *started = xcalloc(p->nimages + 1, 1);

	for (size_t i = 0; i < p->nimages; i++) {
		struct pipe_image *img = &p->images[i];

		if (!img->staging || img->failed || img->up_to_date)
			continue;
		img->worked = 1;
		started[i] = pthread_create(&th[i], NULL, stage_work, img) == 0;
		if (!started[i])   /* no thread: here, now */
			stage_work(img);
	}
	for (size_t i = 0; i < p->nimages; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	free(started);
	free(th);
}

static void matrix_table(const struct pipeline *p)
{
	printf("%-32s %-9s %-24s %-9s %s\n", "image", "artifacts", "staged", "emitted", "time");
	for (size_t i = 0; i < p->nimages; i++) {
		const struct pipe_image *img = &p->images[i];
		char staged[64], emitted[32];

		if (img->failed && !img->stage.res.nfiles)
			snprintf(staged, sizeof(staged), "failed (exit %d)", img->failed);
		else if (!(p->steps & PIPE_STAGE))
			snprintf(staged, sizeof(staged), (p->steps & PIPE_LOCK) ? "locked: %s" : "-",
				 img->lock_path);
		else if (!img->staging)
			snprintf(staged, sizeof(staged), "already staged");
		else if (img->up_to_date)
			snprintf(staged, sizeof(staged), "up to date");
		else
			snprintf(staged, sizeof(staged), "%zu files", img->stage.res.nfiles);
		snprintf(emitted, sizeof(emitted), "%s", !(p->steps & PIPE_EMIT) ? "-" :
			 img->failed ? "no" : "packer");
		printf("%-32s %-9zu %-24s %-9s %.1fs\n", img->plan.name, img->plan.nartifacts,
		       staged, emitted, img->secs);
	}
	printf("%zu images, %zu distinct artifacts: %zu downloaded, %zu from the cache\n",
	       p->nimages, p->distinct, p->downloaded, p->distinct - p->downloaded);
}

/* Several images (pipeline.h): resolve all (any error stops the run
 * before anything is fetched), one fetch over the union, then each image
 * staged and emitted on its own; an image that fails leaves the others to
 * complete, and the exit code is the worst.
 * @where the image matrix: several recipes or `--matrix FILE`, one fetch over
 *   the union, a stage, lock and emit per image
 */
static int matrix_run(struct pipeline *p)
{
	struct wb_run *run = p->run;
	struct wb_err e = WB_ERR_INIT;
	json_t *top = cmd_json(run), *arr = NULL;
	char l1[512], l2[512];
	int ret = WB_OK;

	p->t0 = now_secs();
	if (run->lock_path) {
		cmd_errorf("--lock names one lock file; several images each read and write "
			   "their own '<image name>.lock'");
		return WB_EUSAGE;
	}
	for (size_t i = 0; i < p->nimages; i++) {
		struct pipe_image *img = &p->images[i];

		img->stage.extra_sets = &img->sets;   /* kept by pipestage_init */
		if (((p->steps & PIPE_STAGE) && pipestage_init(&img->stage, run, &e) < 0) ||
		    pipe_resolve(p, img, &e) < 0 ||
		    ((p->steps & PIPE_EMIT) && plan_require_iso(&img->plan, &e))) {
			ret = cmd_fail(&e);
			cmd_errorf("nothing was built: %s has the error above",
				   image_label(img, l1, sizeof(l1)));
			return ret;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p->images[j].plan.name, img->plan.name)) {
				cmd_errorf("two images are named '%s': %s and %s; give each its "
					   "own name (a matrix file's variations, docs/matrix.md)",
					   img->plan.name, image_label(&p->images[j], l1, sizeof(l1)),
					   image_label(img, l2, sizeof(l2)));
				return WB_EUSAGE;
			}
	}
	for (size_t i = 0; i < p->nimages; i++) {
		struct pipe_image *img = &p->images[i];

		if (pipe_needs_stage(p, img)) {
			if (pipestage_init(&img->stage, run, &e) < 0)
				return cmd_fail(&e);
			img->staging = 1;
		}
	}
	matrix_fetch(p);
	matrix_stage_work(p);
	for (size_t i = 0; i < p->nimages; i++)
		image_step(p, &p->images[i], matrix_stage_step);
	if (p->steps & PIPE_EMIT) {
		matrix_emit_work(p);
		for (size_t i = 0; i < p->nimages; i++)
			image_step(p, &p->images[i], matrix_emit_step);
	}
	for (size_t i = 0; i < p->nimages; i++)
		image_settle(&p->images[i]);
	for (size_t i = 0; i < p->nimages; i++) {
		struct pipe_image *img = &p->images[i];
		int r = img->failed;

		if (top) {
			json_t *errs = json_array();

			for (size_t k = 0; k < img->errors.nr; k++)
				json_array_append_new(errs, json_string(img->errors.v[k]));
			json_object_set_new(img->json, "ok", json_boolean(!r));
			json_object_set_new(img->json, "exit", json_integer(r));
			json_object_set_new(img->json, "errors", errs);
			json_object_set_new(img->json, "time_s", json_real(img->secs));
		}
		ret = worse(ret, r);
	}
	if (top) {
		arr = json_array();
		for (size_t i = 0; i < p->nimages; i++)
			json_array_append(arr, p->images[i].json);
		json_object_set_new(top, "images", arr);
		json_object_set_new(top, "distinct_artifacts", json_integer((json_int_t)p->distinct));
		json_object_set_new(top, "downloaded", json_integer((json_int_t)p->downloaded));
	} else if (!run->quiet) {
		matrix_table(p);
	}
	return ret;
}


int cmd_pipe_run(struct pipeline *p)
{
	return p->matrix ? matrix_run(p) : pipe_run(p);
}

int pipe_matrix_command(struct wb_run *run, const char *matrix, unsigned steps,
			int accept_new, const char *usage)
{
	struct pipeline p;
	int ret;

	if (matrix && run->positional.nr) {
		cmd_errorf("--matrix FILE names the recipes: give no RECIPE beside it");
		return cmd_usage("%s", usage);
	}
	pipe_init(&p, run, steps);
	p.accept_new = accept_new;
	ret = cmd_pipe_images(&p, matrix);
	if (!ret)
		ret = cmd_pipe_run(&p);
	pipe_release(&p);
	return ret;
}
