/*
 * Secrets out of URLs: see redact.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "lib/redact.h"

static const char *const secret_params[] = {
	"sig",                    /* Azure SAS */
	"signature",
	"token",
	"access_token",           /* OAuth 2 bearer in a query (RFC 6750) */
	"x-amz-signature",        /* S3 presigned */
	"x-amz-credential",
	"x-amz-security-token",
	"x-goog-signature",       /* GCS signed URL */
	"x-goog-credential",
};

/*
 * What this run learnt is secret (redact_add_secret, redact_add_param):
 * the credentials file's and netrc's secrets, a query credential's
 * parameter names, a registry token. Process-wide, as the credentials are
 * read once per run; never freed (they are wiped at exit by no one: the
 * strings are copies the caller's wipe does not reach, so they are kept
 * in one place only).
 */
static char **known_secrets, **known_params;
static size_t nr_secrets, nr_params;

static void push(char ***v, size_t *nr, const char *s, size_t n)
{
	char **nv = realloc(*v, (*nr + 1) * sizeof(**v));
	char *copy = nv ? strndup(s, n) : NULL;

	if (!nv || !copy) {
		free(copy);
		if (nv)
			*v = nv;
		return;
	}
	*v = nv;
	(*v)[(*nr)++] = copy;
}

void redact_add_secret(const char *secret)
{
	/* too short to be told from ordinary text: a one-letter password
	 * would blank every such letter in every message */
	if (!secret || strlen(secret) < REDACT_MIN_SECRET)
		return;
	for (size_t i = 0; i < nr_secrets; i++)
		if (!strcmp(known_secrets[i], secret))
			return;
	push(&known_secrets, &nr_secrets, secret, strlen(secret));
}

void redact_add_params(const char *query)
{
	if (!query)
		return;
	query += *query == '?';
	while (*query) {
		size_t len = strcspn(query, "&"), n = strcspn(query, "=&");

		if (n > len)
			n = len;
		if (n)
			push(&known_params, &nr_params, query, n);
		query += len;
		query += *query == '&';
	}
}

static int redact_literals(struct buf *b);

/* Whether the query parameter NAME[0..N) carries a secret. */
static int param_secret(const char *name, size_t n)
{
	const char *extra = getenv("WINBUILD_REDACT_PARAMS");

	for (size_t i = 0; i < sizeof(secret_params) / sizeof(secret_params[0]); i++)
		if (strlen(secret_params[i]) == n && !strncasecmp(secret_params[i], name, n))
			return 1;
	for (size_t i = 0; i < nr_params; i++)
		if (strlen(known_params[i]) == n && !strncasecmp(known_params[i], name, n))
			return 1;
	while (extra && *extra) {
		size_t len = strcspn(extra, ",");

		if (len == n && n && !strncasecmp(extra, name, n))
			return 1;
		extra += len;
		extra += *extra == ',';
	}
	return 0;
}

/*
 * Where URL[0..LEN)'s authority begins (after "scheme://"), or 0 without.
 *
 * Not lib/url.c's parser (libcurl's curl_url()), on purpose: redaction
 * scans any text (a message, a server's answer, a URL libcurl refuses),
 * and must take out a secret whatever a parser would make of it. libcurl
 * ends userinfo at the first '@' (lib/urlapi.c, parse_hostname_login:
 * strchr(hostname, '@'), curl 7.88.1) and refuses
 * "https://u:p@ss@h/" outright, so curl_url() would leave "p@ss" in
 * place; this scan drops everything up to the last '@' before the first
 * '/', '?' or '#', which covers libcurl's reading and every other one.
 * Which URLs are refused and where a secret may go is lib/url.c's alone
 * (recipe/urls.c url_check, fetch/hop.c, fetch/creds.c).
 * @where the one URL parser and origin rule (scheme, host, port; the default
 *   port explicit) -- the one hand scan left: a secret out of text libcurl
 *   refuses
 */
