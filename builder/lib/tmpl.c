/* Typed template values and the encoder of every sink (lib/tmpl.h).
 *
 * @where owned template variables for emit -- rendered by
 *   `builder/stage/render.c`
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/text.h"
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

static struct tmpl_var *put(struct tmpl_vars *vars, const char *name, json_t *value,
			     const char *from, int trusted)
{
	struct tmpl_var *v = find(vars, name, strlen(name));

	if (!v) {
		ALLOC_GROW(vars->v, vars->nr + 1, vars->alloc);
		v = &vars->v[vars->nr++];
		v->name = xstrdup(name);
	} else {
		json_decref(v->value);
		json_decref(v->froms);
		free(v->from);
	}
	v->value = value;
	v->from = from ? xstrdup(from) : NULL;
	v->froms = NULL;
	v->trusted = trusted;
	return v;
}

static json_t *str(const char *s);

void tmpl_set_list_from(struct tmpl_vars *vars, const char *name,
			const struct wb_strlist *l, const struct wb_strlist *from)
{
	json_t *a = json_array(), *f = json_array();

	for (size_t i = 0; i < l->nr; i++)
		json_array_append_new(a, str(l->v[i]));
	for (size_t i = 0; i < from->nr; i++)
		json_array_append_new(f, str(from->v[i]));
	put(vars, name, a, NULL, 0)->froms = f;
}

void tmpl_set_json_from(struct tmpl_vars *vars, const char *name, json_t *value,
			json_t *froms)
{
	put(vars, name, value, NULL, 0)->froms = froms;
}

/* A string value whatever its bytes: the encoders check UTF-8 themselves,
 * so a bad byte is refused with the sink named, not lost here. */
static json_t *str(const char *s)
{
	return json_stringn_nocheck(s ? s : "", s ? strlen(s) : 0);
}

void tmpl_set(struct tmpl_vars *vars, const char *name, const char *value)
{
	put(vars, name, str(value), NULL, 0);
}

void tmpl_set_from(struct tmpl_vars *vars, const char *name, const char *value,
		   const char *from)
{
	put(vars, name, str(value), from, 0);
}

void tmpl_set_int(struct tmpl_vars *vars, const char *name, long long value)
{
	put(vars, name, json_integer(value), NULL, 0);
}

void tmpl_set_list(struct tmpl_vars *vars, const char *name,
		   const struct wb_strlist *l)
{
	struct wb_strlist none = WB_STRLIST_INIT;

	tmpl_set_list_from(vars, name, l, &none);
}

void tmpl_set_json(struct tmpl_vars *vars, const char *name, json_t *value)
{
	put(vars, name, value, NULL, 0);
}

void tmpl_set_trusted(struct tmpl_vars *vars, const char *name, const char *value)
{
	put(vars, name, str(value), NULL, 1);
}

const struct tmpl_var *tmpl_find(const struct tmpl_vars *vars, const char *name,
				 size_t len)
{
	return find(vars, name, len);
}

const char *tmpl_get(const struct tmpl_vars *vars, const char *name)
{
	struct tmpl_var *v = find(vars, name, strlen(name));

	return v && json_is_string(v->value) ? json_string_value(v->value) : NULL;
}

int tmpl_truthy(const struct tmpl_var *v)
{
	if (json_is_string(v->value))
		return json_string_length(v->value) > 0;
	if (json_is_array(v->value))
		return json_array_size(v->value) > 0;
	if (json_is_object(v->value))
		return json_object_size(v->value) > 0;
	if (json_is_integer(v->value))
		return json_integer_value(v->value) != 0;
	return 0;
}

void tmpl_vars_release(struct tmpl_vars *vars)
{
	for (size_t i = 0; i < vars->nr; i++) {
		free(vars->v[i].name);
		json_decref(vars->v[i].value);
		json_decref(vars->v[i].froms);
		free(vars->v[i].from);
	}
	free(vars->v);
	vars->v = NULL;
	vars->nr = vars->alloc = 0;
}

