#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/tmpl.h"

static struct tmpl_var *find(const struct tmpl_vars *vars, const char *name,
			     size_t len)
{
	for (size_t i = 0; i < vars->nr; i++)
		if (strlen(vars->v[i].name) == len &&
		    !memcmp(vars->v[i].name, name, len))
			return &vars->v[i];
	return NULL;
}

void tmpl_set(struct tmpl_vars *vars, const char *name, const char *value)
{
	struct tmpl_var *v = find(vars, name, strlen(name));

	if (v) {
		free(v->value);
		v->value = xstrdup(value);
		return;
	}
	ALLOC_GROW(vars->v, vars->nr + 1, vars->alloc);
	vars->v[vars->nr].name = xstrdup(name);
	vars->v[vars->nr].value = xstrdup(value);
	vars->nr++;
}

void tmpl_setf(struct tmpl_vars *vars, const char *name, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	tmpl_set(vars, name, b.ptr);
	buf_release(&b);
}

const char *tmpl_get(const struct tmpl_vars *vars, const char *name)
{
	struct tmpl_var *v = find(vars, name, strlen(name));

	return v ? v->value : NULL;
}

void tmpl_vars_release(struct tmpl_vars *vars)
{
	for (size_t i = 0; i < vars->nr; i++) {
		free(vars->v[i].name);
		free(vars->v[i].value);
	}
	free(vars->v);
	vars->v = NULL;
	vars->nr = vars->alloc = 0;
}