static size_t authority_at(const char *url, size_t len)
{
	const char *p = memchr(url, ':', len);

	if (!p || (size_t)(p - url) + 3 > len || strncmp(p, "://", 3))
		return 0;
	for (const char *s = url; s < p; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-", *s))
			return 0;
	return (size_t)(p - url) + 3;
}

/* Walk URL[0..LEN): with B, append the redacted URL; return how many
 * secrets it holds. */
static int redact_walk(struct buf *b, const char *url, size_t len)
{
	size_t a = authority_at(url, len), i = 0, end, q;
	int found = 0;

	if (a) {
		size_t alen = a, at = 0;

		while (alen < len && !strchr("/?#", url[alen]))
			alen++;
		for (size_t k = a; k < alen; k++)
			if (url[k] == '@')
				at = k + 1;
		if (at) {
			found++;
			if (b)
				buf_add(b, url, a);
			i = at;
		}
	}
	end = i;
	while (end < len && url[end] != '?' && url[end] != '#')
		end++;
	if (b)
		buf_add(b, url + i, end - i);
	if (end >= len || url[end] != '?') {
		if (b)
			buf_add(b, url + end, len - end);
		return found;
	}
	/* the query: name[=value] pairs split by '&' up to '#' */
	q = end + 1;
	if (b)
		buf_addc(b, '?');
	while (q <= len) {
		size_t pe = q, eq;

		while (pe < len && url[pe] != '&' && url[pe] != '#')
			pe++;
		eq = q;
		while (eq < pe && url[eq] != '=')
			eq++;
		if (eq < pe && param_secret(url + q, eq - q) &&
		    !(pe - eq - 1 == strlen(REDACTED) && !strncmp(url + eq + 1, REDACTED, pe - eq - 1))) {
			found++;
			if (b) {
				buf_add(b, url + q, eq - q + 1);
				buf_adds(b, REDACTED);
			}
		} else if (b) {
			buf_add(b, url + q, pe - q);
		}
		if (pe >= len || url[pe] == '#') {
			if (b)
				buf_add(b, url + pe, len - pe);
			break;
		}
		if (b)
			buf_addc(b, '&');
		q = pe + 1;
	}
	return found;
}

int redact_url_needed(const char *url)
{
	return url && (redact_walk(NULL, url, strlen(url)) > 0 || redact_has_secret(url));
}

void redact_add_url(struct buf *b, const char *url, size_t len)
{
	redact_walk(b, url, len);
}

/*
 * @where where a secret is taken out of a URL and out of text before it is
 *   recorded or shown
 */
char *redact_url(const char *url)
{
	struct buf b = BUF_INIT;

	if (!url)
		return NULL;
	redact_walk(&b, url, strlen(url));
	redact_literals(&b);
	return buf_detach(&b, NULL);
}

int redact_same_url(const char *a, const char *b)
{
	char *ra, *rb;
	int same;

	if (!a || !b)
		return 0;
	if (!strcmp(a, b))
		return 1;
	ra = redact_url(a);
	rb = redact_url(b);
	same = !strcmp(ra, rb);
	free(ra);
	free(rb);
	return same;
}

/* Replace every known secret in B's text by REDACTED; how many. */
static int redact_literals(struct buf *b)
{
	int found = 0;

	for (size_t i = 0; i < nr_secrets; i++) {
		const char *sec = known_secrets[i];
		size_t n = strlen(sec);
		char *at;

		while (b->len && (at = strstr(b->ptr, sec))) {
			struct buf nb = BUF_INIT;

			buf_add(&nb, b->ptr, (size_t)(at - b->ptr));
			buf_adds(&nb, REDACTED);
			buf_adds(&nb, at + n);
			memset(b->ptr, 0, b->len);
			buf_release(b);
			*b = nb;
			found++;
		}
	}
	return found;
}

int redact_has_secret(const char *text)
{
	for (size_t i = 0; text && i < nr_secrets; i++)
		if (strstr(text, known_secrets[i]))
			return 1;
	return 0;
}

/*
 * @where where a secret is taken out of a URL and out of text before it is
 *   recorded or shown -- every secret the run read (`redact_add_secret()`,
 *   `redact_add_params()`)
 */
void redact_text(char *text, size_t size)
{
	struct buf b = BUF_INIT;
	const char *p = text, *from = text;
	static const char scheme[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-";
	int any = 0;

	while ((p = strstr(p, "://")) != NULL) {
		const char *s = p, *e = p + 3;

		while (s > from && strchr(scheme, s[-1]))
			s--;
		while (*e && !strchr(" \t\r\n'\"<>`", *e))
			e++;
		if (s < p && redact_walk(NULL, s, (size_t)(e - s)) > 0) {
			buf_add(&b, from, (size_t)(s - from));
			redact_walk(&b, s, (size_t)(e - s));
			from = e;
			any = 1;
		}
		p = e;
	}
	if (!any && redact_has_secret(text)) {
		buf_adds(&b, text);
		from = text + strlen(text);
		any = 1;
	}
	if (any && size) {
		buf_adds(&b, from);
		redact_literals(&b);
		/* cut to SIZE: what is lost is the end of the message, never
		 * a secret */
		if (b.len >= size)
			b.len = size - 1;
		memcpy(text, b.ptr, b.len);
		text[b.len] = '\0';
	}
	buf_release(&b);
}

char *redact_text_dup(const char *text, size_t len)
{
	struct buf b = BUF_INIT;
	const char *p, *from = text, *end = text + len;
	static const char scheme[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-";

	for (p = text; (p = memmem(p, (size_t)(end - p), "://", 3)) != NULL;) {
		const char *s = p, *e = p + 3;

		while (s > from && strchr(scheme, s[-1]))
			s--;
		while (e < end && *e && !strchr(" \t\r\n'\"<>`", *e))
			e++;
		if (s < p && redact_walk(NULL, s, (size_t)(e - s)) > 0) {
			buf_add(&b, from, (size_t)(s - from));
			redact_walk(&b, s, (size_t)(e - s));
			from = e;
		}
		p = e;
	}
	buf_add(&b, from, (size_t)(end - from));
	redact_literals(&b);
	return buf_detach(&b, NULL);
}

/* ---- the process's text outputs --------------------------------------- */

/*
 * stdout and stderr replaced by streams that redact every line on its way
 * out (glibc's fopencookie(3)): a printf anywhere in winbuild, a --json
 * document, --explain, a progress line, cannot skip the redaction. A line
 * holding a NUL byte is passed as it is (bytes, not text).
 */
struct redact_out {
	FILE *to;                  /* the original stream */
	struct buf pending;        /* an unfinished line */
};

static struct redact_out outs[2];

/*
 * Write R to O's stream with every terminal control neutralised: a C0
 * control other than tab, newline and a CR ending a line (CRLF), DEL, and a C1
 * control (U+0080..U+009F, 0xC2 0x80..0x9F in UTF-8: 0x9B is CSI to
 * some terminals) become \xNN, as lib/text.h's text_printable writes
 * them. Text from outside (a cache ref's artifact name, a server's
 * message) thus never moves the cursor, retitles the window or hides
 * a line. winbuild's own controls (the progress display) go through
 * redact_stdio_raw.
 */
static void out_printable(FILE *to, const char *r)
{
	for (const unsigned char *p = (const unsigned char *)r; *p; p++) {
		/* a CR is a line end only as CRLF: alone, it would put the
		 * next text over the start of the line (hiding what a cache
		 * ref's name or a server's message holds before it) */
		if ((*p < 0x20 && *p != '\t' && *p != '\n' &&
		     !(*p == '\r' && p[1] == '\n')) || *p == 0x7f)
			fprintf(to, "\\x%02x", *p);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			fprintf(to, "\\x%02x\\x%02x", p[0], p[1]);
			p++;
		} else
			fputc(*p, to);
	}
}

static void out_line(struct redact_out *o, const char *p, size_t n)
{
	char *r;
	struct buf b = BUF_INIT;

	/* a NUL inside: bytes, not a line of text (nothing of winbuild's
	 * writes one); written escaped like any control */
	buf_add(&b, p, n);
	for (size_t i = 0; i < b.len; i++)
		if (!b.ptr[i])
			b.ptr[i] = '\x01';
	r = redact_text_dup(b.ptr, b.len);
	buf_release(&b);
	out_printable(o->to, r);
	free(r);
}

static ssize_t out_write(void *cookie, const char *data, size_t size)
{
	struct redact_out *o = cookie;
	size_t done = 0;

	buf_add(&o->pending, data, size);
	for (size_t i = 0; i < o->pending.len; i++)
		if (o->pending.ptr[i] == '\n') {
			out_line(o, o->pending.ptr + done, i + 1 - done);
			done = i + 1;
		}
	if (done) {
		memmove(o->pending.ptr, o->pending.ptr + done, o->pending.len - done);
		o->pending.len -= done;
		o->pending.ptr[o->pending.len] = '\0';
		fflush(o->to);
	}
	return (ssize_t)size;
}

static void out_drain(struct redact_out *o, FILE *f)
{
	if (!o->to)
		return;
	fflush(f);
	if (o->pending.len)
		out_line(o, o->pending.ptr, o->pending.len);
	o->pending.len = 0;
	fflush(o->to);
}

static void redact_stdio_drain(void)
{
	out_drain(&outs[0], stdout);
	out_drain(&outs[1], stderr);
}

static FILE *wrap(struct redact_out *o, FILE *f)
{
	cookie_io_functions_t io = { NULL, out_write, NULL, NULL };
	FILE *w;

	o->to = f;
	w = fopencookie(o, "w", io);
	if (!w) {
		o->to = NULL;
		return f;
	}
	setvbuf(w, NULL, f == stderr ? _IONBF : _IOFBF, 0);
	return w;
}

/*
 * @where where a secret is taken out of a URL and out of text before it is
 *   recorded or shown -- stdout and stderr redacted a line at a time,
 *   terminal controls escaped (`tests/cli/secrets_every_channel.bats`)
 */
void redact_stdio(void)
{
	if (outs[0].to)
		return;
	stdout = wrap(&outs[0], stdout);
	stderr = wrap(&outs[1], stderr);
	atexit(redact_stdio_drain);
}

void redact_stdio_flush(void)
{
	redact_stdio_drain();
}

void redact_stdio_raw(FILE *f, const char *ctl)
{
	struct redact_out *o = f == stdout ? &outs[0] : f == stderr ? &outs[1] : NULL;

	if (!o || !o->to) {
		fputs(ctl, f);
		return;
	}
	out_drain(o, f);
	fputs(ctl, o->to);
	fflush(o->to);
}
