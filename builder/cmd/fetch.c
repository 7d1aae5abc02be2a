/*
 * winbuild fetch RECIPE: resolve the plan and fill the cache with every
 * artifact, verified: the recipe and fetch steps of the driver
 * (pipeline.h).
 */
#include <stdio.h>

#include "cmd/pipeline.h"

#define FETCH_USAGE \
	"fetch RECIPE... [--matrix FILE] [-O FILE]... [--set K=V]... [--builder NAME]... [-j N] [--offline] [--locked] " \
	"[--lock FILE] [--cache DIR] [--cacert FILE] [--no-progress] [--json] [-q]"

int cmd_fetch(int argc, char **argv, struct wb_run *run)
{
	const char *matrix = NULL;
	const struct cmd_opt own[] = {
		{ 0, "--matrix", NULL, "FILE", "fetch the artifacts and images of every image of\n"
		  "a matrix file, each once (several RECIPEs do the\n"
		  "same)", &matrix, NULL, NULL },
		{ 0 },
	};
	const struct cmd_optset set = { OPTS_FETCH | OPT_JSON, own, 0, FETCH_USAGE };
	struct wb_err e = WB_ERR_INIT;
	struct pipeline p;
	struct pipe_image *img;
	int ret;

	ret = cmd_parse_options(argc, argv, &set, run);
	if (ret)
		return ret;
	if (matrix || run->positional.nr > 1)
		return pipe_matrix_command(run, matrix, PIPE_FETCH, 0, FETCH_USAGE);
	if (run->positional.nr != 1)
		return cmd_usage("%s", FETCH_USAGE);
	pipe_init(&p, run, PIPE_FETCH);
	img = &p.images[0];
	if (pipe_resolve(&p, img, &e) < 0) {
		ret = cmd_fail(&e);
		goto out;
	}
	ret = pipe_fetch(&p, img, &e);
	cmd_json_fetch(run, &img->plan, img->items);
	if (ret < 0)
		ret = pipe_fetch_failed(&p, img, &e);
	else if (!run->quiet && !run->json)
		fprintf(stderr, "fetched %zu artifact%s into the cache, all verified\n",
			img->plan.nartifacts, img->plan.nartifacts == 1 ? "" : "s");
out:
	pipe_release(&p);
	return ret;
}
