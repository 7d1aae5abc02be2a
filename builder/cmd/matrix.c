/*
 * The matrix file (docs/matrix.md): the images of one build or stage run
 * as recipes x variations x builders, YAML read through the recipe loader
 * (recipe/node.h), so a syntax error reads "file:line:col: message" like a
 * recipe's. image-builder gives each provider x OS its own make target
 * (images/capi/Makefile: a build-<provider>-<os> target each) and
 * runs them as separate processes; here one file names them all and one
 * run fetches their union once (pipeline.c).
 *
 * @where the image matrix: several recipes or `--matrix FILE`, one fetch over
 *   the union, a stage, lock and emit per image -- the file, the table and
 *   the per-image `--json` entries
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/pipeline.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/origin.h"
#include "recipe/node.h"

static int bad_key(const struct rnode *m, const char *const *keys, const char *what,
		   struct wb_err *e)
{
	for (size_t i = 0; i < m->nr; i++) {
		const char *const *k = keys;

		while (*k && strcmp(*k, m->items[i]->key))
			k++;
		if (!*k)
			return wb_origin_error(e, &m->items[i]->key_origin,
					       "unknown key '%s' in %s (allowed: %s%s%s%s%s)",
					       m->items[i]->key, what, keys[0],
					       keys[1] ? ", " : "", keys[1] ? keys[1] : "",
					       keys[1] && keys[2] ? ", " : "",
					       keys[1] && keys[2] ? keys[2] : "");
	}
	return 0;
}

/* N must be a list of scalars (named WHAT). */
static int scalar_list(const struct rnode *n, const char *what, struct wb_err *e)
{
	if (n->type != RNODE_LIST || !n->nr)
		return wb_origin_error(e, &n->origin, "'%s' must be a non-empty list", what);
	for (size_t i = 0; i < n->nr; i++)
		if (n->items[i]->type != RNODE_SCALAR || !*n->items[i]->scalar)
			return wb_origin_error(e, &n->items[i]->origin,
					       "each of '%s' must be a non-empty string", what);
	return 0;
}

/* A name part: what a file name and a Packer name may hold. */
static int name_ok(const char *s)
{
	if (!*s || *s == '-' || *s == '.')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return 0;
	return 1;
}

/* The variations list V checked: each a map with a valid name and an
 * optional map of set pairs. */
static int check_variations(const struct rnode *v, struct wb_err *e)
{
	static const char *const keys[] = { "name", "set", NULL };

	if (v->type != RNODE_LIST || !v->nr)
		return wb_origin_error(e, &v->origin, "'variations' must be a non-empty list "
				       "of {name, set}");
	for (size_t i = 0; i < v->nr; i++) {
		const struct rnode *x = v->items[i], *name, *set;

		if (x->type != RNODE_MAP)
			return wb_origin_error(e, &x->origin, "a variation is a map: "
					       "{name: NAME, set: {KEY: VALUE}}");
		if (bad_key(x, keys, "a variation", e))
			return -1;
		name = rnode_get(x, "name");
		if (!name)
			return wb_origin_error(e, &x->origin, "a variation needs a 'name' "
					       "(appended to the image name)");
		if (name->type != RNODE_SCALAR || !name_ok(name->scalar))
			return wb_origin_error(e, &name->origin, "a variation's name is letters, "
					       "digits, '-', '_' and '.'");
		set = rnode_get(x, "set");
		if (set && set->type != RNODE_MAP)
			return wb_origin_error(e, &set->origin, "'set' is a map of recipe keys "
					       "to values, like --set KEY=VALUE");
		for (size_t k = 0; set && k < set->nr; k++)
			if (set->items[k]->type != RNODE_SCALAR)
				return wb_origin_error(e, &set->items[k]->origin,
						       "a 'set' value is a scalar, as with --set");
	}
	return 0;
}

/* RECIPE of the matrix file in DIR: a path relative to DIR, or as given
 * (a shipped name or an absolute path). */
static char *recipe_path(const char *dir, const char *recipe)
{
	size_t n = strlen(recipe);

	if (*recipe != '/' && (strchr(recipe, '/') || (n > 5 && !strcmp(recipe + n - 5, ".yaml")) ||
			       (n > 4 && !strcmp(recipe + n - 4, ".yml"))))
		return fs_join(dir, recipe);
	return xstrdup(recipe);
}