/* ---- character classes -------------------------------------------------- */

/* Why a string is refused: the byte offset and a reason. */
struct why {
	size_t at;
	const char *reason;
	const char *subject;   /* the string refused, when inside a list/record */
};

static int refuse(struct why *w, size_t at, const char *reason)
{
	w->at = at;
	w->reason = reason;
	return -1;
}

/* Checks every string must pass for a text sink: valid UTF-8, and no
 * control character (C0, DEL, C1) nor Unicode line/paragraph separator,
 * except those in KEEP. ASCII_ONLY refuses every non-ASCII character. */
static int text_ok(const char *s, size_t n, const char *keep, int ascii_only,
		   struct why *w)
{
	for (size_t i = 0; i < n;) {
		unsigned cp;
		size_t len = text_utf8_next(s + i, n - i, &cp);

		if (!len)
			return refuse(w, i, "is not valid UTF-8");
		if (cp >= 0x80 && ascii_only)
			return refuse(w, i, "holds a non-ASCII character (Windows "
				      "PowerShell 5.1 reads a script without a BOM in "
				      "the ANSI code page)");
		if ((cp < 0x20 || cp == 0x7f) && !(cp && strchr(keep, (int)cp)))
			return refuse(w, i, cp == '\n' || cp == '\r' ?
				      "holds a line break" : "holds a control character");
		if ((cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029)
			return refuse(w, i, "holds a Unicode control character or "
				      "line separator");
		i += len;
	}
	return 0;
}

/* ---- the sinks ---------------------------------------------------------- */

/* Every sink encoder: append V for the sink to OUT, or fill W. */
typedef int encode_fn(const json_t *v, struct buf *out, struct why *w);

static int want_string(const json_t *v, struct why *w)
{
	return json_is_string(v) ? 0 :
		refuse(w, 0, "is not a string, which this sink cannot hold");
}

#define SV(v) json_string_value(v), json_string_length(v)

/* KEEP for text_ok in sinks that escape every control character */
#define ANY_CONTROL "\t\n\r\b\f\x01\x02\x03\x04\x05\x06\x07\x0b\x0e\x0f\x10" \
	"\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f"

static int enc_comment(const json_t *v, struct buf *out, struct why *w)
{
	if (want_string(v, w) || text_ok(SV(v), "\t", 0, w))
		return -1;
	buf_add(out, json_string_value(v), json_string_length(v));
	return 0;
}

static int enc_md_code(const json_t *v, struct buf *out, struct why *w)
{
	const char *s;

	if (want_string(v, w) || text_ok(SV(v), "", 0, w))
		return -1;
	s = json_string_value(v);
	if (strcspn(s, "`|<>") != strlen(s))
		return refuse(w, strcspn(s, "`|<>"), "holds one of ` | < >, which "
			      "end Markdown code or a table cell");
	buf_adds(out, s);
	return 0;
}

/* TOML basic string ("..."): escapes for '"', '\' and every control
 * character (TOML 1.0, "Basic strings"). */
static int enc_toml(const json_t *v, struct buf *out, struct why *w)
{
	const char *s;

	if (want_string(v, w) || text_ok(SV(v), ANY_CONTROL, 0, w))
		return -1;
	s = json_string_value(v);
	buf_addc(out, '"');
	for (size_t i = 0; i < json_string_length(v); i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '"': buf_adds(out, "\\\""); break;
		case '\\': buf_adds(out, "\\\\"); break;
		case '\b': buf_adds(out, "\\b"); break;
		case '\t': buf_adds(out, "\\t"); break;
		case '\n': buf_adds(out, "\\n"); break;
		case '\f': buf_adds(out, "\\f"); break;
		case '\r': buf_adds(out, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				buf_addf(out, "\\u%04X", c);
			else
				buf_addc(out, (char)c);
		}
	}
	buf_addc(out, '"');
	return 0;
}

/* TOML literal string ('...'): nothing can be escaped, so a quote or a
 * control character other than tab is refused. */
static int enc_toml_lit(const json_t *v, struct buf *out, struct why *w)
{
	const char *s;

	if (want_string(v, w) || text_ok(SV(v), "\t", 0, w))
		return -1;
	s = json_string_value(v);
	if (strchr(s, '\''))
		return refuse(w, (size_t)(strchr(s, '\'') - s), "holds a ', which "
			      "ends a TOML literal string");
	buf_addc(out, '\'');
	buf_adds(out, s);
	buf_addc(out, '\'');
	return 0;
}

/* An INI value after "key=", as configparser and oslo.config (cloudbase-
 * init) read it: one line, no blanks they would strip, no comment or
 * interpolation characters. */
static int enc_ini(const json_t *v, struct buf *out, struct why *w)
{
	const char *s;
	size_t n;

	if (want_string(v, w) || text_ok(SV(v), "", 0, w))
		return -1;
	s = json_string_value(v);
	n = strlen(s);
	if (n && (s[0] == ' ' || s[n - 1] == ' '))
		return refuse(w, s[0] == ' ' ? 0 : n - 1, "starts or ends with a "
			      "blank, which an INI reader strips");
	if (strcspn(s, ";#$%") != n)
		return refuse(w, strcspn(s, ";#$%"), "holds one of ; # $ %, which "
			      "INI readers take as a comment or an interpolation");
	buf_add(out, s, n);
	return 0;
}

static int check_tree(const json_t *v, struct why *w)
{
	size_t i;
	const char *k;
	json_t *x;

	if (json_is_string(v))
		return text_ok(SV(v), ANY_CONTROL, 0, w);
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			if (check_tree(x, w))
				return -1;
	}
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x)
			if (check_tree(x, w))
				return -1;
	}
	return 0;
}

