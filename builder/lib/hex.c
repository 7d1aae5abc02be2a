#include <string.h>

#include "hex.h"

static int hex_digit(char ch, enum hex_case c)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
	       (c == HEX_ANY_CASE && ch >= 'A' && ch <= 'F');
}

/*
 * @where the one hex-digest check (lower case for what winbuild wrote and
 *   reads back, either case for digests others wrote)
 */
size_t hex_span(const char *s, size_t len, enum hex_case c)
{
	size_t i = 0;

	while (i < len && hex_digit(s[i], c))
		i++;
	return i;
}

/*
 * @where the one hex-digest check (lower case for what winbuild wrote and
 *   reads back, either case for digests others wrote) -- the rule is in
 *   `builder/lib/hex.h`; `tests/cli/layers.bats` keeps copies from coming
 *   back
 */
int hex_is(const char *s, size_t n, enum hex_case c)
{
	return s && strlen(s) == n && hex_span(s, n, c) == n;
}
