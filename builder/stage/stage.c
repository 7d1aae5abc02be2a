/* The stage: artifacts, component directories, Authenticode checks,
 * generated files, swap, manifest, in that order (docs/stage.md). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/winpath.h"
#include "stage/manifest.h"
#include "stage/sitesign.h"
#include "stage/oci.h"
#include "stage/stage.h"
#include "stage/stamp.h"
#include "trust/authenticode.h"
#include "trust/digest.h"

static void hook_at(const struct stage_opts *o, const char *point)
{
	if (o->hook)
		o->hook(o->hook_ctx, point);
}

static int make_directories(struct tree *t, const struct plan *plan,
			    struct wb_err *e)
{
	for (size_t i = 0; i < plan->ncomponents; i++) {
		const struct plan_component *c = &plan->components[i];

		for (size_t k = 0; k < c->directories.nr; k++) {
			const char *why = NULL;
			char *tp = winpath_to_tree(c->directories.v[k], &why);
			int ret;

			if (!tp)
				return wb_error(e, WB_EUSAGE, "component '%s': directory "
						"'%s': %s", c->name, c->directories.v[k], why);
			ret = *tp ? tree_mkdir(t, tp, c->name, e) : 0;
			free(tp);
			if (ret < 0)
				return -1;
		}
	}
	return 0;
}

/*
 * Authenticode on every staged .exe, .dll and .msi of a component that has
 * a policy, before the tree is final (docs/authenticode.md). Any failure
 * is a verification failure (exit 1) naming the artifact, the tree path
 * and the reason; results stay with the file for the manifest.
 * @where staged `.exe`/`.dll`/`.msi`/`.cab`/`.msu` checked before the tree is
 *   final -- results in `files[].authenticode` of the manifest
 */
static int check_authenticode(struct tree *t, const struct plan *plan,
			      struct wb_err *e)
{
	for (size_t i = 0; i < t->nfiles; i++) {
		struct tree_file *f = &t->files[i];
		const struct plan_component *c;
		struct authenticode_policy pol;
		struct authenticode_result *r;
		char *full;
		int ret;

		if (!f->artifact || !authenticode_wants(f->path))
			continue;
		c = plan_find_component(plan, f->component);
		if (!c || !c->authenticode.set)
			continue;
		plan_authenticode_policy(&c->authenticode, &pol);
		full = fs_join(t->root, f->path);
		r = xcalloc(1, sizeof(*r));
		ret = authenticode_verify_path(full, f->path, &pol, r, e);
		plan_authenticode_policy_release(&pol);
		free(full);
		if (ret < 0) {
			authenticode_result_release(r);
			free(r);
			if (e->code != WB_EIO)
				e->code = WB_EVERIFY;
			wb_error_prefix(e, "authenticode: artifact '%s'", f->artifact);
			return -1;
		}
		f->authenticode = r;
	}
	return 0;
}

/* ---- preparing artifacts on a worker thread ------------------------------ */

enum { PREP_NONE, PREP_QUEUED, PREP_RUNNING, PREP_DONE };

struct prep_slot {
	int state;
	char *scratch;
	struct tree_piece piece;
	struct wb_err err;
	int failed;
	/* the previous tree's files of this artifact, when the stamp vouches
	 * for them (load_reuse), this run's prep key, and whether they match */
	char *old_key;
	struct extract_result old;
	char key[65];              /* "" when it could not be computed */
	int reuse;
	int tee;                   /* stage_tee_open made its file */
};

struct stage_worker {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	int started, quit;
	const struct plan *plan;
	const struct stage_opts *o;  /* for its test hook */
	time_t epoch;
	const char *old_root;      /* OUT/<name>/tree, the previous tree */
	struct stage_input *in;    /* per artifact, as fed */
	struct prep_slot *slots;   /* per artifact */
	size_t nslots;
	size_t *queue, qhead, qtail;
};

