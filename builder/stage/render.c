/* The template engine: {{sink:name}}, {{#if name}}...{{else}}...{{/if}}, {{! }}.
 *
 * @where where templates are rendered -- the engine; templates in
 *   `recipes/templates/`
 *
 * @where the templates themselves (HCL pieces, PowerShell steps) --
 *   `packer/hcl/<piece>.pkr.hcl.in`, `packer/scripts/<step>.ps1.in`
 */
#include <stdlib.h>
#include <string.h>

#include "lib/fs.h"
#include "stage/render.h"

#define RENDER_MAX_FILE (1024 * 1024)
#define RENDER_MAX_DEPTH 16

enum tag_kind { TAG_VAR, TAG_IF, TAG_ELSE, TAG_ENDIF, TAG_COMMENT };

struct tag {
	enum tag_kind kind;
	const char *name;      /* for VAR and IF */
	size_t name_len;
	const char *sink;      /* for VAR: the sink type before ':' */
	size_t sink_len;
	size_t start, end;     /* bytes of the tag (or of its whole line) */
};

struct state {
	const char *name, *t;
	size_t len;
	struct wb_err *e;
};

static int line_of(const struct state *s, size_t pos)
{
	int line = 1;

	for (size_t i = 0; i < pos && i < s->len; i++)
		line += s->t[i] == '\n';
	return line;
}

static int fail(const struct state *s, size_t pos, const char *what,
		const char *subject, size_t subject_len)
{
	return wb_error(s->e, WB_EUSAGE, "template '%s' line %d: %s%s%.*s%s",
			s->name, line_of(s, pos), what, subject ? " '" : "",
			(int)subject_len, subject ? subject : "", subject ? "'" : "");
}

static int name_ok(const char *p, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') ||
		      p[i] == '_'))
			return 0;
	return 1;
}

/* Parse the tag starting at POS ("{{"). Widens it to its whole line when it
 * is a block tag or comment standing alone. */
static int parse_tag(const struct state *s, size_t pos, struct tag *tag)
{
	const char *open = s->t + pos + 2, *close, *body;
	size_t blen;

	close = NULL;
	for (const char *p = open; p + 1 < s->t + s->len; p++)
		if (p[0] == '}' && p[1] == '}') {
			close = p;
			break;
		}
	if (!close)
		return fail(s, pos, "unterminated tag", NULL, 0);
	body = open;
	blen = (size_t)(close - open);
	while (blen && (*body == ' ' || *body == '\t')) {
		body++;
		blen--;
	}
	while (blen && (body[blen - 1] == ' ' || body[blen - 1] == '\t'))
		blen--;
	tag->start = pos;
	tag->end = (size_t)(close - s->t) + 2;
	tag->name = NULL;
	tag->name_len = 0;
	tag->sink = NULL;
	tag->sink_len = 0;
	if (blen && body[0] == '!') {
		tag->kind = TAG_COMMENT;
	} else if (blen > 4 && !memcmp(body, "#if", 3) &&
		   (body[3] == ' ' || body[3] == '\t')) {
		tag->kind = TAG_IF;
		tag->name = body + 4;
		tag->name_len = blen - 4;
		while (tag->name_len && (*tag->name == ' ' || *tag->name == '\t')) {
			tag->name++;
			tag->name_len--;
		}
	} else if (blen == 4 && !memcmp(body, "else", 4)) {
		tag->kind = TAG_ELSE;
	} else if (blen == 3 && !memcmp(body, "/if", 3)) {
		tag->kind = TAG_ENDIF;
	} else {
		const char *colon = memchr(body, ':', blen);

		tag->kind = TAG_VAR;
		if (!colon)
			return fail(s, pos, "placeholder without a sink type "
				    "({{sink:name}}, docs/stage.md)", body, blen);
		tag->sink = body;
		tag->sink_len = (size_t)(colon - body);
		tag->name = colon + 1;
		tag->name_len = blen - tag->sink_len - 1;
		if (!tmpl_sink_known(tag->sink, tag->sink_len))
			return fail(s, pos, "unknown sink type", tag->sink, tag->sink_len);
	}
	if ((tag->kind == TAG_VAR || tag->kind == TAG_IF) &&
	    !name_ok(tag->name, tag->name_len))
		return fail(s, pos, "bad tag", body, blen);
	if (tag->kind != TAG_VAR) {
		size_t a = tag->start, b = tag->end;

		while (a > 0 && (s->t[a - 1] == ' ' || s->t[a - 1] == '\t'))
			a--;
		while (b < s->len && (s->t[b] == ' ' || s->t[b] == '\t'))
			b++;
		if ((a == 0 || s->t[a - 1] == '\n') && (b == s->len || s->t[b] == '\n')) {
			tag->start = a;
			tag->end = b < s->len ? b + 1 : b;
		}
	}
	return 0;
}

