/*
 * Typed template values: the variables stage/render.h renders, and the
 * encoders of every sink a value can land in (docs/hardening.md, "Typed
 * rendering").
 *
 * A variable holds data, never text of the target language: a string, an
 * integer, or a list/record built from them (a jansson value). Each
 * placeholder in a template names the sink its bytes land in,
 * {{sink:name}}; the renderer hands the value to that sink's encoder, which
 * either escapes it for the sink (TOML, JSON, XML, PowerShell and HCL
 * strings) or validates it against the sink's grammar (comments, INI
 * values, native command-line arguments, PATH entries, sc.exe binPath
 * paths) and refuses it. There is no raw splice: the only verbatim type is
 * "trusted", and only a variable set with tmpl_set_trusted() (text
 * winbuild's own code wrote, never a recipe value) renders with it, and
 * only with it.
 */
#ifndef WB_TMPL_H
#define WB_TMPL_H

#include <jansson.h>
#include <stddef.h>

#include "buf.h"
#include "err.h"
#include "strlist.h"

struct tmpl_var {
	char *name;
	json_t *value;   /* string, integer, array or object (owned) */
	char *from;      /* where the value came from, for messages, or NULL */
	json_t *froms;   /* for a list: where each element came from, or NULL */
	int trusted;     /* set by tmpl_set_trusted: renders only as {{trusted:}} */
};

/* An owned set of variables; tmpl_vars_release frees everything. */
struct tmpl_vars {
	struct tmpl_var *v;
	size_t nr, alloc;
};

#define TMPL_VARS_INIT { NULL, 0, 0 }

/* Set NAME to the string VALUE (copied); a later set of NAME replaces. */
void tmpl_set(struct tmpl_vars *vars, const char *name, const char *value);
/* The same, remembering FROM (e.g. "components.containerd.version at
 * recipe.yaml:4:10") for error messages. */
void tmpl_set_from(struct tmpl_vars *vars, const char *name, const char *value,
		   const char *from);
void tmpl_set_int(struct tmpl_vars *vars, const char *name, long long value);
/* A list of strings. */
void tmpl_set_list(struct tmpl_vars *vars, const char *name,
		   const struct wb_strlist *l);
/* A list whose element I came from FROM->v[I] (FROM has L's length). */
void tmpl_set_list_from(struct tmpl_vars *vars, const char *name,
			const struct wb_strlist *l, const struct wb_strlist *from);
/* Any value; takes the references to VALUE and to FROMS (NULL, or an
 * array of strings: where each element of the array VALUE came from). */
void tmpl_set_json_from(struct tmpl_vars *vars, const char *name, json_t *value,
			json_t *froms);
/* Any value; takes the reference to VALUE. */
void tmpl_set_json(struct tmpl_vars *vars, const char *name, json_t *value);
/* Text winbuild's own code produced (constants, other rendered templates):
 * renders verbatim, and only through {{trusted:name}}. Never pass a value
 * that a recipe, override or archive can influence. */
void tmpl_set_trusted(struct tmpl_vars *vars, const char *name, const char *value);

const struct tmpl_var *tmpl_find(const struct tmpl_vars *vars, const char *name,
				 size_t len);
/* The string value of NAME, or NULL when unset or not a string. */
const char *tmpl_get(const struct tmpl_vars *vars, const char *name);
/* For {{#if}}: a non-empty string or list, a non-zero integer. */
int tmpl_truthy(const struct tmpl_var *v);
void tmpl_vars_release(struct tmpl_vars *vars);

/* Whether SINK (LEN bytes) is a sink type the renderer knows. */
int tmpl_sink_known(const char *sink, size_t len);

/*
 * Append V encoded for SINK (LEN bytes) to OUT. Returns 0, or -1 with E
 * (WB_EUSAGE) naming the variable, the value (escaped), where it came
 * from and the sink; OUT is then unchanged.
 */
int tmpl_encode(const char *sink, size_t len, const struct tmpl_var *v,
		struct buf *out, struct wb_err *e);

/*
 * Whether the string S, as one element of a list, passes the checks of
 * SINK (e.g. "ps_binpath": a native argument inside an sc.exe binPath).
 * Returns 1, or 0 with *WHY the reason and *AT the byte offset: the plan
 * refuses such a recipe value at its file:line:col before anything is
 * rendered.
 */
int tmpl_sink_accepts(const char *sink, const char *s, const char **why, size_t *at);

/* S for a message: printable ASCII as is, '\\n', other bytes as \\xHH, at
 * most 80 bytes then "...". Nothing in it reaches a terminal raw. */
void tmpl_describe(struct buf *b, const char *s);

/* Single-quoted PowerShell literal of S (no validation; tmpl_encode's "ps"
 * sink refuses what this cannot carry). */
void tmpl_ps_quote(struct buf *out, const char *s);

/*
 * Plan-time grammars (recipe/components.c, recipe/top.c): a version ("2.1.4", "v1.33.0",
 * "1.1.6-rc.1+build.5": an optional "v", dot-separated digits, optional
 * -pre and +build parts of [0-9A-Za-z.-]), and an OCI image reference as
 * distribution/reference parses it (domain[:port]/path[:tag][@digest]).
 * Return 1 when S matches.
 */
int tmpl_version_ok(const char *s);
int tmpl_image_ref_ok(const char *s);

#endif
