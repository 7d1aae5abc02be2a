/*
 * A small template engine for the files stage generates (containerd
 * config.toml, cloudbase-init conf files, CNI conflists, kubelet service
 * helpers). Templates are files under recipes/templates/, never C strings.
 *
 * Syntax (docs/stage.md):
 *   {{name}}                  the value of variable NAME ([a-z0-9_]+)
 *   {{#if name}}A{{else}}B{{/if}}
 *                             A when NAME is non-empty, else B ({{else}}
 *                             optional); blocks nest
 *   {{! comment }}            dropped
 * A tag that is alone on its line (only spaces or tabs around it) takes the
 * whole line with it, so block tags and comments leave no blank lines.
 * Everything else is copied byte for byte. An unknown variable, an
 * unterminated tag, a stray {{else}}/{{/if}} or an unclosed {{#if}} is an
 * error (WB_EUSAGE) naming the template and the line.
 */
#ifndef WB_RENDER_H
#define WB_RENDER_H

#include <stddef.h>

#include "lib/buf.h"
#include "lib/err.h"

struct render_var {
	const char *name;
	const char *value;   /* never NULL; "" is false for {{#if}} */
};

struct render_vars {
	struct render_var *v;   /* owned array; names and values not owned */
	size_t nr, alloc;
};

#define RENDER_VARS_INIT { NULL, 0, 0 }

/* Set NAME to VALUE (both must outlive VARS); a later set replaces. */
void render_set(struct render_vars *vars, const char *name, const char *value);
void render_vars_release(struct render_vars *vars);

/*
 * Render TMPL (LEN bytes, named NAME in messages) with VARS, appending to
 * OUT. Returns 0, or -1 with E (WB_EUSAGE); OUT may hold partial output.
 */
int render_string(const char *name, const char *tmpl, size_t len,
		  const struct render_vars *vars, struct buf *out,
		  struct wb_err *e);

/* Read the template file PATH (at most 1 MiB) and render it into OUT. */
int render_file(const char *path, const struct render_vars *vars,
		struct buf *out, struct wb_err *e);

#endif