/* Where the next "{{" at or after POS starts, or LEN. */
static size_t next_open(const struct state *s, size_t pos)
{
	for (size_t i = pos; i + 1 < s->len; i++)
		if (s->t[i] == '{' && s->t[i + 1] == '{')
			return i;
	return s->len;
}

/*
 * Render from *POS until the end (DEPTH 0) or the {{else}}/{{/if}} that
 * closes the current block, which is left in *STOP. With EMIT 0 the text is
 * checked but not output (the branch not taken).
 */
static int render_block(const struct state *s, size_t *pos, int depth,
			int emit, const struct tmpl_vars *vars,
			struct buf *out, struct tag *stop)
{
	for (;;) {
		size_t open = next_open(s, *pos);
		struct tag tag;

		/* text up to the next tag; a standalone block tag may start
		 * earlier (its leading blanks) */
		if (open == s->len) {
			if (emit)
				buf_add(out, s->t + *pos, s->len - *pos);
			*pos = s->len;
			if (depth)
				return fail(s, s->len, "{{#if}} not closed", NULL, 0);
			return 0;
		}
		if (parse_tag(s, open, &tag) < 0)
			return -1;
		if (emit && tag.start > *pos)
			buf_add(out, s->t + *pos, tag.start - *pos);
		*pos = tag.end;
		switch (tag.kind) {
		case TAG_COMMENT:
			break;
		case TAG_VAR: {
			const struct tmpl_var *v = tmpl_find(vars, tag.name, tag.name_len);
			struct wb_err ee = WB_ERR_INIT;
			struct buf val = BUF_INIT;
			int r;

			if (!v)
				return fail(s, open, "unknown placeholder", tag.name,
					    tag.name_len);
			/* the branch not taken is checked too: a value is refused
			 * for its sink whether or not this recipe shows it */
			r = tmpl_encode(tag.sink, tag.sink_len, v, &val, &ee);
			if (!r && emit)
				buf_add(out, val.ptr, val.len);
			buf_release(&val);
			if (r < 0)
				return wb_error(s->e, WB_EUSAGE, "%s (template '%s' line %d)",
						ee.msg, s->name, line_of(s, open));
			break;
		}
		case TAG_IF: {
			const struct tmpl_var *v = tmpl_find(vars, tag.name, tag.name_len);
			struct tag end;
			int cond;

			if (!v)
				return fail(s, open, "unknown placeholder", tag.name,
					    tag.name_len);
			if (depth + 1 > RENDER_MAX_DEPTH)
				return fail(s, open, "{{#if}} nested too deeply", NULL, 0);
			cond = tmpl_truthy(v);
			if (render_block(s, pos, depth + 1, emit && cond, vars, out, &end) < 0)
				return -1;
			if (end.kind == TAG_ELSE) {
				if (render_block(s, pos, depth + 1, emit && !cond, vars,
						 out, &end) < 0)
					return -1;
				if (end.kind == TAG_ELSE)
					return fail(s, end.start, "second {{else}}", NULL, 0);
			}
			break;
		}
		case TAG_ELSE:
		case TAG_ENDIF:
			if (!depth)
				return fail(s, open, tag.kind == TAG_ELSE ?
					    "{{else}} outside {{#if}}" :
					    "{{/if}} without {{#if}}", NULL, 0);
			*stop = tag;
			return 0;
		}
	}
}

int render_string(const char *name, const char *tmpl, size_t len,
		  const struct tmpl_vars *vars, struct buf *out,
		  struct wb_err *e)
{
	struct state s = { name, tmpl, len, e };
	struct tag stop;
	size_t pos = 0;

	return render_block(&s, &pos, 0, 1, vars, out, &stop);
}

int render_file(const char *path, const struct tmpl_vars *vars,
		struct buf *out, struct wb_err *e)
{
	struct buf t = BUF_INIT;
	int ret;

	if (fs_read_file(path, RENDER_MAX_FILE, WB_EUSAGE, &t, e) < 0) {
		buf_release(&t);
		return -1;
	}
	ret = render_string(path, t.ptr, t.len, vars, out, e);
	buf_release(&t);
	return ret;
}
