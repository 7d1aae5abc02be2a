/*
 * --set and WINBUILD_SET pairs: "a.b.c=VALUE" into a tree {a: {b: {c:
 * VALUE}}} (a value starting with '[' or '{' is YAML flow), with the key
 * grammar and strict UTF-8 checked.
 *
 * @where includes, override layers, `WINBUILD_SET`, `--set`, `${var}`
 *   expansion -- one `--set` pair
 */
#include <ctype.h>
#include <string.h>

#include "lib/buf.h"
#include "recipe/resolve_int.h"

int setpair_key_segment_ok(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF),
 * as libyaml requires of recipe files: --set values end up in the same
 * plan, and in JSON output. */
static int utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, n, cp;

		if (c < 0x80) {
			s++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return 0;
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		s += n + 1;
	}
	return 1;
}

/* Build a tree {a: {b: {c: VALUE}}} from "a.b.c=VALUE". */
int setpair_parse(struct resolver *r, const char *pair,
	      const struct wb_origin *o, struct rnode **out)
{
	const char *eq = strchr(pair, '='), *p, *key_end;
	struct rnode *root, *cur, *val = NULL;

	*out = NULL;
	if (!eq)
		return err_at(r, o, "'%s' is not KEY=VALUE", pair);
	key_end = eq;
	for (p = pair; p <= key_end; ) {
		const char *dot = memchr(p, '.', (size_t)(key_end - p));
		const char *seg_end = dot ? dot : key_end;
		if (!setpair_key_segment_ok(p, (size_t)(seg_end - p)))
			return err_at(r, o, "bad key '%.*s': segments are [A-Za-z0-9_-]+ separated by '.'",
				      (int)(key_end - pair), pair);
		p = seg_end + 1;
	}
	if (!utf8_ok((const unsigned char *)pair))
		return err_at(r, o, "'%.*s': the value is not valid UTF-8",
			      (int)(eq - pair), pair);
	if (eq[1] == '[' || eq[1] == '{') {
		if (rnode_load_string(eq + 1, o, &val, r->e)) {
			wb_error_prefix(r->e, "value of '%.*s'", (int)(eq - pair), pair);
			return -1;
		}
	} else {
		val = rnode_new_scalar(eq + 1, o);
	}
	root = rnode_new(RNODE_MAP, o);
	cur = root;
	for (p = pair; ; ) {
		const char *dot = memchr(p, '.', (size_t)(key_end - p));
		const char *seg_end = dot ? dot : key_end;
		char *seg = xstrndup(p, (size_t)(seg_end - p));
		struct rnode *child = dot ? rnode_new(RNODE_MAP, o) : val;

		child->key = seg;
		child->key_origin = *o;
		rnode_append(cur, child);
		if (!dot)
			break;
		cur = child;
		p = dot + 1;
	}
	*out = root;
	return 0;
}
