/*
 * @where Windows path rules (C: only, reserved names, forbidden characters,
 *   Unicode case folding, 8.3 aliases, MAX_PATH) -- `lib/winpath.c` calls
 *   `lib/names.c`, never the reverse
 */
#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wctype.h>

#include "buf.h"
#include "names.h"
#include "strlist.h"
#include "text.h"
#include "winpath.h"

/* Device names Win32 maps to devices whatever the extension or trailing
 * spaces ("nul.txt", "CON .log"). Since Windows 10 the superscript digits
 * ¹ ² ³ (U+00B9, U+00B2, U+00B3) count as digits here too. */
static const char *const reserved[] = {
	"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
	"COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9",
	"LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
	"COM\xc2\xb9", "COM\xc2\xb2", "COM\xc2\xb3",
	"LPT\xc2\xb9", "LPT\xc2\xb2", "LPT\xc2\xb3",
};

/* UTF-16 code units of the UTF-8 string S[0..N): what Windows counts. */
static size_t utf16_len(const char *s, size_t n)
{
	size_t units = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c & 0xc0) != 0x80)
			units++;
		if (c >= 0xf0)
			units++;   /* outside the BMP: a surrogate pair */
	}
	return units;
}

int winpath_reserved(const char *name)
{
	size_t len = strlen(name), base;
	const char *dot = strchr(name, '.');

	base = dot ? (size_t)(dot - name) : len;
	while (base && (name[base - 1] == ' ' || name[base - 1] == '.'))
		base--;
	for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
		if (strlen(reserved[i]) == base && !strncasecmp(name, reserved[i], base))
			return 1;
	return 0;
}

/*
 * @where Windows path rules (C: only, reserved names, forbidden characters,
 *   Unicode case folding, 8.3 aliases, MAX_PATH) -- one path component: the
 *   host's rules, then Windows'
 */
int winpath_name_ok(const char *name, const char **why)
{
	size_t len = strlen(name);

	if (!names_segment_ok(name, why))
		return 0;
	if (utf16_len(name, len) > 255) {
		*why = "name longer than 255 characters";
		return 0;
	}
	for (const char *p = name; *p; p++) {
		if (strchr("<>:\"|?*", *p)) {
			*why = "character Windows forbids in names (< > : \" / \\ | ? *)";
			return 0;
		}
	}
	if (name[len - 1] == '.' || name[len - 1] == ' ') {
		*why = "name ends with a dot or a space";
		return 0;
	}
	if (winpath_reserved(name)) {
		*why = "reserved device name (CON, PRN, AUX, NUL, CONIN$, CONOUT$, "
		       "COM0-9, LPT0-9, COM¹-³, LPT¹-³), with any extension";
		return 0;
	}
	return 1;
}

int winpath_tree_path_ok(const char *tree_path, const char **why)
{
	const char *p = tree_path;

	/* "C:\" + the path, within MAX_PATH (260 with the terminating NUL) */
	if (3 + utf16_len(tree_path, strlen(tree_path)) > WINPATH_MAX) {
		*why = "path longer than 259 characters (MAX_PATH)";
		return 0;
	}
	while (*p) {
		size_t n = strcspn(p, "/");
		char *name = xstrndup(p, n);
		int ok = winpath_name_ok(name, why);

		free(name);
		if (!ok)
			return 0;
		p += n;
		if (*p && !*++p) {
			*why = "empty name";
			return 0;
		}
	}
	return 1;
}

char *winpath_to_tree(const char *winpath, const char **why)
{
	struct buf out = BUF_INIT;
	const char *p = winpath;
	char *t;

	if (!isalpha((unsigned char)p[0]) || p[1] != ':') {
		*why = "not an absolute Windows path (expected C:\\...)";
		return NULL;
	}
	if (toupper((unsigned char)p[0]) != 'C') {
		*why = "only the system drive C: can be staged";
		return NULL;
	}
	p += 2;
	if (*p != '\\' && *p != '/') {
		*why = "drive-relative path (expected C:\\...)";
		return NULL;
	}
	while (*p) {
		const char *start;

		while (*p == '\\' || *p == '/')
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != '\\' && *p != '/')
			p++;
		if (out.len)
			buf_addc(&out, '/');
		buf_add(&out, start, (size_t)(p - start));
	}
	t = out.len ? buf_detach(&out, NULL) : xstrdup("");
	if (!winpath_tree_path_ok(t, why)) {
		free(t);
		return NULL;
	}
	return t;
}