/* JSON: jansson's encoder, ASCII only (\uXXXX for everything else). */
static int enc_json(const json_t *v, struct buf *out, struct why *w)
{
	char *s;

	if (check_tree(v, w))
		return -1;
	s = json_dumps(v, JSON_ENCODE_ANY | JSON_ENSURE_ASCII | JSON_COMPACT);
	if (!s)
		return refuse(w, 0, "cannot be encoded as JSON");
	buf_adds(out, s);
	free(s);
	return 0;
}

/* XML 1.0 text or attribute value: the five entities, and character
 * references for the blanks an attribute would normalise away. */
static int enc_xml(const json_t *v, struct buf *out, struct why *w)
{
	const char *s;

	if (want_string(v, w) || text_ok(SV(v), "\t\n\r", 0, w))
		return -1;
	s = json_string_value(v);
	if (strstr(s, "\xef\xbf\xbe") || strstr(s, "\xef\xbf\xbf"))
		return refuse(w, 0, "holds U+FFFE or U+FFFF, which XML does not allow");
	for (; *s; s++)
		switch (*s) {
		case '&': buf_adds(out, "&amp;"); break;
		case '<': buf_adds(out, "&lt;"); break;
		case '>': buf_adds(out, "&gt;"); break;
		case '"': buf_adds(out, "&quot;"); break;
		case '\'': buf_adds(out, "&apos;"); break;
		case '\t': buf_adds(out, "&#9;"); break;
		case '\n': buf_adds(out, "&#10;"); break;
		case '\r': buf_adds(out, "&#13;"); break;
		default: buf_addc(out, *s);
		}
	return 0;
}

void tmpl_ps_quote(struct buf *out, const char *s)
{
	buf_addc(out, '\'');
	for (; *s; s++) {
		/* PowerShell ends a single-quoted string at ' and at the
		 * typographic quotes U+2018..U+201B; doubling escapes them */
		if (*s == '\'')
			buf_addc(out, '\'');
		else if ((unsigned char)s[0] == 0xe2 && (unsigned char)s[1] == 0x80 &&
			 (unsigned char)s[2] >= 0x98 && (unsigned char)s[2] <= 0x9b) {
			buf_add(out, s, 3);
			buf_add(out, s, 3);
			s += 2;
			continue;
		}
		buf_addc(out, *s);
	}
	buf_addc(out, '\'');
}