/* Copy or unpack artifact I into its scratch dir (any thread). */
static int prepare(struct stage_worker *w, size_t i, struct wb_err *e)
{
	const struct plan_artifact *a = &w->plan->artifacts[i];
	const struct stage_input *in = &w->in[i];
	struct prep_slot *sl = &w->slots[i];
	const char *slash = strrchr(a->dest_tree, '/');
	const char *name = slash ? slash + 1 : a->dest_tree;
	struct extract_spec spec;

	if (sl->tee && in->teed && in->fresh && !sl->reuse)
		return tree_prepare_teed(sl->scratch, in->sha256, in->size, name,
					 &sl->piece, e);
	if (sl->tee)
		tree_tee_discard(sl->scratch, name);
	if (sl->reuse)
		return tree_prepare_reuse(sl->scratch, w->old_root, a->dest_tree,
					  &sl->old, a->action != PLAN_UNPACK,
					  &sl->piece, e);
	if (a->action != PLAN_UNPACK)
		return tree_prepare_copy(sl->scratch, in->fd, in->path, in->sha256,
					 in->fresh, name, &sl->piece, e);
	memset(&spec, 0, sizeof(spec));
	spec.strip = a->strip;
	spec.include = (const char *const *)a->include.v;
	spec.ninclude = a->include.nr;
	spec.limits = a->limits;
	spec.format = a->format;
	spec.mtime = w->epoch;
	return tree_prepare_unpack(sl->scratch, in->fd, in->path,
				   in->fresh ? NULL : in->sha256, &spec, &sl->piece, e);
}

/* Take the oldest queued artifact and prepare it. Called with mu held;
 * returns with it held. 0 when the queue was empty. */
static int prepare_next(struct stage_worker *w)
{
	struct wb_err e = WB_ERR_INIT;
	size_t i;
	int r;

	if (w->qhead == w->qtail)
		return 0;
	i = w->queue[w->qhead++];
	w->slots[i].state = PREP_RUNNING;
	/* test hook (under the lock: one hook at a time): the artifact's
	 * bytes are verified and about to be read */
	hook_at(w->o, "prepare");
	pthread_mutex_unlock(&w->mu);
	r = prepare(w, i, &e);
	pthread_mutex_lock(&w->mu);
	w->slots[i].failed = r < 0;
	w->slots[i].err = e;
	w->slots[i].state = PREP_DONE;
	pthread_cond_broadcast(&w->cv);
	return 1;
}