/* ---- case folding --------------------------------------------------------- */

static locale_t utf8_locale;

static void open_locale(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

static void utf8_put(struct buf *b, unsigned long cp)
{
	if (cp < 0x80) {
		buf_addc(b, (char)cp);
	} else if (cp < 0x800) {
		buf_addc(b, (char)(0xc0 | cp >> 6));
		buf_addc(b, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		buf_addc(b, (char)(0xe0 | cp >> 12));
		buf_addc(b, (char)(0x80 | (cp >> 6 & 0x3f)));
		buf_addc(b, (char)(0x80 | (cp & 0x3f)));
	} else {
		buf_addc(b, (char)(0xf0 | cp >> 18));
		buf_addc(b, (char)(0x80 | (cp >> 12 & 0x3f)));
		buf_addc(b, (char)(0x80 | (cp >> 6 & 0x3f)));
		buf_addc(b, (char)(0x80 | (cp & 0x3f)));
	}
}

/* Windows' upper case of one UTF-16 unit's code point CP: NTFS compares
 * names through its $UpCase table, a simple 1:1 map over the BMP. */
static unsigned long upcase(unsigned long cp)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	wint_t u;

	if (cp < 0x80)
		return (unsigned long)toupper((int)cp);
	if (cp > 0xffff)
		return cp;       /* surrogate pairs: $UpCase maps units, not pairs */
	pthread_once(&once, open_locale);
	if (!utf8_locale)
		return 0xfffd;   /* no Unicode table: every non-ASCII letter is one
				    (collisions over-reported, never missed) */
	u = towupper_l((wint_t)cp, utf8_locale);
	return u <= 0xffff ? (unsigned long)u : cp;
}

/*
 * @where Windows path rules (C: only, reserved names, forbidden characters,
 *   Unicode case folding, 8.3 aliases, MAX_PATH) -- case folding
 */
char *winpath_fold(const char *path)
{
	struct buf b = BUF_INIT;
	const char *s = path;
	size_t left = strlen(path);

	while (left) {
		unsigned cp;
		size_t n = text_utf8_next(s, left, &cp);

		if (!n) {        /* not UTF-8: the byte stands for itself */
			buf_addc(&b, *s);
			n = 1;
		} else {
			utf8_put(&b, upcase(cp));
		}
		s += n;
		left -= n;
	}
	return b.len ? buf_detach(&b, NULL) : xstrdup("");
}

char *winpath_from_tree(const char *tree_path)
{
	char *w = xasprintf("C:\\%s", tree_path);

	for (char *p = w; *p; p++)
		if (*p == '/')
			*p = '\\';
	return w;
}

/* ---- 8.3 short names ------------------------------------------------------- */

/* Characters a short name may hold besides A-Z and 0-9. */
#define SHORT_EXTRA "!#$%&'()-@^_`{}~"

static int short_char(unsigned char c)
{
	return isdigit(c) || (c >= 'A' && c <= 'Z') || (c && strchr(SHORT_EXTRA, c));
}

/* NAME is a valid 8.3 name as it stands (case aside): Windows gives it no
 * second, generated name. */
static int is_short(const char *name)
{
	const char *dot = strchr(name, '.');
	size_t base = dot ? (size_t)(dot - name) : strlen(name);

	if (!base || base > 8 || (dot && (strchr(dot + 1, '.') || !dot[1] ||
					  strlen(dot + 1) > 3)))
		return 0;
	for (const char *p = name; *p; p++)
		if (p != dot && !short_char((unsigned char)toupper((unsigned char)*p)))
			return 0;
	return 1;
}

/* The basis NTFS derives a generated short name from: upper case, spaces
 * and leading dots dropped, the extension after the last dot, other dots
 * dropped, characters a short name cannot hold (non-ASCII too) as '_'. */
static void short_basis(const char *name, struct buf *base, struct buf *ext)
{
	const char *last = strrchr(name, '.'), *p = name;

	while (*p == '.')
		p++;
	if (last && last < p)
		last = NULL;
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		struct buf *to = last && p > last ? ext : base;

		if (c == ' ' || c == '.')
			continue;
		if (c >= 0x80 && (c & 0xc0) == 0x80)
			continue;   /* one '_' per non-ASCII character */
		c = (unsigned char)toupper(c);
		buf_addc(to, short_char(c) ? (char)c : '_');
	}
}

