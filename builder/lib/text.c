/* Strict UTF-8 and terminal-safe escaping (lib/text.h). */
#include <string.h>

#include "lib/text.h"

size_t text_utf8_next(const char *str, size_t avail, unsigned *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned c = s[0], min;
	size_t n;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2; c &= 0x1F; min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3; c &= 0x0F; min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4; c &= 0x07; min = 0x10000;
	} else {
		return 0;   /* continuation byte, C0/C1 overlong lead, F5..FF */
	}
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return n;
}

/* @where text from outside in a message (escaped), strict UTF-8 */
int text_utf8_valid(const char *s, size_t len)
{
	size_t i = 0;
	unsigned cp;

	while (i < len) {
		size_t n = text_utf8_next(s + i, len - i, &cp);

		if (!n || !cp)
			return 0;
		i += n;
	}
	return 1;
}

static int unsafe(unsigned cp)
{
	return cp < 0x20 || cp == '\\' || (cp >= 0x7F && cp <= 0x9F) ||
	       (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void text_add_printable(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned cp = 0;
		size_t n = text_utf8_next(s + i, len - i, &cp);

		if (n && !unsafe(cp)) {
			buf_add(b, p + i, n);
			i += n;
			continue;
		}
		if (!n)
			n = 1;
		for (size_t k = 0; k < n; k++)
			buf_addf(b, "\\x%02x", p[i + k]);
		i += n;
	}
}

/* @where text from outside in a message (escaped), strict UTF-8 */
char *text_printable(const char *s)
{
	struct buf b = BUF_INIT;

	text_add_printable(&b, s, strlen(s));
	return buf_detach(&b, NULL);
}

size_t text_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, sizeof(prev));
	}
	return prev[lb];
}

/*
 * @where did-you-mean (edit distance) for commands, options, recipe keys,
 *   component names
 */
void text_suggest_init(struct text_suggest *s, const char *want)
{
	s->want = want;
	s->best = NULL;
	s->dist = 3;
}

void text_suggest_add(struct text_suggest *s, const char *cand)
{
	size_t d = text_edit_distance(s->want, cand), n = strlen(s->want);

	if (!strcmp(s->want, cand))
		return;
	if (d < s->dist) {
		s->dist = d;
		s->best = cand;
	} else if (!s->best && n >= 2 && !strncmp(cand, s->want, n)) {
		s->best = cand;
	} else if (!s->best && strlen(cand) >= 4 && !strncmp(s->want, cand, strlen(cand))) {
		s->best = cand;   /* "--cache-dir" for "--cache" */
	}
}

/*
 * @where text from outside in a record (lock, SBOM, manifest, `--json`):
 *   kept, escaped when it is not UTF-8
 */
char *text_record(const char *s)
{
	return text_utf8_valid(s, strlen(s)) ? xstrdup(s) : text_printable(s);
}
