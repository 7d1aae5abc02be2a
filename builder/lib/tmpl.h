/*
 * A deliberately small template renderer for the files winbuild generates
 * (PowerShell steps, Packer HCL pieces). Templates are files in the repo
 * (packer/...), never C string literals.
 *
 * Syntax: "{{name}}" is replaced by the value of NAME, where NAME is
 * [a-z0-9_]+. Nothing else is special: a "{{" not followed by a name and
 * "}}" is copied as is (so PowerShell's "{ {" and HCL's "${...}" pass
 * through). A name with no value is an error naming the template line.
 * Values are inserted verbatim: the caller quotes them for the target
 * language (see emit/scripts.c for PowerShell quoting).
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

/*
 * Render SRC (LEN bytes, named WHAT in errors) with VARS, appending to OUT.
 * Errors are WB_EUSAGE: "WHAT:LINE: no value for '{{name}}'".
 */
int tmpl_render(const char *what, const char *src, size_t len,
		const struct tmpl_vars *vars, struct buf *out, struct wb_err *e);

#endif