/* Parse NAME as an 8.3 name with a numeric tail: the prefix length and the
 * number of digits, or 0. */
static size_t tilde_shape(const char *name, size_t *digits)
{
	const char *dot = strchr(name, '.'), *tilde;
	size_t base = dot ? (size_t)(dot - name) : strlen(name), plen;

	if (!is_short(name))
		return 0;
	tilde = memchr(name, '~', base);
	if (!tilde || tilde == name || tilde[1] == '0')
		return 0;
	plen = (size_t)(tilde - name);
	*digits = base - plen - 1;
	if (!*digits)
		return 0;
	for (size_t i = 1; i <= *digits; i++)
		if (!isdigit((unsigned char)tilde[i]))
			return 0;
	return plen;
}

static void push_key(struct wb_strlist *keys, char kind, size_t digits,
		     const char *ext, const char *pre, size_t n)
{
	char *k = xasprintf("%c%zu.%s.%.*s", kind, digits, ext, (int)n, pre);

	for (char *p = k + 1; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	wb_strlist_push(keys, k);
	free(k);
}

int winpath_short_keys(const char *name, struct wb_strlist *keys)
{
	size_t digits = 0, plen;

	if ((plen = tilde_shape(name, &digits)) != 0) {
		const char *dot = strchr(name, '.');
		const char *ext = dot ? dot + 1 : "";

		push_key(keys, 'N', digits, ext, name, plen);
		if (plen == 6) {
			int hex = 1;

			for (size_t i = 2; i < 6; i++)
				hex &= isxdigit((unsigned char)name[i]) != 0;
			if (hex) {
				push_key(keys, 'H', 0, ext, name, 2);
				push_key(keys, 'H', 0, ext, name, 1);
			}
		}
		return WINPATH_SHORT_TILDE;
	}
	if (is_short(name))
		return WINPATH_SHORT_PLAIN;
	{
		struct buf lb = BUF_INIT, le = BUF_INIT;

		short_basis(name, &lb, &le);
		if (le.len > 3) {
			/* never a write to an empty buf's shared buf_empty: two
			 * stages may run this at once (an image matrix) */
			le.len = 3;
			le.ptr[3] = '\0';
		}
		if (lb.len) {
			for (size_t d = 1; d <= 6; d++)
				push_key(keys, 'N', d, le.ptr, lb.ptr,
					 lb.len < 7 - d ? lb.len : 7 - d);
			push_key(keys, 'H', 0, le.ptr, lb.ptr, lb.len < 2 ? lb.len : 2);
		}
		buf_release(&lb);
		buf_release(&le);
	}
	return WINPATH_SHORT_LONG;
}

int winpath_short_alias(const char *name, const char *other)
{
	struct wb_strlist a = WB_STRLIST_INIT, b = WB_STRLIST_INIT;
	int hit = 0;

	if (winpath_short_keys(name, &a) == WINPATH_SHORT_TILDE &&
	    winpath_short_keys(other, &b) == WINPATH_SHORT_LONG)
		for (size_t i = 0; !hit && i < a.nr; i++)
			for (size_t k = 0; !hit && k < b.nr; k++)
				hit = !strcmp(a.v[i], b.v[k]);
	wb_strlist_release(&a);
	wb_strlist_release(&b);
	return hit;
}

int winpath_paths_clash(const char *a, const char *b, const char **why)
{
	while (*a && *b) {
		size_t na = strcspn(a, "/"), nb = strcspn(b, "/");
		char *x = xstrndup(a, na), *y = xstrndup(b, nb);
		char *fx = winpath_fold(x), *fy = winpath_fold(y);
		int same = !strcmp(x, y), clash = 0;

		if (!same && !strcmp(fx, fy)) {
			*why = "differ only in case (Windows names are case-insensitive)";
			clash = 1;
		} else if (!same && (winpath_short_alias(x, y) || winpath_short_alias(y, x))) {
			*why = "alias each other through an 8.3 short name";
			clash = 1;
		}
		free(x);
		free(y);
		free(fx);
		free(fy);
		if (clash || !same)
			return clash;
		a += na + (a[na] == '/');
		b += nb + (b[nb] == '/');
	}
	return 0;
}