int pipe_matrix_load(struct pipeline *p, const char *path, struct wb_err *e)
{
	static const char *const keys[] = { "kind", "recipes", "variations", "builders", NULL };
	struct wb_strlist names = WB_STRLIST_INIT;
	struct rnode *top = NULL;
	const struct rnode *kind, *recipes, *vars, *builders;
	char *dir = NULL, *slash;
	size_t nv, nb, n = 0;
	int ret = -1;

	if (rnode_load_file(path, &names, &top, e))
		goto out;
	if (top->type != RNODE_MAP) {
		wb_origin_error(e, &top->origin, "expected a map with 'kind: matrix'");
		goto out;
	}
	kind = rnode_get(top, "kind");
	if (!kind || kind->type != RNODE_SCALAR || strcmp(kind->scalar, "matrix")) {
		wb_origin_error(e, kind ? &kind->origin : &top->origin,
				"a matrix file starts with 'kind: matrix'");
		goto out;
	}
	if (bad_key(top, keys, "a matrix file", e))
		goto out;
	recipes = rnode_get(top, "recipes");
	if (!recipes) {
		wb_origin_error(e, &top->origin, "missing required key 'recipes' (a list of "
				"recipe files or shipped recipe names)");
		goto out;
	}
	vars = rnode_get(top, "variations");
	builders = rnode_get(top, "builders");
	if (scalar_list(recipes, "recipes", e) || (vars && check_variations(vars, e)) ||
	    (builders && scalar_list(builders, "builders", e)))
		goto out;
	for (size_t i = 0; builders && i < builders->nr; i++)
		if (!name_ok(builders->items[i]->scalar)) {
			wb_origin_error(e, &builders->items[i]->origin, "a builder name is "
					"letters, digits, '-', '_' and '.'");
			goto out;
		}
	dir = xstrdup(path);
	slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir] = '\0';
	else
		strcpy(dir, ".");
	nv = vars ? vars->nr : 1;
	nb = builders ? builders->nr : 1;
	for (size_t i = 0; i < p->nimages; i++)
		wb_strlist_release(&p->images[i].sets);
	free(p->images);
	p->nimages = recipes->nr * nv * nb;
	p->images = xcalloc(p->nimages, sizeof(*p->images));
	p->matrix = 1;
	for (size_t r = 0; r < recipes->nr; r++)
		for (size_t v = 0; v < nv; v++)
			for (size_t b = 0; b < nb; b++) {
				struct pipe_image *img = &p->images[n++];
				const struct rnode *var = vars ? vars->items[v] : NULL;
				const struct rnode *set = var ? rnode_get(var, "set") : NULL;
				struct buf suffix = BUF_INIT;
				char where[512];

				img->recipe_owned = recipe_path(dir, recipes->items[r]->scalar);
				img->recipe = img->recipe_owned;
				wb_origin_format(&recipes->items[r]->origin, where, sizeof(where));
				img->where = xstrdup(where);
				if (var)
					buf_addf(&suffix, "%s", rnode_get(var, "name")->scalar);
				if (builders) {
					buf_addf(&suffix, "%s%s", suffix.len ? "-" : "",
						 builders->items[b]->scalar);
					wb_strlist_push(&img->builders, builders->items[b]->scalar);
				}
				img->suffix = suffix.len ? buf_detach(&suffix, NULL) : NULL;
				buf_release(&suffix);
				for (size_t k = 0; set && k < set->nr; k++) {
					char *pair = xasprintf("%s=%s", set->items[k]->key,
							       set->items[k]->scalar);

					wb_strlist_push(&img->sets, pair);
					free(pair);
				}
			}
	ret = 0;
out:
	free(dir);
	rnode_free(top);
	wb_strlist_release(&names);
	return ret;
}

int cmd_pipe_images(struct pipeline *p, const char *matrix)
{
	struct wb_err e = WB_ERR_INIT;

	if (!matrix) {
		pipe_add_recipes(p);
		return 0;
	}
	if (pipe_matrix_load(p, matrix, &e) < 0)
		return cmd_fail(&e);
	return 0;
}