/* Per-string checks of the sinks a PowerShell value is handed on to. */
typedef int str_check_fn(const char *s, int in_list, struct why *w);

/* PowerShell literal of V: 'string' (ASCII: see text_ok), 123, @(a, b),
 * @{ Key = v; ... }; every string also passes CHECK. */
static int ps_value(const json_t *v, str_check_fn *check, int in_list,
		    struct buf *out, struct why *w)
{
	size_t i;
	const char *k;
	json_t *x;

	if (json_is_string(v)) {
		if (text_ok(SV(v), "\t", 1, w) ||
		    (check && check(json_string_value(v), in_list, w))) {
			if (in_list)
				w->subject = json_string_value(v);
			return -1;
		}
		tmpl_ps_quote(out, json_string_value(v));
	} else if (json_is_integer(v)) {
		buf_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_array(v)) {
		buf_adds(out, "@(");
		json_array_foreach(v, i, x) {
			if (i)
				buf_adds(out, ", ");
			if (ps_value(x, check, 1, out, w))
				return -1;
		}
		buf_addc(out, ')');
	} else if (json_is_object(v)) {
		int first = 1;

		buf_adds(out, "@{ ");
		json_object_foreach((json_t *)v, k, x) {
			if (!*k || strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					  "0123456789_") != strlen(k))
				return refuse(w, 0, "has a key that is not a bare word");
			buf_addf(out, "%s%s = ", first ? "" : "; ", k);
			first = 0;
			if (ps_value(x, check, 1, out, w))
				return -1;
		}
		buf_adds(out, " }");
	} else {
		return refuse(w, 0, "has no PowerShell literal");
	}
	return 0;
}

/*
 * An argument Windows PowerShell 5.1 hands to a native program: it wraps
 * an argument holding a blank in "..." without escaping anything, drops an
 * empty one, and the program splits the line with the CommandLineToArgvW
 * rules. So: no '"', no '\' before the closing quote it may add, and
 * never empty in a list (a scalar '' means "absent"; templates test it).
 */
static int native_ok(const char *s, int in_list, struct why *w)
{
	size_t n = strlen(s);

	if (!n && in_list)
		return refuse(w, 0, "is empty, and PowerShell 5.1 drops an empty "
			      "argument to a native program");
	if (strchr(s, '"'))
		return refuse(w, (size_t)(strchr(s, '"') - s), "holds a \", which "
			      "PowerShell 5.1 passes to a native program unescaped");
	if (n && s[n - 1] == '\\')
		return refuse(w, n - 1, "ends in \\, which escapes the quote "
			      "PowerShell 5.1 closes an argument with");
	if (strchr(s, '\t'))
		return refuse(w, (size_t)(strchr(s, '\t') - s), "holds a tab");
	return 0;
}

/* msiexec PROPERTY=value: a property name, then a native argument. */
static int msiprop_ok(const char *s, int in_list, struct why *w)
{
	size_t name = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			     "0123456789_.");

	if (!name || s[name] != '=' || (s[0] >= '0' && s[0] <= '9') || s[0] == '.')
		return refuse(w, name, "is not PROPERTY=value with a property name "
			      "of [A-Za-z_][A-Za-z0-9_.]*");
	return native_ok(s, in_list, w);
}

/* A Windows PATH entry: ';' splits entries, '"' quotes parts of them. */
static int path_entry_ok(const char *s, int in_list, struct why *w)
{
	size_t n = strlen(s);

	(void)in_list;
	if (!n)
		return refuse(w, 0, "is empty");
	if (strcspn(s, ";\"") != n)
		return refuse(w, strcspn(s, ";\""), "holds ; or \", which split or "
			      "quote Windows PATH entries");
	if (s[0] == ' ' || s[n - 1] == ' ' || s[0] == '\t' || s[n - 1] == '\t')
		return refuse(w, 0, "starts or ends with a blank");
	return 0;
}

