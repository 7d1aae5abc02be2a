/*
 * winbuild lock RECIPE: fetch and verify every artifact, then write the
 * lock file (--lock FILE, default <image name>.lock) recording per artifact the
 * URL, size, SHA-256 and the evidence. --accept-new is the only
 * trust-on-first-use path: needs_pin artifacts without a pin are accepted
 * as downloaded, and what was pinned is printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/pipeline.h"
#include "fetch/lockfile.h"
#include "fetch/registry.h"
#include "recipe/plan.h"

#define LOCK_USAGE \
	"lock RECIPE... [--matrix FILE] [-O FILE]... [--set K=V]... [--accept-new] [--lock FILE] " \
	"[-j N] [--cache DIR] [--cacert FILE] [--no-progress] [-q]"

int cmd_lock(int argc, char **argv, struct wb_run *run)
{
	struct wb_err e = WB_ERR_INIT;
	struct pipeline p;
	struct pipe_image *img;
	const struct plan *plan;
	const struct fetch_item *items;
	json_t *pinned, *images;
	int accept_new = 0, ret;
	const char *matrix = NULL;
	const struct cmd_opt own[] = {
		{ 0, "--accept-new", NULL, NULL, "pin needs_pin artifacts as downloaded (trust on\n"
		  "first use); prints every pin it made", NULL, NULL, &accept_new },
		{ 0, "--matrix", NULL, "FILE", "lock every image of a matrix file, each in its\n"
		  "own <image name>.lock, as build --matrix reads\n"
		  "them (several RECIPEs do the same)", &matrix, NULL, NULL },
		{ 0 },
	};
	const struct cmd_optset set = {
		(OPTS_FETCH & ~OPT_LOCKED) | OPT_JSON, own, 0, LOCK_USAGE
	};

	ret = cmd_parse_options(argc, argv, &set, run);
	if (ret)
		return ret;
	if (matrix || run->positional.nr > 1)
		return pipe_matrix_command(run, matrix, PIPE_FETCH | PIPE_LOCK, accept_new,
					   LOCK_USAGE);
	if (run->positional.nr != 1)
		return cmd_usage("%s", LOCK_USAGE);
	cmd_json_set(run, "written", json_false());
	pipe_init(&p, run, PIPE_FETCH);
	p.accept_new = accept_new;
	img = &p.images[0];
	plan = &img->plan;
	if (pipe_resolve(&p, img, &e) < 0 || pipe_fetch(&p, img, &e) < 0) {
		if (run->lock_path)
			cmd_json_set(run, "lock", json_string(run->lock_path));
		if (!img->items) {
			ret = cmd_fail(&e);
			goto out;
		}
		cmd_json_fetch(run, plan, img->items);
		pipe_fetch_report(img, &e);
		cmd_errorf("lock file '%s' not written", run->lock_path);
		ret = e.code ? e.code : WB_EIO;
		goto out;
	}
	items = img->items;
	cmd_json_set(run, "lock", json_string(run->lock_path));
	cmd_json_fetch(run, plan, items);
	pinned = pipe_report_pinned(run, img);
	cmd_json_set(run, "pinned", pinned);
	images = pipe_images_lock_json(plan, img->pulled);
	ret = lockfile_write(run->lock_path, plan->name, plan->windows_iso_sha256, items,
			     plan->nartifacts, images, &e);
	json_decref(images);
	if (ret < 0) {
		ret = cmd_fail(&e);
		goto out;
	}
	cmd_json_set(run, "written", json_true());
	if (!run->quiet)
		fprintf(stderr, "wrote '%s' (%zu artifact%s)\n", run->lock_path,
			plan->nartifacts, plan->nartifacts == 1 ? "" : "s");
	ret = 0;
out:
	pipe_release(&p);
	return ret;
}
