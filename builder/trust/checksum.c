/*
 * Checksum file parsing. Name matching: a listed name matches FILENAME when
 * it is equal to it, or when its last path component is ("./name",
 * "dist/name"): upstreams often publish sums made from a build directory.
 * Every matching line must then carry the same digest; two different
 * digests for the name are refused rather than guessed between.
 *
 * @where checksum files (bare digest, `sha256sum` lines)
 */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "lib/text.h"
#include "trust/checksum.h"

#define CHECKSUM_NAMES_SHOWN 5

static const char *alg_name(enum digest_alg alg)
{
	return alg == DIGEST_SHA512 ? "SHA-512" : "SHA-256";
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	       c == '\f';
}

/* Check that TOK (TLEN bytes) is a digest of the right size and decode it. */
static int parse_digest(const char *tok, size_t tlen, enum digest_alg alg,
			size_t dlen, unsigned lineno, unsigned char *out,
			struct wb_err *e)
{
	size_t run = hex_span(tok, tlen, HEX_ANY_CASE);

	if (run < tlen && !is_blank(tok[run])) {
		size_t show = run;

		while (show < tlen && show < 80 && !is_blank(tok[show]))
			show++;
		return wb_error(e, WB_EUSAGE,
				"checksum file line %u: '%.*s' is not a hex digest",
				lineno, (int)show, tok);
	}
	if (run != 2 * dlen)
		return wb_error(e, WB_EUSAGE,
				"checksum file line %u: a %s digest has %zu hex digits, found %zu",
				lineno, alg_name(alg), 2 * dlen, run);
	return digest_unhex(tok, out, dlen) < 0 ? wb_error(e, WB_EUSAGE,
		"checksum file line %u: bad hex digest", lineno) : 0;
}

/* 1-based number of the line that holds AT. */
static unsigned line_of(const char *text, const char *at)
{
	unsigned l = 1;

	for (; text < at; text++)
		l += *text == '\n';
	return l;
}

static int name_matches(const char *name, size_t nlen, const char *filename)
{
	size_t flen = strlen(filename);

	if (!flen || nlen < flen || memcmp(name + nlen - flen, filename, flen))
		return 0;
	return nlen == flen || name[nlen - flen - 1] == '/';
}

/*
 * Undo GNU coreutils' escaping of a listed name (lines starting with '\'
 * have "\\" for a backslash and "\n" for a newline). Returns the new
 * length, or -1 on an unknown escape.
 */
static long unescape_name(char *s, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		if (s[i] != '\\') {
			s[o++] = s[i];
			continue;
		}
		if (++i >= len)
			return -1;
		if (s[i] == '\\')
			s[o++] = '\\';
		else if (s[i] == 'n')
			s[o++] = '\n';
		else
			return -1;
	}
	return (long)o;
}

int checksum_parse(const char *text, size_t len, const char *filename,
		   enum digest_alg alg, unsigned char *out, struct wb_err *e)
{
	size_t dlen = alg == DIGEST_SHA512 ? 64 : 32;
	const char *p = text, *end = text + len;
	struct buf others = BUF_INIT;
	unsigned lineno = 0, nlines = 0, nothers = 0;
	int found = 0, ret = 0;
	unsigned char cur[64];

	if (alg != DIGEST_SHA256 && alg != DIGEST_SHA512)
		return wb_error(e, WB_EUSAGE, "checksum files hold SHA-256 or SHA-512 digests only");
	if (len > CHECKSUM_FILE_MAX)
		return wb_error(e, WB_EUSAGE,
				"checksum file is larger than the limit of %d bytes",
				CHECKSUM_FILE_MAX);
	if (memchr(text, '\0', len))
		return wb_error(e, WB_EUSAGE, "checksum file line %u: NUL byte",
				line_of(text, memchr(text, '\0', len)));

	/* Bare digest: a single token, nothing else but white space. */
	{
		const char *s = text, *t = end, *q;

		while (s < t && is_blank(*s))
			s++;
		while (t > s && is_blank(t[-1]))
			t--;
		if (s == t)
			return wb_error(e, WB_EUSAGE, "checksum file is empty");
		for (q = s; q < t && !is_blank(*q); q++)
			;
		if (q == t)
			return parse_digest(s, (size_t)(t - s), alg, dlen,
					    line_of(text, s), out, e);
	}

	while (p < end && !ret) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end, *name;
		size_t llen, nlen, run;
		int escaped = 0;
		char *nm;
		long ul;

		lineno++;
		llen = (size_t)(eol - p);
		if (llen && p[llen - 1] == '\r')
			llen--;
		for (run = 0; run < llen && is_blank(p[run]); run++)
			;
		if (run == llen)
			goto next;   /* blank line */
		if (p[0] == '\\') {
			escaped = 1;
			p++;
			llen--;
		}
		run = hex_span(p, llen, HEX_ANY_CASE);
		if (run == llen || (p[run] != ' ' && p[run] != '\t')) {
			if (parse_digest(p, llen, alg, dlen, lineno, cur, e) < 0) {
				ret = -1;
				break;
			}
			ret = wb_error(e, WB_EUSAGE,
				       "checksum file line %u: expected '<digest>  <name>'",
				       lineno);
			break;
		}
		if (parse_digest(p, run, alg, dlen, lineno, cur, e) < 0) {
			ret = -1;
			break;
		}
		name = p + run + 1;
		if (name < p + llen && (*name == ' ' || *name == '*'))
			name++;
		nlen = (size_t)(p + llen - name);
		if (!nlen) {
			ret = wb_error(e, WB_EUSAGE,
				       "checksum file line %u: no file name after the digest",
				       lineno);
			break;
		}
		nm = xstrndup(name, nlen);
		ul = escaped ? unescape_name(nm, nlen) : (long)nlen;
		if (ul < 0) {
			free(nm);
			ret = wb_error(e, WB_EUSAGE,
				       "checksum file line %u: bad escape in file name",
				       lineno);
			break;
		}
		nlines++;
		if (name_matches(nm, (size_t)ul, filename)) {
			if (found && !digest_equal(out, cur, dlen))
				ret = wb_error(e, WB_EUSAGE,
					       "checksum file line %u: a second, different digest for '%s'",
					       lineno, filename);
			memcpy(out, cur, dlen);
			found = 1;
		} else if (nothers++ < CHECKSUM_NAMES_SHOWN) {
			/* names come from the server: no control bytes to the terminal */
			buf_adds(&others, others.len ? ", '" : "'");
			text_add_printable(&others, nm, (size_t)(ul > 200 ? 200 : ul));
			buf_addc(&others, '\'');
		}
		free(nm);
	next:
		p = nl ? nl + 1 : end;
	}

	if (!ret && !found) {
		if (nothers > CHECKSUM_NAMES_SHOWN)
			buf_addf(&others, " and %u more",
				 nothers - CHECKSUM_NAMES_SHOWN);
		ret = wb_error(e, WB_EUSAGE,
			       "checksum file has no entry for '%s' (it lists %s)",
			       filename, nlines ? others.ptr : "nothing");
	}
	buf_release(&others);
	return ret;
}
