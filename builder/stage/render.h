/*
 * A small template engine for the files stage generates (containerd
 * config.toml, cloudbase-init conf files, CNI conflists, kubelet service
 * helpers). Templates are files under recipes/templates/, never C strings.
 *
 * Syntax (docs/stage.md):
 *   {{sink:name}}             the variable NAME ([a-z0-9_]+) encoded for
 *                             SINK, the language its bytes land in: a
 *                             lib/tmpl.h sink type (toml, toml_lit, ini,
 *                             json, xml, comment, ps, ps_native, ps_path,
 *                             ps_binpath, ...). A value the sink cannot
 *                             carry is an error, never spliced; a tag
 *                             without a sink type is an error.
 *   {{#if name}}A{{else}}B{{/if}}
 *                             A when NAME is non-empty (tmpl_truthy), else
 *                             B ({{else}} optional); blocks nest
 *   {{! comment }}            dropped
 * A tag that is alone on its line (only spaces or tabs around it) takes the
 * whole line with it, so block tags and comments leave no blank lines.
 * Everything else is copied byte for byte. Placeholders in the branch not
 * taken are encoded too, so a bad value fails whatever the recipe shows.
 * An unknown variable or sink, an
 * unterminated tag, a stray {{else}}/{{/if}} or an unclosed {{#if}} is an
 * error (WB_EUSAGE) naming the template and the line.
 */
#ifndef WB_RENDER_H
#define WB_RENDER_H

#include <stddef.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/tmpl.h"

/*
 * Render TMPL (LEN bytes, named NAME in messages) with VARS, appending to
 * OUT. Returns 0, or -1 with E (WB_EUSAGE) naming the template and line,
 * and for a refused value the variable, its origin and the sink; OUT may
 * hold partial output.
 */
int render_string(const char *name, const char *tmpl, size_t len,
		  const struct tmpl_vars *vars, struct buf *out,
		  struct wb_err *e);

/* Read the template file PATH (at most 1 MiB) and render it into OUT. */
int render_file(const char *path, const struct tmpl_vars *vars,
		struct buf *out, struct wb_err *e);

#endif