/* A path quoted inside an sc.exe binPath (a REG_EXPAND_SZ command line that
 * is itself one native argument): a native argument without '%'. */
static int binpath_ok(const char *s, int in_list, struct why *w)
{
	if (strchr(s, '%'))
		return refuse(w, (size_t)(strchr(s, '%') - s), "holds a %, which the "
			      "service manager expands in a binPath");
	return native_ok(s, in_list, w);
}

static int enc_ps(const json_t *v, struct buf *out, struct why *w)
{
	return ps_value(v, NULL, 0, out, w);
}

static int enc_ps_native(const json_t *v, struct buf *out, struct why *w)
{
	return ps_value(v, native_ok, 0, out, w);
}

static int enc_ps_msiprop(const json_t *v, struct buf *out, struct why *w)
{
	return ps_value(v, msiprop_ok, 0, out, w);
}

static int enc_ps_path(const json_t *v, struct buf *out, struct why *w)
{
	return ps_value(v, path_entry_ok, 0, out, w);
}

static int enc_ps_binpath(const json_t *v, struct buf *out, struct why *w)
{
	return ps_value(v, binpath_ok, 0, out, w);
}

/* The body of a single-quoted here-string (@'\n...\n'@): a line that
 * starts with a quote would end it. */
static int enc_ps_here(const json_t *v, struct buf *out, struct why *w)
{
	const char *s;

	if (want_string(v, w) || text_ok(SV(v), "\t\n", 1, w))
		return -1;
	s = json_string_value(v);
	for (size_t i = 0; s[i]; i++)
		if ((i == 0 || s[i - 1] == '\n') && s[i] == '\'')
			return refuse(w, i, "has a line starting with ', which ends a "
				      "here-string");
	buf_adds(out, s);
	return 0;
}

/* HCL quoted string content: escapes, and $${ / %%{ for template
 * sequences. Packer's HCL parser normalises string literals to Unicode
 * NFC (hashicorp/hcl, hclsyntax/spec.md), so a value holding a character
 * NFC may change reaches Packer as other text (render_fuzz.py, seed
 * 1795776020: U+FB1F read back as U+05F2 U+05B7). Every code point below
 * U+0300 is NFC-stable on its own and no combining mark lies there, so
 * only those are written. */
static int hcl_body(const json_t *v, struct buf *out, struct why *w)
{
	const char *s;

	if (want_string(v, w) || text_ok(SV(v), "\t\n\r", 0, w))
		return -1;
	for (size_t i = 0, n = json_string_length(v); i < n;) {
		unsigned cp;
		size_t len = text_utf8_next(json_string_value(v) + i, n - i, &cp);

		if (cp >= 0x300)
			return refuse(w, i, "holds a character at or above U+0300, which "
				      "Packer's HCL parser may change (it normalises every "
				      "string to Unicode NFC)");
		i += len;
	}
	for (s = json_string_value(v); *s; s++)
		switch (*s) {
		case '"': buf_adds(out, "\\\""); break;
		case '\\': buf_adds(out, "\\\\"); break;
		case '\n': buf_adds(out, "\\n"); break;
		case '\r': buf_adds(out, "\\r"); break;
		case '\t': buf_adds(out, "\\t"); break;
		case '$':
		case '%':
			buf_addc(out, *s);
			if (s[1] == '{')
				buf_addc(out, *s);
			break;
		default: buf_addc(out, *s);
		}
	return 0;
}

static int enc_hcl(const json_t *v, struct buf *out, struct why *w)
{
	buf_addc(out, '"');
	if (hcl_body(v, out, w))
		return -1;
	buf_addc(out, '"');
	return 0;
}

/* One RFC 6838 section 4.2 restricted-name: 1 to 127 of ALPHA, DIGIT and
 * "!&-^_.+", the first a letter or digit. The RFC also allows '#' and '$';
 * nginx reads those as a comment and a variable elsewhere in its syntax,
 * and no OCI or Docker media type uses them, so they are refused. Its
 * length, or 0 when S does not start with one. */
