/*
 * Hex digests as text: the one check that a string is N hex digits.
 *
 * Case rule. winbuild writes every digest in lower case (digest_hex in
 * trust/digest.c), so what it reads back from its own files must be lower
 * case: a cache key is a file name in the cache (an upper-case spelling
 * would be a second name for the same bytes) and manifest.json is
 * winbuild's output (an upper-case digest there was not written by it):
 * HEX_LOWER. A digest someone else wrote — a checksum file from upstream,
 * the expected digest handed to the extractor (from a recipe, which
 * accepts either case) — may be in either case: HEX_ANY_CASE; such a
 * digest is decoded (digest_unhex) or compared case-insensitively, never
 * used as a name.
 */
#ifndef WB_HEX_H
#define WB_HEX_H

#include <stddef.h>

enum hex_case {
	HEX_LOWER,       /* 0-9 a-f */
	HEX_ANY_CASE,    /* 0-9 a-f A-F */
};

/* The length of the leading run of hex digits in S[0..LEN). */
size_t hex_span(const char *s, size_t len, enum hex_case c);

/* 1 when S (NUL-terminated; NULL is 0) is exactly N hex digits. */
int hex_is(const char *s, size_t n, enum hex_case c);

#endif
