/* The stage: artifacts, component directories, Authenticode checks,
 * generated files, swap, manifest, in that order (docs/stage.md). */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/winpath.h"
#include "stage/stage.h"
#include "trust/authenticode.h"

static void hook_at(const struct stage_opts *o, const char *point)
{
	if (o->hook)
		o->hook(o->hook_ctx, point);
}

static int place_artifact(struct tree *t, const struct plan_artifact *a,
			  const struct stage_input *in, time_t epoch,
			  struct wb_err *e)
{
	struct extract_spec spec;

	if (a->action != PLAN_UNPACK && in->fresh)
		return tree_copy_fresh(t, in->path, in->sha256, a->dest_tree, a->name,
				       a->component, e);
	if (a->action != PLAN_UNPACK)
		return tree_copy_verified(t, in->path, in->sha256, a->dest_tree,
					  a->name, a->component, e);
	memset(&spec, 0, sizeof(spec));
	spec.strip = a->strip;
	spec.include = (const char *const *)a->include.v;
	spec.ninclude = a->include.nr;
	spec.limits = a->limits;
	spec.mtime = epoch;
	return tree_unpack(t, in->path, in->sha256, &spec, a->dest_tree, a->name,
			   a->component, e);
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

int stage_run(const struct plan *plan, const struct stage_input *in,
	      const struct stage_opts *o, struct stage_result *res,
	      struct wb_err *e)
{
	struct tree t = TREE_INIT;
	int ret = -1;

	memset(res, 0, sizeof(*res));
	if (tree_begin(&t, o->out_dir, plan->name, o->source_date_epoch, e) < 0)
		goto out;
	hook_at(o, "begin");
	if (make_directories(&t, plan, e) < 0)
		goto out;
	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct plan_artifact *a = &plan->artifacts[i];

		hook_at(o, "artifact");
		if (place_artifact(&t, a, &in[i], o->source_date_epoch, e) < 0) {
			if (e->code == WB_EVERIFY)
				res->bad_artifact = a;
			wb_error_prefix(e, "artifact '%s'", a->name);
			goto out;
		}
	}
	if (check_authenticode(&t, plan, e) < 0)
		goto out;
	if (stage_generate(&t, plan, o->templates_dir, e) < 0)
		goto out;
	hook_at(o, "generated");
	if (tree_commit(&t, o->hook, o->hook_ctx, e) < 0)
		goto out;
	res->tree_dir = xstrdup(t.final);
	res->manifest_path = fs_join(t.dir, "manifest.json");
	if (stage_write_manifest(res->manifest_path, plan, in, &t,
				 o->source_date_epoch, e) < 0)
		goto out;
	hook_at(o, "done");
	res->nfiles = t.nfiles;
	res->ndirs = t.dirs.nr;
	for (size_t i = 0; i < t.nfiles; i++)
		res->ngenerated += !t.files[i].artifact;
	ret = 0;
out:
	tree_release(&t);
	return ret;
}

void stage_result_release(struct stage_result *res)
{
	free(res->tree_dir);
	free(res->manifest_path);
	res->tree_dir = res->manifest_path = NULL;
}