#define MEDIA_ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

static size_t media_name(const char *s, size_t n)
{
	size_t i = 0;

	if (!n || !strchr(MEDIA_ALNUM, s[0]) || !s[0])
		return 0;
	while (i < n && s[i] && strchr(MEDIA_ALNUM "!&-^_.+", s[i]))
		i++;
	return i <= 127 ? i : 0;
}

/* A media type, type "/" subtype without parameters, as the OCI image
 * spec requires of every mediaType (opencontainers/image-spec
 * descriptor.md, "MUST comply with RFC 6838, including the naming
 * requirements in its section 4.2"): written verbatim, so a registry's
 * value reaches nginx's `default_type` (emit/mirror_images.c) or an
 * index.json only when it is one, never escaped into place. */
static int enc_media_type(const json_t *v, struct buf *out, struct why *w)
{
	const char *s;
	size_t n, t, st;

	if (want_string(v, w))
		return -1;
	s = json_string_value(v);
	n = json_string_length(v);
	t = media_name(s, n);
	if (!t || t >= n || s[t] != '/')
		return refuse(w, t, "is not a media type (RFC 6838 type/subtype)");
	st = media_name(s + t + 1, n - t - 1);
	if (!st || t + 1 + st != n)
		return refuse(w, t + 1 + st, "is not a media type (RFC 6838 type/subtype)");
	buf_add(out, s, n);
	return 0;
}

static const struct sink {
	const char *name;
	const char *what;
	encode_fn *enc;
} sinks[] = {
	{ "comment", "a comment line", enc_comment },
	{ "toml", "a TOML basic string", enc_toml },
	{ "toml_lit", "a TOML literal string", enc_toml_lit },
	{ "ini", "an INI value", enc_ini },
	{ "json", "a JSON value", enc_json },
	{ "xml", "XML text", enc_xml },
	{ "ps", "a PowerShell literal", enc_ps },
	{ "ps_native", "a native command-line argument (PowerShell 5.1)", enc_ps_native },
	{ "ps_msiprop", "an msiexec property argument (PowerShell 5.1)", enc_ps_msiprop },
	{ "ps_path", "a Windows PATH entry", enc_ps_path },
	{ "ps_binpath", "a path in an sc.exe binPath", enc_ps_binpath },
	{ "ps_here", "a PowerShell here-string", enc_ps_here },
	{ "hcl", "an HCL string", enc_hcl },
	{ "hcl_in", "an HCL string", hcl_body },
	{ "md_code", "Markdown code", enc_md_code },
	{ "media_type", "a media type field", enc_media_type },
	{ "trusted", "winbuild's own text", NULL },
};

static const struct sink *sink_find(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(sinks); i++)
		if (strlen(sinks[i].name) == len && !memcmp(sinks[i].name, name, len))
			return &sinks[i];
	return NULL;
}

int tmpl_sink_known(const char *sink, size_t len)
{
	return sink_find(sink, len) != NULL;
}

int tmpl_sink_accepts(const char *sink, const char *s, const char **why, size_t *at)
{
	const struct sink *k = sink_find(sink, strlen(sink));
	struct buf tmp = BUF_INIT;
	struct why w = { 0, NULL, NULL };
	json_t *list = json_array();
	int ret;

	json_array_append_new(list, json_stringn_nocheck(s, strlen(s)));
	ret = k && k->enc && !k->enc(list, &tmp, &w);
	json_decref(list);
	buf_release(&tmp);
	*why = ret ? NULL : w.reason ? w.reason : "is not a sink winbuild knows";
	*at = w.at;
	return ret;
}

void tmpl_describe(struct buf *b, const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n && i < 80; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			buf_addc(b, (char)c);
		else if (c == '\n')
			buf_adds(b, "\\n");
		else
			buf_addf(b, "\\x%02x", c);
	}
	if (n > 80)
		buf_adds(b, "...");
}