static void *worker_main(void *arg)
{
	struct stage_worker *w = arg;

	pthread_mutex_lock(&w->mu);
	while (!w->quit)
		if (!prepare_next(w))
			pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/*
 * @where the stage, in order (directories, artifacts, Authenticode, generated
 *   files, swap, manifest), and the thread that prepares artifacts while
 *   others download
 */
void stage_feed(struct stage *s, size_t i, const struct stage_input *in)
{
	struct stage_worker *w = s->w;

	if (!w || i >= s->plan->nartifacts)
		return;
	pthread_mutex_lock(&w->mu);
	if (w->slots[i].state == PREP_NONE) {
		struct prep_slot *sl = &w->slots[i];
		struct wb_err ignore = WB_ERR_INIT;

		if (stamp_prep_key(&s->plan->artifacts[i], in->sha256, w->epoch,
				   sl->key, &ignore) < 0)
			sl->key[0] = '\0';
		/* a site-signed file in the previous tree is not the upstream
		 * file the upstream check and the signer must see */
		sl->reuse = sl->old_key && sl->key[0] && !strcmp(sl->key, sl->old_key) &&
			    !sitesign_artifact(s->plan, &s->plan->artifacts[i]);
		w->in[i] = *in;
		if (!sl->scratch)
			sl->scratch = tree_scratch(&s->t, s->plan->artifacts[i].name);
		w->slots[i].state = PREP_QUEUED;
		w->queue[w->qtail++] = i;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
}

/*
 * @where where a download's bytes are also written to their staged place as
 *   they arrive (the tee)
 */
int stage_tee_open(struct stage *s, size_t i)
{
	struct stage_worker *w = s->w;
	const struct plan_artifact *a;
	struct prep_slot *sl;
	int fd = -1;

	if (!w || i >= s->plan->nartifacts)
		return -1;
	a = &s->plan->artifacts[i];
	if (a->action == PLAN_UNPACK)
		return -1;
	pthread_mutex_lock(&w->mu);
	sl = &w->slots[i];
	if (sl->state == PREP_NONE && !sl->tee) {
		const char *slash = strrchr(a->dest_tree, '/');

		if (!sl->scratch)
			sl->scratch = tree_scratch(&s->t, a->name);
		fd = tree_tee_open(sl->scratch, slash ? slash + 1 : a->dest_tree);
		sl->tee = fd >= 0;
	}
	pthread_mutex_unlock(&w->mu);
	return fd;
}

/* Wait for artifact I, preparing queued ones on this thread meanwhile. */
static struct prep_slot *wait_for(struct stage_worker *w, size_t i)
{
	struct prep_slot *sl = &w->slots[i];

	pthread_mutex_lock(&w->mu);
	while (sl->state == PREP_QUEUED || sl->state == PREP_RUNNING)
		if (!prepare_next(w))
			pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	return sl;
}

/* The files artifact A placed in the previous tree, from its manifest
 * (TREE_PATHS relative to A's destination, or its basename for a single
 * file) into OLD. 0 when the manifest does not list them as expected. */
static int old_files(const struct plan_artifact *a, const struct staged_manifest *m,
		     struct extract_result *old)
{
	size_t dl = strlen(a->dest_tree);
	int single = a->action != PLAN_UNPACK;

	for (size_t k = 0; k < m->nfiles; k++) {
		const struct staged_file *f = &m->files[k];
		const char *art = f->artifact, *tp = f->tree_path, *sha = f->sha256;
		const char *rel;
		struct extract_file *x;

		if (!art || strcmp(art, a->name))
			continue;
		if (single) {
			if (strcmp(tp, a->dest_tree))
				return 0;
			rel = strrchr(tp, '/') ? strrchr(tp, '/') + 1 : tp;
		} else if (dl) {
			if (strncmp(tp, a->dest_tree, dl) || tp[dl] != '/')
				return 0;
			rel = tp + dl + 1;
		} else {
			rel = tp;
		}
		if (!*rel)
			return 0;
		ALLOC_GROW(old->files, old->nr + 1, old->alloc);
		x = &old->files[old->nr++];
		memset(x, 0, sizeof(*x));
		x->path = xstrdup(rel);
		x->size = f->size;
		x->mode = tree_file_mode(x->path);
		if (digest_unhex(sha, x->sha256, 32) < 0)
			return 0;
	}
	return old->nr > 0 && (!single || old->nr == 1);
}

/* Under the stage lock: when the stamp still describes the previous tree,
 * note each artifact's prep key and files there (stage_feed compares the
 * keys). Then remove the stamp: from here on the tree may change.
 * @where re-staging only what changed: per-artifact prep keys in the stamp,
 *   hard links from the previous tree
 */
static void load_reuse(struct stage *s)
{
	struct stage_worker *w = s->w;
	struct wb_strlist preps = WB_STRLIST_INIT;
	struct wb_err ignore = WB_ERR_INIT;
	char *mpath = fs_join(s->t.dir, "manifest.json");
	struct staged_manifest m;
	int have = 0;

	if (stamp_reusable(s->t.dir, &preps, &ignore) == 1)
		have = staged_manifest_read(mpath, &m, &ignore) == 0;
	stamp_remove(s->t.dir);
	for (size_t i = 0; have && i < w->nslots; i++) {
		const struct plan_artifact *a = &s->plan->artifacts[i];
		struct prep_slot *sl = &w->slots[i];
		size_t nl = strlen(a->name);

		for (size_t k = 0; k < preps.nr && !sl->old_key; k++)
			if (!strncmp(preps.v[k], a->name, nl) && preps.v[k][nl] == ' ')
				sl->old_key = xstrdup(preps.v[k] + nl + 1);
		if (sl->old_key && !old_files(a, &m, &sl->old)) {
			extract_result_release(&sl->old);
			free(sl->old_key);
			sl->old_key = NULL;
		}
	}
	if (have)
		staged_manifest_release(&m);
	free(mpath);
	wb_strlist_release(&preps);
}

/*
 * @where the stage, in order (directories, artifacts, Authenticode, generated
 *   files, swap, manifest), and the thread that prepares artifacts while
 *   others download
 */
int stage_begin(struct stage *s, const struct plan *plan,
		const struct stage_opts *o, struct wb_err *e)
{
	struct stage_worker *w;
	size_t n = plan->nartifacts;

	memset(s, 0, sizeof(*s));
	s->plan = plan;
	s->o = o;
	s->t = (struct tree)TREE_INIT;
	if (sitesign_check(plan, o->sign, o->sign_strict, e) < 0)
		return -1;
	w = s->w = xcalloc(1, sizeof(*w));
	w->plan = plan;
	w->o = o;
	w->epoch = o->source_date_epoch;
	w->in = xcalloc(n + 1, sizeof(*w->in));
	w->slots = xcalloc(n + 1, sizeof(*w->slots));
	w->nslots = n;
	w->queue = xcalloc(n + 1, sizeof(*w->queue));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (tree_begin(&s->t, o->out_dir, plan->name, o->source_date_epoch, e) < 0)
		return -1;
	w->old_root = s->t.final;
	load_reuse(s);
	hook_at(o, "begin");
	if (make_directories(&s->t, plan, e) < 0)
		return -1;
	/* without the thread, stage_finish prepares everything itself */
	w->started = pthread_create(&w->th, NULL, worker_main, w) == 0;
	return 0;
}

/*
 * @where the stage, in order (directories, artifacts, Authenticode, generated
 *   files, swap, manifest), and the thread that prepares artifacts while
 *   others download
 */
int stage_finish(struct stage *s, struct stage_result *res, struct wb_err *e)
{
	const struct plan *plan = s->plan;
	const struct stage_opts *o = s->o;
	struct stage_worker *w = s->w;
	struct tree *t = &s->t;

	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct plan_artifact *a = &plan->artifacts[i];
		struct prep_slot *sl = wait_for(w, i);

		hook_at(o, "artifact");
		if (sl->state != PREP_DONE) {
			wb_error(e, WB_EIO, "artifact '%s' was never handed to the stage",
				 a->name);
			return -1;
		}
		if (sl->failed)
			*e = sl->err;
		if (sl->failed ||
		    tree_adopt(t, &sl->piece, a->dest_tree, a->name, a->component, e) < 0) {
			if (e->code == WB_EVERIFY)
				res->bad_artifact = a;
			wb_error_prefix(e, "artifact '%s'", a->name);
			return -1;
		}
		res->nreused += sl->reuse;
		if (sl->key[0]) {
			char *l = xasprintf("%s %s", a->name, sl->key);

			wb_strlist_push(&res->preps, l);
			free(l);
		}
	}
	if (check_authenticode(t, plan, e) < 0)
		return -1;
	hook_at(o, "sign");
	if (sitesign_tree(t, plan, o->sign, o->source_date_epoch, e) < 0)
		return -1;
	if (o->locked && sitesign_check_locked(t, o->locked, o->lock_path, e) < 0)
		return -1;
	if (stage_generate(t, plan, o->templates_dir, e) < 0)
		return -1;
	res->images = json_array();
	if (stage_images(t, plan, o->cache_dir, res->images, e) < 0)   /* issue 33: stage/oci.c */
		return -1;
	hook_at(o, "generated");
	if (tree_commit(t, o->hook, o->hook_ctx, e) < 0)
		return -1;
	res->tree_dir = xstrdup(t->final);
	res->manifest_path = fs_join(t->dir, "manifest.json");
	if (stage_write_manifest(res->manifest_path, plan, w->in, t, res->images,
				 o->source_date_epoch, e) < 0)
		return -1;
	hook_at(o, "done");
	res->nfiles = t->nfiles;
	res->ndirs = t->dirs.nr;
	for (size_t i = 0; i < t->nfiles; i++)
		res->ngenerated += !t->files[i].artifact;
	return 0;
}

void stage_end(struct stage *s)
{
	struct stage_worker *w = s->w;

	if (w) {
		pthread_mutex_lock(&w->mu);
		w->quit = 1;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
		if (w->started)
			pthread_join(w->th, NULL);
		for (size_t i = 0; i < w->nslots; i++) {
			tree_piece_release(&w->slots[i].piece);
			free(w->slots[i].scratch);
			free(w->slots[i].old_key);
			extract_result_release(&w->slots[i].old);
		}
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w->in);
		free(w->slots);
		free(w->queue);
		free(w);
		s->w = NULL;
	}
	tree_release(&s->t);
}

int stage_run(const struct plan *plan, const struct stage_input *in,
	      const struct stage_opts *o, struct stage_result *res,
	      struct wb_err *e)
{
	struct stage s;
	int ret = -1;

	memset(res, 0, sizeof(*res));
	if (stage_begin(&s, plan, o, e) == 0) {
		for (size_t i = 0; i < plan->nartifacts; i++)
			stage_feed(&s, i, &in[i]);
		ret = stage_finish(&s, res, e);
	}
	stage_end(&s);
	return ret;
}

void stage_result_release(struct stage_result *res)
{
	free(res->tree_dir);
	free(res->manifest_path);
	res->tree_dir = res->manifest_path = NULL;
	wb_strlist_release(&res->preps);
	json_decref(res->images);
	res->images = NULL;
}
