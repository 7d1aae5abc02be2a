#include "lib/base64.h"

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static unsigned char *decode_clean(const char *s, size_t n, size_t *out_len)
{
	size_t pad = 0, o = 0, bits = 0;
	unsigned long acc = 0;
	unsigned char *out;

	if (n % 4 == 0 && n >= 1 && s[n - 1] == '=') {
		pad = n >= 2 && s[n - 2] == '=' ? 2 : 1;
		n -= pad;
	}
	if (n % 4 == 1 || (pad && pad != 4 - n % 4))
		return NULL;
	out = xmalloc(n / 4 * 3 + 3);
	for (size_t i = 0; i < n; i++) {
		int v = b64_value((unsigned char)s[i]);

		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6 | (unsigned long)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	/* the bits left over must be zero (canonical encoding) */
	if (bits && (acc & ((1ul << bits) - 1))) {
		free(out);
		return NULL;
	}
	out[o] = 0;
	*out_len = o;
	return out;
}

/* @where strict base64 (one decoder; CR/LF skipped as Go does) */
unsigned char *b64_decode(const char *s, size_t n, size_t *out_len)
{
	char *clean;
	size_t m = 0;
	unsigned char *r;

	if (!memchr(s, '\n', n) && !memchr(s, '\r', n))
		return decode_clean(s, n, out_len);
	clean = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		if (s[i] != '\n' && s[i] != '\r')
			clean[m++] = s[i];
	r = decode_clean(clean, m, out_len);
	free(clean);
	return r;
}