static void describe(struct buf *b, const json_t *v)
{
	char *s = json_is_string(v) ? xstrdup(json_string_value(v)) :
		json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	tmpl_describe(b, s ? s : "?");
	free(s);
}

/* Whether the string at PTR is inside V. */
static int holds(const json_t *v, const char *ptr)
{
	size_t i;
	const char *k;
	json_t *x;

	if (json_is_string(v))
		return json_string_value(v) == ptr;
	if (json_is_array(v))
		json_array_foreach(v, i, x)
			if (holds(x, ptr))
				return 1;
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, x)
			if (holds(x, ptr))
				return 1;
	return 0;
}

/* Where the element of V holding SUBJECT came from, or V's own origin. */
static const char *origin_of(const struct tmpl_var *v, const char *subject)
{
	size_t i;
	json_t *x;

	if (subject && v->froms && json_is_array(v->value))
		json_array_foreach(v->value, i, x)
			if (holds(x, subject) && json_is_string(json_array_get(v->froms, i)))
				return json_string_value(json_array_get(v->froms, i));
	return v->from;
}

/*
 * @where where a value is encoded for the file it lands in (typed sinks:
 *   toml, ini, json, xml, ps, hcl, media_type, ...)
 */
int tmpl_encode(const char *sink, size_t len, const struct tmpl_var *v,
		struct buf *out, struct wb_err *e)
{
	const struct sink *k = sink_find(sink, len);
	struct buf tmp = BUF_INIT, d = BUF_INIT;
	struct why w = { 0, NULL, NULL };
	int ret;

	if (!k)
		return wb_error(e, WB_EUSAGE, "unknown sink type '%.*s'", (int)len, sink);
	if (!k->enc || v->trusted) {
		if (k->enc || !v->trusted)
			return wb_error(e, WB_EUSAGE, "'%s' %s", v->name, v->trusted ?
					"is winbuild's own text and renders only as "
					"{{trusted:...}}" : "is not winbuild's own text and "
					"cannot be rendered as trusted");
		buf_add(out, json_string_value(v->value), json_string_length(v->value));
		return 0;
	}
	ret = k->enc(v->value, &tmp, &w);
	if (!ret) {
		buf_add(out, tmp.ptr, tmp.len);
	} else {
		const char *from = origin_of(v, w.subject);

		if (w.subject)
			tmpl_describe(&d, w.subject);
		else
			describe(&d, v->value);
		wb_error(e, WB_EUSAGE, "%s: '%s' %s (byte %zu); winbuild does not "
			 "put it into %s", from ? from : v->name, d.ptr, w.reason, w.at,
			 k->what);
	}
	buf_release(&tmp);
	buf_release(&d);
	return ret;
}

/* ---- plan-time grammars ------------------------------------------------- */

static int all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(set, s[i]) || !s[i])
			return 0;
	return 1;
}

#define DIGITS "0123456789"
#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

int tmpl_version_ok(const char *s)
{
	const char *p = s;

	if (strlen(s) > 128)
		return 0;
	if (*p == 'v')
		p++;
	for (;;) {
		size_t d = strspn(p, DIGITS);

		if (!d)
			return 0;
		p += d;
		if (*p != '.')
			break;
		p++;
	}
	for (int part = 0; part < 2; part++)
		if (*p == "-+"[part]) {
			size_t n = strspn(p + 1, LOWER UPPER DIGITS ".-");

			if (!n)
				return 0;
			p += 1 + n;
		}
	return *p == '\0';
}

/* path-component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)* */
static int path_component_ok(const char *s, size_t n)
{
	size_t i = 0;

	for (;;) {
		size_t a = 0;

		while (i + a < n && strchr(LOWER DIGITS, s[i + a]) && s[i + a])
			a++;
		if (!a)
			return 0;
		i += a;
		if (i == n)
			return 1;
		if (s[i] == '.' || (s[i] == '_' && s[i + 1] != '_'))
			i++;
		else if (s[i] == '_' && i + 1 < n && s[i + 1] == '_')
			i += 2;
		else if (s[i] == '-')
			while (i < n && s[i] == '-')
				i++;
		else
			return 0;
	}
}

