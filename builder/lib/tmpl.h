/*
 * An owned set of template variables (names and values copied), for code
 * that computes values before rendering them with stage/render.h, whose
 * render_vars only borrow their strings. Values are inserted verbatim by
 * the renderer: the caller quotes them for the target language (see
 * emit/scripts.c and emit/packer.c).
 */
#ifndef WB_TMPL_H
#define WB_TMPL_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

struct tmpl_var {
	char *name;
	char *value;
};

/* An owned set of variables; tmpl_vars_release frees names and values. */
struct tmpl_vars {
	struct tmpl_var *v;
	size_t nr, alloc;
};

#define TMPL_VARS_INIT { NULL, 0, 0 }

/* Set NAME to VALUE (both copied); a later set of the same name wins. */
void tmpl_set(struct tmpl_vars *vars, const char *name, const char *value);
void tmpl_setf(struct tmpl_vars *vars, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *tmpl_get(const struct tmpl_vars *vars, const char *name);
void tmpl_vars_release(struct tmpl_vars *vars);

#endif