/* domain: host[:port], host a DNS name of [a-zA-Z0-9-] labels (no leading
 * or trailing '-') or a bracketed IPv6 address. */
static int domain_ok(const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t host = n;

	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close || close == s + 1 || !all_of(s + 1, (size_t)(close - s - 1),
							DIGITS "abcdefABCDEF:"))
			return 0;
		host = (size_t)(close - s) + 1;
		colon = host < n ? s + host : NULL;
		if (colon && *colon != ':')
			return 0;
	} else {
		if (colon)
			host = (size_t)(colon - s);
		for (size_t i = 0; i < host;) {
			size_t l = 0;

			while (i + l < host && s[i + l] != '.')
				l++;
			if (!l || !all_of(s + i, l, LOWER UPPER DIGITS "-") ||
			    s[i] == '-' || s[i + l - 1] == '-')
				return 0;
			i += l;
			if (i < host && ++i == host)
				return 0;   /* trailing dot */
		}
		if (!host)
			return 0;
	}
	if (colon) {
		size_t port = n - (size_t)(colon - s) - 1;

		if (!port || !all_of(colon + 1, port, DIGITS))
			return 0;
	}
	return 1;
}

int tmpl_image_ref_ok(const char *s)
{
	const char *at = strchr(s, '@'), *name_end, *slash, *tag;
	size_t n = strlen(s), name_len;

	if (!n || n > 4096)
		return 0;
	if (at) {
		const char *colon = strchr(at, ':'), *p = at + 1;

		/* algorithm [A-Za-z][A-Za-z0-9]* ([+._-] component)*, hex{32,} */
		if (!colon || strchr(at + 1, '@'))
			return 0;
		while (p < colon) {
			size_t l = strspn(p, LOWER UPPER DIGITS);

			if (!l || !strchr(LOWER UPPER, *p) || p + l > colon)
				return 0;
			p += l;
			if (p < colon && strchr("+._-", *p) && *p)
				p++;
			else if (p != colon)
				return 0;
		}
		if (p[-1] == '+' || p[-1] == '.' || p[-1] == '_' || p[-1] == '-' ||
		    strlen(colon + 1) < 32 || !all_of(colon + 1, strlen(colon + 1),
						       DIGITS "abcdefABCDEF"))
			return 0;
		name_end = at;
	} else {
		name_end = s + n;
	}
	/* the tag is after the last ':' behind the last '/' */
	slash = NULL;
	for (const char *p = s; p < name_end; p++)
		if (*p == '/')
			slash = p;
	tag = NULL;
	for (const char *p = slash ? slash : s; p < name_end; p++)
		if (*p == ':')
			tag = p;
	if (tag) {
		size_t l = (size_t)(name_end - tag - 1);

		if (!l || l > 128 || !all_of(tag + 1, l, LOWER UPPER DIGITS "_.-") ||
		    tag[1] == '.' || tag[1] == '-')
			return 0;
		name_end = tag;
	}
	name_len = (size_t)(name_end - s);
	if (!name_len || name_len > 255)
		return 0;
	for (const char *p = s; p < name_end;) {
		const char *q = memchr(p, '/', (size_t)(name_end - p));
		size_t l = q ? (size_t)(q - p) : (size_t)(name_end - p);
		int first_of_many = p == s && q;

		if (first_of_many && (memchr(p, '.', l) || memchr(p, ':', l) ||
				      (l == 9 && !memcmp(p, "localhost", 9)) ||
				      p[0] == '[' || strcspn(p, UPPER) < l)) {
			if (!domain_ok(p, l))
				return 0;
		} else if (!path_component_ok(p, l)) {
			return 0;
		}
		if (!q)
			break;
		p = q + 1;
		if (p == name_end)
			return 0;
	}
	return 1;
}
